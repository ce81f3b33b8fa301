//! AliasRegistry over SQLite. `resolve` is a pure read; seen counts accumulate in memory and
//! are flushed in one transaction (on `flush`, on writes to the registry, and at close).

use async_trait::async_trait;
use evident_core::NodeKey;
use evident_store::{AliasEntry, AliasRegistry, AliasStats, Result, StoreError};
use rusqlite::{Connection, OptionalExtension};

use crate::{EmbeddedStore, Inner, now_rfc3339, sql, sqlite_err};

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

/// Re-points every alias of `client` that resolves to `from` at `to` (except `to` itself).
///
/// Two steps on purpose: the bundled SQLite plans `UPDATE … SET canonical_key = … WHERE
/// canonical_key = …` as a scan of every alias of the client (the index it would search is
/// the one the statement changes), which made each registration linear in the registry's size
/// (measured: most of the code suite's time at 60k aliases). The read searches the index;
/// the rare rows found are updated by primary key.
fn repoint(conn: &Connection, client: &str, from: &str, to: &str) -> Result<usize> {
    let found: Vec<String> = conn
        .prepare_cached(
            "SELECT alias_key FROM aliases INDEXED BY aliases_canonical \
             WHERE client = ?1 AND canonical_key = ?2",
        )
        .map_err(sqlite_err)?
        .query_map([client, from], |r| r.get(0))
        .map_err(sqlite_err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(sqlite_err)?;
    let mut update = conn
        .prepare_cached(
            "UPDATE aliases SET canonical_key = ?1 WHERE client = ?2 AND alias_key = ?3",
        )
        .map_err(sqlite_err)?;
    let mut moved = 0;
    for alias in found.iter().filter(|a| a.as_str() != to) {
        moved += update
            .execute(rusqlite::params![to, client, alias])
            .map_err(sqlite_err)?;
    }
    Ok(moved)
}

/// Registers `alias → canonical` exactly as [`AliasRegistry::register`] specifies: pointed at
/// the end of the chain (so resolution is one lookup), refusing a cycle, and re-pointing what
/// pointed at the alias.
pub(crate) fn register_in(
    conn: &Connection,
    client: &str,
    alias: &NodeKey,
    canonical: &NodeKey,
) -> Result<()> {
    let target = canonical_of(conn, client, canonical.as_str())?
        .unwrap_or_else(|| canonical.as_str().to_string());
    if target == alias.as_str() && alias != canonical {
        return Err(StoreError::invalid(format!(
            "registering {alias} → {canonical} would create a cycle"
        )));
    }
    put_alias(conn, client, alias.as_str(), &target)?;
    if alias.as_str() != target {
        repoint(conn, client, alias.as_str(), &target)?;
        // The alias is a name of its canonical node (the entity index).
        crate::entity_index::reindex_key(conn, client, &target)?;
    }
    Ok(())
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
        // In the next group commit (one fsync shared with the source writes waiting then),
        // under its own savepoint: all pairs or none.
        self.write_grouped(move |conn| {
            for (alias, canonical) in &pairs {
                register_in(conn, &client, alias, canonical)?;
            }
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
        self.write_grouped(move |conn| {
            register_in(conn, &client, &alias, &canonical)?;
            get_entry(conn, &client, alias.as_str())
        })
        .await
    }

    async fn merge(&self, client: &str, source: &NodeKey, target: &NodeKey) -> Result<u64> {
        evident_store::check_merge(source, target)?;
        let (client, source, target) = (client.to_string(), source.clone(), target.clone());
        self.write(move |conn, _| {
            let tx = conn.transaction().map_err(sqlite_err)?;
            let target = canonical_of(&tx, &client, target.as_str())?
                .unwrap_or_else(|| target.as_str().to_string());
            if target == source.as_str() {
                return Err(StoreError::invalid(format!(
                    "{target} already resolves to {source}; merging would create a cycle"
                )));
            }
            let moved = repoint(&tx, &client, source.as_str(), &target)?;
            // The target must not be an alias of anything (it is canonical now).
            tx.execute(
                "DELETE FROM aliases WHERE client = ?1 AND alias_key = ?2",
                rusqlite::params![client, target],
            )
            .map_err(sqlite_err)?;
            put_alias(&tx, &client, source.as_str(), &target)?;
            tx.commit().map_err(sqlite_err)?;
            Ok(moved as u64 + 1)
        })
        .await
    }

    async fn list(&self, client: &str, canonical: &NodeKey) -> Result<Vec<AliasEntry>> {
        let (client, canonical) = (client.to_string(), canonical.clone());
        self.read(move |conn, _| {
            sql::rows(
                conn,
                "SELECT alias_key, canonical_key, seen_count, first_seen_at, last_seen_at FROM aliases \
                 WHERE client = ?1 AND canonical_key = ?2 ORDER BY alias_key",
                [&client, canonical.as_str()],
                entry,
            )
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
            let top_aliases = sql::rows(
                conn,
                "SELECT alias_key, canonical_key, seen_count, first_seen_at, last_seen_at FROM aliases \
                 WHERE client = ?1 ORDER BY seen_count DESC, alias_key LIMIT ?2",
                rusqlite::params![client, top as i64],
                entry,
            )?;
            Ok(AliasStats { total_aliases: total as u64, unique_canonicals: unique as u64, top_aliases })
        })
        .await
    }

    async fn flush(&self) -> Result<()> {
        self.compute(flush_seen).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        let c = Connection::open_in_memory().expect("open");
        c.execute_batch(crate::schema::DDL).expect("schema");
        c
    }

    /// Re-pointing searches the canonical index on both columns (a scan made every
    /// registration linear in the registry's size).
    #[test]
    fn repointing_searches_the_canonical_index() {
        let c = conn();
        let plan: Vec<String> = c
            .prepare(
                "EXPLAIN QUERY PLAN SELECT alias_key FROM aliases INDEXED BY aliases_canonical \
                 WHERE client = ?1 AND canonical_key = ?2",
            )
            .expect("plan")
            .query_map(["c", "k"], |r| r.get(3))
            .expect("rows")
            .collect::<rusqlite::Result<_>>()
            .expect("plan rows");
        assert!(
            plan.iter()
                .any(|p| p.contains("aliases_canonical (client=? AND canonical_key=?)")),
            "{plan:?}"
        );
    }

    /// Chains stay one lookup long: registering `b → c` re-points `a → b` at `c`, and the
    /// target itself is never pointed at itself.
    #[test]
    fn registering_repoints_the_chain() {
        let c = conn();
        let k = NodeKey::from_canonical;
        register_in(&c, "x", &k("a:1"), &k("b:1")).expect("a → b");
        register_in(&c, "x", &k("b:1"), &k("c:1")).expect("b → c");
        for alias in ["a:1", "b:1"] {
            assert_eq!(
                canonical_of(&c, "x", alias).expect("read").as_deref(),
                Some("c:1")
            );
        }
        let cycle = register_in(&c, "x", &k("c:1"), &k("a:1"));
        assert!(cycle.is_err(), "c → a would close a cycle");
        // `a:1 → c:1` is not re-pointed at itself (a merge deletes it instead); `b:1` moves.
        assert_eq!(repoint(&c, "x", "c:1", "a:1").expect("repoint"), 1);
        assert_eq!(
            canonical_of(&c, "x", "b:1").expect("read").as_deref(),
            Some("a:1")
        );
        assert_eq!(repoint(&c, "y", "a:1", "z:1").expect("other client"), 0);
    }
}
