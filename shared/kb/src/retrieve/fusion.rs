//! Step 4: weighted reciprocal-rank fusion over chunk ids.

use std::collections::HashMap;

use evident_store::ScoredId;

use super::RRF_K;

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
