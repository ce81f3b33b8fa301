//! The lifecycle: the transition table, the evidence rules, events applied and replayed,
//! severity and attention.

use super::*;

use ClaimStatus::*;

/// The seed's transitions, one row per `from` status: `observed → verified | disputed`,
/// `inferred → verified | disputed`, `hypothesis → observed | disputed`,
/// `verified → disputed`, `disputed → verified`, and any status but `superseded` →
/// `superseded`. Nothing leaves `superseded`; no status moves to itself.
pub const TRANSITIONS: &[(ClaimStatus, &[ClaimStatus])] = &[
    (Hypothesis, &[Observed, Disputed, Superseded]),
    (Inferred, &[Verified, Disputed, Superseded]),
    (Observed, &[Verified, Disputed, Superseded]),
    (Verified, &[Disputed, Superseded]),
    (Disputed, &[Verified, Superseded]),
    (Superseded, &[]),
];

/// Whether the table allows `from → to`.
pub fn allowed(from: ClaimStatus, to: ClaimStatus) -> bool {
    TRANSITIONS
        .iter()
        .any(|(f, tos)| *f == from && tos.contains(&to))
}

/// A claim or a change refused by the rules, with a stable code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClaimError {
    #[error(
        "a claim needs at least one piece of evidence; when there is truly none, it is a hypothesis: use kind `model_inference` with a low confidence"
    )]
    EvidenceRequired,
    #[error(
        "`model_inference` evidence only backs a `hypothesis` or an `inferred` claim, not `{}`",
        .0.as_str()
    )]
    InferenceNotEnough(ClaimStatus),
    #[error("a claim is learned as hypothesis, inferred or observed, not `{}`", .0.as_str())]
    InvalidInitialStatus(ClaimStatus),
    #[error("a claim cannot move from `{}` to `{}`", .from.as_str(), .to.as_str())]
    InvalidTransition { from: ClaimStatus, to: ClaimStatus },
    #[error("a superseded claim names the claim that replaced it (`by`)")]
    SuccessorRequired,
    #[error("confidence must be within 0..=1, not {0}")]
    InvalidConfidence(f64),
    #[error("the history is not a claim's: {0}")]
    BrokenHistory(String),
}

impl ClaimError {
    pub fn code(&self) -> &'static str {
        match self {
            ClaimError::EvidenceRequired => "evidence_required",
            ClaimError::InferenceNotEnough(_) => "invalid_evidence",
            ClaimError::InvalidInitialStatus(_) => "invalid_field",
            ClaimError::InvalidTransition { .. } => "invalid_transition",
            ClaimError::SuccessorRequired => "missing_field",
            ClaimError::InvalidConfidence(_) => "invalid_field",
            ClaimError::BrokenHistory(_) => "corrupt_history",
        }
    }

    pub fn http_status(&self) -> u16 {
        match self {
            ClaimError::EvidenceRequired | ClaimError::InferenceNotEnough(_) => 422,
            ClaimError::InvalidInitialStatus(_)
            | ClaimError::SuccessorRequired
            | ClaimError::InvalidConfidence(_) => 400,
            ClaimError::InvalidTransition { .. } => 409,
            ClaimError::BrokenHistory(_) => 500,
        }
    }
}

/// The evidence rule for evidence given with a claim (`learned`) or a change to `status`:
/// `model_inference` only backs `hypothesis` and `inferred`.
pub fn check_evidence_kinds(
    status: ClaimStatus,
    evidence: &[EvidenceRef],
) -> Result<(), ClaimError> {
    let inference = evidence
        .iter()
        .any(|e| e.kind == EvidenceKind::ModelInference);
    if inference && !matches!(status, Hypothesis | Inferred) {
        return Err(ClaimError::InferenceNotEnough(status));
    }
    Ok(())
}

