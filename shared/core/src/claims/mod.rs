//! Claims (seed 002): durable facts an agent learned, which cannot exist without evidence,
//! move through a lifecycle and keep an append-only history.
//!
//! - [`Claim`]: the current state; [`ClaimEvent`]: one change. A claim is the fold of its
//!   events ([`replay`]), and every writer applies an event with [`Claim::apply`], so the
//!   stored claim and its replayed history cannot disagree.
//! - [`allowed`]: the seed's transition table, as data ([`TRANSITIONS`]).
//! - [`check_evidence`]: no claim and no status without evidence; `model_inference` only
//!   backs a `hypothesis` or an `inferred` claim.
//! - [`severity`] and [`attention`]: the seed's claim severity and what needs a person.
//!
//! Pure: times are given (`Millis`), ids are made by the caller.

mod lifecycle;
#[cfg(test)]
mod tests;

pub use lifecycle::*;

use serde::{Deserialize, Serialize};

use crate::model::Locator;
use crate::refs::NodeKey;
use crate::scope::Scope;

/// Milliseconds since the epoch.
pub type Millis = i64;

/// The chunk kind of a claim's text in the chunk store, and the node type of its graph node.
pub const CLAIM_KIND: &str = "claim";
/// The source URN (and graph key) namespace of claims: `claim:{id}`.
pub const CLAIM_NAMESPACE: &str = "claim";
/// The edge type from a claim's node to what it is about.
pub const ABOUT_EDGE: &str = "about";
/// Below this confidence an unverified claim needs attention once it is old.
pub const LOW_CONFIDENCE: f64 = 0.5;
/// How old a low-confidence claim gets before it needs attention (seven days).
pub const STALE_AFTER_MS: Millis = 7 * 24 * 3600 * 1000;

/// Where a claim stands in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    Hypothesis,
    Inferred,
    Observed,
    Verified,
    Disputed,
    Superseded,
}

impl ClaimStatus {
    pub const ALL: [ClaimStatus; 6] = [
        ClaimStatus::Hypothesis,
        ClaimStatus::Inferred,
        ClaimStatus::Observed,
        ClaimStatus::Verified,
        ClaimStatus::Disputed,
        ClaimStatus::Superseded,
    ];
    /// What `recall` returns when the caller names no status (the seed's default).
    pub const ACTIVE: [ClaimStatus; 4] = [
        ClaimStatus::Hypothesis,
        ClaimStatus::Inferred,
        ClaimStatus::Observed,
        ClaimStatus::Verified,
    ];
    /// The statuses a claim may be learned in.
    pub const INITIAL: [ClaimStatus; 3] = [
        ClaimStatus::Hypothesis,
        ClaimStatus::Inferred,
        ClaimStatus::Observed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClaimStatus::Hypothesis => "hypothesis",
            ClaimStatus::Inferred => "inferred",
            ClaimStatus::Observed => "observed",
            ClaimStatus::Verified => "verified",
            ClaimStatus::Disputed => "disputed",
            ClaimStatus::Superseded => "superseded",
        }
    }

    pub fn parse(raw: &str) -> Option<ClaimStatus> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

/// The kinds of evidence (seed 002 / ADR-0033), plus `chunk`: an Evident chunk id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    File,
    Url,
    ToolResult,
    Message,
    Artifact,
    ModelInference,
    HumanAssertion,
    UserStatement,
    Chunk,
}

impl EvidenceKind {
    pub const ALL: [EvidenceKind; 9] = [
        EvidenceKind::File,
        EvidenceKind::Url,
        EvidenceKind::ToolResult,
        EvidenceKind::Message,
        EvidenceKind::Artifact,
        EvidenceKind::ModelInference,
        EvidenceKind::HumanAssertion,
        EvidenceKind::UserStatement,
        EvidenceKind::Chunk,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceKind::File => "file",
            EvidenceKind::Url => "url",
            EvidenceKind::ToolResult => "tool_result",
            EvidenceKind::Message => "message",
            EvidenceKind::Artifact => "artifact",
            EvidenceKind::ModelInference => "model_inference",
            EvidenceKind::HumanAssertion => "human_assertion",
            EvidenceKind::UserStatement => "user_statement",
            EvidenceKind::Chunk => "chunk",
        }
    }
}

