//! [`MemoryStore`] on MongoDB.
//!
//! `memory`: `_id: {clientId, sessionId, key}`, the same three fields again (for the session
//! index), `value` (JSON text), `createdAt`, `updatedAt` (milliseconds) and `expiresAt`, a
//! BSON date: the `memory_ttl` index (`expireAfterSeconds: 0`) lets the server delete entries
//! once it has passed, and every read filters `expiresAt > now`, so an expired entry is
//! invisible at once, purged or not.
//!
//! `put` is one `findAndModify` with an update pipeline (upsert), so "keep the creation time of
//! a live entry" is decided by the server on the stored document: `createdAt` stays when the
//! stored `expiresAt` is after the new `updatedAt`. Strings go into the pipeline as `$literal`,
//! so a client, session or key starting with `$` is never read as a field path.

use async_trait::async_trait;
use bson::{DateTime, Document, doc};
use evident_store::Result;
use evident_store::memory::{MemoryEntry, MemoryStore, SessionEntry};
use evident_store::queue::Millis;

use crate::MongoStore;
use crate::fields::*;
use crate::schema::MEMORY;

pub(crate) fn entry_id(client: &str, session: &str, key: &str) -> Document {
    doc! {"clientId": client, "sessionId": session, "key": key}
}

fn date(ms: Millis) -> DateTime {
    DateTime::from_millis(ms)
}

pub(crate) fn put_command(e: &MemoryEntry, value: &str) -> Document {
    doc! {
        "findAndModify": MEMORY,
        "query": {"_id": entry_id(&e.client_id, &e.session_id, &e.key)},
        "update": [{"$set": {
            "clientId": {"$literal": e.client_id.as_str()},
            "sessionId": {"$literal": e.session_id.as_str()},
            "key": {"$literal": e.key.as_str()},
            "value": {"$literal": value},
            "createdAt": {"$cond": [
                {"$gt": ["$expiresAt", date(e.updated_at)]},
                "$createdAt",
                {"$literal": e.created_at},
            ]},
            "updatedAt": {"$literal": e.updated_at},
            "expiresAt": {"$literal": date(e.expires_at)},
        }}],
        "upsert": true,
        "new": true,
    }
}

pub(crate) fn get_command(client: &str, session: &str, key: &str, now: Millis) -> Document {
    doc! {
        "find": MEMORY,
        "filter": {"_id": entry_id(client, session, key), "expiresAt": {"$gt": date(now)}},
        "limit": 1,
        "singleBatch": true,
    }
}

pub(crate) fn list_command(client: &str, session: &str, now: Millis) -> Document {
    doc! {
        "find": MEMORY,
        "filter": {"clientId": client, "sessionId": session, "expiresAt": {"$gt": date(now)}},
        "sort": {"key": 1},
    }
}

pub(crate) fn delete_command(client: &str, session: &str, key: &str) -> Document {
    doc! {"delete": MEMORY, "deletes": [{"q": {"_id": entry_id(client, session, key)}, "limit": 1}]}
}

pub(crate) fn delete_session_command(client: &str, session: &str) -> Document {
    doc! {"delete": MEMORY, "deletes": [{"q": {"clientId": client, "sessionId": session}, "limit": 0}]}
}

pub(crate) fn purge_command(now: Millis) -> Document {
    doc! {"delete": MEMORY, "deletes": [{"q": {"expiresAt": {"$lte": date(now)}}, "limit": 0}]}
}

fn entry_from_doc(d: &Document) -> Result<MemoryEntry> {
    const WHAT: &str = "memory entry";
    Ok(MemoryEntry {
        client_id: req_str(d, "clientId", WHAT)?,
        session_id: req_str(d, "sessionId", WHAT)?,
        key: req_str(d, "key", WHAT)?,
        value: parse_json(d, "value", WHAT)?,
        created_at: req_i64(d, "createdAt", WHAT)?,
        updated_at: req_i64(d, "updatedAt", WHAT)?,
        expires_at: req_i64(d, "expiresAt", WHAT)?,
    })
}

#[async_trait]
impl MemoryStore for MongoStore {
    async fn put(&self, entry: MemoryEntry) -> Result<MemoryEntry> {
        let value = json_text(&entry.value)?;
        let doc = self
            .db()
            .upsert_returning("memory put", put_command(&entry, &value))
            .await?;
        entry_from_doc(&doc)
    }

    async fn get(
        &self,
        client: &str,
        session: &str,
        key: &str,
        now: Millis,
    ) -> Result<Option<MemoryEntry>> {
        self.db()
            .find_one("memory get", get_command(client, session, key, now))
            .await?
            .map(|d| entry_from_doc(&d))
            .transpose()
    }

    async fn list(&self, client: &str, session: &str, now: Millis) -> Result<Vec<MemoryEntry>> {
        self.db()
            .find_decoded(
                "memory list",
                list_command(client, session, now),
                entry_from_doc,
            )
            .await
    }

    async fn delete(&self, client: &str, session: &str, key: &str) -> Result<bool> {
        Ok(self
            .db()
            .write("memory delete", delete_command(client, session, key))
            .await?
            .n
            > 0)
    }

    async fn delete_session(&self, client: &str, session: &str) -> Result<u64> {
        Ok(self
            .db()
            .write(
                "memory delete session",
                delete_session_command(client, session),
            )
            .await?
            .n
            .max(0) as u64)
    }

    async fn purge_expired(&self, now: Millis) -> Result<u64> {
        let memory = self
            .db()
            .write("memory purge", purge_command(now))
            .await?
            .n
            .max(0) as u64;
        Ok(memory + self.session_purge_impl(now).await?)
    }

    async fn session_append(&self, entry: SessionEntry, max_entries: usize) -> Result<u64> {
        self.session_append_impl(entry, max_entries).await
    }

    async fn session_recent(
        &self,
        client: &str,
        project: Option<&str>,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<SessionEntry>> {
        self.session_recent_impl(client, project, now, limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeMongo;
    use std::sync::Arc;

    fn entry(key: &str, value: serde_json::Value, at: i64, ttl: i64) -> MemoryEntry {
        MemoryEntry {
            client_id: "$c1".into(),
            session_id: "s1".into(),
            key: key.into(),
            value,
            created_at: at,
            updated_at: at,
            expires_at: at + ttl,
        }
    }

    #[tokio::test]
    async fn replacing_a_live_entry_keeps_its_creation_time_an_expired_one_does_not() {
        let store = MongoStore::new(Arc::new(FakeMongo::new()), "evident");
        store
            .put(entry("k", serde_json::json!(1), 1_000, 100))
            .await
            .expect("put");
        let live = store
            .put(entry("k", serde_json::json!(2), 1_050, 100))
            .await
            .expect("replace");
        assert_eq!((live.created_at, live.expires_at), (1_000, 1_150));
        let fresh = store
            .put(entry("k", serde_json::json!(3), 2_000, 100))
            .await
            .expect("after expiry");
        assert_eq!(fresh.created_at, 2_000, "an expired entry is a new one");
        assert_eq!(
            store
                .get("$c1", "s1", "k", 2_099)
                .await
                .expect("get")
                .map(|e| e.value),
            Some(serde_json::json!(3))
        );
        assert!(
            store
                .get("$c1", "s1", "k", 2_100)
                .await
                .expect("get")
                .is_none(),
            "invisible at expiry"
        );
        assert_eq!(store.purge_expired(2_100).await.expect("purge"), 1);
    }
}
