//! [`IndexerStore`] on MongoDB.
//!
//! `indexer_sources`: `_id: {clientId, id}` (a source is unique per client: the same id in
//! two clients is two sources), `kind`, scope fields, `config` and `stats` (JSON text),
//! `intervalSecs`, `enabled`, `createdAt`, `updatedAt`, `lastPollAt`, `lastSuccessAt`,
//! `lastError`, and the polling lease: `owner`, `leaseExpiresAt`, `leaseEpoch`.
//! `indexer_cursors`: `_id: {clientId, source, key}`, `clientId`, `source`, `key`, `value`
//! (JSON text), `epoch`.
//!
//! Databases written before sources were keyed by client (`_id` the id alone) are migrated
//! at open ([`MongoStore::migrate_source_keys`]).
//!
//! `acquire` is one conditional update (free, expired or already the owner's), so at most one
//! owner holds an unexpired lease; each acquisition bumps `leaseEpoch`. Cursor writes check
//! that the writer holds the lease and then write conditionally on the cursor's `epoch` not
//! being newer than the writer's lease epoch: once a new holder has written a cursor, a
//! replica that lost the lease cannot overwrite it (its upsert hits the existing `_id`: a
//! duplicate key, reported as `false`), even if it passed the holder check just before
//! losing the lease.

use async_trait::async_trait;
use bson::{Document, doc};
use evident_store::Result;
use evident_store::indexers::{IndexerSource, IndexerStore, PollStatus, SourceKey};
use evident_store::queue::Millis;
use serde_json::Value;

use crate::MongoStore;
use crate::codes;
use crate::fields::*;
use crate::schema::{INDEXER_CURSORS, INDEXER_SOURCES};

pub(crate) fn source_id(k: &SourceKey) -> Document {
    doc! {"clientId": k.client_id.as_str(), "id": k.id.as_str()}
}

pub(crate) fn cursor_id(k: &SourceKey, key: &str) -> Document {
    doc! {"clientId": k.client_id.as_str(), "source": k.id.as_str(), "key": key}
}

/// Registers a source or replaces its settings, keeping status, lease and cursors.
pub(crate) fn put_source_command(s: &IndexerSource, config: &str, now: Millis) -> Document {
    let mut set = doc! {
        "kind": s.kind.as_str(),
        "config": config,
        "intervalSecs": i64::try_from(s.interval_secs).unwrap_or(i64::MAX),
        "enabled": s.enabled,
        "updatedAt": now,
    };
    let mut unset = Document::new();
    scope_fields(&s.scope, &mut set, &mut unset);
    let mut update = set_unset(set, unset);
    update.insert("$setOnInsert", doc! {"createdAt": now, "stats": "{}"});
    doc! {
        "findAndModify": INDEXER_SOURCES,
        "query": {"_id": source_id(&s.key())},
        "update": update,
        "upsert": true,
        "new": true,
    }
}

pub(crate) fn get_source_command(k: &SourceKey) -> Document {
    doc! {"find": INDEXER_SOURCES, "filter": {"_id": source_id(k)}, "limit": 1, "singleBatch": true}
}

pub(crate) fn list_sources_command(kind: Option<&str>) -> Document {
    let filter = match kind {
        Some(k) => doc! {"kind": k},
        None => Document::new(),
    };
    doc! {"find": INDEXER_SOURCES, "filter": filter, "sort": {"_id": 1}}
}

pub(crate) fn delete_cursors_command(k: &SourceKey) -> Document {
    doc! {"delete": INDEXER_CURSORS, "deletes": [{"q": {"clientId": k.client_id.as_str(), "source": k.id.as_str()}, "limit": 0}]}
}

pub(crate) fn delete_source_command(k: &SourceKey) -> Document {
    doc! {"delete": INDEXER_SOURCES, "deletes": [{"q": {"_id": source_id(k)}, "limit": 1}]}
}

