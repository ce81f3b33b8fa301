//! Access state: API tokens (stored hashed) and the audit log of writes and admin actions.
//!
//! Contract ([`AccessStore`]):
//! - A token is identified by its `id` (public, shown in listings and the audit log) and found
//!   by the hash of its secret; the secret itself is never stored. `create_token` refuses an
//!   id or hash already present (`Conflict`).
//! - `revoke_token` sets `revoked_at` once (a second revoke keeps the first time) and answers
//!   the record; a revoked token stays listed so the audit log keeps resolving its name.
//! - Audit events are append-only and listed newest first; `list_audit` filters by client
//!   (exact), token id, route and a time window, and pages with `before` (an event's `at`,
//!   exclusive) plus `limit`.

use async_trait::async_trait;
use evident_core::access::Grant;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::queue::Millis;

/// One API token, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRecord {
    pub id: String,
    pub name: String,
    /// SHA-256 of the secret, hex (`evident_core::access::token_hash`).
    #[serde(skip_serializing)]
    #[serde(default)]
    pub secret_hash: String,
    pub grant: Grant,
    pub created_at: Millis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Millis>,
    /// The token id (or `local`, `bootstrap`) that created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
}

impl TokenRecord {
    pub fn is_live(&self, now: Millis) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|e| now < e)
    }
}

/// One recorded write or admin action. Never holds a secret or a token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEvent {
    /// Unique, sortable by time (`{at:013}-{n}`).
    pub id: String,
    pub at: Millis,
    /// Who: the token id and name (`anonymous` when auth is off, `jwt:{sub}` for JWTs).
    pub token_id: String,
    pub token_name: String,
    /// `POST /api/v1/purge`: the method and the route pattern.
    pub method: String,
    pub route: String,
    /// The request path as sent (names the target: a task id, a source id, a key).
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// The HTTP status answered.
    pub status: u16,
    /// `ok`, or the error code answered.
    pub outcome: String,
}

/// Which audit events to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Events of this client only (`None`: every client — operators).
    pub client_id: Option<String>,
    pub token_id: Option<String>,
    pub route: Option<String>,
    pub since: Option<Millis>,
    /// Page: events strictly before this time.
    pub before: Option<Millis>,
    pub limit: usize,
}

impl AuditFilter {
    pub fn matches(&self, e: &AuditEvent) -> bool {
        self.client_id
            .as_ref()
            .is_none_or(|c| e.client_id.as_ref() == Some(c))
            && self.token_id.as_ref().is_none_or(|t| &e.token_id == t)
            && self.route.as_ref().is_none_or(|r| &e.route == r)
            && self.since.is_none_or(|s| e.at >= s)
            && self.before.is_none_or(|b| e.at < b)
    }
}

#[async_trait]
pub trait AccessStore: Send + Sync {
    /// Stores a new token (`Conflict` if its id or hash exists).
    async fn create_token(&self, token: TokenRecord) -> Result<()>;
    /// The token whose secret hashes to `secret_hash`, live or not.
    async fn token_by_hash(&self, secret_hash: &str) -> Result<Option<TokenRecord>>;
    /// A token by id.
    async fn token(&self, id: &str) -> Result<Option<TokenRecord>>;
    /// Tokens of one client (`None`: every token), oldest first.
    async fn list_tokens(&self, client: Option<&str>) -> Result<Vec<TokenRecord>>;
    /// Marks a token revoked at `now` (kept if already revoked); the record, if it exists.
    async fn revoke_token(&self, id: &str, now: Millis) -> Result<Option<TokenRecord>>;
    /// Appends an audit event (idempotent on its id).
    async fn append_audit(&self, event: AuditEvent) -> Result<()>;
    /// Audit events matching `filter`, newest first, at most `filter.limit`.
    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>>;
}
