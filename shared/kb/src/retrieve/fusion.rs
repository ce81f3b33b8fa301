//! Step 4: score-aware fusion over chunk ids.
//!
//! Plain reciprocal-rank fusion keeps only each chunk's rank in a channel: a BM25 hit whose
//! score is four times any other's counts as much as a first place won by a hair, and a
//! weak channel (the entity boost) can outweigh decisive evidence. So the scored channels
//! (BM25, vector, graph) add, per chunk, `weight × [(1 − λ) · rrf + λ · norm]` where
//! `rrf = (k + 1) / (k + rank + 1)` (1 for the first place, as before relative to the
//! others) and `norm` is the chunk's score over the best score of the channel's list (1 for
//! the best; how far behind the others are — BM25 scores spread, cosine similarities do
//! not, so a near-tie in the vector channel stays a near-tie; 1 for all when no score is
//! positive). Both parts are
//! scaled by `1 / (k + 1)`, so the fused scores keep the scale of the former RRF (the
//! phrase boost and `minScore` keep their meaning). `λ` and the weights are
//! [`FusionParams`]; the defaults were chosen on one half of the quality benchmark's
//! questions and reported on the other (`docs/benchmarks.md`).

use std::collections::HashMap;

use evident_store::ScoredId;
use serde::{Deserialize, Serialize};

use super::RRF_K;

/// The weights of the channels and the share `lambda` of the normalised score in a scored
/// channel's contribution (0: plain RRF).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FusionParams {
    pub lambda: f32,
    pub bm25: f32,
    pub vector: f32,
    pub graph: f32,
    pub entity: f32,
}

impl Default for FusionParams {
    fn default() -> Self {
        FusionParams {
            lambda: 0.5,
            bm25: 0.30,
            vector: 0.30,
            graph: 0.30,
            entity: 0.05,
        }
    }
}

impl FusionParams {
    /// Plain weighted RRF with the weights used before score-aware fusion (the baseline).
    pub fn rrf() -> Self {
        FusionParams {
            lambda: 0.0,
            bm25: 0.30,
            vector: 0.30,
            graph: 0.30,
            entity: 0.10,
        }
    }
}

/// Fused scores by chunk id: each channel adds `weight / (k + rank)` for every chunk it
/// lists, so a chunk found by several channels appears once with the sum.
#[derive(Debug, Default, Clone)]
pub struct Fusion {
    scores: HashMap<String, f32>,
}

impl Fusion {
    /// Adds one channel's ranked list with its weight.
    pub fn add(&mut self, list: &[ScoredId], weight: f32) {
        for (rank, hit) in list.iter().enumerate() {
            *self.scores.entry(hit.chunk_id.clone()).or_insert(0.0) +=
                weight / (RRF_K + rank as f32 + 1.0);
        }
    }

    /// Adds one scored channel: its rank part and its min-max normalised score part, mixed
    /// by `lambda` (see the module documentation).
    pub fn add_scored(&mut self, list: &[ScoredId], weight: f32, lambda: f32) {
        if lambda <= 0.0 {
            return self.add(list, weight);
        }
        let best = list.iter().fold(0.0f32, |best, h| best.max(h.score));
        let top = 1.0 / (RRF_K + 1.0);
        for (rank, hit) in list.iter().enumerate() {
            let norm = if best > f32::EPSILON {
                (hit.score / best).clamp(0.0, 1.0)
            } else {
                1.0
            };
            let rrf = 1.0 / (RRF_K + rank as f32 + 1.0);
            *self.scores.entry(hit.chunk_id.clone()).or_insert(0.0) +=
                weight * ((1.0 - lambda) * rrf + lambda * norm * top);
        }
    }

    /// Adds `per_unit` × each hit's score to its chunk (a bonus outside the rank fusion:
    /// verified phrase matches).
    pub fn boost(&mut self, hits: &[ScoredId], per_unit: f32) {
        for hit in hits {
            *self.scores.entry(hit.chunk_id.clone()).or_insert(0.0) += per_unit * hit.score;
        }
    }

