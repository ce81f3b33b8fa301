//! Knowledge gaps (seed 004): questions an agent could not answer from what Evident holds,
//! queued until someone acquires the knowledge and builds it into the graph.
//!
//! States: `open` → `acquiring` (leased by one acquirer) → `acquired` (findings ingested) →
//! `constructed` (graph writes made for it); `failed` (with its reason) from `open`,
//! `acquiring` or `acquired`. A lease that expires leaves the gap `acquiring` but claimable
//! again once its backoff has passed; a failure reported with `retry` puts it back to `open`
//! after a backoff. Time is always passed in by the caller (milliseconds), so tests drive
//! leases with a manual clock.
//!
//! Contract ([`GapStore`]):
//! - Every gap belongs to one client (its partition); reads take the partition and the
//!   reader's [`Visibility`], and never return a gap it does not admit.
//! - `create` of a question already open or acquiring for the same scope returns that gap
//!   (a question is asked once until it is answered or has failed).
//! - `claim` is atomic: it takes the first claimable gap of the partition in claim order
//!   (`priority` ascending, then `position` when set, then creation) that the acquirer kind
//!   takes and the claimer admits — unless a gap of the partition is `acquiring`: then only
//!   that gap can be claimed, once its lease has expired and its backoff passed (one
//!   acquisition per client at a time, in order: the seed's sequential rule). A claimable gap
//!   is `open` with `notBefore` passed, or `acquiring` with its lease expired and its backoff
//!   passed. Each claim bumps `epoch` and `attempts`.
//! - `advance` moves a gap along the state machine ([`GapState::allows`]) and appends its
//!   event; a move that names an epoch other than the gap's current one is refused
//!   (`Conflict`): a stale acquirer cannot overwrite the work of the one that claimed after it.
//! - The history is append-only: events are numbered per gap from 1 and never change.

use async_trait::async_trait;
use evident_core::{Scope, Visibility};
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::queue::Millis;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GapState {
    Open,
    Acquiring,
    Acquired,
    Constructed,
    Failed,
}

impl GapState {
    pub const ALL: [GapState; 5] = [
        GapState::Open,
        GapState::Acquiring,
        GapState::Acquired,
        GapState::Constructed,
        GapState::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GapState::Open => "open",
            GapState::Acquiring => "acquiring",
            GapState::Acquired => "acquired",
            GapState::Constructed => "constructed",
            GapState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<GapState> {
        GapState::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// The state machine: which moves are allowed. `acquiring → acquiring` is a re-claim
    /// after an expired lease; `constructed → constructed` a further graph write for it;
    /// `acquired → acquired` findings submitted again (replacing the earlier ones).
    pub fn allows(self, to: GapState) -> bool {
        use GapState::*;
        matches!(
            (self, to),
            (Open, Acquiring)
                | (Acquiring, Acquiring)
                | (Acquiring, Acquired)
                | (Acquiring, Open)
                | (Acquired, Acquired)
                | (Acquired, Constructed)
                | (Constructed, Constructed)
                | (Open | Acquiring | Acquired, Failed)
        )
    }

    /// No further acquisition happens (`constructed`, `failed`).
    pub fn is_terminal(self) -> bool {
        matches!(self, GapState::Constructed | GapState::Failed)
    }
}

/// Who acquires a gap: an external agent (`POST /gaps/claim`) or the built-in acquirer
/// (the `acquire-gap` queue task).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Acquirer {
    #[default]
    Agent,
    Builtin,
}

impl Acquirer {
    pub fn as_str(self) -> &'static str {
        match self {
            Acquirer::Agent => "agent",
            Acquirer::Builtin => "builtin",
        }
    }

    pub fn parse(s: &str) -> Option<Acquirer> {
        [Acquirer::Agent, Acquirer::Builtin]
            .into_iter()
            .find(|a| a.as_str() == s)
    }
}

/// The phase of the seed's loop an event or a write belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GapPhase {
    Detection,
    Acquisition,
    Construction,
}

impl GapPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            GapPhase::Detection => "detection",
            GapPhase::Acquisition => "acquisition",
            GapPhase::Construction => "construction",
        }
    }

    pub fn parse(s: &str) -> Option<GapPhase> {
        [
            GapPhase::Detection,
            GapPhase::Acquisition,
            GapPhase::Construction,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
    }
}

/// A gap to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewGap {
    /// Has a client.
    pub scope: Scope,
    pub question: String,
    pub context: Option<String>,
    /// 0 (most urgent) ..= 9.
    pub priority: u8,
    /// Graph keys the question is about.
    pub about: Vec<String>,
    pub acquirer: Acquirer,
    /// Who reported it (a token id, `retrieve`, …).
    pub actor: String,
    pub phase: GapPhase,
}

