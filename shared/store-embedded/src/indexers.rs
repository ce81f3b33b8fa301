//! IndexerStore over SQLite: polled sources, their cursors and polling leases, keyed by
//! (client, id).

use async_trait::async_trait;
use evident_store::Result;
use evident_store::indexers::{IndexerSource, IndexerStore, PollStatus, SourceKey};
use evident_store::queue::Millis;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use crate::{EmbeddedStore, json_err, sql, sqlite_err};

const COLUMNS: &str = "id, kind, client_id, project_id, group_id, config, interval_secs, enabled, created_at, updated_at, \
     last_poll_at, last_success_at, last_error, stats, owner, lease_expires_at";

fn source(r: &rusqlite::Row<'_>) -> rusqlite::Result<(IndexerSource, String, String)> {
    Ok((
        IndexerSource {
            id: r.get(0)?,
            kind: r.get(1)?,
            scope: sql::scope_at(r, 2)?,
            config: Value::Null,
            interval_secs: r.get::<_, i64>(6)? as u64,
            enabled: r.get::<_, i64>(7)? != 0,
            created_at: r.get(8)?,
            updated_at: r.get(9)?,
            status: PollStatus {
                last_poll_at: r.get(10)?,
                last_success_at: r.get(11)?,
                last_error: r.get(12)?,
                stats: Value::Null,
                owner: r.get(14)?,
                lease_expires_at: r.get(15)?,
            },
        },
        r.get(5)?,
        r.get(13)?,
    ))
}

fn parse(row: (IndexerSource, String, String)) -> Result<IndexerSource> {
    let (mut s, config, stats) = row;
    s.config = serde_json::from_str(&config).map_err(json_err)?;
    s.status.stats = serde_json::from_str(&stats).map_err(json_err)?;
    Ok(s)
}

fn get(conn: &Connection, k: &SourceKey) -> Result<Option<IndexerSource>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM indexer_sources WHERE client_id = ?1 AND id = ?2"
    ))
    .map_err(sqlite_err)?
    .query_row([&k.client_id, &k.id], source)
    .optional()
    .map_err(sqlite_err)?
    .map(parse)
    .transpose()
}

/// Whether `owner` is the source's current lease holder.
fn holds(conn: &Connection, k: &SourceKey, owner: &str) -> Result<bool> {
    let current: Option<Option<String>> = conn
        .prepare_cached("SELECT owner FROM indexer_sources WHERE client_id = ?1 AND id = ?2")
        .map_err(sqlite_err)?
        .query_row([&k.client_id, &k.id], |r| r.get(0))
        .optional()
        .map_err(sqlite_err)?;
    Ok(current.flatten().as_deref() == Some(owner))
}

#[async_trait]
impl IndexerStore for EmbeddedStore {
    async fn put_source(&self, s: &IndexerSource, now: Millis) -> Result<IndexerSource> {
        let s = s.clone();
        if s.scope.client_id.is_none() {
            return Err(evident_store::StoreError::invalid(format!(
                "source `{}` has no client",
                s.id
            )));
        }
        let config = serde_json::to_string(&s.config).map_err(json_err)?;
        self.write_grouped(move |conn| {
            conn.execute(
                "INSERT INTO indexer_sources(id, kind, client_id, project_id, group_id, config, interval_secs, enabled, created_at, updated_at, stats) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, '{}') \
                 ON CONFLICT(client_id, id) DO UPDATE SET kind = excluded.kind, project_id = excluded.project_id, \
                 group_id = excluded.group_id, config = excluded.config, interval_secs = excluded.interval_secs, \
                 enabled = excluded.enabled, updated_at = excluded.updated_at",
                params![
                    s.id,
                    s.kind,
                    s.scope.client_id,
                    s.scope.project_id,
                    s.scope.group_id,
                    config,
                    s.interval_secs as i64,
                    s.enabled as i64,
                    now
                ],
            )
            .map_err(sqlite_err)?;
            get(conn, &s.key())?.ok_or_else(|| evident_store::StoreError::corrupt("registered source vanished"))
        })
        .await
    }

    async fn get_source(&self, k: &SourceKey) -> Result<Option<IndexerSource>> {
        let k = k.clone();
        self.read(move |conn, _| get(conn, &k)).await
    }

    async fn list_sources(&self, kind: Option<&str>) -> Result<Vec<IndexerSource>> {
        let kind = kind.map(str::to_string);
        self.read(move |conn, _| {
            let q = format!(
                "SELECT {COLUMNS} FROM indexer_sources WHERE ?1 IS NULL OR kind = ?1 ORDER BY client_id, id"
            );
            let rows = sql::rows(conn, &q, [kind], source)?;
            rows.into_iter().map(parse).collect()
        })
        .await
    }