/// Takes or renews the lease: free, expired, or already `owner`'s.
pub(crate) fn acquire_command(k: &SourceKey, owner: &str, lease_ms: i64, now: Millis) -> Document {
    doc! {
        "update": INDEXER_SOURCES,
        "updates": [{
            "q": {
                "_id": source_id(k),
                "$or": [
                    {"owner": null},
                    {"owner": owner},
                    {"leaseExpiresAt": {"$lte": now}},
                ],
            },
            "u": {
                "$set": {"owner": owner, "leaseExpiresAt": now.saturating_add(lease_ms)},
                "$inc": {"leaseEpoch": 1i64},
            },
        }],
    }
}

pub(crate) fn release_command(k: &SourceKey, owner: &str) -> Document {
    doc! {
        "update": INDEXER_SOURCES,
        "updates": [{
            "q": {"_id": source_id(k), "owner": owner},
            "u": {"$unset": {"owner": "", "leaseExpiresAt": ""}},
        }],
    }
}

pub(crate) fn record_poll_command(
    k: &SourceKey,
    owner: &str,
    now: Millis,
    error: Option<&str>,
    stats: &str,
) -> Document {
    let mut set = doc! {"lastPollAt": now, "stats": stats};
    let mut unset = Document::new();
    match error {
        Some(e) => {
            set.insert("lastError", e);
        }
        None => {
            set.insert("lastSuccessAt", now);
            unset.insert("lastError", "");
        }
    }
    doc! {
        "update": INDEXER_SOURCES,
        "updates": [{"q": {"_id": source_id(k), "owner": owner}, "u": set_unset(set, unset)}],
    }
}

/// The lease epoch of `owner` if it holds the source's lease.
pub(crate) fn holder_command(k: &SourceKey, owner: &str) -> Document {
    doc! {
        "find": INDEXER_SOURCES,
        "filter": {"_id": source_id(k), "owner": owner},
        "projection": {"leaseEpoch": 1},
        "limit": 1,
        "singleBatch": true,
    }
}

pub(crate) fn get_cursor_command(k: &SourceKey, key: &str) -> Document {
    doc! {"find": INDEXER_CURSORS, "filter": {"_id": cursor_id(k, key)}, "limit": 1, "singleBatch": true}
}

/// Writes a cursor unless a holder of a newer lease already wrote it.
pub(crate) fn put_cursor_command(k: &SourceKey, key: &str, value: &str, epoch: i64) -> Document {
    doc! {
        "update": INDEXER_CURSORS,
        "updates": [{
            "q": {
                "_id": cursor_id(k, key),
                "$or": [{"epoch": {"$lte": epoch}}, {"epoch": {"$exists": false}}],
            },
            "u": {"$set": {"clientId": k.client_id.as_str(), "source": k.id.as_str(), "key": key, "value": value, "epoch": epoch}},
            "upsert": true,
        }],
    }
}

pub(crate) fn list_cursors_command(k: &SourceKey) -> Document {
    doc! {"find": INDEXER_CURSORS, "filter": {"clientId": k.client_id.as_str(), "source": k.id.as_str()}, "sort": {"key": 1}}
}

pub(crate) fn delete_cursor_command(k: &SourceKey, key: &str) -> Document {
    doc! {"delete": INDEXER_CURSORS, "deletes": [{"q": {"_id": cursor_id(k, key)}, "limit": 1}]}
}

/// Sources written before they were keyed by client (`_id` the id alone).
pub(crate) fn legacy_sources_command() -> Document {
    doc! {"find": INDEXER_SOURCES, "filter": {"_id.clientId": {"$exists": false}}}
}

/// The cursors of a source written before they were keyed by client.
pub(crate) fn legacy_cursors_command(id: &str) -> Document {
    doc! {"find": INDEXER_CURSORS, "filter": {"source": id, "clientId": {"$exists": false}}}
}

