//! The claims layer of a context: claims about the active entity (the `claim:{id}` nodes
//! joined to it by `about` edges) and claims the query recalls, each as one line routed to
//! `context` (documented default), citing its first piece of evidence.
//!
//! Only active claims (hypothesis, inferred, observed, verified) are told; disputed and
//! superseded ones are left out as `recall` leaves them out, and a claim whose evidence went
//! stale says so on its line, so the agent never reads it as settled.

use std::collections::BTreeMap;

use evident_core::claims::{ABOUT_EDGE, Claim, claim_id_of_urn};
use evident_core::{NodeKey, Visibility};
use evident_store::{Direction, TraverseOptions};

use super::Layer;
use super::format::ContextItem;
use super::gather::Candidate;
use crate::claims::{ClaimView, Recall};
use crate::{Kb, Result};

/// Claims the query recalls at most.
const RECALLED: usize = 10;
/// Claims about the active entity read at most.
const ABOUT_ENTITY: usize = 50;
/// The score of a claim about the active entity (as high as a piece about it).
const ABOUT_SCORE: f32 = 1.0;

impl Kb {
    /// Candidates of the claims layer: about the active entity (1.0), recalled by the query
    /// (0.5..=1.0, relative to the best recall score); a claim found both ways keeps the
    /// higher score.
    pub(super) async fn claim_lines(
        &self,
        vis: &Visibility,
        active: Option<&NodeKey>,
        query: Option<&str>,
        out: &mut Vec<Candidate>,
    ) -> Result<()> {
        let mut scored: BTreeMap<String, (f32, ClaimView)> = BTreeMap::new();
        if let Some(query) = query {
            let hits = self
                .recall(
                    vis,
                    Recall {
                        question: query.to_string(),
                        limit: RECALLED,
                        ..Recall::default()
                    },
                )
                .await?;
            let best = hits.first().map_or(1.0, |h| h.score).max(f32::EPSILON);
            for hit in hits {
                let score = 0.5 + 0.5 * (hit.score / best).clamp(0.0, 1.0);
                keep_best(&mut scored, score, hit.view);
            }
        }
        if let Some(active) = active {
            let about = self.claims_about(vis, active).await?;
            for view in self.claim_views(vis, about).await? {
                keep_best(&mut scored, ABOUT_SCORE, view);
            }
        }
        out.extend(
            scored
                .into_values()
                .map(|(score, view)| candidate(&view, score)),
        );
        Ok(())
    }

    /// The active claims joined to `key` by `about` edges that `vis` sees, by id.
    async fn claims_about(&self, vis: &Visibility, key: &NodeKey) -> Result<Vec<Claim>> {
        let opts = TraverseOptions {
            max_depth: 1,
            direction: Direction::In,
            edge_types: vec![ABOUT_EDGE.to_string()],
            max_nodes: ABOUT_ENTITY + 1,
        };
        let sub = self
            .stores
            .graph
            .traverse(vis, std::slice::from_ref(key), &opts)
            .await?;
        let mut ids: Vec<String> = sub
            .nodes
            .iter()
            .filter_map(|(n, _)| claim_id_of_urn(n.key.as_str()).map(str::to_string))
            .collect();
        ids.sort();
        ids.truncate(ABOUT_ENTITY);
        let mut claims: Vec<Claim> = self.active_claims(vis, &ids).await?;
        claims.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(claims)
    }
}

fn keep_best(scored: &mut BTreeMap<String, (f32, ClaimView)>, score: f32, view: ClaimView) {
    let id = view.claim.id.clone();
    match scored.get(&id) {
        Some((s, _)) if *s >= score => {}
        _ => {
            scored.insert(id, (score, view));
        }
    }
}

/// `[claim verified 0.90] text (evidence stale)`, citing the first evidence's citation (the
/// claim itself when none resolves).
fn candidate(view: &ClaimView, score: f32) -> Candidate {
    let claim = &view.claim;
    let mut line = format!(
        "[claim {} {:.2}] {}",
        claim.status.as_str(),
        claim.confidence,
        claim.text.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    if claim.evidence_stale {
        line.push_str(" (evidence stale)");
    }
    let first = view.citations.iter().find(|c| c.citation.is_some());
    Candidate {
        key: format!("claim:{}", claim.id),
        info_type: "context".into(),
        score,
        order: claim.id.clone(),
        line,
        item: ContextItem {
            marker: String::new(),
            layer: Layer::Claims.as_str().to_string(),
            chunk_id: first.and_then(|c| c.evidence.chunk_id().map(str::to_string)),
            source_urn: first.and_then(|c| c.source_urn.clone()),
            node_key: Some(claim.urn()),
            citation: first
                .and_then(|c| c.citation.clone())
                .unwrap_or_else(|| claim.urn()),
        },
    }
}
