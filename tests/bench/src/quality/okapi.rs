//! The baseline and the measures: a plain Okapi BM25 (k1 = 1.2, b = 0.75, a simple
//! tokeniser: lower-cased runs of letters and digits, a short English stop list, no stemming)
//! written here so the comparison does not depend on the code under test; nDCG@10 (graded,
//! `(2^rel − 1) / log2(rank + 1)`), recall@10 and MRR.

use std::collections::HashMap;

const K1: f64 = 1.2;
const B: f64 = 0.75;
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "in", "is", "it", "its",
    "of", "on", "or", "that", "the", "to", "was", "were", "will", "with", "what", "how", "which",
    "who", "why", "when", "does", "do", "this", "these", "there",
];

pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

/// An inverted index of documents by id.
pub struct Okapi {
    ids: Vec<String>,
    lengths: Vec<f64>,
    avg_len: f64,
    postings: HashMap<String, Vec<(usize, u32)>>,
}

impl Okapi {
    pub fn new<'a>(docs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Okapi {
        let (mut ids, mut lengths) = (Vec::new(), Vec::new());
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        for (id, text) in docs {
            let n = ids.len();
            let toks = tokens(text);
            lengths.push(toks.len() as f64);
            let mut tf: HashMap<String, u32> = HashMap::new();
            for t in toks {
                *tf.entry(t).or_default() += 1;
            }
            for (t, f) in tf {
                postings.entry(t).or_default().push((n, f));
            }
            ids.push(id.to_string());
        }
        let avg_len = lengths.iter().sum::<f64>() / lengths.len().max(1) as f64;
        Okapi {
            ids,
            lengths,
            avg_len,
            postings,
        }
    }

    /// The best `k` document ids for `query`, best first (ties by insertion order).
    pub fn search(&self, query: &str, k: usize) -> Vec<String> {
        let n = self.ids.len() as f64;
        let mut scores: HashMap<usize, f64> = HashMap::new();
        let mut terms = tokens(query);
        terms.sort();
        terms.dedup();
        for t in terms {
            let Some(list) = self.postings.get(&t) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(doc, tf) in list {
                let tf = tf as f64;
                let norm = K1 * (1.0 - B + B * self.lengths[doc] / self.avg_len);
                *scores.entry(doc).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
            .into_iter()
            .take(k)
            .map(|(d, _)| self.ids[d].clone())
            .collect()
    }
}

/// nDCG@k, recall@k and reciprocal rank of one ranking against graded judgements
/// (relevance > 0 is relevant).
pub fn measures(ranked: &[String], judged: &HashMap<String, u32>, k: usize) -> [f64; 3] {
    let gain = |rel: u32| 2f64.powi(rel as i32) - 1.0;
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, id)| gain(judged.get(id).copied().unwrap_or(0)) / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<u32> = judged.values().copied().filter(|r| *r > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, r)| gain(*r) / (i as f64 + 2.0).log2())
        .sum();
    let relevant = ideal.len().max(1) as f64;
    let found = ranked
        .iter()
        .take(k)
        .filter(|id| judged.get(*id).is_some_and(|r| *r > 0))
        .count() as f64;
    let rr = ranked
        .iter()
        .position(|id| judged.get(id).is_some_and(|r| *r > 0))
        .map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
    let ndcg = if idcg > 0.0 { dcg / idcg } else { 0.0 };
    [ndcg, found / relevant, rr]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn okapi_ranks_the_document_with_the_rare_term_first() {
        let docs = [
            ("a", "the cat sat on the mat"),
            ("b", "the dog sat"),
            ("c", "a zebra sat near the dog"),
        ];
        let idx = Okapi::new(docs.iter().map(|(i, t)| (*i, *t)));
        assert_eq!(idx.search("zebra dog", 3), ["c", "b"]);
    }

    #[test]
    fn measures_of_a_perfect_and_an_empty_ranking() {
        let judged: HashMap<String, u32> = [("x".to_string(), 2), ("y".to_string(), 1)].into();
        let perfect = ["x".to_string(), "y".to_string()];
        assert_eq!(measures(&perfect, &judged, 10), [1.0, 1.0, 1.0]);
        assert_eq!(measures(&[], &judged, 10), [0.0, 0.0, 0.0]);
        let [_, recall, rr] = measures(&["z".into(), "y".into()], &judged, 10);
        assert_eq!((recall, rr), (0.5, 0.5));
    }
}
