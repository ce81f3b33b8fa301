//! [`IndexerStore`] on MongoDB.
//!
//! `indexer_sources`: `_id` (the source id), `kind`, scope fields, `config` and `stats` (JSON
//! text), `intervalSecs`, `enabled`, `createdAt`, `updatedAt`, `lastPollAt`, `lastSuccessAt`,
//! `lastError`, and the polling lease: `owner`, `leaseExpiresAt`, `leaseEpoch`.
//! `indexer_cursors`: `_id: {source, key}`, `source`, `key`, `value` (JSON text), `epoch`.
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
use evident_store::indexers::{IndexerSource, IndexerStore, PollStatus};
use evident_store::queue::Millis;
use serde_json::Value;

use crate::MongoStore;
use crate::codes;
use crate::fields::*;
use crate::schema::{INDEXER_CURSORS, INDEXER_SOURCES};

pub(crate) fn cursor_id(source: &str, key: &str) -> Document {
    doc! {"source": source, "key": key}
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
        "query": {"_id": s.id.as_str()},
        "update": update,
        "upsert": true,
        "new": true,
    }
}

pub(crate) fn get_source_command(id: &str) -> Document {
    doc! {"find": INDEXER_SOURCES, "filter": {"_id": id}, "limit": 1, "singleBatch": true}
}

pub(crate) fn list_sources_command(kind: Option<&str>) -> Document {
    let filter = match kind {
        Some(k) => doc! {"kind": k},
        None => Document::new(),
    };
    doc! {"find": INDEXER_SOURCES, "filter": filter, "sort": {"_id": 1}}
}

pub(crate) fn delete_cursors_command(id: &str) -> Document {
    doc! {"delete": INDEXER_CURSORS, "deletes": [{"q": {"source": id}, "limit": 0}]}
}

pub(crate) fn delete_source_command(id: &str) -> Document {
    doc! {"delete": INDEXER_SOURCES, "deletes": [{"q": {"_id": id}, "limit": 1}]}
}

