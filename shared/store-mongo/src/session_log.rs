//! The session log of [`MemoryStore`] on MongoDB.
//!
//! `session_log`: one document per entry, `_id` a string that sorts in append order within a
//! millisecond (`{timestamp, 16 hex digits}` of a per-process counter and a random start),
//! `clientId`, `projectId` (`""` for the client's own log), `timestamp`, `source`, `summary`,
//! `details` (JSON text), `taskId`, and `expiresAt` as a BSON date for the `session_log_ttl`
//! index. Reads filter `expiresAt > now`, so an expired entry is invisible before the TTL
//! monitor deletes it.
//!
//! Append is an `insert`, then the ids of the log newest first (`session_log_order` index,
//! ids only), then one `delete` of every id beyond the limit. Two appends racing may each
//! see 51 and evict the same oldest one; the log converges to the newest `max_entries`, and
//! reads never return more than their `limit` (≤ 50).

use std::sync::atomic::{AtomicU64, Ordering};

use bson::{Bson, DateTime, Document, doc};
use evident_store::memory::{SessionEntry, SessionSource};
use evident_store::queue::Millis;
use evident_store::{Result, StoreError};

use crate::MongoStore;
use crate::fields::*;
use crate::schema::SESSION_LOG;

fn next_suffix() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // A random start per process: two processes appending in the same millisecond do not
    // produce the same id.
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.finish() & 0xffff_ffff_0000_0000
    });
    start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// An id that sorts by timestamp, then append order (non-negative timestamps).
pub(crate) fn entry_id(timestamp: Millis, suffix: u64) -> String {
    format!("{:016x}{suffix:016x}", timestamp.max(0))
}

pub(crate) fn insert_command(e: &SessionEntry, id: &str, details: Option<&str>) -> Document {
    let mut d = doc! {
        "_id": id,
        "clientId": e.client_id.as_str(),
        "projectId": e.project_id.as_deref().unwrap_or(""),
        "timestamp": e.timestamp,
        "source": e.source.as_str(),
        "summary": e.summary.as_str(),
        "expiresAt": DateTime::from_millis(e.expires_at),
    };
    if let Some(details) = details {
        d.insert("details", details);
    }
    if let Some(t) = &e.task_id {
        d.insert("taskId", t.as_str());
    }
    doc! {"insert": SESSION_LOG, "documents": [d]}
}

pub(crate) fn ids_command(client: &str, project: &str) -> Document {
    doc! {
        "find": SESSION_LOG,
        "filter": {"clientId": client, "projectId": project},
        "sort": {"timestamp": -1, "_id": -1},
        "projection": {"_id": 1},
    }
}

pub(crate) fn evict_command(ids: Vec<Bson>) -> Document {
    doc! {"delete": SESSION_LOG, "deletes": [{"q": {"_id": {"$in": ids}}, "limit": 0}]}
}

pub(crate) fn recent_command(client: &str, project: &str, now: Millis, limit: usize) -> Document {
    doc! {
        "find": SESSION_LOG,
        "filter": {"clientId": client, "projectId": project, "expiresAt": {"$gt": DateTime::from_millis(now)}},
        "sort": {"timestamp": -1, "_id": -1},
        "limit": limit as i64,
    }
}

pub(crate) fn purge_command(now: Millis) -> Document {
    doc! {"delete": SESSION_LOG, "deletes": [{"q": {"expiresAt": {"$lte": DateTime::from_millis(now)}}, "limit": 0}]}
}

