//! Continuously polled sources — repositories, mailboxes, tracker projects, wikis, meeting
//! folders, crawled sites — with their cursors and the lease that says which replica polls
//! each one.
//!
//! Contract ([`IndexerStore`]):
//! - Sources are identified by their [`SourceKey`]: the client and the id within it. The same
//!   id in two clients is two sources, which share nothing (settings, lease, cursors).
//!   `put_source` registers one or replaces its settings (kind, scope, config, interval,
//!   enabled) and keeps its status, lease and cursors.
//! - `acquire` is atomic: at any moment at most one owner holds an unexpired lease on a source.
//!   The holder renews by acquiring again; an expired lease can be taken by anyone (its holder
//!   is presumed dead), so polling moves to a live replica.
//! - `record_poll` and `put_cursor` act only for the current holder and return `false`
//!   (changing nothing) for anyone else, so a replica that lost its lease cannot move a
//!   cursor backwards over the new holder's work.
//! - `delete_source` removes the source and its cursors.

use async_trait::async_trait;
use evident_core::Scope;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;
use crate::queue::Millis;

/// What is known about the last polls of a source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_poll_at: Option<Millis>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_success_at: Option<Millis>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Counts from the last poll (kind-specific: commits seen, messages, skipped files…).
    pub stats: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_expires_at: Option<Millis>,
}

/// A source's identity: its client and its id within that client. Ids are chosen by clients,
/// so only the pair is unique.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceKey {
    pub client_id: String,
    pub id: String,
}

impl SourceKey {
    pub fn new(client_id: impl Into<String>, id: impl Into<String>) -> SourceKey {
        SourceKey {
            client_id: client_id.into(),
            id: id.into(),
        }
    }
}

impl std::fmt::Display for SourceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.client_id, self.id)
    }
}

/// A registered, continuously polled source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexerSource {
    pub id: String,
    /// `git`, `mbox`, `maildir`, `imap`, `github`, `gitlab`, `jira`, `confluence`,
    /// `transcripts`, `documents`, `web`, …
    pub kind: String,
    #[serde(flatten)]
    pub scope: Scope,
    /// Kind-specific settings. Credentials are never stored here, only the names of the
    /// environment variables that hold them.
    pub config: Value,
    pub interval_secs: u64,
    pub enabled: bool,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub status: PollStatus,
}

impl IndexerSource {
    /// Its identity in the store (a source always has a client).
    pub fn key(&self) -> SourceKey {
        SourceKey::new(
            self.scope.client_id.clone().unwrap_or_default(),
            self.id.clone(),
        )
    }
}

#[async_trait]
pub trait IndexerStore: Send + Sync {
    /// Registers `source` (under [`IndexerSource::key`]) or replaces its settings; returns it
    /// as stored (with its status).
    async fn put_source(&self, source: &IndexerSource, now: Millis) -> Result<IndexerSource>;
    async fn get_source(&self, source: &SourceKey) -> Result<Option<IndexerSource>>;
    /// All sources (of one kind when given), by client and id.
    async fn list_sources(&self, kind: Option<&str>) -> Result<Vec<IndexerSource>>;
    /// Removes a source and its cursors; whether it existed.
    async fn delete_source(&self, source: &SourceKey) -> Result<bool>;
    /// Takes or renews the polling lease: `true` when `owner` holds it until `now + lease_ms`
    /// (it was free, expired, or already `owner`'s). `false` for a missing source.
    async fn acquire(
        &self,
        source: &SourceKey,
        owner: &str,
        lease_ms: i64,
        now: Millis,
    ) -> Result<bool>;
    /// Gives the lease up (only its holder can; otherwise nothing happens).
    async fn release(&self, source: &SourceKey, owner: &str) -> Result<()>;
    /// Records a finished poll (by the holder): success when `error` is `None`.
    async fn record_poll(
        &self,
        source: &SourceKey,
        owner: &str,
        now: Millis,
        error: Option<&str>,
        stats: &Value,
    ) -> Result<bool>;
    async fn get_cursor(&self, source: &SourceKey, key: &str) -> Result<Option<Value>>;
    /// Sets a cursor (by the holder).
    async fn put_cursor(
        &self,
        source: &SourceKey,
        owner: &str,
        key: &str,
        value: &Value,
    ) -> Result<bool>;
    /// Every cursor of a source, by key.
    async fn list_cursors(&self, source: &SourceKey) -> Result<Vec<(String, Value)>>;
    /// Removes a cursor (by the holder).
    async fn delete_cursor(&self, source: &SourceKey, owner: &str, key: &str) -> Result<bool>;
}
