//! MemoryStore over SQLite: one row per (client, session, key); expired rows are invisible at
//! once and deleted by `purge_expired` (the server sweeps them periodically).

use async_trait::async_trait;
use evident_store::Result;
use evident_store::memory::{MemoryEntry, MemoryStore, SessionEntry, SessionSource};
use evident_store::queue::Millis;
use rusqlite::{OptionalExtension, params};

use crate::{EmbeddedStore, json_err, sqlite_err};

const COLUMNS: &str = "client_id, session_id, key, value, created_at, updated_at, expires_at";

fn entry_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(MemoryEntry, String)> {
    Ok((
        MemoryEntry {
            client_id: r.get(0)?,
            session_id: r.get(1)?,
            key: r.get(2)?,
            value: serde_json::Value::Null,
            created_at: r.get(4)?,
            updated_at: r.get(5)?,
            expires_at: r.get(6)?,
        },
        r.get(3)?,
    ))
}

fn parse((mut e, value): (MemoryEntry, String)) -> Result<MemoryEntry> {
    e.value = serde_json::from_str(&value).map_err(json_err)?;
    Ok(e)
}

#[async_trait]
impl MemoryStore for EmbeddedStore {
    async fn put(&self, entry: MemoryEntry) -> Result<MemoryEntry> {
        let value = serde_json::to_string(&entry.value).map_err(json_err)?;
        self.write_grouped(move |conn| {
            // A replaced entry keeps its creation time.
            let stored = conn
                .prepare_cached(&format!(
                    "INSERT INTO memory({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                     ON CONFLICT(client_id, session_id, key) DO UPDATE SET value = excluded.value, \
                     updated_at = excluded.updated_at, expires_at = excluded.expires_at, \
                     created_at = CASE WHEN memory.expires_at > excluded.updated_at THEN memory.created_at ELSE excluded.created_at END \
                     RETURNING {COLUMNS}"
                ))
                .map_err(sqlite_err)?
                .query_row(
                    params![
                        entry.client_id,
                        entry.session_id,
                        entry.key,
                        value,
                        entry.created_at,
                        entry.updated_at,
                        entry.expires_at
                    ],
                    entry_row,
                )
                .map_err(sqlite_err)?;
            parse(stored)
        })
        .await
    }

    async fn get(
        &self,
        client: &str,
        session: &str,
        key: &str,
        now: Millis,
    ) -> Result<Option<MemoryEntry>> {
        let (client, session, key) = (client.to_string(), session.to_string(), key.to_string());
        self.read(move |conn, _| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM memory WHERE client_id = ?1 AND session_id = ?2 AND key = ?3 AND expires_at > ?4"
            ))
            .map_err(sqlite_err)?
            .query_row(params![client, session, key, now], entry_row)
            .optional()
            .map_err(sqlite_err)?
            .map(parse)
            .transpose()
        })
        .await
    }

    async fn list(&self, client: &str, session: &str, now: Millis) -> Result<Vec<MemoryEntry>> {
        let (client, session) = (client.to_string(), session.to_string());
        self.read(move |conn, _| {
            let rows = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM memory WHERE client_id = ?1 AND session_id = ?2 AND expires_at > ?3 ORDER BY key"
                ))
                .map_err(sqlite_err)?
                .query_map(params![client, session, now], entry_row)
                .map_err(sqlite_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sqlite_err)?;
            rows.into_iter().map(parse).collect()
        })
        .await
    }

    async fn delete(&self, client: &str, session: &str, key: &str) -> Result<bool> {
        let (client, session, key) = (client.to_string(), session.to_string(), key.to_string());
        self.write_grouped(move |conn| {
            Ok(conn
                .prepare_cached(
                    "DELETE FROM memory WHERE client_id = ?1 AND session_id = ?2 AND key = ?3",
                )
                .map_err(sqlite_err)?
                .execute(params![client, session, key])
                .map_err(sqlite_err)?
                > 0)
        })
        .await
    }

    async fn delete_session(&self, client: &str, session: &str) -> Result<u64> {
        let (client, session) = (client.to_string(), session.to_string());
        self.write_grouped(move |conn| {
            Ok(conn
                .prepare_cached("DELETE FROM memory WHERE client_id = ?1 AND session_id = ?2")
                .map_err(sqlite_err)?
                .execute(params![client, session])
                .map_err(sqlite_err)? as u64)
        })
        .await
    }

    async fn purge_expired(&self, now: Millis) -> Result<u64> {
        self.write_grouped(move |conn| {
            let mut n = 0;
            for sql in [
                "DELETE FROM memory WHERE expires_at <= ?1",
                "DELETE FROM session_log WHERE expires_at <= ?1",
            ] {
                n += conn
                    .prepare_cached(sql)
                    .map_err(sqlite_err)?
                    .execute(params![now])
                    .map_err(sqlite_err)? as u64;
            }
            Ok(n)
        })
        .await
    }

    async fn session_append(&self, e: SessionEntry, max_entries: usize) -> Result<u64> {
        let details = e
            .details
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(json_err)?;
        // Insert and evict in one transaction: the log never holds more than `max_entries`.
        self.write_grouped(move |conn| {
            let project = e.project_id.clone().unwrap_or_default();
            conn.prepare_cached(
                "INSERT INTO session_log(client_id, project_id, timestamp, source, summary, details, task_id, expires_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .map_err(sqlite_err)?
            .execute(params![
                e.client_id,
                project,
                e.timestamp,
                e.source.as_str(),
                e.summary,
                details,
                e.task_id,
                e.expires_at
            ])
            .map_err(sqlite_err)?;
            Ok(conn
                .prepare_cached(
                    "DELETE FROM session_log WHERE seq IN (SELECT seq FROM session_log \
                     WHERE client_id = ?1 AND project_id = ?2 \
                     ORDER BY timestamp DESC, seq DESC LIMIT -1 OFFSET ?3)",
                )
                .map_err(sqlite_err)?
                .execute(params![e.client_id, project, max_entries as i64])
                .map_err(sqlite_err)? as u64)
        })
        .await
    }

    async fn session_recent(
        &self,
        client: &str,
        project: Option<&str>,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<SessionEntry>> {
        let (client, project) = (client.to_string(), project.unwrap_or_default().to_string());
        self.read(move |conn, _| {
            let rows = conn
                .prepare_cached(
                    "SELECT client_id, project_id, timestamp, source, summary, details, task_id, expires_at \
                     FROM session_log WHERE client_id = ?1 AND project_id = ?2 AND expires_at > ?3 \
                     ORDER BY timestamp DESC, seq DESC LIMIT ?4",
                )
                .map_err(sqlite_err)?
                .query_map(params![client, project, now, limit as i64], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, Option<String>>(6)?,
                        r.get::<_, i64>(7)?,
                    ))
                })
                .map_err(sqlite_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sqlite_err)?;
            rows.into_iter()
                .map(|(client_id, project_id, timestamp, source, summary, details, task_id, expires_at)| {
                    Ok(SessionEntry {
                        client_id,
                        project_id: (!project_id.is_empty()).then_some(project_id),
                        timestamp,
                        source: SessionSource::parse(&source).ok_or_else(|| {
                            evident_store::StoreError::corrupt(format!("session log source `{source}`"))
                        })?,
                        summary,
                        details: details
                            .map(|d| serde_json::from_str(&d))
                            .transpose()
                            .map_err(json_err)?,
                        task_id,
                        expires_at,
                    })
                })
                .collect()
        })
        .await
    }
}
