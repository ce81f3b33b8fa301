//! Optional step between fusion and the pack: a feature-based reranker over the fused
//! candidates (`rerank: true` on a request).
//!
//! Fusion sees each channel's list, never the text. The reranker reads the candidates
//! already fetched for the pack and scores what an engineer looks at first:
//! - **fields**: the share of the query's terms found in the chunk's title, path, symbol,
//!   section or first heading (a question naming `fusion` wants `retrieve/fusion.rs`);
//! - **coverage**: the share of the query's terms the text holds at all;
//! - **proximity**: the share of the query's adjacent term pairs found adjacent in the text
//!   (an exact phrase without quotes);
//! - **bm25**: the chunk's BM25 score over the best one (how decisive the lexical evidence
//!   is);
//! - **graph**: the chunk evidences an edge the expansion kept.
//!
//! A candidate's fused score is multiplied by `1 + Σ weight × feature` (each feature in
//! 0..=1), so the phrase boost and the history rule (applied after) keep their effect and
//! the reranker only reorders what fusion found. Terms are the query's words and identifier
//! parts (`retrieveWithExpansion` → `retrieve`, `with`, `expansion`), lower-cased, stop
//! words left out. Source diversity stays the pack's per-source penalty. Cost: one pass over
//! ≤ 3 × `maxResults` fetched chunks (`evident-bench quality` reports it).

use std::collections::{HashMap, HashSet};

use evident_core::{Chunk, Locator};
use evident_store::ScoredId;
use serde::{Deserialize, Serialize};

/// The reranker's feature weights.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RerankWeights {
    pub fields: f32,
    pub coverage: f32,
    pub proximity: f32,
    pub bm25: f32,
    pub graph: f32,
}

impl Default for RerankWeights {
    fn default() -> Self {
        RerankWeights {
            fields: 1.0,
            coverage: 0.5,
            proximity: 0.5,
            bm25: 0.5,
            graph: 0.2,
        }
    }
}

const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "does", "do", "for", "from", "how", "in",
    "is", "it", "of", "on", "or", "the", "to", "what", "when", "where", "which", "who", "why",
    "with", "i", "can", "my", "its", "this", "that", "there",
];

/// Lower-cased words and their camel-case parts, stop words left out, in text order.
pub fn rerank_terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let mut parts = Vec::new();
        let mut start = 0;
        let mut prev: Option<char> = None;
        for (i, c) in word.char_indices() {
            if prev.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) && c.is_uppercase() {
                parts.push(&word[start..i]);
                start = i;
            }
            prev = Some(c);
        }
        parts.push(&word[start..]);
        for p in parts {
            let p = p.to_lowercase();
            if !STOP.contains(&p.as_str()) {
                out.push(p);
            }
        }
    }
    out
}

/// The text of a chunk's fields: title, path or URI, symbol, section, first heading line.
fn fields_of(c: &Chunk) -> String {
    let mut s = c.title.clone().unwrap_or_default();
    match &c.locator {
        Locator::File { path, symbol, .. } => {
            s.push(' ');
            s.push_str(path);
            if let Some(sym) = symbol {
                s.push(' ');
                s.push_str(sym);
            }
        }
        Locator::Document { uri, section, .. } => {
            s.push(' ');
            s.push_str(uri);
            if let Some(sec) = section {
                s.push(' ');
                s.push_str(sec);
            }
        }
        _ => {}
    }
    if let Some(h) = c.content.lines().find(|l| l.trim_start().starts_with('#')) {
        s.push(' ');
        s.push_str(h);
    }
    s
}

/// The features of one candidate against the query's terms (see the module documentation).
fn features(query: &[String], pairs: &[(String, String)], c: &Chunk) -> [f32; 3] {
    let distinct: HashSet<&String> = query.iter().collect();
    let n = distinct.len().max(1) as f32;
    let fields: HashSet<String> = rerank_terms(&fields_of(c)).into_iter().collect();
    let text = rerank_terms(&c.content);
    let words: HashSet<&String> = text.iter().collect();
    let in_fields = distinct.iter().filter(|t| fields.contains(**t)).count() as f32 / n;
    let covered = distinct.iter().filter(|t| words.contains(*t)).count() as f32 / n;
    let proximity = if pairs.is_empty() {
        0.0
    } else {
        let adjacent: HashSet<(&str, &str)> = text
            .windows(2)
            .map(|w| (w[0].as_str(), w[1].as_str()))
            .collect();
        pairs
            .iter()
            .filter(|(a, b)| adjacent.contains(&(a.as_str(), b.as_str())))
            .count() as f32
            / pairs.len() as f32
    };
    [in_fields, covered, proximity]
}

