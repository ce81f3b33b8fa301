//! Step 5: the evidence pack — fused chunks fetched, scored per channel, diversified per
//! source, cut to the page, summarised.

use std::collections::{HashMap, HashSet};

use evident_core::{Chunk, Visibility};
use evident_store::ScoredId;

use super::fusion::rrf_contribution;
use super::{ChannelScores, DIVERSITY, EvidenceItem, PackGraph, W_ENTITY, W_GRAPH};
use crate::{Kb, Result};

/// The ranked lists of every channel, for the per-channel scores of each item.
#[derive(Debug, Default, Clone, Copy)]
pub struct Channels<'a> {
    pub bm25: &'a [ScoredId],
    pub vector: &'a [ScoredId],
    pub entity: &'a [ScoredId],
    pub graph: &'a [ScoredId],
    pub phrase: &'a [ScoredId],
}

impl Channels<'_> {
    fn scores_of(&self, id: &str) -> ChannelScores {
        let raw = |list: &[ScoredId]| list.iter().find(|h| h.chunk_id == id).map(|h| h.score);
        ChannelScores {
            bm25: raw(self.bm25),
            vector: raw(self.vector),
            graph: self
                .graph
                .iter()
                .position(|h| h.chunk_id == id)
                .map(|rank| rrf_contribution(W_GRAPH, rank)),
            entity: self
                .entity
                .iter()
                .any(|h| h.chunk_id == id)
                .then_some(W_ENTITY),
            phrase: raw(self.phrase),
        }
    }
}

/// Evidence items for the fetched `chunks` (in the store's order, which the diversity
/// penalty follows): fused score × 0.85 per earlier item of the same source, best first
/// (ties by chunk id), items under `min_score` dropped, at most `max_results`.
pub fn evidence_items(
    chunks: Vec<Chunk>,
    fused: &[(String, f32)],
    channels: Channels<'_>,
    min_score: Option<f32>,
    max_results: usize,
) -> Vec<EvidenceItem> {
    let score_of: HashMap<&str, f32> = fused.iter().map(|(id, s)| (id.as_str(), *s)).collect();
    let mut per_source: HashMap<String, i32> = HashMap::new();
    let mut items: Vec<EvidenceItem> = chunks
        .into_iter()
        .map(|c| {
            let seen = per_source.entry(c.source_urn.clone()).or_insert(0);
            let score = score_of.get(c.id.as_str()).copied().unwrap_or(0.0) * DIVERSITY.powi(*seen);
            *seen += 1;
            let scores = channels.scores_of(&c.id);
            evidence_item(c, score, scores)
        })
        .collect();
    items.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.chunk_id.cmp(&b.chunk_id))
    });
    if let Some(min) = min_score {
        items.retain(|i| i.score >= min);
    }
    items.truncate(max_results);
    items
}

fn evidence_item(c: Chunk, score: f32, scores: ChannelScores) -> EvidenceItem {
    EvidenceItem {
        scores,
        citation: c.locator.citation(),
        chunk_id: c.id,
        content: c.content,
        trust: "untrusted".into(),
        score,
        source_urn: c.source_urn,
        kind: c.kind,
        title: c.title,
        locator: c.locator,
        graph_refs: c.graph_refs,
        commit: None,
    }
}

/// One line on what the pack holds and where it came from.
pub fn summary(items: &[EvidenceItem], channels: Channels<'_>, graph: &PackGraph) -> String {
    let sources: HashSet<&str> = items.iter().map(|i| i.source_urn.as_str()).collect();
    let mut line = format!(
        "{} item(s) from {} source(s); candidates: {} bm25, {} vector, {} entity, {} graph; graph: {} node(s), {} edge(s)",
        items.len(),
        sources.len(),
        channels.bm25.len(),
        channels.vector.len(),
        channels.entity.len(),
        channels.graph.len(),
        graph.nodes.len(),
        graph.edges.len()
    );
    if !channels.phrase.is_empty() {
        line.push_str(&format!(
            "; exact phrase in {} chunk(s)",
            channels.phrase.len()
        ));
    }
    line
}

impl Kb {
    /// The visible chunks among `ids`, in their order: those in `known` (already fetched,
    /// e.g. to verify phrases) are taken from it, the others read in one call.
    pub(crate) async fn chunks_reusing(
        &self,
        vis: &Visibility,
        ids: &[String],
        known: Vec<Chunk>,
    ) -> Result<Vec<Chunk>> {
        if known.is_empty() {
            return Ok(self.stores.chunks.get(vis, ids).await?);
        }
        let mut by_id: HashMap<String, Chunk> =
            known.into_iter().map(|c| (c.id.clone(), c)).collect();
        let missing: Vec<String> = ids
            .iter()
            .filter(|id| !by_id.contains_key(*id))
            .cloned()
            .collect();
        if !missing.is_empty() {
            for c in self.stores.chunks.get(vis, &missing).await? {
                by_id.insert(c.id.clone(), c);
            }
        }
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }
}
