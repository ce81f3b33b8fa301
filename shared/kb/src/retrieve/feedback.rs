//! Pseudo-relevance feedback (RM3) for long natural questions: the BM25 channel is asked
//! again with the question's terms and the terms most typical of its first answers.
//!
//! A question of many words ("what problems and concerns are there in making up
//! descriptive titles?") shares few of them with the abstract that answers it; the
//! documents BM25 ranks first share others with it. RM3 (Lavrenko & Croft's relevance model,
//! mixed with the query as in Anserini): the relevance model `P(t|R) = Σ_d P(t|d) · P(d|q)`
//! over the first [`FeedbackParams::docs`] BM25 answers (`P(t|d)` a term's share of the
//! document's terms, `P(d|q)` the document's BM25 score over the sum of theirs); its best
//! [`FeedbackParams::terms`] terms, weights normalised to sum 1, are mixed with the
//! question's own terms (weights normalised to sum 1) as `original · q + (1 − original) · R`,
//! and BM25 is asked with those weights ([`evident_store::ChunkStore::search_terms`]).
//!
//! Only for long natural questions ([`FeedbackParams::min_terms`] stems or more, no
//! identifier, no quoted phrase): a short or exact query means what it says, and expansion
//! would drift from it.

use std::collections::HashMap;

use evident_analysis::{Language, Term, document_terms, query_terms};
use evident_core::{Chunk, Visibility};
use evident_store::{ChunkFilter, ScoredId};
use serde::{Deserialize, Serialize};

use crate::{Kb, Result};

/// RM3's parameters (the defaults of Anserini's RM3 but for `min_terms`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackParams {
    /// Feedback documents: the first BM25 answers.
    pub docs: usize,
    /// Expansion terms kept.
    pub terms: usize,
    /// The share of the question's own terms in the mixed query.
    pub original: f32,
    /// Questions with fewer stems are left alone.
    pub min_terms: usize,
}

impl Default for FeedbackParams {
    fn default() -> Self {
        FeedbackParams {
            docs: 10,
            terms: 10,
            original: 0.5,
            min_terms: 5,
        }
    }
}

/// The question's weighted terms when it is long and natural enough for feedback (see the
/// module documentation): stems and whole identifiers at weight 1, exact forms at theirs.
pub fn feedback_query(query: &str, p: &FeedbackParams) -> Option<Vec<(String, f32)>> {
    if query.contains('"') {
        return None;
    }
    let terms = query_terms(query);
    let words = terms.iter().filter(|t| t.kind == Term::Word).count();
    let identifier = terms.iter().any(|t| t.kind == Term::Whole);
    (words >= p.min_terms && !identifier)
        .then(|| terms.into_iter().map(|t| (t.text, t.weight)).collect())
}

/// The RM3 query: `original` of the question's terms, the rest the relevance model of
/// `docs` (each with its BM25 score), both normalised to sum 1.
pub fn expand(
    question: &[(String, f32)],
    docs: &[(&Chunk, f32)],
    p: &FeedbackParams,
) -> Vec<(String, f32)> {
    let total: f32 = docs.iter().map(|(_, s)| s.max(0.0)).sum();
    let mut model: HashMap<String, f32> = HashMap::new();
    for (c, score) in docs {
        let mut tf: HashMap<String, f32> = HashMap::new();
        let mut len = 0f32;
        let text = match &c.title {
            Some(t) => format!("{t}\n{}", c.content),
            None => c.content.clone(),
        };
        document_terms(&text, Language::detect(&c.content), |t, kind| {
            if kind == Term::Word {
                *tf.entry(t.to_string()).or_default() += 1.0;
                len += 1.0;
            }
        });
        let p_d = if total > 0.0 {
            score.max(0.0) / total
        } else {
            1.0 / docs.len() as f32
        };
        for (t, n) in tf {
            *model.entry(t).or_default() += n / len.max(1.0) * p_d;
        }
    }
    let mut best: Vec<(String, f32)> = model.into_iter().collect();
    // Ties by term, so the expansion never depends on hash order.
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    best.truncate(p.terms);
    let norm = |list: &[(String, f32)]| list.iter().map(|(_, w)| *w).sum::<f32>().max(1e-9);
    let (q_norm, r_norm) = (norm(question), norm(&best));
    let mut mixed: Vec<(String, f32)> = question
        .iter()
        .map(|(t, w)| (t.clone(), p.original * w / q_norm))
        .collect();
    for (t, w) in best {
        let add = (1.0 - p.original) * w / r_norm;
        match mixed.iter_mut().find(|(m, _)| *m == t) {
            Some(m) => m.1 += add,
            None => mixed.push((t, add)),
        }
    }
    mixed
}