/// Takes or renews the lease: free, expired, or already `owner`'s.
pub(crate) fn acquire_command(id: &str, owner: &str, lease_ms: i64, now: Millis) -> Document {
    doc! {
        "update": INDEXER_SOURCES,
        "updates": [{
            "q": {
                "_id": id,
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

pub(crate) fn release_command(id: &str, owner: &str) -> Document {
    doc! {
        "update": INDEXER_SOURCES,
        "updates": [{
            "q": {"_id": id, "owner": owner},
            "u": {"$unset": {"owner": "", "leaseExpiresAt": ""}},
        }],
    }
}

pub(crate) fn record_poll_command(
    id: &str,
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
        "updates": [{"q": {"_id": id, "owner": owner}, "u": set_unset(set, unset)}],
    }
}

/// The lease epoch of `owner` if it holds the source's lease.
pub(crate) fn holder_command(id: &str, owner: &str) -> Document {
    doc! {
        "find": INDEXER_SOURCES,
        "filter": {"_id": id, "owner": owner},
        "projection": {"leaseEpoch": 1},
        "limit": 1,
        "singleBatch": true,
    }
}

pub(crate) fn get_cursor_command(id: &str, key: &str) -> Document {
    doc! {"find": INDEXER_CURSORS, "filter": {"_id": cursor_id(id, key)}, "limit": 1, "singleBatch": true}
}

/// Writes a cursor unless a holder of a newer lease already wrote it.
pub(crate) fn put_cursor_command(id: &str, key: &str, value: &str, epoch: i64) -> Document {
    doc! {
        "update": INDEXER_CURSORS,
        "updates": [{
            "q": {
                "_id": cursor_id(id, key),
                "$or": [{"epoch": {"$lte": epoch}}, {"epoch": {"$exists": false}}],
            },
            "u": {"$set": {"source": id, "key": key, "value": value, "epoch": epoch}},
            "upsert": true,
        }],
    }
}

pub(crate) fn list_cursors_command(id: &str) -> Document {
    doc! {"find": INDEXER_CURSORS, "filter": {"source": id}, "sort": {"key": 1}}
}

pub(crate) fn delete_cursor_command(id: &str, key: &str) -> Document {
    doc! {"delete": INDEXER_CURSORS, "deletes": [{"q": {"_id": cursor_id(id, key)}, "limit": 1}]}
}

fn source_from_doc(d: &Document) -> Result<IndexerSource> {
    const WHAT: &str = "indexer source";
    Ok(IndexerSource {
        id: req_str(d, "_id", WHAT)?,
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
    async fn holder_epoch(&self, id: &str, owner: &str) -> Result<Option<i64>> {
        Ok(self
            .db()
            .find_one("indexer lease", holder_command(id, owner))
            .await?
            .map(|d| opt_i64(&d, "leaseEpoch").unwrap_or(0)))
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

    async fn get_source(&self, id: &str) -> Result<Option<IndexerSource>> {
        self.db()
            .find_one("get source", get_source_command(id))
            .await?
            .map(|d| source_from_doc(&d))
            .transpose()
    }

    async fn list_sources(&self, kind: Option<&str>) -> Result<Vec<IndexerSource>> {
        self.db()
            .find_decoded("list sources", list_sources_command(kind), source_from_doc)
            .await
    }

    async fn delete_source(&self, id: &str) -> Result<bool> {
        self.db()
            .write("delete source", delete_cursors_command(id))
            .await?;
        Ok(self
            .db()
            .write("delete source", delete_source_command(id))
            .await?
            .n
            > 0)
    }

    async fn acquire(&self, id: &str, owner: &str, lease_ms: i64, now: Millis) -> Result<bool> {
        Ok(self
            .db()
            .write("acquire", acquire_command(id, owner, lease_ms, now))
            .await?
            .n
            > 0)
    }

    async fn release(&self, id: &str, owner: &str) -> Result<()> {
        self.db()
            .write("release source", release_command(id, owner))
            .await
            .map(drop)
    }

    async fn record_poll(
        &self,
        id: &str,
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
                record_poll_command(id, owner, now, error, &stats),
            )
            .await?
            .n
            > 0)
    }

    async fn get_cursor(&self, id: &str, key: &str) -> Result<Option<Value>> {
        self.db()
            .find_one("get cursor", get_cursor_command(id, key))
            .await?
            .map(|d| parse_json(&d, "value", "indexer cursor"))
            .transpose()
    }

    async fn put_cursor(&self, id: &str, owner: &str, key: &str, value: &Value) -> Result<bool> {
        let value = json_text(value)?;
        let Some(epoch) = self.holder_epoch(id, owner).await? else {
            return Ok(false);
        };
        let s = self
            .db()
            .write_allowing(
                "put cursor",
                put_cursor_command(id, key, &value, epoch),
                &[codes::DUPLICATE_KEY],
            )
            .await?;
        // A duplicate key: the cursor exists with a newer epoch (a newer holder wrote it).
        Ok(!s.has_error(codes::DUPLICATE_KEY))
    }

    async fn list_cursors(&self, id: &str) -> Result<Vec<(String, Value)>> {
        self.db()
            .find_all("list cursors", list_cursors_command(id))
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

    async fn delete_cursor(&self, id: &str, owner: &str, key: &str) -> Result<bool> {
        if self.holder_epoch(id, owner).await?.is_none() {
            return Ok(false);
        }
        self.db()
            .write("delete cursor", delete_cursor_command(id, key))
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

    #[test]
    fn acquire_takes_free_expired_or_own_leases_and_bumps_the_epoch() {
        assert_eq!(
            acquire_command("s", "a", 1_000, 2_000),
            doc! {
                "update": "indexer_sources",
                "updates": [{
                    "q": {"_id": "s", "$or": [{"owner": null}, {"owner": "a"}, {"leaseExpiresAt": {"$lte": 2_000i64}}]},
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
        assert!(store.acquire("s", "a", 1_000, 2_000).await.expect("a"));
        // `a` passed the holder check (epoch 1), then lost the lease to `b` who wrote first.
        assert!(store.acquire("s", "b", 1_000, 3_500).await.expect("b"));
        assert!(
            store
                .put_cursor("s", "b", "main", &serde_json::json!("c2"))
                .await
                .expect("b writes")
        );
        let stale = put_cursor_command("s", "main", "\"old\"", 1);
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
            store.get_cursor("s", "main").await.expect("get"),
            Some(serde_json::json!("c2"))
        );
    }
}