    /// The best `limit` chunk ids with their fused scores, best first (ties by id, so the
    /// order is deterministic).
    pub fn ranked(&self, limit: usize) -> Vec<(String, f32)> {
        let mut ranked: Vec<(String, f32)> =
            self.scores.iter().map(|(id, s)| (id.clone(), *s)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(limit);
        ranked
    }
}

/// The score a chunk gets from one channel alone at its rank there (what the pack reports
/// per channel for the graph).
pub fn rrf_contribution(weight: f32, rank: usize) -> f32 {
    weight / (RRF_K + rank as f32 + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(ids: &[&str]) -> Vec<ScoredId> {
        ids.iter()
            .map(|id| ScoredId {
                chunk_id: id.to_string(),
                score: 1.0,
            })
            .collect()
    }

    #[test]
    fn a_chunk_in_several_channels_sums_its_contributions() {
        let mut f = Fusion::default();
        f.add(&hits(&["a", "b"]), 0.3);
        f.add(&hits(&["b", "c"]), 0.3);
        let ranked = f.ranked(10);
        let ids: Vec<&str> = ranked.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["b", "a", "c"]);
        let b = rrf_contribution(0.3, 1) + rrf_contribution(0.3, 0);
        assert!((ranked[0].1 - b).abs() < 1e-6);
    }

    #[test]
    fn a_boost_outranks_every_fused_score() {
        let mut f = Fusion::default();
        f.add(&hits(&["a", "b", "c"]), 0.3);
        f.add(&hits(&["a", "b", "c"]), 0.3);
        let mut verified = hits(&["c"]);
        verified[0].score = 0.6;
        f.boost(&verified, 1.0);
        assert_eq!(f.ranked(1)[0].0, "c");
    }

    fn scored(pairs: &[(&str, f32)]) -> Vec<ScoredId> {
        pairs
            .iter()
            .map(|(id, score)| ScoredId {
                chunk_id: id.to_string(),
                score: *score,
            })
            .collect()
    }

    /// The case: an exact title whose BM25 score is four times any other's, against
    /// chunks that also sit low in the vector list and are named by the query's entity.
    #[test]
    fn a_decisive_bm25_score_outweighs_rank_and_entity_evidence() {
        let bm25 = scored(&[("title", 40.0), ("c1", 10.0), ("c2", 9.5), ("c3", 9.0)]);
        let vector = scored(&[("c1", 0.52), ("c2", 0.51), ("c3", 0.50), ("title", 0.49)]);
        let entity = scored(&[("c1", 1.0), ("c2", 1.0), ("c3", 1.0)]);
        let run = |p: FusionParams| {
            let mut f = Fusion::default();
            f.add_scored(&bm25, p.bm25, p.lambda);
            f.add_scored(&vector, p.vector, p.lambda);
            f.add(&entity, p.entity);
            f.ranked(4)
                .iter()
                .position(|(id, _)| id == "title")
                .expect("ranked")
        };
        assert!(run(FusionParams::rrf()) > 0, "plain RRF buries the title");
        assert_eq!(run(FusionParams::default()), 0);
    }

    #[test]
    fn scored_fusion_keeps_the_rrf_scale_and_degenerates_to_it() {
        let list = scored(&[("a", 3.0), ("b", 1.0)]);
        let mut plain = Fusion::default();
        plain.add(&list, 0.3);
        let mut zero = Fusion::default();
        zero.add_scored(&list, 0.3, 0.0);
        assert_eq!(plain.ranked(2), zero.ranked(2));
        let mut full = Fusion::default();
        full.add_scored(&list, 0.3, 1.0);
        let ranked = full.ranked(2);
        assert!((ranked[0].1 - rrf_contribution(0.3, 0)).abs() < 1e-6);
        assert!((ranked[1].1 - rrf_contribution(0.3, 0) / 3.0).abs() < 1e-6);
        let mut single = Fusion::default();
        single.add_scored(&scored(&[("x", 0.2)]), 0.3, 0.5);
        assert!((single.ranked(1)[0].1 - rrf_contribution(0.3, 0)).abs() < 1e-6);
    }

    #[test]
    fn ties_rank_by_id_and_the_limit_applies() {
        let mut f = Fusion::default();
        f.add(&hits(&["z"]), 0.3);
        f.add(&hits(&["y"]), 0.3);
        assert_eq!(
            f.ranked(1),
            vec![("y".to_string(), rrf_contribution(0.3, 0))]
        );
    }
}