/// One piece of evidence: `{kind, ref, locator?, note?}`. For `chunk` evidence `ref` is the
/// chunk id and `locator` the chunk's locator when the claim was written (kept so that a
/// claim still says where its evidence was after the chunk went away).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvidenceRef {
    pub kind: EvidenceKind,
    #[serde(rename = "ref")]
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<Locator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl EvidenceRef {
    pub fn new(kind: EvidenceKind, reference: impl Into<String>) -> EvidenceRef {
        EvidenceRef {
            kind,
            reference: reference.into(),
            locator: None,
            note: None,
        }
    }

    /// The chunk id, for `chunk` evidence.
    pub fn chunk_id(&self) -> Option<&str> {
        (self.kind == EvidenceKind::Chunk).then_some(self.reference.as_str())
    }
}

/// What a claim is about, at which level (the seed's `scope_type` / `scope_id`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Subject {
    pub scope_type: SubjectType,
    pub scope_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubjectType {
    Project,
    Repo,
    Agent,
    Run,
}

impl SubjectType {
    pub fn as_str(self) -> &'static str {
        match self {
            SubjectType::Project => "project",
            SubjectType::Repo => "repo",
            SubjectType::Agent => "agent",
            SubjectType::Run => "run",
        }
    }
}

/// Who learned or changed a claim.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Actor {
    #[serde(rename = "type")]
    pub actor_type: ActorType,
    pub id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorType {
    Agent,
    User,
    System,
    Tool,
}

impl Actor {
    /// The actor of changes Evident makes itself (evidence that went away).
    pub fn system() -> Actor {
        Actor {
            actor_type: ActorType::System,
            id: "evident".into(),
        }
    }
}

/// A claim as stored: its immutable content and the state its events folded into.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    pub id: String,
    pub text: String,
    /// Every piece of evidence: the claim's own, then what transitions brought. Never empty.
    pub evidence: Vec<EvidenceRef>,
    pub status: ClaimStatus,
    pub confidence: f64,
    pub scope: Scope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    pub actor: Actor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Graph keys the claim is about (explicit ones, after normalisation).
    #[serde(default)]
    pub about: Vec<NodeKey>,
    /// The claim this one proposes to replace (what it was learned as).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// The claim that replaced this one (set exactly when `status` is `superseded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// A chunk that evidences the claim was purged or its text changed.
    #[serde(default)]
    pub evidence_stale: bool,
    /// The credential (token id) that learned the claim: with an admin, the only one who may
    /// supersede it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_by: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// How many events the claim has (its history's length).
    pub version: u64,
}

/// What one event changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimChange {
    /// The claim was learned (the first event; `from` is absent).
    Learned,
    /// The status moved (`from` → `to`), possibly with new evidence.
    Transition,
    /// Chunks that evidence the claim went away (`from` = `to`).
    EvidenceStale,
}

/// One entry of a claim's append-only history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimEvent {
    pub claim_id: String,
    /// Position in the history, from 0.
    pub seq: u64,
    pub change: ClaimChange,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<ClaimStatus>,
    pub to: ClaimStatus,
    pub actor: Actor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Evidence this event brought (all of the claim's for `learned`).
    #[serde(default)]
    pub evidence: Vec<EvidenceRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// The evidence chunks that went away (`evidence_stale`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_chunks: Vec<String>,
    pub at: Millis,
}

/// The part of a claim its events decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimState {
    pub status: ClaimStatus,
    pub evidence: Vec<EvidenceRef>,
    pub superseded_by: Option<String>,
    pub evidence_stale: bool,
    pub updated_at: Millis,
    pub version: u64,
}

impl Claim {
    pub fn state(&self) -> ClaimState {
        ClaimState {
            status: self.status,
            evidence: self.evidence.clone(),
            superseded_by: self.superseded_by.clone(),
            evidence_stale: self.evidence_stale,
            updated_at: self.updated_at,
            version: self.version,
        }
    }

    /// The chunk ids among the claim's evidence.
    pub fn evidence_chunks(&self) -> impl Iterator<Item = &str> {
        self.evidence.iter().filter_map(EvidenceRef::chunk_id)
    }

    /// The claim's source URN and graph key value: `claim:{id}`.
    pub fn urn(&self) -> String {
        claim_urn(&self.id)
    }
}

/// `claim:{id}`.
pub fn claim_urn(id: &str) -> String {
    format!("{CLAIM_NAMESPACE}:{id}")
}

/// The claim id of a `claim:{id}` URN.
pub fn claim_id_of_urn(urn: &str) -> Option<&str> {
    urn.strip_prefix("claim:").filter(|id| !id.is_empty())
}
