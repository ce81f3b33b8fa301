//! AliasRegistry over SQLite. `resolve` is a pure read; seen counts accumulate in memory and
//! are flushed in one transaction (on `flush`, on writes to the registry, and at close).

use async_trait::async_trait;
use evident_core::NodeKey;
use evident_store::{AliasEntry, AliasRegistry, AliasStats, Result, StoreError};
use rusqlite::{Connection, OptionalExtension};

use crate::{EmbeddedStore, Inner, now_rfc3339, sqlite_err};

fn entry(r: &rusqlite::Row<'_>) -> rusqlite::Result<AliasEntry> {
    Ok(AliasEntry {
        alias: NodeKey::from_canonical(r.get::<_, String>(0)?),
        canonical: NodeKey::from_canonical(r.get::<_, String>(1)?),
        seen_count: r.get::<_, i64>(2)? as u64,
        first_seen_at: r.get(3)?,
        last_seen_at: r.get(4)?,
    })
}

fn canonical_of(conn: &Connection, client: &str, alias: &str) -> Result<Option<String>> {
    conn.prepare_cached("SELECT canonical_key FROM aliases WHERE client = ?1 AND alias_key = ?2")
        .map_err(sqlite_err)?
        .query_row([client, alias], |r| r.get(0))
        .optional()
        .map_err(sqlite_err)
}

pub(crate) fn flush_seen(inner: &Inner) -> Result<()> {
    let pending: Vec<((String, String), u64)> = inner.seen.lock().drain().collect();
    if pending.is_empty() {
        return Ok(());
    }
    let mut conn = inner.writer.lock();
    let tx = conn.transaction().map_err(sqlite_err)?;
    {
        let now = now_rfc3339();
        let mut stmt = tx
            .prepare_cached("UPDATE aliases SET seen_count = seen_count + ?1, last_seen_at = ?2 WHERE client = ?3 AND alias_key = ?4")
            .map_err(sqlite_err)?;
        for ((client, alias), n) in &pending {
            stmt.execute(rusqlite::params![*n as i64, now, client, alias])
                .map_err(sqlite_err)?;
        }
    }
    tx.commit().map_err(sqlite_err)
}

/// Inserts or re-points `alias → canonical` (canonical already resolved).
fn put_alias(conn: &Connection, client: &str, alias: &str, canonical: &str) -> Result<()> {
    let now = now_rfc3339();
    conn.prepare_cached(
        "INSERT INTO aliases(client, alias_key, canonical_key, seen_count, first_seen_at, last_seen_at) VALUES (?1, ?2, ?3, 1, ?4, ?4) \
         ON CONFLICT(client, alias_key) DO UPDATE SET canonical_key = excluded.canonical_key, seen_count = seen_count + 1, last_seen_at = excluded.last_seen_at",
    )
    .map_err(sqlite_err)?
    .execute(rusqlite::params![client, alias, canonical, now])
    .map_err(sqlite_err)?;
    Ok(())
}

fn get_entry(conn: &Connection, client: &str, alias: &str) -> Result<AliasEntry> {
    conn.query_row(
        "SELECT alias_key, canonical_key, seen_count, first_seen_at, last_seen_at FROM aliases WHERE client = ?1 AND alias_key = ?2",
        [client, alias],
        entry,
    )
    .map_err(sqlite_err)
}

#[async_trait]
impl AliasRegistry for EmbeddedStore {
    async fn resolve(&self, client: &str, aliases: &[NodeKey]) -> Result<Vec<NodeKey>> {
        let (client, aliases) = (client.to_string(), aliases.to_vec());
        let resolved = self
            .read(move |conn, inner| {
                let mut out = Vec::with_capacity(aliases.len());
                let mut hits = Vec::new();
                for alias in aliases {
                    match canonical_of(conn, &client, alias.as_str())? {
                        Some(c) => {
                            hits.push((client.clone(), alias.as_str().to_string()));
                            out.push(NodeKey::from_canonical(c));
                        }
                        None => out.push(alias),
                    }
                }
                let mut seen = inner.seen.lock();
                for h in hits {
                    *seen.entry(h).or_insert(0) += 1;
                }
                Ok(out)
            })
            .await?;
        Ok(resolved)
    }

