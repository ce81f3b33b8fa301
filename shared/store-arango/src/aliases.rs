//! [`AliasRegistry`] on ArangoDB: one `aliases` collection, unique on (clientId, aliasKey).
//!
//! `resolve` is one read query for all aliases; seen counts accumulate in memory and are
//! written by `flush` (and before `stats`) in one query. Writes are short sequences of
//! idempotent queries mirroring the embedded store's transaction; a unique-constraint race
//! on insert (two registers of a new alias at once) is retried as the update it now is.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use evident_core::NodeKey;
use evident_store::{AliasEntry, AliasRegistry, AliasStats, Result, StoreError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::Error;
use crate::{ALIASES_COLLECTION, ArangoStore, aql};

/// Aliases sent in one resolve query.
const BATCH: usize = 1000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AliasDoc {
    alias_key: String,
    canonical_key: String,
    #[serde(default)]
    seen_count: u64,
    #[serde(default)]
    first_seen_at: String,
    #[serde(default)]
    last_seen_at: String,
}

impl AliasDoc {
    fn entry(self) -> AliasEntry {
        AliasEntry {
            alias: NodeKey::from_canonical(self.alias_key),
            canonical: NodeKey::from_canonical(self.canonical_key),
            seen_count: self.seen_count,
            first_seen_at: self.first_seen_at,
            last_seen_at: self.last_seen_at,
        }
    }
}

#[derive(Deserialize)]
struct Resolved {
    alias: String,
    canonical: String,
}

#[derive(Deserialize)]
struct Stats {
    total: u64,
    unique: u64,
    top: Vec<AliasDoc>,
}

impl ArangoStore {
    /// Canonical keys of the known aliases among `aliases` of `client`.
    async fn lookup(
        &self,
        client: &str,
        aliases: &[&str],
    ) -> std::result::Result<HashMap<String, String>, Error> {
        let mut out = HashMap::with_capacity(aliases.len());
        for batch in aliases.chunks(BATCH) {
            let bind = json!({
                "@aliases": ALIASES_COLLECTION,
                "client": client,
                "aliases": batch,
            });
            for r in self
                .client()
                .cursor_as::<Resolved>(aql::ALIAS_RESOLVE, bind)
                .await?
            {
                out.insert(r.alias, r.canonical);
            }
        }
        Ok(out)
    }

    async fn canonical_of(
        &self,
        client: &str,
        alias: &str,
    ) -> std::result::Result<Option<String>, Error> {
        Ok(self.lookup(client, &[alias]).await?.remove(alias))
    }

    /// Inserts or re-points `alias → canonical` (canonical already resolved), seen once more.
    async fn put_alias(
        &self,
        client: &str,
        alias: &str,
        canonical: &str,
    ) -> std::result::Result<AliasEntry, Error> {
        let bind = json!({
            "@aliases": ALIASES_COLLECTION,
            "client": client,
            "alias": alias,
            "canonical": canonical,
        });
        let rows = match self
            .client()
            .cursor_as::<AliasDoc>(aql::ALIAS_PUT, bind.clone())
            .await
        {
            // Another writer inserted the same alias between our lookup and insert: it
            // exists now, so the same statement takes its update path.
            Err(e) if e.is_unique_violation() => {
                self.client()
                    .cursor_as::<AliasDoc>(aql::ALIAS_PUT, bind)
                    .await?
            }
            other => other?,
        };
        rows.into_iter()
            .next()
            .map(AliasDoc::entry)
            .ok_or_else(|| Error::Protocol("alias upsert returned no document".into()))
    }

    /// Points every alias of `from` (but `to` itself) at `to`; how many moved.
    async fn repoint(&self, client: &str, from: &str, to: &str) -> std::result::Result<u64, Error> {
        let bind = json!({
            "@aliases": ALIASES_COLLECTION,
            "client": client,
            "from": from,
            "to": to,
        });
        Ok(self.client().cursor(aql::ALIAS_REPOINT, bind).await?.len() as u64)
    }
}

#[async_trait]
impl AliasRegistry for ArangoStore {
    async fn resolve(&self, client: &str, aliases: &[NodeKey]) -> Result<Vec<NodeKey>> {
        if aliases.is_empty() {
            return Ok(Vec::new());
        }
        let mut unique = HashSet::new();
        let wanted: Vec<&str> = aliases
            .iter()
            .map(NodeKey::as_str)
            .filter(|a| unique.insert(*a))
            .collect();
        let known = self.lookup(client, &wanted).await?;
        let mut hits: Vec<&str> = Vec::new();
        let out = aliases
            .iter()
            .map(|a| match known.get(a.as_str()) {
                Some(c) => {
                    hits.push(a.as_str());
                    NodeKey::from_canonical(c.clone())
                }
                None => a.clone(),
            })
            .collect();
        if !hits.is_empty() {
            let mut seen = self.inner.seen.lock();
            for h in hits {
                *seen.entry((client.to_string(), h.to_string())).or_insert(0) += 1;
            }
        }
        Ok(out)
    }

    async fn register(
        &self,
        client: &str,
        alias: &NodeKey,
        canonical: &NodeKey,
    ) -> Result<AliasEntry> {
        // Point at the end of the chain, so resolution is one lookup.
        let target = self
            .canonical_of(client, canonical.as_str())
            .await?
            .unwrap_or_else(|| canonical.as_str().to_string());
        if target == alias.as_str() && alias != canonical {
            return Err(StoreError::invalid(format!(
                "registering {alias} → {canonical} would create a cycle"
            )));
        }
        let entry = self.put_alias(client, alias.as_str(), &target).await?;
        // Anything that pointed at the alias now points at its canonical.
        if alias.as_str() != target {
            self.repoint(client, alias.as_str(), &target).await?;
        }
        Ok(entry)
    }

    async fn merge(&self, client: &str, source: &NodeKey, target: &NodeKey) -> Result<u64> {
        evident_store::check_merge(source, target)?;
        let target = self
            .canonical_of(client, target.as_str())
            .await?
            .unwrap_or_else(|| target.as_str().to_string());
        if target == source.as_str() {
            return Err(StoreError::invalid(format!(
                "{target} already resolves to {source}; merging would create a cycle"
            )));
        }
        let moved = self.repoint(client, source.as_str(), &target).await?;
        // The target must not be an alias of anything (it is canonical now).
        let bind = json!({
            "@aliases": ALIASES_COLLECTION,
            "client": client,
            "alias": target,
        });
        self.client().cursor(aql::ALIAS_REMOVE, bind).await?;
        self.put_alias(client, source.as_str(), &target).await?;
        Ok(moved + 1)
    }

    async fn list(&self, client: &str, canonical: &NodeKey) -> Result<Vec<AliasEntry>> {
        let bind = json!({
            "@aliases": ALIASES_COLLECTION,
            "client": client,
            "canonical": canonical.as_str(),
        });
        let mut entries: Vec<AliasEntry> = self
            .client()
            .cursor_as::<AliasDoc>(aql::ALIAS_LIST, bind)
            .await?
            .into_iter()
            .map(AliasDoc::entry)
            .collect();
        // Byte order, whatever collation the server sorts with.
        entries.sort_by(|a, b| a.alias.cmp(&b.alias));
        Ok(entries)
    }

    async fn stats(&self, client: &str, top: usize) -> Result<AliasStats> {
        self.flush().await?;
        let bind = json!({
            "@aliases": ALIASES_COLLECTION,
            "client": client,
            "top": top,
        });
        let rows = self
            .client()
            .cursor_as::<Stats>(aql::ALIAS_STATS, bind)
            .await?;
        let stats = rows
            .into_iter()
            .next()
            .ok_or_else(|| Error::Protocol("alias stats returned no row".into()))?;
        Ok(AliasStats {
            total_aliases: stats.total,
            unique_canonicals: stats.unique,
            top_aliases: stats.top.into_iter().map(AliasDoc::entry).collect(),
        })
    }

    async fn flush(&self) -> Result<()> {
        let mut pending: Vec<((String, String), u64)> = self.inner.seen.lock().drain().collect();
        pending.sort();
        if pending.is_empty() {
            return Ok(());
        }
        let items: Vec<Value> = pending
            .iter()
            .map(
                |((client, alias), n)| json!({ "clientId": client, "aliasKey": alias, "count": n }),
            )
            .collect();
        let bind = json!({ "@aliases": ALIASES_COLLECTION, "pending": items });
        match self.client().cursor(aql::ALIAS_FLUSH, bind).await {
            Ok(_) => Ok(()),
            Err(e) => {
                // Keep the counts for the next flush. A flush that timed out after the server
                // applied it is counted twice: seen counts are usage statistics, kept
                // at-least-once rather than dropped on every network error.
                let mut seen = self.inner.seen.lock();
                for (k, n) in pending {
                    *seen.entry(k).or_insert(0) += n;
                }
                Err(e.into())
            }
        }
    }
}
