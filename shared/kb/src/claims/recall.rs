//! Reading claims: recall (hybrid search over claim texts + the store's filters), the
//! attention list, and claims rendered with their evidence resolved to citations.

use std::collections::{HashMap, HashSet};

use evident_ai::Priority;
use evident_core::claims::{
    AttentionReason, CLAIM_KIND, Claim, ClaimStatus, EvidenceRef, Millis, STALE_AFTER_MS, Severity,
    Tone, attention, attention_order, claim_id_of_urn, severity,
};
use evident_core::validate::{self, FieldError};
use evident_core::{Locator, Visibility};
use evident_store::ChunkFilter;
use evident_store::claims::ClaimFilter;
use serde::Serialize;

use crate::retrieve::Fusion;
use crate::{Kb, Result};

/// Most results of one recall or attention read.
pub const MAX_LIMIT: usize = 100;
/// Candidates per search channel for each result asked for (filters drop some).
const CANDIDATES_PER_RESULT: usize = 5;
/// Claims read for an attention list before it is ordered by severity.
const ATTENTION_WINDOW: usize = 1000;

/// One piece of evidence with where it points now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedEvidence {
    #[serde(flatten)]
    pub evidence: EvidenceRef,
    /// A short citation (`src/retry.rs:10-24@abc123`) of the locator, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citation: Option<String>,
    /// For chunk evidence: the chunk's source, when the reader can see the chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_urn: Option<String>,
    /// For chunk evidence: whether the chunk still exists where the reader can see it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<bool>,
}

/// A claim as read: the claim, its evidence resolved, its severity.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimView {
    #[serde(flatten)]
    pub claim: Claim,
    pub citations: Vec<ResolvedEvidence>,
    pub severity: Severity,
    pub tone: Tone,
}

/// What to recall.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recall {
    pub question: String,
    /// Empty: hypothesis, inferred, observed and verified (disputed and superseded only when
    /// asked for).
    pub statuses: Vec<ClaimStatus>,
    pub domain: Option<String>,
    /// Every tag must be on the claim.
    pub tags: Vec<String>,
    pub subject: Option<(String, String)>,
    pub actor_id: Option<String>,
    pub limit: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecallHit {
    #[serde(flatten)]
    pub view: ClaimView,
    pub score: f32,
}

/// An attention list's lenses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttentionQuery {
    pub actor_id: Option<String>,
    pub session_id: Option<String>,
    pub subject: Option<(String, String)>,
    pub limit: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttentionItem {
    #[serde(flatten)]
    pub view: ClaimView,
    pub reasons: Vec<AttentionReason>,
}

fn check_limit(limit: usize) -> Result<usize> {
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(FieldError::Invalid {
            field: "limit",
            reason: format!("must be 1..={MAX_LIMIT}"),
        }
        .into());
    }
    Ok(limit)
}

fn citation(locator: Option<&Locator>) -> Option<String> {
    locator.map(Locator::citation)
}

impl Kb {
    /// Claims with their evidence resolved for `vis`: chunk evidence the reader can see gets
    /// the chunk's current locator and citation; one it cannot see keeps the locator the
    /// claim recorded and says it is not live.
    pub async fn claim_views(
        &self,
        vis: &Visibility,
        claims: Vec<Claim>,
    ) -> Result<Vec<ClaimView>> {
        let ids: Vec<String> = claims
            .iter()
            .flat_map(|c| c.evidence_chunks().map(str::to_string))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let chunks = self.visible_chunks(vis, &ids).await?;
        Ok(claims
            .into_iter()
            .map(|claim| {
                let citations = claim
                    .evidence
                    .iter()
                    .map(|e| match e.chunk_id() {
                        Some(id) => match chunks.get(id) {
                            Some(c) => ResolvedEvidence {
                                evidence: EvidenceRef {
                                    locator: Some(c.locator.clone()),
                                    ..e.clone()
                                },
                                citation: Some(c.locator.citation()),
                                source_urn: Some(c.source_urn.clone()),
                                live: Some(true),
                            },
                            None => ResolvedEvidence {
                                evidence: e.clone(),
                                citation: citation(e.locator.as_ref()),
                                source_urn: None,
                                live: Some(false),
                            },
                        },
                        None => ResolvedEvidence {
                            evidence: e.clone(),
                            citation: citation(e.locator.as_ref()),
                            source_urn: None,
                            live: None,
                        },
                    })
                    .collect();
                let (severity, tone) = severity(&claim);
                ClaimView {
                    claim,
                    citations,
                    severity,
                    tone,
                }
            })
            .collect())
    }

