//! SourceRegistry over SQLite.

use async_trait::async_trait;
use evident_core::Visibility;
use evident_store::{Result, SourceRecord, SourceRegistry, SourceStatus};
use rusqlite::{Connection, OptionalExtension, params_from_iter};

use crate::{EmbeddedStore, sql, sqlite_err};

const COLUMNS: &str = "client_id, project_id, group_id, source_urn, kind, title, content_hash, status, chunk_count, last_indexed_at, last_error";

fn record(r: &rusqlite::Row<'_>) -> rusqlite::Result<SourceRecord> {
    let status: String = r.get(7)?;
    Ok(SourceRecord {
        scope: sql::scope_at(r, 0)?,
        source_urn: r.get(3)?,
        kind: r.get(4)?,
        title: r.get(5)?,
        content_hash: r.get(6)?,
        status: if status == "error" {
            SourceStatus::Error
        } else {
            SourceStatus::Indexed
        },
        chunk_count: r.get::<_, i64>(8)? as usize,
        last_indexed_at: r.get(9)?,
        last_error: r.get(10)?,
    })
}

pub(crate) fn put(conn: &Connection, rec: &SourceRecord) -> Result<()> {
    let status = match rec.status {
        SourceStatus::Indexed => "indexed",
        SourceStatus::Error => "error",
    };
    conn.prepare_cached(
        "INSERT INTO sources(partition, source_urn, client_id, project_id, group_id, kind, title, content_hash, status, chunk_count, last_indexed_at, last_error) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
         ON CONFLICT(partition, source_urn) DO UPDATE SET client_id = excluded.client_id, project_id = excluded.project_id, \
         group_id = excluded.group_id, kind = excluded.kind, title = excluded.title, content_hash = excluded.content_hash, \
         status = excluded.status, chunk_count = excluded.chunk_count, last_indexed_at = excluded.last_indexed_at, last_error = excluded.last_error",
    )
    .map_err(sqlite_err)?
    .execute(rusqlite::params![
        rec.scope.partition(),
        rec.source_urn,
        rec.scope.client_id,
        rec.scope.project_id,
        rec.scope.group_id,
        rec.kind,
        rec.title,
        rec.content_hash,
        status,
        rec.chunk_count as i64,
        rec.last_indexed_at,
        rec.last_error,
    ])
    .map_err(sqlite_err)?;
    Ok(())
}

pub(crate) fn remove(conn: &Connection, partition: &str, urn: &str) -> Result<()> {
    conn.execute(
        "DELETE FROM sources WHERE partition = ?1 AND source_urn = ?2",
        [partition, urn],
    )
    .map_err(sqlite_err)?;
    Ok(())
}

#[async_trait]
impl SourceRegistry for EmbeddedStore {
    async fn get(&self, partition: &str, source_urn: &str) -> Result<Option<SourceRecord>> {
        let (partition, urn) = (partition.to_string(), source_urn.to_string());
        self.read(move |conn, _| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM sources WHERE partition = ?1 AND source_urn = ?2"
            ))
            .map_err(sqlite_err)?
            .query_row([&partition, &urn], record)
            .optional()
            .map_err(sqlite_err)
        })
        .await
    }

    async fn list_prefix(
        &self,
        partition: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SourceRecord>> {
        let (partition, prefix) = (partition.to_string(), prefix.to_string());
        let after = after.map(str::to_string);
        self.read(move |conn, _| {
            // A range scan on the primary key (partition, source_urn), not a LIKE.
            let lower = match &after {
                Some(a) if a.as_str() >= prefix.as_str() => a.clone(),
                _ => prefix.clone(),
            };
            let inclusive = after.as_deref().is_none_or(|a| a < prefix.as_str());
            let upper = prefix_upper_bound(&prefix);
            let q = format!(
                "SELECT {COLUMNS} FROM sources WHERE partition = ?1 AND source_urn {} ?2 {} ORDER BY source_urn LIMIT ?4",
                if inclusive { ">=" } else { ">" },
                if upper.is_some() { "AND source_urn < ?3" } else { "AND ?3 IS NULL" },
            );
            let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
            let rows = stmt
                .query_map(
                    rusqlite::params![partition, lower, upper, limit.clamp(1, 100_000) as i64],
                    record,
                )
                .map_err(sqlite_err)?;
            let all = rows
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sqlite_err)?;
            Ok(all.into_iter().filter(|r| r.source_urn.starts_with(&prefix)).collect())
        })
        .await
    }

    async fn list(&self, vis: &Visibility, limit: usize) -> Result<Vec<SourceRecord>> {
        let vis = vis.clone();
        self.read(move |conn, _| {
            let mut q = format!("SELECT {COLUMNS} FROM sources WHERE ");
            let mut params = Vec::new();
            sql::visibility(&vis, "", &mut q, &mut params);
            q.push_str(" ORDER BY last_indexed_at DESC, source_urn LIMIT ?");
            params.push(rusqlite::types::Value::Integer(limit as i64));
            let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
            let rows = stmt
                .query_map(params_from_iter(params), record)
                .map_err(sqlite_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sqlite_err)
        })
        .await
    }
}

/// Everything after `prefix` in byte order that still starts with it: `[prefix, upper)`.
fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut bytes = prefix.as_bytes().to_vec();
    while let Some(last) = bytes.pop() {
        if last < 0xff {
            bytes.push(last + 1);
            return String::from_utf8(bytes).ok();
        }
    }
    None
}

/// Lets the embedded store serve as the registry step of a [`evident_store::SequencedWriter`]
/// (mixed deployments; also how the conformance suite exercises the sequenced path).
#[async_trait]
impl evident_store::SourceRecordWriter for EmbeddedStore {
    async fn put(&self, record: &SourceRecord) -> Result<()> {
        let record = record.clone();
        self.write(move |conn, _| put(conn, &record)).await
    }

    async fn remove(&self, partition: &str, source_urn: &str) -> Result<()> {
        let (partition, urn) = (partition.to_string(), source_urn.to_string());
        self.write(move |conn, _| remove(conn, &partition, &urn))
            .await
    }
}