    async fn register_many(&self, client: &str, pairs: &[(NodeKey, NodeKey)]) -> Result<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        let (client, pairs) = (client.to_string(), pairs.to_vec());
        self.write(move |conn, _| {
            let tx = conn.transaction().map_err(sqlite_err)?;
            // Each pair exactly as `register` does it, in one transaction.
            for (alias, canonical) in &pairs {
                let target = canonical_of(&tx, &client, canonical.as_str())?.unwrap_or_else(|| canonical.as_str().to_string());
                if target == alias.as_str() && alias != canonical {
                    return Err(StoreError::invalid(format!("registering {alias} → {canonical} would create a cycle")));
                }
                put_alias(&tx, &client, alias.as_str(), &target)?;
                if alias.as_str() != target {
                    tx.execute("UPDATE aliases SET canonical_key = ?1 WHERE client = ?2 AND canonical_key = ?3", rusqlite::params![target, client, alias.as_str()])
                        .map_err(sqlite_err)?;
                }
            }
            tx.commit().map_err(sqlite_err)?;
            Ok(())
        })
        .await
    }

    async fn register(
        &self,
        client: &str,
        alias: &NodeKey,
        canonical: &NodeKey,
    ) -> Result<AliasEntry> {
        let (client, alias, canonical) = (client.to_string(), alias.clone(), canonical.clone());
        self.write(move |conn, _| {
            let tx = conn.transaction().map_err(sqlite_err)?;
            // Point at the end of the chain, so resolution is one lookup.
            let target = canonical_of(&tx, &client, canonical.as_str())?.unwrap_or_else(|| canonical.as_str().to_string());
            if target == alias.as_str() && alias != canonical {
                return Err(StoreError::invalid(format!("registering {alias} → {canonical} would create a cycle")));
            }
            put_alias(&tx, &client, alias.as_str(), &target)?;
            // Anything that pointed at the alias now points at its canonical.
            if alias.as_str() != target {
                tx.execute("UPDATE aliases SET canonical_key = ?1 WHERE client = ?2 AND canonical_key = ?3", rusqlite::params![target, client, alias.as_str()])
                    .map_err(sqlite_err)?;
            }
            let e = get_entry(&tx, &client, alias.as_str())?;
            tx.commit().map_err(sqlite_err)?;
            Ok(e)
        })
        .await
    }

    async fn merge(&self, client: &str, source: &NodeKey, target: &NodeKey) -> Result<u64> {
        if source == target {
            return Err(StoreError::invalid("cannot merge a key into itself"));
        }
        let (client, source, target) = (client.to_string(), source.clone(), target.clone());
        self.write(move |conn, _| {
            let tx = conn.transaction().map_err(sqlite_err)?;
            let target = canonical_of(&tx, &client, target.as_str())?.unwrap_or_else(|| target.as_str().to_string());
            if target == source.as_str() {
                return Err(StoreError::invalid(format!("{target} already resolves to {source}; merging would create a cycle")));
            }
            let moved = tx
                .execute(
                    "UPDATE aliases SET canonical_key = ?1 WHERE client = ?2 AND canonical_key = ?3 AND alias_key <> ?1",
                    rusqlite::params![target, client, source.as_str()],
                )
                .map_err(sqlite_err)?;
            // The target must not be an alias of anything (it is canonical now).
            tx.execute("DELETE FROM aliases WHERE client = ?1 AND alias_key = ?2", rusqlite::params![client, target]).map_err(sqlite_err)?;
            put_alias(&tx, &client, source.as_str(), &target)?;
            tx.commit().map_err(sqlite_err)?;
            Ok(moved as u64 + 1)
        })
        .await
    }

    async fn list(&self, client: &str, canonical: &NodeKey) -> Result<Vec<AliasEntry>> {
        let (client, canonical) = (client.to_string(), canonical.clone());
        self.read(move |conn, _| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT alias_key, canonical_key, seen_count, first_seen_at, last_seen_at FROM aliases \
                     WHERE client = ?1 AND canonical_key = ?2 ORDER BY alias_key",
                )
                .map_err(sqlite_err)?;
            let rows = stmt.query_map([&client, canonical.as_str()], entry).map_err(sqlite_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sqlite_err)
        })
        .await
    }

    async fn stats(&self, client: &str, top: usize) -> Result<AliasStats> {
        self.flush().await?;
        let client = client.to_string();
        self.read(move |conn, _| {
            let (total, unique): (i64, i64) = conn
                .query_row("SELECT count(*), count(DISTINCT canonical_key) FROM aliases WHERE client = ?1", [&client], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(sqlite_err)?;
            let mut stmt = conn
                .prepare_cached(
                    "SELECT alias_key, canonical_key, seen_count, first_seen_at, last_seen_at FROM aliases \
                     WHERE client = ?1 ORDER BY seen_count DESC, alias_key LIMIT ?2",
                )
                .map_err(sqlite_err)?;
            let top_aliases = stmt
                .query_map(rusqlite::params![client, top as i64], entry)
                .map_err(sqlite_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sqlite_err)?;
            Ok(AliasStats { total_aliases: total as u64, unique_canonicals: unique as u64, top_aliases })
        })
        .await
    }

    async fn flush(&self) -> Result<()> {
        self.compute(flush_seen).await
    }
}