/// A gap as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GapRecord {
    pub gap_id: String,
    #[serde(flatten)]
    pub scope: Scope,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    pub priority: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<i64>,
    pub about: Vec<String>,
    pub acquirer: Acquirer,
    pub state: GapState,
    /// Claims so far.
    pub attempts: u32,
    /// Bumped by every claim.
    pub epoch: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_expires_at: Option<Millis>,
    /// Not claimable before (a backoff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The source URN of the findings, once submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings_urn: Option<String>,
    pub created_by: String,
    pub created_at: Millis,
    pub updated_at: Millis,
}

impl GapRecord {
    /// Whether a claim at `now` may take it (state, lease and backoff; not the per-client
    /// rule, which needs the other gaps).
    pub fn claimable(&self, now: Millis) -> bool {
        let waited = self.not_before.is_none_or(|t| t <= now);
        match self.state {
            GapState::Open => waited,
            GapState::Acquiring => self.lease_expires_at.is_some_and(|t| t <= now) && waited,
            _ => false,
        }
    }

    /// Whether it holds a live lease at `now`.
    pub fn leased(&self, now: Millis) -> bool {
        self.state == GapState::Acquiring && self.lease_expires_at.is_some_and(|t| t > now)
    }
}

/// One entry of a gap's history: a move, a finding, a graph write made for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GapEvent {
    pub gap_id: String,
    /// 1, 2, … per gap.
    pub seq: i64,
    pub at: Millis,
    pub actor: String,
    /// `created`, `claimed`, `released`, `findings`, `graph_write`, `failed`, `reprioritised`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<GapState>,
    pub to: GapState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<GapPhase>,
    /// What happened (the findings' URN and chunk count, the nodes and edges written…).
    pub detail: serde_json::Value,
}

/// A move along the state machine, by the holder of `epoch` when it names one.
#[derive(Debug, Clone, PartialEq)]
pub struct GapMove {
    pub to: GapState,
    /// The claim the mover holds; `None` for moves that need no lease (a graph write for an
    /// acquired gap, an operator's failure).
    pub epoch: Option<i64>,
    pub actor: String,
    pub kind: String,
    pub phase: Option<GapPhase>,
    pub detail: serde_json::Value,
    /// Set on `failed`, or the reason of a release.
    pub failure: Option<String>,
    /// Set on `acquired`.
    pub findings_urn: Option<String>,
    /// On a move back to `open`: not claimable before.
    pub not_before: Option<Millis>,
}

/// What a claim hands its acquirer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GapClaim {
    pub gap: GapRecord,
    pub epoch: i64,
    pub lease_expires_at: Millis,
}

#[async_trait]
pub trait GapStore: Send + Sync {
    /// Records gaps (all of one partition); an open or acquiring gap with the same question
    /// and scope is returned instead of a new one. In input order.
    async fn create_gaps(&self, gaps: Vec<NewGap>, now: Millis) -> Result<Vec<GapRecord>>;
    async fn get_gap(&self, partition: &str, gap_id: &str) -> Result<Option<GapRecord>>;
    /// The gap's events in order.
    async fn gap_history(&self, partition: &str, gap_id: &str) -> Result<Vec<GapEvent>>;
    /// Visible gaps of the partition in claim order, optionally of one state.
    async fn list_gaps(
        &self,
        partition: &str,
        vis: &Visibility,
        state: Option<GapState>,
        limit: usize,
    ) -> Result<Vec<GapRecord>>;
    /// Leases the next claimable gap (see the module contract), or `None`.
    async fn claim_gap(
        &self,
        partition: &str,
        vis: &Visibility,
        acquirer: Acquirer,
        owner: &str,
        lease_ms: i64,
        now: Millis,
    ) -> Result<Option<GapClaim>>;
    /// Applies a move and appends its event atomically; `None` for an unknown gap, a
    /// `Conflict` error for a move the state machine or the epoch refuses ([`check_move`]).
    async fn advance_gap(
        &self,
        partition: &str,
        gap_id: &str,
        change: GapMove,
        now: Millis,
    ) -> Result<Option<GapRecord>>;
    /// Sets a gap's priority and position (its place in claim order), with an event.
    async fn reorder_gap(
        &self,
        partition: &str,
        gap_id: &str,
        priority: u8,
        position: Option<i64>,
        actor: &str,
        now: Millis,
    ) -> Result<Option<GapRecord>>;
}

/// The check of a reorder's priority ([`GapStore::reorder_gap`]), for every backend: `0..=9`.
pub fn check_priority(priority: u8) -> Result<()> {
    if priority > 9 {
        return Err(crate::StoreError::invalid("priority is 0..=9"));
    }
    Ok(())
}