fn source_from_doc(d: &Document) -> Result<IndexerSource> {
    const WHAT: &str = "indexer source";
    let id = match d.get_document("_id") {
        Ok(key) => req_str(key, "id", WHAT)?,
        Err(_) => req_str(d, "_id", WHAT)?, // written before sources were keyed by client
    };
    Ok(IndexerSource {
        id,
        kind: req_str(d, "kind", WHAT)?,
        scope: scope_of(d),
        config: parse_json(d, "config", WHAT)?,
        interval_secs: req_i64(d, "intervalSecs", WHAT)?.max(0) as u64,
        enabled: opt_bool(d, "enabled").unwrap_or(false),
        created_at: req_i64(d, "createdAt", WHAT)?,
        updated_at: req_i64(d, "updatedAt", WHAT)?,
        status: PollStatus {
            last_poll_at: opt_i64(d, "lastPollAt"),
            last_success_at: opt_i64(d, "lastSuccessAt"),
            last_error: opt_str(d, "lastError"),
            stats: match d.get("stats") {
                Some(_) => parse_json(d, "stats", WHAT)?,
                None => Value::Object(Default::default()),
            },
            owner: opt_str(d, "owner"),
            lease_expires_at: opt_i64(d, "leaseExpiresAt"),
        },
    })
}

impl MongoStore {
    /// The lease epoch of `owner`, if it holds the source's lease.
    async fn holder_epoch(&self, k: &SourceKey, owner: &str) -> Result<Option<i64>> {
        Ok(self
            .db()
            .find_one("indexer lease", holder_command(k, owner))
            .await?
            .map(|d| opt_i64(&d, "leaseEpoch").unwrap_or(0)))
    }

    /// Re-keys sources written before they were keyed by client: each source and its cursors
    /// are copied under `{clientId, …}` keys, then the old documents deleted. Idempotent and
    /// crash-safe: a copy that exists is a duplicate key (kept), and an old source is deleted
    /// last, so a crash leaves it to be migrated again at the next open.
    pub async fn migrate_source_keys(&self) -> Result<usize> {
        let legacy = self
            .db()
            .find_all("migrate sources", legacy_sources_command())
            .await?;
        for d in &legacy {
            let old = req_str(d, "_id", "indexer source")?;
            let key = SourceKey::new(opt_str(d, "clientId").unwrap_or_default(), old.clone());
            let mut copy = d.clone();
            copy.insert("_id", source_id(&key));
            self.insert_keeping("migrate sources", INDEXER_SOURCES, copy)
                .await?;
            let cursors = self
                .db()
                .find_all("migrate cursors", legacy_cursors_command(&old))
                .await?;
            for c in cursors {
                let mut copy = c.clone();
                copy.insert(
                    "_id",
                    cursor_id(&key, &req_str(&c, "key", "indexer cursor")?),
                );
                copy.insert("clientId", key.client_id.as_str());
                self.insert_keeping("migrate cursors", INDEXER_CURSORS, copy)
                    .await?;
            }
            self.db()
                .write(
                    "migrate cursors",
                    doc! {"delete": INDEXER_CURSORS, "deletes": [{"q": {"source": old.as_str(), "clientId": {"$exists": false}}, "limit": 0}]},
                )
                .await?;
            self.db()
                .write(
                    "migrate sources",
                    doc! {"delete": INDEXER_SOURCES, "deletes": [{"q": {"_id": old.as_str()}, "limit": 1}]},
                )
                .await?;
        }
        if !legacy.is_empty() {
            tracing::info!(
                sources = legacy.len(),
                "mongo: polled sources re-keyed by client and id"
            );
        }
        Ok(legacy.len())
    }

    /// Inserts `d`; one already there (a duplicate key) is kept.
    async fn insert_keeping(&self, op: &str, collection: &str, d: Document) -> Result<()> {
        self.db()
            .write_allowing(
                op,
                doc! {"insert": collection, "documents": [d]},
                &[codes::DUPLICATE_KEY],
            )
            .await
            .map(drop)
    }
}

