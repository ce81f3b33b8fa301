//! Changes to claims: transitions (verify, dispute, supersede) and evidence that went away.
//! Every change is one event appended with the new state under optimistic concurrency
//! (`ClaimStore::update_claim`), retried on a lost race from a fresh read.

use evident_core::claims::{Claim, ClaimEvent, ClaimStatus, Millis, Transition};
use evident_core::validate;
use evident_core::{Scope, Visibility};

use super::{Caller, MAX_NOTE_BYTES, check_actor, check_evidence, with_chunk_locators};
use crate::credentials::Scan;
use crate::{Kb, KbError, Result};

/// Reads of a claim a change is tried against before giving up on concurrent writers.
const ATTEMPTS: usize = 5;

/// A change someone asks for (see [`Kb::transition`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRequest {
    pub to: ClaimStatus,
    pub reason: Option<String>,
    pub evidence: Vec<evident_core::claims::EvidenceRef>,
    /// The successor, for `superseded`.
    pub by: Option<String>,
}

impl Kb {
    /// Moves a claim `scope` sees to `req.to` (the seed's table: `409 invalid_transition`
    /// otherwise), appending the event. Superseding needs an existing, visible successor and
    /// an admin or the credential that learned the claim.
    #[tracing::instrument(skip_all, fields(claim = id, to = req.to.as_str()))]
    pub async fn transition(
        &self,
        scope: &Scope,
        id: &str,
        req: ChangeRequest,
        caller: &Caller,
        now: Millis,
    ) -> Result<Claim> {
        let vis = Visibility::of(scope.clone());
        let mut scan = Scan::default();
        check_actor(&caller.actor, &mut scan)?;
        check_evidence(&req.evidence, &mut scan)?;
        if let Some(r) = &req.reason {
            validate::bounded_text("reason", r, MAX_NOTE_BYTES)?;
            scan.text("reason", r)?;
        }
        let mut evidence = req.evidence;
        with_chunk_locators(self, &vis, &mut evidence).await?;
        if req.to == ClaimStatus::Superseded {
            let by = req.by.as_deref().ok_or(KbError::Claim(
                evident_core::claims::ClaimError::SuccessorRequired,
            ))?;
            if by == id {
                return Err(KbError::Invalid("a claim cannot supersede itself".into()));
            }
            // The successor must exist where the caller can see it.
            self.claim(&vis, by).await?;
        }
        for _ in 0..ATTEMPTS {
            let claim = self.claim(&vis, id).await?;
            if req.to == ClaimStatus::Superseded
                && !caller.admin
                && (caller.credential.is_none() || caller.credential != claim.recorded_by)
            {
                return Err(KbError::PolicyRefused {
                    code: "forbidden_supersede",
                    message:
                        "only an admin or the credential that learned a claim may supersede it"
                            .into(),
                });
            }
            let event = claim.transition(
                Transition {
                    to: req.to,
                    actor: caller.actor.clone(),
                    reason: req.reason.clone(),
                    evidence: evidence.clone(),
                    by: req.by.clone(),
                },
                now,
            )?;
            if let Some(done) = self.append(claim, event).await? {
                metrics::counter!("evident_claim_transitions_total", "to" => req.to.as_str())
                    .increment(1);
                return Ok(done);
            }
        }
        Err(evident_store::StoreError::new(
            evident_store::ErrorKind::Conflict,
            format!("claim `{id}` kept changing; retry"),
        )
        .into())
    }

    /// Applies `event` to `claim` and stores both if nobody changed the claim meanwhile.
    async fn append(&self, mut claim: Claim, event: ClaimEvent) -> Result<Option<Claim>> {
        let expected = claim.version;
        claim.apply(&event)?;
        let stored = self
            .stores
            .claims
            .update_claim(&claim, expected, &event)
            .await?;
        Ok(stored.then_some(claim))
    }

    /// A visible claim's events, oldest first.
    pub async fn claim_history(&self, vis: &Visibility, id: &str) -> Result<Vec<ClaimEvent>> {
        let claim = self.claim(vis, id).await?;
        Ok(self
            .stores
            .claims
            .claim_history(claim.scope.partition(), &claim.id)
            .await?)
    }

    /// Marks the claims these chunks evidenced as `evidenceStale` (never deletes them): the
    /// write path calls it with the chunks a write removed (purged, or text changed). Returns
    /// how many claims were marked. A claim already stale by these chunks gets no new event.
    pub async fn claims_evidence_gone(
        &self,
        partition: &str,
        chunk_ids: &[String],
    ) -> Result<usize> {
        if chunk_ids.is_empty() {
            return Ok(0);
        }
        let ids = self
            .stores
            .claims
            .claims_citing(partition, chunk_ids)
            .await?;
        let now = now_ms();
        let mut marked = 0;
        for id in ids {
            for _ in 0..ATTEMPTS {
                let Some(claim) = self
                    .stores
                    .claims
                    .get_claims(partition, std::slice::from_ref(&id))
                    .await?
                    .pop()
                else {
                    break;
                };
                let Some(event) = claim.evidence_gone(chunk_ids, now) else {
                    break;
                };
                if self.append(claim, event).await?.is_some() {
                    marked += 1;
                    break;
                }
            }
        }
        if marked > 0 {
            metrics::counter!("evident_claims_stale_total").increment(marked as u64);
            tracing::info!(partition, marked, "claims marked evidence-stale");
        }
        Ok(marked)
    }
}

fn now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}
