//! Claims in `retrieve`'s evidence pack: a claim's text chunk found by any channel (BM25,
//! vector, or graph expansion through its `about` edges) leaves the passages and joins the
//! pack's `claims` as its own item type — the claim with its status and its evidence
//! resolved to citations. Disputed and superseded claims are left out (as `recall` does).

use evident_core::Visibility;
use evident_core::claims::{CLAIM_KIND, ClaimStatus, claim_id_of_urn};
use serde::{Deserialize, Serialize};

use super::ClaimView;
use crate::retrieve::EvidenceItem;
use crate::{Kb, Result};

/// A claim in an evidence pack, with the score its text chunk had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackClaim {
    pub score: f32,
    /// The claim as read (`ClaimView` as JSON: the claim, `citations`, `severity`).
    pub claim: serde_json::Value,
}

impl Kb {
    /// The claims of `ids` the reader sees that are still active (neither disputed nor
    /// superseded), in the store's order.
    pub(crate) async fn active_claims(
        &self,
        vis: &Visibility,
        ids: &[String],
    ) -> Result<Vec<evident_core::claims::Claim>> {
        Ok(self
            .stores
            .claims
            .get_claims(vis.reader().partition(), ids)
            .await?
            .into_iter()
            .filter(|c| vis.admits(&c.scope) && ClaimStatus::ACTIVE.contains(&c.status))
            .collect())
    }

    /// Moves the claim chunks out of `items` and returns them as claims, best first.
    pub async fn pack_claims(
        &self,
        vis: &Visibility,
        items: &mut Vec<EvidenceItem>,
    ) -> Result<Vec<PackClaim>> {
        if !items.iter().any(|i| i.kind == CLAIM_KIND) {
            return Ok(Vec::new());
        }
        let (claims, passages): (Vec<EvidenceItem>, Vec<EvidenceItem>) = std::mem::take(items)
            .into_iter()
            .partition(|i| i.kind == CLAIM_KIND);
        *items = passages;
        let scored: Vec<(String, f32)> = claims
            .iter()
            .filter_map(|i| claim_id_of_urn(&i.source_urn).map(|id| (id.to_string(), i.score)))
            .collect();
        let ids: Vec<String> = scored.iter().map(|(id, _)| id.clone()).collect();
        let found = self.active_claims(vis, &ids).await?;
        let views: Vec<ClaimView> = self.claim_views(vis, found).await?;
        Ok(scored
            .into_iter()
            .filter_map(|(id, score)| {
                let view = views.iter().find(|v| v.claim.id == id)?;
                Some(PackClaim {
                    score,
                    claim: serde_json::to_value(view).ok()?,
                })
            })
            .collect())
    }
}
