//! MemoryStore over SQLite: one row per (client, session, key); expired rows are invisible at
//! once and deleted by `purge_expired` (the server sweeps them periodically).

use async_trait::async_trait;
use evident_store::Result;
use evident_store::memory::{MemoryEntry, MemoryStore};
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
            Ok(conn
                .prepare_cached("DELETE FROM memory WHERE expires_at <= ?1")
                .map_err(sqlite_err)?
                .execute(params![now])
                .map_err(sqlite_err)? as u64)
        })
        .await
    }
}