/// The rules of a new claim: evidence, initial status, confidence.
pub fn check_new(
    status: ClaimStatus,
    confidence: f64,
    evidence: &[EvidenceRef],
) -> Result<(), ClaimError> {
    if evidence.is_empty() {
        return Err(ClaimError::EvidenceRequired);
    }
    if !ClaimStatus::INITIAL.contains(&status) {
        return Err(ClaimError::InvalidInitialStatus(status));
    }
    if !(0.0..=1.0).contains(&confidence) {
        return Err(ClaimError::InvalidConfidence(confidence));
    }
    check_evidence_kinds(status, evidence)
}

impl ClaimEvent {
    /// The first event of `claim` (as it is learned).
    pub fn learned(claim: &Claim) -> ClaimEvent {
        ClaimEvent {
            claim_id: claim.id.clone(),
            seq: 0,
            change: ClaimChange::Learned,
            from: None,
            to: claim.status,
            actor: claim.actor.clone(),
            reason: None,
            evidence: claim.evidence.clone(),
            superseded_by: None,
            stale_chunks: Vec::new(),
            at: claim.created_at,
        }
    }
}

/// A change someone asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    pub to: ClaimStatus,
    pub actor: Actor,
    pub reason: Option<String>,
    pub evidence: Vec<EvidenceRef>,
    /// The successor, for `superseded`.
    pub by: Option<String>,
}

impl Claim {
    /// The event `t` makes of this claim now, when the rules allow it.
    pub fn transition(&self, t: Transition, at: Millis) -> Result<ClaimEvent, ClaimError> {
        if !allowed(self.status, t.to) {
            return Err(ClaimError::InvalidTransition {
                from: self.status,
                to: t.to,
            });
        }
        if t.to == Superseded && t.by.is_none() {
            return Err(ClaimError::SuccessorRequired);
        }
        check_evidence_kinds(t.to, &t.evidence)?;
        Ok(ClaimEvent {
            claim_id: self.id.clone(),
            seq: self.version,
            change: ClaimChange::Transition,
            from: Some(self.status),
            to: t.to,
            actor: t.actor,
            reason: t.reason,
            evidence: t.evidence,
            superseded_by: if t.to == Superseded { t.by } else { None },
            stale_chunks: Vec::new(),
            at: at.max(self.updated_at),
        })
    }

    /// The event marking the claim's evidence stale because `gone` chunks went away; `None`
    /// when none of them evidences it.
    pub fn evidence_gone(&self, gone: &[String], at: Millis) -> Option<ClaimEvent> {
        let mut stale: Vec<String> = self
            .evidence_chunks()
            .filter(|c| gone.iter().any(|g| g == c))
            .map(str::to_string)
            .collect();
        stale.sort_unstable();
        stale.dedup();
        if stale.is_empty() {
            return None;
        }
        Some(ClaimEvent {
            claim_id: self.id.clone(),
            seq: self.version,
            change: ClaimChange::EvidenceStale,
            from: Some(self.status),
            to: self.status,
            actor: Actor::system(),
            reason: Some("evidence chunk purged or its text changed".into()),
            evidence: Vec::new(),
            superseded_by: None,
            stale_chunks: stale,
            at: at.max(self.updated_at),
        })
    }

    /// Applies the next event of the claim's history (checked as [`replay`] checks it).
    pub fn apply(&mut self, event: &ClaimEvent) -> Result<(), ClaimError> {
        let mut state = self.state();
        step(&mut state, event)?;
        self.status = state.status;
        self.evidence = state.evidence;
        self.superseded_by = state.superseded_by;
        self.evidence_stale = state.evidence_stale;
        self.updated_at = state.updated_at;
        self.version = state.version;
        Ok(())
    }
}

fn broken(msg: String) -> ClaimError {
    ClaimError::BrokenHistory(msg)
}

