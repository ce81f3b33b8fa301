//! Step 5: the evidence pack — fused chunks fetched, scored per channel, diversified per
//! source, cut to the page, summarised.

use std::collections::{HashMap, HashSet};

use evident_core::{Chunk, Visibility};
use evident_store::ScoredId;

use super::fusion::rrf_contribution;
use super::{ChannelScores, EvidenceItem, PackGraph, W_ENTITY, W_GRAPH};
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

/// Evidence items for the fetched `chunks`: best fused score first (ties by chunk id), each
/// item's score multiplied by `diversity` once per better-scored item of the same source
/// (one file's many chunks, one commit's many hunks), re-sorted, items under `min_score`
/// dropped, at most `max_results`. Taking the items in score order makes this the greedy
/// choice (each place to the best score after the penalty): a source's chunks keep their
/// order among themselves, and a second chunk of a file only outranks another file's first
/// when it is better by more than the penalty.
pub fn evidence_items(
    chunks: Vec<Chunk>,
    fused: &[(String, f32)],
    channels: Channels<'_>,
    min_score: Option<f32>,
    max_results: usize,
    diversity: f32,
) -> Vec<EvidenceItem> {
    let score_of: HashMap<&str, f32> = fused.iter().map(|(id, s)| (id.as_str(), *s)).collect();
    let mut scored: Vec<(f32, Chunk)> = chunks
        .into_iter()
        .map(|c| (score_of.get(c.id.as_str()).copied().unwrap_or(0.0), c))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
    let mut per_source: HashMap<String, i32> = HashMap::new();
    let mut items: Vec<EvidenceItem> = scored
        .into_iter()
        .map(|(base, c)| {
            let seen = per_source.entry(c.source_urn.clone()).or_insert(0);
            let score = base * diversity.powi(*seen);
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
        graph_edges: Vec::new(),
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

#[cfg(test)]
mod tests {
    use evident_core::{Locator, Scope};

    use super::*;

    fn chunk(id: &str, source: &str) -> Chunk {
        Chunk {
            id: id.into(),
            scope: Scope::client("c"),
            source_urn: source.into(),
            kind: "code".into(),
            title: None,
            content: String::new(),
            content_hash: String::new(),
            locator: Locator::File {
                path: source.into(),
                line_start: 1,
                line_end: 2,
                commit: None,
                symbol: None,
            },
            graph_refs: vec![],
            metadata: Default::default(),
            observed_at: None,
            ordinal: 0,
        }
    }

    fn order(diversity: f32, chunks: Vec<Chunk>, fused: &[(String, f32)]) -> Vec<String> {
        evidence_items(chunks, fused, Channels::default(), None, 10, diversity)
            .into_iter()
            .map(|i| i.chunk_id)
            .collect()
    }

    /// One file's three chunks ahead of another file: the penalty follows the final scores
    /// (not the order the chunks were fetched in), so a file's best chunk keeps its place
    /// and its second and third give way to the other file's first.
    #[test]
    fn a_files_later_chunks_give_way_to_another_files_first() {
        let fused: Vec<(String, f32)> = [("a3", 0.9), ("a1", 1.0), ("a2", 0.95), ("b1", 0.8)]
            .iter()
            .map(|(id, s)| (id.to_string(), *s))
            .collect();
        // Fetched in another order than the scores (as after the reranker).
        let chunks = || {
            vec![
                chunk("a3", "lib.rs"),
                chunk("b1", "schema.rs"),
                chunk("a2", "lib.rs"),
                chunk("a1", "lib.rs"),
            ]
        };
        assert_eq!(order(1.0, chunks(), &fused), ["a1", "a2", "a3", "b1"]);
        assert_eq!(order(0.6, chunks(), &fused), ["a1", "b1", "a2", "a3"]);
    }
}
