//! Evident on ArangoDB: the knowledge graph ([`GraphStore`](evident_store::GraphStore)) and
//! the alias registry ([`AliasRegistry`](evident_store::AliasRegistry)), over ArangoDB's HTTP
//! API with a small typed client on reqwest.
//!
//! # Layout (reference-behaviour §4)
//!
//! One database ([`ArangoConfig::database`], created at connect when missing) holds:
//! - per client partition `C`: the document collection `c{C}_nodes`, the edge collection
//!   `c{C}_edges` and the named graph `c{C}_graph` over them; the global partition `""` uses
//!   `global_nodes`, `global_edges`, `global_graph`. They are created on a partition's first
//!   write (and remembered per process); reads of a partition that does not exist yet see
//!   nothing.
//! - node documents `{_key, key, type, label, props, evidence: [{chunkId, clientId,
//!   projectId, groupId}], updatedAt}` with persistent indexes on `type`, `key` and
//!   `evidence[*].chunkId`;
//! - edge documents `{_key, _from, _to, fromKey, toKey, edgeType, props, evidence}` with
//!   persistent indexes on `edgeType`, `evidence[*].chunkId` and `(fromKey, edgeType, toKey)`,
//!   plus ArangoDB's edge index on `_from` / `_to` that traversal uses;
//! - the collection `aliases` of `{clientId, aliasKey, canonicalKey, seenCount, firstSeenAt,
//!   lastSeenAt}`, unique on `(clientId, aliasKey)` and indexed on `(clientId, canonicalKey)`;
//!   it has a single shard, the only way a cluster enforces a unique index on attributes
//!   other than the shard key.
//!
//! The `key` and `(fromKey, edgeType, toKey)` indexes are not unique: `_key` is derived one to
//! one from those values, so the primary index already guarantees uniqueness, and a cluster
//! cannot enforce a unique index on attributes other than the shard key (`_key`) of a
//! collection with several shards.
//!
//! # Keys
//!
//! Canonical node keys stay human readable and are stored in the `key` field; `_key` is an
//! encoding of them within ArangoDB's rules (reversible percent-escaping, a hash suffix past
//! 200 bytes), never decoded. Edge `_key`s hash `(from, edge type, to)`. See [`keys`].
//!
//! # Semantics
//!
//! The same as the embedded reference store: evidence per chunk with the chunk's scope; a
//! node or edge is visible when one of its evidence items is admitted by the reader's
//! visibility, evaluated inside the AQL queries (see [`aql`]); reads span the global and the
//! reader's client partition and merge the same key into one node (the client's record
//! wins on type, label and top-level props); an edge's evidence also evidences both its
//! endpoints; mentions never overwrite descriptions; removing evidence deletes whatever is
//! left without any. Every write is one AQL query per step, idempotent, so a failed step is
//! repaired by running the same call again (the [`SequencedWriter`](evident_store::SequencedWriter)
//! contract). Queries use bind parameters only.
//!
//! # Failures
//!
//! Connection errors, timeouts, 5xx, 503 and authentication failures are `Unavailable`
//! (operators fix credentials; retrying is harmless); write-write conflicts (1200) and unique
//! violations (1210) are `Conflict`; query errors (400, 404) are `Invalid`. The table is in
//! the `error` module.
//!
//! Must not: build AQL from values, log credentials, or know about chunks, embeddings or
//! ingest rules.

mod aliases;
pub mod aql;
mod client;
mod config;
mod error;
mod graph;
mod health;
pub mod keys;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use evident_core::Visibility;
use evident_store::StoreError;
use parking_lot::Mutex;
use serde_json::{Value, json};

pub use config::{ArangoConfig, DEFAULT_TIMEOUT_SECS};
pub use error::Error;

use client::Client;
use keys::PartitionNames;

/// The collection of the alias registry.
pub const ALIASES_COLLECTION: &str = "aliases";

/// The ArangoDB store: graph and alias registry. Cheap to clone.
#[derive(Clone)]
pub struct ArangoStore {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) client: Client,
    /// Partitions whose collections, indexes and graph this process has made sure of.
    ensured: Mutex<HashSet<String>>,
    /// Alias seen counts accumulated by `resolve`: (client, alias) → count.
    pub(crate) seen: Mutex<HashMap<(String, String), u64>>,
}

