//! Claims (seed 002): learned facts with evidence, a lifecycle and an append-only history.
//! The rules live in `evident_core::claims`; this store keeps claims, their events, and an
//! index from evidence chunk id to the claims it backs.
//!
//! Contract ([`ClaimStore`]):
//! - Claims are identified by (partition, id); the partition is the claim's client.
//! - `create` writes a claim with its first event atomically; an existing id is a
//!   `Conflict` and changes nothing.
//! - `update` replaces a claim and appends its next event atomically, only while the stored
//!   claim still has `expected_version` (optimistic concurrency): otherwise it changes
//!   nothing and returns `false`. Events are never changed or removed; `history` returns them
//!   in `seq` order.
//! - The chunk index follows the stored claim's evidence: `citing` returns the ids of claims
//!   (in the partition) with `chunk` evidence among `chunk_ids`.
//! - `get` returns claims by id (of the partition, any scope); callers apply visibility.
//!   `list` applies the reader's visibility itself (`Visibility::admits` on the claim's
//!   scope), then the filter, newest `updated_at` first (then id), at most `limit`.

use async_trait::async_trait;
use evident_core::Visibility;
use evident_core::claims::{Claim, ClaimEvent, ClaimStatus, Millis};

use crate::Result;

/// Which claims a listing returns. Empty fields do not filter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimFilter {
    pub statuses: Vec<ClaimStatus>,
    pub actor_id: Option<String>,
    pub session_id: Option<String>,
    /// `(scopeType, scopeId)` of the subject.
    pub subject: Option<(String, String)>,
    pub domain: Option<String>,
    /// Only claims needing attention: not superseded, and disputed, or with stale evidence,
    /// or with confidence below 0.5, unverified, created at or before this time.
    pub attention_before: Option<Millis>,
}

impl ClaimFilter {
    /// The filter evaluated in memory (backends that cannot push it down, and tests).
    pub fn admits(&self, c: &Claim) -> bool {
        (self.statuses.is_empty() || self.statuses.contains(&c.status))
            && self.actor_id.as_ref().is_none_or(|a| *a == c.actor.id)
            && self
                .session_id
                .as_ref()
                .is_none_or(|s| c.session_id.as_ref() == Some(s))
            && self.subject.as_ref().is_none_or(|(t, id)| {
                c.subject
                    .as_ref()
                    .is_some_and(|s| s.scope_type.as_str() == t && s.scope_id == *id)
            })
            && self
                .domain
                .as_ref()
                .is_none_or(|d| c.domain.as_ref() == Some(d))
            && self.attention_before.is_none_or(|cutoff| {
                c.status != ClaimStatus::Superseded
                    && (c.status == ClaimStatus::Disputed
                        || c.evidence_stale
                        || (c.confidence < evident_core::claims::LOW_CONFIDENCE
                            && c.status != ClaimStatus::Verified
                            && c.created_at <= cutoff))
            })
    }
}

#[async_trait]
pub trait ClaimStore: Send + Sync {
    /// Writes a new claim and its first event (`seq` 0), atomically.
    async fn create_claim(&self, claim: &Claim, event: &ClaimEvent) -> Result<()>;
    /// Replaces the claim and appends `event` if the stored version is `expected_version`.
    async fn update_claim(
        &self,
        claim: &Claim,
        expected_version: u64,
        event: &ClaimEvent,
    ) -> Result<bool>;
    /// Claims of the partition among `ids`, in the order of `ids`, missing ones skipped.
    async fn get_claims(&self, partition: &str, ids: &[String]) -> Result<Vec<Claim>>;
    /// A claim's events in order (empty when there is no such claim).
    async fn claim_history(&self, partition: &str, id: &str) -> Result<Vec<ClaimEvent>>;
    /// Ids of the partition's claims citing any of `chunk_ids` as evidence.
    async fn claims_citing(&self, partition: &str, chunk_ids: &[String]) -> Result<Vec<String>>;
    /// Visible claims matching `filter`, most recently changed first, at most `limit`.
    async fn list_claims(
        &self,
        vis: &Visibility,
        filter: &ClaimFilter,
        limit: usize,
    ) -> Result<Vec<Claim>>;
}
