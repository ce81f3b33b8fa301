//! Session memory: what an agent keeps between the turns of one conversation or task — small
//! JSON values by key, per client and session, that expire on their own.
//!
//! Contract ([`MemoryStore`]):
//! - Entries are identified by (client, session, key); `put` replaces the value and the expiry.
//! - An entry is never returned at or after its `expires_at`, whether or not it was purged yet
//!   (backends delete expired entries lazily: a TTL index, a periodic sweep).
//! - `list` returns a session's live entries by key; `delete_session` removes them all.

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
    /// Deletes entries expired at `now` (backends with a TTL index may do nothing).
    async fn purge_expired(&self, now: Millis) -> Result<u64>;
}