/// Backoff before a gap is claimable again after its `n`-th attempt ended without findings
/// (expired lease or a retryable failure): 1 s doubling to at most 5 minutes.
pub fn gap_backoff(n: u32) -> i64 {
    let shift = n.saturating_sub(1).min(20);
    (1_000i64 << shift).min(300_000)
}

/// The claim order: priority, then an explicit position (unset last), then creation order.
pub fn claim_order(a: &GapRecord, b: &GapRecord) -> std::cmp::Ordering {
    (
        a.priority,
        a.position.is_none(),
        a.position,
        a.created_at,
        &a.gap_id,
    )
        .cmp(&(
            b.priority,
            b.position.is_none(),
            b.position,
            b.created_at,
            &b.gap_id,
        ))
}

/// Checks a move against a gap: the state machine, and the epoch when the move names one.
pub fn check_move(gap: &GapRecord, change: &GapMove) -> std::result::Result<(), String> {
    if !gap.state.allows(change.to) {
        return Err(format!(
            "gap {} is {} and cannot become {}",
            gap.gap_id,
            gap.state.as_str(),
            change.to.as_str()
        ));
    }
    if let Some(epoch) = change.epoch
        && epoch != gap.epoch
    {
        return Err(format!(
            "gap {} was claimed again (epoch {} is not the current {})",
            gap.gap_id, epoch, gap.epoch
        ));
    }
    Ok(())
}

/// The record after a move (the store writes exactly this).
pub fn moved(mut gap: GapRecord, change: &GapMove, now: Millis) -> GapRecord {
    gap.state = change.to;
    gap.updated_at = now;
    match change.to {
        GapState::Open => {
            gap.lease_owner = None;
            gap.lease_expires_at = None;
            gap.not_before = change.not_before;
        }
        GapState::Acquired => {
            gap.lease_owner = None;
            gap.lease_expires_at = None;
            if change.findings_urn.is_some() {
                gap.findings_urn = change.findings_urn.clone();
            }
        }
        GapState::Failed => {
            gap.lease_owner = None;
            gap.lease_expires_at = None;
            gap.failure = change.failure.clone();
        }
        GapState::Acquiring | GapState::Constructed => {}
    }
    gap
}

/// The record after a claim.
pub fn claimed(mut gap: GapRecord, owner: &str, lease_ms: i64, now: Millis) -> GapRecord {
    gap.state = GapState::Acquiring;
    gap.attempts += 1;
    gap.epoch += 1;
    gap.lease_owner = Some(owner.to_string());
    gap.lease_expires_at = Some(now + lease_ms);
    // After this claim's lease, a re-claim waits its backoff.
    gap.not_before = Some(now + lease_ms + gap_backoff(gap.attempts));
    gap.updated_at = now;
    gap
}

/// A new gap id: `g` and 16 hex digits no other call, process or run produces.
pub fn new_gap_id(now: Millis) -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded per process: equal inputs in two processes still differ.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i64(now);
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("g{:016x}", h.finish())
}

/// What makes two questions the same gap: the scope and the question with its whitespace
/// and case folded.
pub fn question_key(scope: &Scope, question: &str) -> String {
    let folded = question
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    evident_core::hashing::content_hash(&format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{folded}",
        scope.partition(),
        scope.project_id.as_deref().unwrap_or(""),
        scope.group_id.as_deref().unwrap_or("")
    ))
}

/// The record of a gap just created.
pub fn created_record(gap: &NewGap, gap_id: String, now: Millis) -> GapRecord {
    GapRecord {
        gap_id,
        scope: gap.scope.clone(),
        question: gap.question.clone(),
        context: gap.context.clone(),
        priority: gap.priority,
        position: None,
        about: gap.about.clone(),
        acquirer: gap.acquirer,
        state: GapState::Open,
        attempts: 0,
        epoch: 0,
        lease_owner: None,
        lease_expires_at: None,
        not_before: None,
        failure: None,
        findings_urn: None,
        created_by: gap.actor.clone(),
        created_at: now,
        updated_at: now,
    }
}

/// The first event of a gap.
pub fn created_event(gap: &NewGap, rec: &GapRecord) -> GapEvent {
    GapEvent {
        gap_id: rec.gap_id.clone(),
        seq: 1,
        at: rec.created_at,
        actor: gap.actor.clone(),
        kind: "created".into(),
        from: None,
        to: GapState::Open,
        phase: Some(gap.phase),
        detail: serde_json::json!({"question": gap.question, "priority": gap.priority}),
    }
}