/// Rescales the fused scores of the fetched candidates by their features and re-sorts
/// `fused` (best first, ties by id). Candidates not among `chunks` keep their score.
pub fn rerank(
    query: &str,
    weights: &RerankWeights,
    fused: &mut [(String, f32)],
    chunks: &[Chunk],
    bm25: &[ScoredId],
    graph: &[ScoredId],
) {
    let terms = rerank_terms(query);
    if terms.is_empty() {
        return;
    }
    let pairs: Vec<(String, String)> = terms
        .windows(2)
        .map(|w| (w[0].clone(), w[1].clone()))
        .collect();
    let best_bm25 = bm25.iter().fold(0.0f32, |b, h| b.max(h.score));
    let bm25: HashMap<&str, f32> = bm25
        .iter()
        .map(|h| (h.chunk_id.as_str(), h.score))
        .collect();
    let graph: HashSet<&str> = graph.iter().map(|h| h.chunk_id.as_str()).collect();
    let by_id: HashMap<&str, &Chunk> = chunks.iter().map(|c| (c.id.as_str(), c)).collect();
    for (id, score) in fused.iter_mut() {
        let Some(c) = by_id.get(id.as_str()) else {
            continue;
        };
        let [in_fields, covered, proximity] = features(&terms, &pairs, c);
        let lexical = match bm25.get(id.as_str()) {
            Some(s) if best_bm25 > 0.0 => s / best_bm25,
            _ => 0.0,
        };
        let linked = if graph.contains(id.as_str()) {
            1.0
        } else {
            0.0
        };
        *score *= 1.0
            + weights.fields * in_fields
            + weights.coverage * covered
            + weights.proximity * proximity
            + weights.bm25 * lexical
            + weights.graph * linked;
    }
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

#[cfg(test)]
mod tests {
    use evident_core::Scope;
    use serde_json::Map;

    use super::*;

    fn chunk(id: &str, path: &str, content: &str) -> Chunk {
        Chunk {
            id: id.into(),
            scope: Scope::client("c"),
            source_urn: format!("urn:{path}"),
            kind: "code".into(),
            title: None,
            content: content.into(),
            content_hash: String::new(),
            locator: Locator::File {
                path: path.into(),
                line_start: 1,
                line_end: 9,
                commit: None,
                symbol: None,
            },
            graph_refs: vec![],
            metadata: Map::new(),
            observed_at: None,
            ordinal: 0,
        }
    }

    #[test]
    fn terms_split_identifiers_and_drop_stop_words() {
        assert_eq!(
            rerank_terms("How does retrieveWithExpansion fuse BM25?"),
            ["retrieve", "expansion", "fuse", "bm25"]
        );
    }

    #[test]
    fn a_path_naming_the_question_and_an_adjacent_phrase_move_up() {
        let chunks = vec![
            chunk(
                "other",
                "src/pack.rs",
                "score fusion is mentioned here once",
            ),
            chunk(
                "fusion",
                "src/retrieve/fusion.rs",
                "weighted rank fusion over chunk ids",
            ),
        ];
        let mut fused = vec![("other".to_string(), 0.010), ("fusion".to_string(), 0.009)];
        let w = RerankWeights::default();
        rerank("rank fusion", &w, &mut fused, &chunks, &[], &[]);
        assert_eq!(fused[0].0, "fusion");
        // Without a matching field or phrase the order stands.
        let mut fused = vec![("other".to_string(), 0.010), ("fusion".to_string(), 0.009)];
        rerank("unrelated words", &w, &mut fused, &chunks, &[], &[]);
        assert_eq!(fused[0].0, "other");
    }

    #[test]
    fn a_phrase_boost_is_kept() {
        let chunks = vec![
            chunk("verified", "a.txt", "plain text"),
            chunk("field", "fusion/rank.rs", "rank fusion rank fusion"),
        ];
        let mut fused = vec![("verified".to_string(), 1.01), ("field".to_string(), 0.01)];
        rerank(
            "rank fusion",
            &RerankWeights::default(),
            &mut fused,
            &chunks,
            &[],
            &[],
        );
        assert_eq!(fused[0].0, "verified");
    }
}
