//! Request bodies of the claims API (`/api/v1/claims…`), shared with the CLI, which sends
//! them. Each converts into what `evident_kb::claims` takes.

use evident_core::claims::{Actor, ActorType, ClaimStatus, EvidenceRef, Subject};
use evident_kb::claims::{AttentionQuery, ChangeRequest, NewClaim, Recall};
use serde::{Deserialize, Serialize};

scoped_request! {
    required:
    /// `POST /api/v1/claims` (learn).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct LearnRequest {
        pub text: String,
        /// Required non-empty (`422 evidence_required` otherwise); absent reads as empty.
        #[serde(default)]
        pub evidence: Vec<EvidenceRef>,
        #[serde(default = "observed")]
        pub status: ClaimStatus,
        #[serde(default = "one")]
        pub confidence: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub subject: Option<Subject>,
        /// Who learned it; the calling token (as an agent) when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub actor: Option<Actor>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub session_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub domain: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub tags: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub about: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub supersedes: Option<String>,
    }
}

fn observed() -> ClaimStatus {
    ClaimStatus::Observed
}

fn one() -> f64 {
    1.0
}

/// The actor a request names, or the calling credential as an agent.
pub fn actor_or(actor: Option<Actor>, credential: &str) -> Actor {
    actor.unwrap_or_else(|| Actor {
        actor_type: ActorType::Agent,
        id: credential.to_string(),
    })
}

impl LearnRequest {
    pub fn into_new_claim(self, credential: &str) -> NewClaim {
        NewClaim {
            text: self.text,
            evidence: self.evidence,
            status: self.status,
            confidence: self.confidence,
            subject: self.subject,
            actor: actor_or(self.actor, credential),
            session_id: self.session_id,
            domain: self.domain,
            tags: self.tags,
            about: self.about,
            supersedes: self.supersedes,
        }
    }
}

scoped_request! {
    required:
    /// `POST /api/v1/claims/{id}/transition`, and (with `to` fixed by the route) `verify`,
    /// `dispute` and `supersede`.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct TransitionRequest {
        /// Required by `transition`; set by the other routes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub to: Option<ClaimStatus>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub evidence: Vec<EvidenceRef>,
        /// The successor claim, for `superseded`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub by: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub actor: Option<Actor>,
    }
}

impl TransitionRequest {
    pub fn change(&self, to: ClaimStatus) -> ChangeRequest {
        ChangeRequest {
            to,
            reason: self.reason.clone(),
            evidence: self.evidence.clone(),
            by: self.by.clone(),
        }
    }
}

/// `subject` of a recall: `{scopeType, scopeId}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubjectFilter {
    pub scope_type: String,
    pub scope_id: String,
}

scoped_request! {
    required:
    /// `POST /api/v1/claims/recall`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct RecallRequest {
        pub question: String,
        /// Statuses to include; hypothesis, inferred, observed and verified when empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub status: Vec<ClaimStatus>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub domain: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub tags: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub subject: Option<SubjectFilter>,
        /// An actor id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub actor: Option<String>,
        #[serde(default = "ten")]
        pub limit: usize,
    }
}

fn ten() -> usize {
    10
}

impl From<RecallRequest> for Recall {
    fn from(r: RecallRequest) -> Recall {
        Recall {
            question: r.question,
            statuses: r.status,
            domain: r.domain,
            tags: r.tags,
            subject: r.subject.map(|s| (s.scope_type, s.scope_id)),
            actor_id: r.actor,
            limit: r.limit,
        }
    }
}

scoped_request! {
    required:
    /// `GET /api/v1/claims/attention` query.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct AttentionRequest {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub actor: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub session: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub subject_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub subject_id: Option<String>,
        #[serde(default = "ten")]
        pub limit: usize,
    }
}

impl From<AttentionRequest> for AttentionQuery {
    fn from(r: AttentionRequest) -> AttentionQuery {
        AttentionQuery {
            actor_id: r.actor,
            session_id: r.session,
            subject: r.subject_type.zip(r.subject_id),
            limit: r.limit,
        }
    }
}

scoped_request! {
    required:
    /// `GET /api/v1/claims/{id}` and `…/history` query: the reader's scope.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ClaimScopeQuery {

    }
}