/// The event of a claim.
pub fn claim_event(before: &GapRecord, after: &GapRecord, seq: i64, now: Millis) -> GapEvent {
    GapEvent {
        gap_id: after.gap_id.clone(),
        seq,
        at: now,
        actor: after.lease_owner.clone().unwrap_or_default(),
        kind: "claimed".into(),
        from: Some(before.state),
        to: after.state,
        phase: Some(GapPhase::Acquisition),
        detail: serde_json::json!({
            "epoch": after.epoch,
            "leaseExpiresAt": after.lease_expires_at,
            "expiredLeaseOf": (before.state == GapState::Acquiring).then(|| before.lease_owner.clone()).flatten(),
        }),
    }
}

/// The event of a move.
pub fn move_event(before: &GapRecord, change: &GapMove, seq: i64, now: Millis) -> GapEvent {
    GapEvent {
        gap_id: before.gap_id.clone(),
        seq,
        at: now,
        actor: change.actor.clone(),
        kind: change.kind.clone(),
        from: Some(before.state),
        to: change.to,
        phase: change.phase,
        detail: change.detail.clone(),
    }
}

/// The event of a reorder.
pub fn reorder_event(gap: &GapRecord, actor: &str, seq: i64, now: Millis) -> GapEvent {
    GapEvent {
        gap_id: gap.gap_id.clone(),
        seq,
        at: now,
        actor: actor.to_string(),
        kind: "reprioritised".into(),
        from: Some(gap.state),
        to: gap.state,
        phase: None,
        detail: serde_json::json!({"priority": gap.priority, "position": gap.position}),
    }
}

/// The error of a refused move.
pub fn refused(why: String) -> crate::StoreError {
    crate::StoreError::new(crate::ErrorKind::Conflict, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn gap() -> GapRecord {
        let new = NewGap {
            scope: Scope::client("c"),
            question: "q".into(),
            context: None,
            priority: 5,
            about: Vec::new(),
            acquirer: Acquirer::Agent,
            actor: "t".into(),
            phase: GapPhase::Detection,
        };
        created_record(&new, "g1".into(), 0)
    }

    fn to(state: GapState, epoch: Option<i64>) -> GapMove {
        GapMove {
            to: state,
            epoch,
            actor: "a".into(),
            kind: "k".into(),
            phase: None,
            detail: serde_json::Value::Null,
            failure: Some("why".into()),
            findings_urn: Some("gap-findings:g1".into()),
            not_before: None,
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Claim { lease: i64 },
        Advance { to: usize, stale: bool },
        Tick(i64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1i64..5_000).prop_map(|lease| Op::Claim { lease }),
            (0usize..5, any::<bool>()).prop_map(|(to, stale)| Op::Advance { to, stale }),
            (0i64..400_000).prop_map(Op::Tick),
        ]
    }

    proptest! {
        /// Any sequence of claims, moves and clock ticks keeps the machine's invariants: only
        /// allowed moves happen, a stale epoch never moves the gap, a terminal gap stays
        /// terminal, a live lease is never claimed over, and `acquired` always has findings.
        #[test]
        fn the_gap_state_machine_keeps_its_invariants(ops in proptest::collection::vec(op(), 1..60)) {
            let mut g = gap();
            let mut now = 0i64;
            for op in ops {
                let before = g.clone();
                match op {
                    Op::Tick(ms) => now += ms,
                    Op::Claim { lease } => {
                        if g.claimable(now) {
                            prop_assert!(!g.leased(now));
                            g = claimed(g, "w", lease, now);
                            prop_assert_eq!(g.epoch, before.epoch + 1);
                            prop_assert!(g.leased(now));
                        }
                    }
                    Op::Advance { to: i, stale } => {
                        let epoch = if stale { Some(g.epoch - 1) } else { Some(g.epoch) };
                        let change = to(GapState::ALL[i], epoch);
                        match check_move(&g, &change) {
                            Ok(()) => {
                                prop_assert!(before.state.allows(change.to));
                                prop_assert!(!stale);
                                g = moved(g, &change, now);
                            }
                            Err(_) => prop_assert!(stale || !before.state.allows(change.to)),
                        }
                    }
                }
                if before.state.is_terminal() {
                    prop_assert_eq!(g.state, before.state);
                }
                prop_assert!(g.state == GapState::Acquiring || g.lease_owner.is_none());
                if g.state == GapState::Acquired {
                    prop_assert!(g.findings_urn.is_some());
                }
                prop_assert!(g.epoch >= before.epoch);
            }
        }
    }

    #[test]
    fn backoff_doubles_to_a_cap() {
        assert_eq!(gap_backoff(1), 1_000);
        assert_eq!(gap_backoff(2), 2_000);
        assert_eq!(gap_backoff(40), 300_000);
    }
}