#[async_trait]
impl IndexerStore for MongoStore {
    async fn put_source(&self, source: &IndexerSource, now: Millis) -> Result<IndexerSource> {
        let config = json_text(&source.config)?;
        let doc = self
            .db()
            .upsert_returning("put source", put_source_command(source, &config, now))
            .await?;
        source_from_doc(&doc)
    }

    async fn get_source(&self, k: &SourceKey) -> Result<Option<IndexerSource>> {
        self.db()
            .find_one("get source", get_source_command(k))
            .await?
            .map(|d| source_from_doc(&d))
            .transpose()
    }

    async fn list_sources(&self, kind: Option<&str>) -> Result<Vec<IndexerSource>> {
        self.db()
            .find_decoded("list sources", list_sources_command(kind), source_from_doc)
            .await
    }

    async fn delete_source(&self, k: &SourceKey) -> Result<bool> {
        self.db()
            .write("delete source", delete_cursors_command(k))
            .await?;
        Ok(self
            .db()
            .write("delete source", delete_source_command(k))
            .await?
            .n
            > 0)
    }

    async fn acquire(
        &self,
        k: &SourceKey,
        owner: &str,
        lease_ms: i64,
        now: Millis,
    ) -> Result<bool> {
        Ok(self
            .db()
            .write("acquire", acquire_command(k, owner, lease_ms, now))
            .await?
            .n
            > 0)
    }

    async fn release(&self, k: &SourceKey, owner: &str) -> Result<()> {
        self.db()
            .write("release source", release_command(k, owner))
            .await
            .map(drop)
    }

    async fn record_poll(
        &self,
        k: &SourceKey,
        owner: &str,
        now: Millis,
        error: Option<&str>,
        stats: &Value,
    ) -> Result<bool> {
        let stats = json_text(stats)?;
        Ok(self
            .db()
            .write(
                "record poll",
                record_poll_command(k, owner, now, error, &stats),
            )
            .await?
            .n
            > 0)
    }

    async fn get_cursor(&self, k: &SourceKey, key: &str) -> Result<Option<Value>> {
        self.db()
            .find_one("get cursor", get_cursor_command(k, key))
            .await?
            .map(|d| parse_json(&d, "value", "indexer cursor"))
            .transpose()
    }

    async fn put_cursor(
        &self,
        k: &SourceKey,
        owner: &str,
        key: &str,
        value: &Value,
    ) -> Result<bool> {
        let value = json_text(value)?;
        let Some(epoch) = self.holder_epoch(k, owner).await? else {
            return Ok(false);
        };
        let s = self
            .db()
            .write_allowing(
                "put cursor",
                put_cursor_command(k, key, &value, epoch),
                &[codes::DUPLICATE_KEY],
            )
            .await?;
        // A duplicate key: the cursor exists with a newer epoch (a newer holder wrote it).
        Ok(!s.has_error(codes::DUPLICATE_KEY))
    }

    async fn list_cursors(&self, k: &SourceKey) -> Result<Vec<(String, Value)>> {
        self.db()
            .find_all("list cursors", list_cursors_command(k))
            .await?
            .iter()
            .map(|d| {
                Ok((
                    req_str(d, "key", "indexer cursor")?,
                    parse_json(d, "value", "indexer cursor")?,
                ))
            })
            .collect()
    }