    async fn delete_source(&self, k: &SourceKey) -> Result<bool> {
        let k = k.clone();
        self.write_grouped(move |conn| {
            conn.execute(
                "DELETE FROM indexer_cursors WHERE client_id = ?1 AND source_id = ?2",
                [&k.client_id, &k.id],
            )
            .map_err(sqlite_err)?;
            let n = conn
                .execute(
                    "DELETE FROM indexer_sources WHERE client_id = ?1 AND id = ?2",
                    [&k.client_id, &k.id],
                )
                .map_err(sqlite_err)?;
            Ok(n > 0)
        })
        .await
    }

    async fn acquire(
        &self,
        k: &SourceKey,
        owner: &str,
        lease_ms: i64,
        now: Millis,
    ) -> Result<bool> {
        let (k, owner) = (k.clone(), owner.to_string());
        self.write_grouped(move |conn| {
            let n = conn
                .execute(
                    "UPDATE indexer_sources SET owner = ?2, lease_expires_at = ?3 \
                     WHERE client_id = ?5 AND id = ?1 AND (owner IS NULL OR owner = ?2 OR lease_expires_at <= ?4)",
                    params![k.id, owner, now + lease_ms, now, k.client_id],
                )
                .map_err(sqlite_err)?;
            Ok(n > 0)
        })
        .await
    }

    async fn release(&self, k: &SourceKey, owner: &str) -> Result<()> {
        let (k, owner) = (k.clone(), owner.to_string());
        self.write_grouped(move |conn| {
            conn.execute(
                "UPDATE indexer_sources SET owner = NULL, lease_expires_at = NULL WHERE client_id = ?3 AND id = ?1 AND owner = ?2",
                params![k.id, owner, k.client_id],
            )
            .map_err(sqlite_err)?;
            Ok(())
        })
        .await
    }

    async fn record_poll(
        &self,
        k: &SourceKey,
        owner: &str,
        now: Millis,
        error: Option<&str>,
        stats: &Value,
    ) -> Result<bool> {
        let (k, owner, error) = (k.clone(), owner.to_string(), error.map(str::to_string));
        let stats = serde_json::to_string(stats).map_err(json_err)?;
        self.write_grouped(move |conn| {
            let n = conn
                .execute(
                    "UPDATE indexer_sources SET last_poll_at = ?3, last_error = ?4, stats = ?5, \
                     last_success_at = CASE WHEN ?4 IS NULL THEN ?3 ELSE last_success_at END \
                     WHERE client_id = ?6 AND id = ?1 AND owner = ?2",
                    params![k.id, owner, now, error, stats, k.client_id],
                )
                .map_err(sqlite_err)?;
            Ok(n > 0)
        })
        .await
    }

    async fn get_cursor(&self, k: &SourceKey, key: &str) -> Result<Option<Value>> {
        let (k, key) = (k.clone(), key.to_string());
        self.read(move |conn, _| {
            let raw: Option<String> = conn
                .prepare_cached(
                    "SELECT value FROM indexer_cursors WHERE client_id = ?1 AND source_id = ?2 AND key = ?3",
                )
                .map_err(sqlite_err)?
                .query_row([&k.client_id, &k.id, &key], |r| r.get(0))
                .optional()
                .map_err(sqlite_err)?;
            raw.map(|r| serde_json::from_str(&r).map_err(json_err))
                .transpose()
        })
        .await
    }

    async fn put_cursor(
        &self,
        k: &SourceKey,
        owner: &str,
        key: &str,
        value: &Value,
    ) -> Result<bool> {
        let (k, owner, key) = (k.clone(), owner.to_string(), key.to_string());
        let value = serde_json::to_string(value).map_err(json_err)?;
        self.write_grouped(move |conn| {
            if !holds(conn, &k, &owner)? {
                return Ok(false);
            }
            conn.execute(
                "INSERT INTO indexer_cursors(client_id, source_id, key, value) VALUES (?4, ?1, ?2, ?3) \
                 ON CONFLICT(client_id, source_id, key) DO UPDATE SET value = excluded.value",
                params![k.id, key, value, k.client_id],
            )
            .map_err(sqlite_err)?;
            Ok(true)
        })
        .await
    }

    async fn list_cursors(&self, k: &SourceKey) -> Result<Vec<(String, Value)>> {
        let k = k.clone();
        self.read(move |conn, _| {
            let rows = sql::rows(
                conn,
                "SELECT key, value FROM indexer_cursors WHERE client_id = ?1 AND source_id = ?2 ORDER BY key",
                [&k.client_id, &k.id],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
            )?;
            rows.into_iter()
                .map(|(k, v)| Ok((k, serde_json::from_str(&v).map_err(json_err)?)))
                .collect()
        })
        .await
    }

    async fn delete_cursor(&self, k: &SourceKey, owner: &str, key: &str) -> Result<bool> {
        let (k, owner, key) = (k.clone(), owner.to_string(), key.to_string());
        self.write_grouped(move |conn| {
            if !holds(conn, &k, &owner)? {
                return Ok(false);
            }
            conn.execute(
                "DELETE FROM indexer_cursors WHERE client_id = ?3 AND source_id = ?1 AND key = ?2",
                params![k.id, key, k.client_id],
            )
            .map_err(sqlite_err)?;
            Ok(true)
        })
        .await
    }
}