impl ArangoStore {
    /// Connects: checks the server answers, creates the database when missing (through
    /// `_system`; an existing one is fine) and the alias collection with its indexes.
    ///
    /// A server that does not disclose its version (`--server.harden` hides it from non-admin
    /// users) is accepted; its version is logged as unknown.
    pub async fn connect(cfg: &ArangoConfig) -> Result<ArangoStore, StoreError> {
        let client = Client::new(cfg)?;
        let version = client.version().await?;
        if version.is_none() {
            tracing::warn!(
                database = %cfg.database,
                "ArangoDB did not disclose its version (a server started with --server.harden \
                 hides it from non-admin users); continuing with the version unknown"
            );
        }
        if !client.database_exists().await? {
            client.create_database().await?;
            tracing::info!(database = %cfg.database, "created ArangoDB database");
        }
        // One shard: the unique (clientId, aliasKey) index below is on attributes other than
        // the shard key, which a cluster can only enforce in a single-shard collection.
        client
            .create_collection(ALIASES_COLLECTION, false, Some(1))
            .await?;
        client
            .ensure_index(ALIASES_COLLECTION, &["clientId", "aliasKey"], true)
            .await?;
        client
            .ensure_index(ALIASES_COLLECTION, &["clientId", "canonicalKey"], false)
            .await?;
        tracing::info!(
            database = %cfg.database,
            version = version.as_deref().unwrap_or("unknown"),
            "ArangoDB store connected"
        );
        Ok(ArangoStore {
            inner: Arc::new(Inner {
                client,
                ensured: Mutex::new(HashSet::new()),
                seen: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Drops the configured database (test teardown, decommissioning). `false` when it did
    /// not exist. Needs the same rights as creating it.
    pub async fn drop_database(cfg: &ArangoConfig) -> Result<bool, StoreError> {
        let client = Client::new(cfg)?;
        Ok(client.drop_database().await?)
    }

    /// The database this store uses.
    pub fn database(&self) -> &str {
        self.inner.client.database()
    }

    pub(crate) fn client(&self) -> &Client {
        &self.inner.client
    }

    /// Makes sure partition `partition`'s collections, indexes and graph exist (once per
    /// process; every step accepts what already exists).
    pub(crate) async fn ensure_partition(&self, partition: &str) -> Result<PartitionNames, Error> {
        let names = keys::partition_names(partition);
        if self.inner.ensured.lock().contains(partition) {
            return Ok(names);
        }
        let c = self.client();
        c.create_collection(&names.nodes, false, None).await?;
        c.create_collection(&names.edges, true, None).await?;
        // `key` and `(fromKey, edgeType, toKey)` determine `_key` one to one, so the primary
        // index keeps them unique; unique indexes on them would fail in a cluster collection
        // with several shards (not sharded by those attributes).
        c.ensure_index(&names.nodes, &["type"], false).await?;
        c.ensure_index(&names.nodes, &["key"], false).await?;
        c.ensure_index(&names.nodes, &["evidence[*].chunkId"], false)
            .await?;
        c.ensure_index(&names.edges, &["edgeType"], false).await?;
        c.ensure_index(&names.edges, &["evidence[*].chunkId"], false)
            .await?;
        c.ensure_index(&names.edges, &["fromKey", "edgeType", "toKey"], false)
            .await?;
        c.create_graph(&names.graph, &names.edges, &names.nodes)
            .await?;
        tracing::info!(partition, nodes = %names.nodes, "ArangoDB partition ready");
        self.inner.ensured.lock().insert(partition.to_string());
        Ok(names)
    }

    /// Forgets that a partition exists (its collections were found missing).
    pub(crate) fn forget_partition(&self, partition: &str) {
        self.inner.ensured.lock().remove(partition);
    }

    /// Runs a query against one partition; a partition whose collections do not exist
    /// yields `None` (nothing stored there).
    pub(crate) async fn partition_query(
        &self,
        partition: &str,
        query: &str,
        bind_vars: Value,
    ) -> Result<Option<Vec<Value>>, Error> {
        match self.client().cursor(query, bind_vars).await {
            Ok(rows) => Ok(Some(rows)),
            Err(e) if e.is_collection_missing() => {
                self.forget_partition(partition);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// The reader's visibility as the `@vis` bind parameter (see [`aql`]).
pub(crate) fn vis_bind(vis: &Visibility) -> Value {
    Value::Array(
        vis.clauses()
            .into_iter()
            .map(|c| {
                json!({
                    "clientId": c.client_id,
                    "projectId": c.project_id,
                    "groupId": c.group_id.clone().flatten(),
                    "anyGroup": c.group_id.is_none(),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use evident_core::Scope;

    #[test]
    fn visibility_binds_every_clause() {
        let vis = Visibility::of(Scope::client("c1").with_project("p1").with_group("g1"));
        assert_eq!(
            vis_bind(&vis),
            json!([
                {"clientId": null, "projectId": null, "groupId": null, "anyGroup": false},
                {"clientId": "c1", "projectId": null, "groupId": null, "anyGroup": false},
                {"clientId": "c1", "projectId": null, "groupId": "g1", "anyGroup": false},
                {"clientId": "c1", "projectId": "p1", "groupId": null, "anyGroup": true},
            ])
        );
    }

    /// The AQL filter over `@vis`, evaluated in Rust, agrees with `Visibility::admits`.
    #[test]
    fn the_bound_clauses_evaluate_like_admits() {
        let ids = [None, Some("a"), Some("b")];
        let mut scopes = Vec::new();
        for c in ids {
            for p in ids {
                for g in ids {
                    scopes.push(Scope {
                        client_id: c.map(str::to_string),
                        project_id: p.map(str::to_string),
                        group_id: g.map(str::to_string),
                    });
                }
            }
        }
        let consistent: Vec<&Scope> = scopes.iter().filter(|s| s.is_consistent()).collect();
        for reader in &consistent {
            let vis = Visibility::of((*reader).clone());
            let bound = vis_bind(&vis);
            for data in &consistent {
                let x = json!({
                    "clientId": data.client_id,
                    "projectId": data.project_id,
                    "groupId": data.group_id,
                });
                let by_aql_rule = bound.as_array().into_iter().flatten().any(|c| {
                    c["clientId"] == x["clientId"]
                        && c["projectId"] == x["projectId"]
                        && (c["anyGroup"] == json!(true) || c["groupId"] == x["groupId"])
                });
                assert_eq!(by_aql_rule, vis.admits(data), "{reader:?} reading {data:?}");
            }
        }
    }
}