    /// The claims, as `vis` reads them, that cite any of `chunk_ids` (a node's evidence, on
    /// its console page): what agents concluded from the same sources. Superseded ones too,
    /// so a reader sees what was replaced; newest first.
    pub async fn claims_citing(
        &self,
        vis: &Visibility,
        chunk_ids: &[String],
    ) -> Result<Vec<ClaimView>> {
        if chunk_ids.is_empty() {
            return Ok(Vec::new());
        }
        let partition = vis.reader().partition();
        let ids = self
            .stores
            .claims
            .claims_citing(partition, chunk_ids)
            .await?;
        let mut found: Vec<Claim> = self
            .stores
            .claims
            .get_claims(partition, &ids)
            .await?
            .into_iter()
            .filter(|c| vis.admits(&c.scope))
            .collect();
        found.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
        self.claim_views(vis, found).await
    }

    /// Hybrid search (BM25 + vector, fused by RRF) over the texts of the claims `vis` sees,
    /// filtered by status (active ones unless asked), domain, tags, subject and actor.
    #[tracing::instrument(skip_all)]
    pub async fn recall(&self, vis: &Visibility, q: Recall) -> Result<Vec<RecallHit>> {
        validate::bounded_text("question", &q.question, 4096)?;
        let limit = check_limit(q.limit)?;
        let statuses = if q.statuses.is_empty() {
            ClaimStatus::ACTIVE.to_vec()
        } else {
            q.statuses.clone()
        };
        let depth = (limit * CANDIDATES_PER_RESULT).max(20);
        let filter = ChunkFilter {
            kinds: vec![CLAIM_KIND.to_string()],
            ..Default::default()
        };
        let vector = self
            .embedder
            .embed(std::slice::from_ref(&q.question), Priority::INTERACTIVE)
            .await?
            .pop()
            .unwrap_or_default();
        let (text, dense) = tokio::try_join!(
            self.stores
                .chunks
                .search_text(vis, &q.question, &filter, depth),
            self.stores
                .chunks
                .search_vector(vis, &vector, &filter, depth),
        )?;
        let mut fusion = Fusion::default();
        fusion.add(&text, 1.0);
        fusion.add(&dense, 1.0);
        let ranked = fusion.ranked(depth * 2);
        let chunk_ids: Vec<String> = ranked.iter().map(|(id, _)| id.clone()).collect();
        let chunks = self.visible_chunks(vis, &chunk_ids).await?;
        // Best score per claim (a claim is one chunk today; a longer text could be more).
        let mut order: Vec<String> = Vec::new();
        let mut scores: HashMap<String, f32> = HashMap::new();
        for (chunk_id, score) in &ranked {
            let Some(claim_id) = chunks
                .get(chunk_id)
                .and_then(|c| claim_id_of_urn(&c.source_urn))
            else {
                continue;
            };
            if !scores.contains_key(claim_id) {
                order.push(claim_id.to_string());
                scores.insert(claim_id.to_string(), *score);
            }
        }
        let store_filter = ClaimFilter {
            statuses,
            actor_id: q.actor_id.clone(),
            subject: q.subject.clone(),
            domain: q.domain.clone(),
            ..Default::default()
        };
        let claims: Vec<Claim> = self
            .stores
            .claims
            .get_claims(vis.reader().partition(), &order)
            .await?
            .into_iter()
            .filter(|c| vis.admits(&c.scope) && store_filter.admits(c))
            .filter(|c| q.tags.iter().all(|t| c.tags.contains(t)))
            .take(limit)
            .collect();
        let views = self.claim_views(vis, claims).await?;
        Ok(views
            .into_iter()
            .map(|view| RecallHit {
                score: scores.get(&view.claim.id).copied().unwrap_or(0.0),
                view,
            })
            .collect())
    }

    /// Claims that need a person, most severe first (the seed's severity: disputed and stale
    /// evidence warn, old low-confidence claims inform), through the given lenses.
    pub async fn claim_attention(
        &self,
        vis: &Visibility,
        q: AttentionQuery,
        now: Millis,
    ) -> Result<Vec<AttentionItem>> {
        let limit = check_limit(q.limit)?;
        let filter = ClaimFilter {
            actor_id: q.actor_id,
            session_id: q.session_id,
            subject: q.subject,
            attention_before: Some(now.saturating_sub(STALE_AFTER_MS)),
            ..Default::default()
        };
        let mut claims = self
            .stores
            .claims
            .list_claims(vis, &filter, ATTENTION_WINDOW)
            .await?;
        claims.retain(|c| !attention(c, now).is_empty());
        claims.sort_by(|a, b| attention_order(a, b, now));
        claims.truncate(limit);
        let views = self.claim_views(vis, claims).await?;
        Ok(views
            .into_iter()
            .map(|view| AttentionItem {
                reasons: attention(&view.claim, now),
                view,
            })
            .collect())
    }
}