    async fn delete_cursor(&self, k: &SourceKey, owner: &str, key: &str) -> Result<bool> {
        if self.holder_epoch(k, owner).await?.is_none() {
            return Ok(false);
        }
        self.db()
            .write("delete cursor", delete_cursor_command(k, key))
            .await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeMongo;
    use evident_core::Scope;
    use std::sync::Arc;

    fn source(id: &str) -> IndexerSource {
        IndexerSource {
            id: id.into(),
            kind: "git".into(),
            scope: Scope::client("acme"),
            config: serde_json::json!({"url": "https://example.com/r.git", "$weird.key": 1}),
            interval_secs: 60,
            enabled: true,
            created_at: 0,
            updated_at: 0,
            status: PollStatus::default(),
        }
    }

    fn key(id: &str) -> SourceKey {
        SourceKey::new("acme", id)
    }

    #[test]
    fn acquire_takes_free_expired_or_own_leases_and_bumps_the_epoch() {
        assert_eq!(
            acquire_command(&key("s"), "a", 1_000, 2_000),
            doc! {
                "update": "indexer_sources",
                "updates": [{
                    "q": {"_id": {"clientId": "acme", "id": "s"}, "$or": [{"owner": null}, {"owner": "a"}, {"leaseExpiresAt": {"$lte": 2_000i64}}]},
                    "u": {"$set": {"owner": "a", "leaseExpiresAt": 3_000i64}, "$inc": {"leaseEpoch": 1i64}},
                }],
            }
        );
    }

    #[tokio::test]
    async fn a_replica_that_lost_the_lease_cannot_overwrite_the_new_holders_cursor() {
        let fake = Arc::new(FakeMongo::new());
        let store = MongoStore::new(fake.clone(), "evident");
        let stored = store.put_source(&source("s"), 1_000).await.expect("put");
        assert_eq!(
            stored.config["$weird.key"], 1,
            "JSON kept as text round-trips any key"
        );
        assert!(
            store
                .acquire(&key("s"), "a", 1_000, 2_000)
                .await
                .expect("a")
        );
        // `a` passed the holder check (epoch 1), then lost the lease to `b` who wrote first.
        assert!(
            store
                .acquire(&key("s"), "b", 1_000, 3_500)
                .await
                .expect("b")
        );
        assert!(
            store
                .put_cursor(&key("s"), "b", "main", &serde_json::json!("c2"))
                .await
                .expect("b writes")
        );
        let stale = put_cursor_command(&key("s"), "main", "\"old\"", 1);
        let s = store
            .db()
            .write_allowing("test", stale, &[codes::DUPLICATE_KEY])
            .await
            .expect("write");
        assert!(
            s.has_error(codes::DUPLICATE_KEY),
            "refused by the epoch fence"
        );
        assert_eq!(
            store.get_cursor(&key("s"), "main").await.expect("get"),
            Some(serde_json::json!("c2"))
        );
    }

    #[tokio::test]
    async fn sources_written_before_client_keys_are_migrated_with_their_cursors() {
        let fake = Arc::new(FakeMongo::new());
        let store = MongoStore::new(fake.clone(), "evident");
        let legacy = doc! {
            "_id": "acme.repo", "kind": "git", "clientId": "acme", "config": "{}",
            "intervalSecs": 60i64, "enabled": true, "createdAt": 1i64, "updatedAt": 2i64,
            "stats": "{}", "owner": "r1", "leaseExpiresAt": 9i64, "leaseEpoch": 3i64,
        };
        let cursor = doc! {
            "_id": {"source": "acme.repo", "key": "main"}, "source": "acme.repo", "key": "main",
            "value": "\"c1\"", "epoch": 3i64,
        };
        for (c, d) in [(INDEXER_SOURCES, legacy), (INDEXER_CURSORS, cursor)] {
            store
                .db()
                .write("seed", doc! {"insert": c, "documents": [d]})
                .await
                .expect("seed");
        }
        assert_eq!(store.migrate_source_keys().await.expect("migrate"), 1);
        let k = key("acme.repo");
        let s = store.get_source(&k).await.expect("get").expect("kept");
        assert_eq!(
            (s.id.as_str(), s.status.owner.as_deref()),
            ("acme.repo", Some("r1"))
        );
        assert_eq!(
            store.list_cursors(&k).await.expect("cursors"),
            vec![("main".to_string(), serde_json::json!("c1"))]
        );
        // The lease (and its epoch) came along: the holder still writes, others do not.
        assert!(
            store
                .put_cursor(&k, "r1", "main", &serde_json::json!("c2"))
                .await
                .expect("r1")
        );
        assert_eq!(store.list_sources(None).await.expect("list").len(), 1);
        assert_eq!(store.migrate_source_keys().await.expect("again"), 0);
    }
}