impl Kb {
    /// The BM25 candidates asked again with the RM3 query of `query` over the first of
    /// `bm25`, to the same depth; `None` when the question is not one for feedback or
    /// BM25 found nothing.
    pub(crate) async fn feedback(
        &self,
        vis: &Visibility,
        query: &str,
        filter: &ChunkFilter,
        bm25: &[ScoredId],
        p: &FeedbackParams,
    ) -> Result<Option<Vec<ScoredId>>> {
        let Some(question) = feedback_query(query, p) else {
            return Ok(None);
        };
        if bm25.is_empty() {
            return Ok(None);
        }
        let first: Vec<String> = bm25
            .iter()
            .take(p.docs)
            .map(|h| h.chunk_id.clone())
            .collect();
        let chunks = self.stores.chunks.get(vis, &first).await?;
        let scored: Vec<(&Chunk, f32)> = chunks
            .iter()
            .filter_map(|c| {
                let s = bm25.iter().find(|h| h.chunk_id == c.id)?.score;
                Some((c, s))
            })
            .collect();
        let terms = expand(&question, &scored, p);
        let depth = bm25.len();
        Ok(Some(
            self.stores
                .chunks
                .search_terms(vis, &terms, filter, depth)
                .await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, text: &str) -> Chunk {
        Chunk {
            id: id.into(),
            scope: evident_core::Scope::client("a"),
            source_urn: id.into(),
            kind: "document".into(),
            title: None,
            content: text.into(),
            content_hash: String::new(),
            locator: evident_core::Locator::Document {
                uri: id.into(),
                char_start: 0,
                char_end: 0,
                page: None,
                section: None,
            },
            graph_refs: Vec::new(),
            metadata: Default::default(),
            observed_at: None,
            ordinal: 0,
        }
    }

    #[test]
    fn only_long_natural_questions_are_expanded() {
        let p = FeedbackParams::default();
        assert!(
            feedback_query("how are retries scheduled", &p).is_none(),
            "short"
        );
        assert!(
            feedback_query(
                "what problems and concerns arise in making descriptive titles for documents",
                &p
            )
            .is_some()
        );
        assert!(
            feedback_query(
                "where does token_hash store digests of the secret tokens now",
                &p
            )
            .is_none(),
            "names an identifier"
        );
        assert!(
            feedback_query(
                "\"descriptive titles\" problems concerns making documents indexing",
                &p
            )
            .is_none(),
            "quotes a phrase"
        );
    }

    #[test]
    fn the_expansion_mixes_the_question_with_its_answers_terms() {
        let p = FeedbackParams {
            terms: 2,
            ..Default::default()
        };
        let question = vec![("titl".to_string(), 1.0), ("=titles".to_string(), 0.5)];
        let a = chunk("a", "titles keywords keywords keywords");
        let b = chunk("b", "keywords vocabulary");
        let mixed = expand(&question, &[(&a, 3.0), (&b, 1.0)], &p);
        let w = |t: &str| mixed.iter().find(|(m, _)| m == t).map(|(_, w)| *w);
        // The question keeps half, in its own proportions.
        let q = 0.5 / 1.5;
        assert!((w("=titles").unwrap_or(0.0) - 0.5 * 0.5 / 1.5).abs() < 1e-6);
        assert!(
            w("titl").unwrap_or(0.0) > q,
            "a question term the answers hold gains"
        );
        // `keyword` is the answers' most typical term; only 2 expansion terms are kept.
        assert!(w("keyword").unwrap_or(0.0) > 0.2);
        assert_eq!(mixed.len(), 3, "{mixed:?}");
        let total: f32 = mixed.iter().map(|(_, w)| w).sum();
        assert!((total - 1.0).abs() < 1e-5);
    }
}
