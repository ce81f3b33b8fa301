//! Session memory: what an agent keeps between the turns of one conversation or task — small
//! JSON values by key, per client and session, that expire on their own.
//!
//! Contract ([`MemoryStore`]):
//! - Entries are identified by (client, session, key); `put` replaces the value and the expiry.
//! - An entry is never returned at or after its `expires_at`, whether or not it was purged yet
//!   (backends delete expired entries lazily: a TTL index, a periodic sweep).
//! - `list` returns a session's live entries by key; `delete_session` removes them all.
//!
//! The **session log** (seed 003, *Session Memory*) lives beside it: short entries per client
//! and project (`project_id: None` is the client's own log), appended after each
//! orchestration and read newest first at the start of the next one.
//! - `session_append` adds an entry and, in the same write, evicts the oldest entries of its
//!   log beyond `max_entries` (live or not), so a log never holds more than that.
//! - `session_recent` returns live entries (`expires_at > now`) of exactly that log, newest
//!   first (`timestamp`, then append order), at most `limit`; another project's or client's
//!   entries are never returned.
//! - `purge_expired` deletes expired log entries too.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::queue::Millis;

/// One remembered value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryEntry {
    pub client_id: String,
    pub session_id: String,
    pub key: String,
    pub value: serde_json::Value,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub expires_at: Millis,
}

/// Where a session-log entry came from (the seed's `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionSource {
    Chat,
    Background,
    OrchestratorDecision,
}

impl SessionSource {
    pub const ALL: [SessionSource; 3] = [
        SessionSource::Chat,
        SessionSource::Background,
        SessionSource::OrchestratorDecision,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SessionSource::Chat => "chat",
            SessionSource::Background => "background",
            SessionSource::OrchestratorDecision => "orchestrator_decision",
        }
    }

    pub fn parse(raw: &str) -> Option<SessionSource> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

/// One entry of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// When it happened (milliseconds since the epoch).
    pub timestamp: Millis,
    pub source: SessionSource,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub expires_at: Millis,
}

#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Writes (or replaces) an entry; returns it as stored.
    async fn put(&self, entry: MemoryEntry) -> Result<MemoryEntry>;
    /// The live entry, if any.
    async fn get(
        &self,
        client: &str,
        session: &str,
        key: &str,
        now: Millis,
    ) -> Result<Option<MemoryEntry>>;
    /// A session's live entries, by key.
    async fn list(&self, client: &str, session: &str, now: Millis) -> Result<Vec<MemoryEntry>>;
    /// Removes one entry; whether it existed (live or not).
    async fn delete(&self, client: &str, session: &str, key: &str) -> Result<bool>;
    /// Removes a session's entries; how many.
    async fn delete_session(&self, client: &str, session: &str) -> Result<u64>;
    /// Deletes entries (of both memories) expired at `now` (backends with a TTL index may do
    /// nothing).
    async fn purge_expired(&self, now: Millis) -> Result<u64>;
    /// Appends to the entry's log and evicts its oldest entries beyond `max_entries`; how many
    /// were evicted.
    async fn session_append(&self, entry: SessionEntry, max_entries: usize) -> Result<u64>;
    /// The live entries of one log, newest first, at most `limit`.
    async fn session_recent(
        &self,
        client: &str,
        project: Option<&str>,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<SessionEntry>>;
}