fn entry_from_doc(d: &Document) -> Result<SessionEntry> {
    const WHAT: &str = "session log entry";
    let source = req_str(d, "source", WHAT)?;
    let project = req_str(d, "projectId", WHAT)?;
    Ok(SessionEntry {
        client_id: req_str(d, "clientId", WHAT)?,
        project_id: (!project.is_empty()).then_some(project),
        timestamp: req_i64(d, "timestamp", WHAT)?,
        source: SessionSource::parse(&source)
            .ok_or_else(|| StoreError::corrupt(format!("{WHAT}: source `{source}`")))?,
        summary: req_str(d, "summary", WHAT)?,
        details: match d.get("details") {
            Some(_) => Some(parse_json(d, "details", WHAT)?),
            None => None,
        },
        task_id: opt_str(d, "taskId"),
        expires_at: req_i64(d, "expiresAt", WHAT)?,
    })
}

impl MongoStore {
    pub(crate) async fn session_append_impl(
        &self,
        e: SessionEntry,
        max_entries: usize,
    ) -> Result<u64> {
        let details = e.details.as_ref().map(json_text).transpose()?;
        let id = entry_id(e.timestamp, next_suffix());
        self.db()
            .write(
                "session log append",
                insert_command(&e, &id, details.as_deref()),
            )
            .await?;
        let project = e.project_id.as_deref().unwrap_or("");
        let ids = self
            .db()
            .find_all("session log ids", ids_command(&e.client_id, project))
            .await?;
        let beyond: Vec<Bson> = ids
            .iter()
            .skip(max_entries)
            .filter_map(|d| d.get("_id").cloned())
            .collect();
        if beyond.is_empty() {
            return Ok(0);
        }
        Ok(self
            .db()
            .write("session log evict", evict_command(beyond))
            .await?
            .n
            .max(0) as u64)
    }

    pub(crate) async fn session_recent_impl(
        &self,
        client: &str,
        project: Option<&str>,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<SessionEntry>> {
        self.db()
            .find_decoded(
                "session log recent",
                recent_command(client, project.unwrap_or(""), now, limit),
                entry_from_doc,
            )
            .await
    }

    pub(crate) async fn session_purge_impl(&self, now: Millis) -> Result<u64> {
        Ok(self
            .db()
            .write("session log purge", purge_command(now))
            .await?
            .n
            .max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeMongo;
    use evident_store::memory::MemoryStore;
    use std::sync::Arc;

    fn entry(project: Option<&str>, at: i64, summary: &str) -> SessionEntry {
        SessionEntry {
            client_id: "c1".into(),
            project_id: project.map(str::to_string),
            timestamp: at,
            source: SessionSource::Chat,
            summary: summary.into(),
            details: Some(serde_json::json!({"n": at})),
            task_id: None,
            expires_at: at + 1_000,
        }
    }

    #[test]
    fn ids_sort_by_timestamp_then_append_order() {
        assert!(entry_id(9, u64::MAX) < entry_id(10, 0));
        assert!(entry_id(10, 1) < entry_id(10, 2));
    }

    #[tokio::test]
    async fn append_evicts_the_oldest_and_recent_reads_one_log_newest_first() {
        let store = MongoStore::new(Arc::new(FakeMongo::new()), "evident");
        for i in 0..4 {
            store
                .session_append(entry(Some("p1"), 100 + i, &format!("e{i}")), 3)
                .await
                .expect("append");
        }
        store
            .session_append(entry(None, 100, "client level"), 3)
            .await
            .expect("append");
        let recent = store
            .session_recent("c1", Some("p1"), 150, 50)
            .await
            .expect("recent");
        let summaries: Vec<&str> = recent.iter().map(|e| e.summary.as_str()).collect();
        assert_eq!(summaries, ["e3", "e2", "e1"]);
        assert_eq!(recent[0].details, Some(serde_json::json!({"n": 103})));
        let own = store
            .session_recent("c1", None, 150, 50)
            .await
            .expect("recent");
        assert_eq!(own.len(), 1);
        assert!(
            store
                .session_recent("c1", Some("p1"), 2_000, 50)
                .await
                .expect("recent")
                .is_empty(),
            "expired entries are invisible"
        );
        assert_eq!(store.purge_expired(2_000).await.expect("purge"), 4);
    }
}