fn step(state: &mut ClaimState, e: &ClaimEvent) -> Result<(), ClaimError> {
    if e.seq != state.version {
        return Err(broken(format!(
            "event {} where {} was due",
            e.seq, state.version
        )));
    }
    match e.change {
        ClaimChange::Learned => return Err(broken("a second `learned` event".into())),
        ClaimChange::Transition => {
            if e.from != Some(state.status) || !allowed(state.status, e.to) {
                return Err(ClaimError::InvalidTransition {
                    from: state.status,
                    to: e.to,
                });
            }
            if e.to == Superseded {
                state.superseded_by = Some(
                    e.superseded_by
                        .clone()
                        .ok_or(ClaimError::SuccessorRequired)?,
                );
            }
            state.status = e.to;
            state.evidence.extend(e.evidence.iter().cloned());
        }
        ClaimChange::EvidenceStale => {
            if e.from != Some(state.status) || e.to != state.status {
                return Err(broken("`evidence_stale` changed the status".into()));
            }
            state.evidence_stale = true;
        }
    }
    state.updated_at = state.updated_at.max(e.at);
    state.version += 1;
    Ok(())
}

/// The state a history folds into: the first event is `learned`, each next one is allowed
/// from the state before it.
pub fn replay(events: &[ClaimEvent]) -> Result<ClaimState, ClaimError> {
    let Some((first, rest)) = events.split_first() else {
        return Err(broken("no events".into()));
    };
    if first.change != ClaimChange::Learned || first.from.is_some() || first.seq != 0 {
        return Err(broken("the first event is not `learned`".into()));
    }
    if first.evidence.is_empty() {
        return Err(ClaimError::EvidenceRequired);
    }
    let mut state = ClaimState {
        status: first.to,
        evidence: first.evidence.clone(),
        superseded_by: None,
        evidence_stale: false,
        updated_at: first.at,
        version: 1,
    };
    for e in rest {
        step(&mut state, e)?;
    }
    Ok(state)
}

/// The seed's claim severity (`derive_claim_severity`), in its value space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    // Declared most severe first, so sorting ascending puts warnings first.
    Warning,
    Info,
    Neutral,
}

/// The seed's tone, beside the severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    Warning,
    Info,
    Neutral,
    Success,
}

/// `derive_claim_severity` of the seed: disputed and weak hypotheses warn, open claims
/// inform, verified succeeds, superseded is archived. A claim whose evidence went stale
/// warns too (the seed predates staleness; it is contested evidence as much as a dispute).
pub fn severity(claim: &Claim) -> (Severity, Tone) {
    match claim.status {
        Disputed => (Severity::Warning, Tone::Warning),
        Superseded => (Severity::Neutral, Tone::Neutral),
        _ if claim.evidence_stale => (Severity::Warning, Tone::Warning),
        Hypothesis if claim.confidence < LOW_CONFIDENCE => (Severity::Warning, Tone::Warning),
        Observed | Inferred => (Severity::Info, Tone::Info),
        Hypothesis => (Severity::Info, Tone::Neutral),
        Verified => (Severity::Neutral, Tone::Success),
    }
}

/// Why a claim needs attention, most pressing first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionReason {
    /// "Review conflicting evidence".
    Disputed,
    /// "Evidence changed: check the claim still holds".
    EvidenceStale,
    /// "Verify or discard": confidence below 0.5 and older than seven days, unverified.
    LowConfidence,
}

/// Why `claim` needs attention at `now` (empty: it does not). Superseded claims never do.
pub fn attention(claim: &Claim, now: Millis) -> Vec<AttentionReason> {
    let mut out = Vec::new();
    if claim.status == Superseded {
        return out;
    }
    if claim.status == Disputed {
        out.push(AttentionReason::Disputed);
    }
    if claim.evidence_stale {
        out.push(AttentionReason::EvidenceStale);
    }
    if claim.confidence < LOW_CONFIDENCE
        && claim.status != Verified
        && now.saturating_sub(claim.created_at) >= STALE_AFTER_MS
    {
        out.push(AttentionReason::LowConfidence);
    }
    out
}

/// The attention order: severity (warnings first), then the most pressing reason, then the
/// most recently changed first, then id (a total order).
pub fn attention_order(a: &Claim, b: &Claim, now: Millis) -> std::cmp::Ordering {
    let key = |c: &Claim| (severity(c).0, attention(c, now).first().copied());
    key(a)
        .cmp(&key(b))
        .then(b.updated_at.cmp(&a.updated_at))
        .then(a.id.cmp(&b.id))
}
