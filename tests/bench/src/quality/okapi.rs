//! The baselines and the measures: plain Okapi BM25 written here so the comparison does not
//! depend on the code under test — the repository flavour (k1 = 1.2, b = 0.75, lower-cased
//! words, a short English stop list, no stemming) and the judged-collection flavour of
//! `data/ir/cisi/SOURCE.txt` (k1 = 1.5, b = 0.75 as the Python package `rank_bm25`;
//! lower-case alphanumeric tokens, a 20-word stop list, with and without the Snowball
//! English stemmer; a query term counted once per occurrence, as `rank_bm25` does); nDCG@k (graded, `(2^rel − 1) / log2(rank + 1)`), recall@k, MRR and
//! average precision.

use std::collections::HashMap;

const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "in", "is", "it", "its",
    "of", "on", "or", "that", "the", "to", "was", "were", "will", "with", "what", "how", "which",
    "who", "why", "when", "does", "do", "this", "these", "there",
];

/// The 20 most frequent English function words (the judged baselines' stop list).
const STOP20: &[&str] = &[
    "the", "of", "and", "a", "to", "in", "is", "for", "on", "that", "by", "with", "as", "are",
    "be", "this", "from", "or", "an", "at",
];

/// How an [`Okapi`] index analyses text and scores.
#[derive(Debug, Clone, Copy)]
pub struct Flavour {
    pub k1: f64,
    pub b: f64,
    /// Snowball English stemming of every token.
    pub stem: bool,
    /// The 20-word stop list (else the repository flavour's).
    pub stop20: bool,
    /// A query term counts once per occurrence, as `rank_bm25` scores a tokenised query
    /// (else once).
    pub qtf: bool,
}

impl Flavour {
    /// The repository questions' baseline.
    pub const REPO: Flavour = Flavour {
        k1: 1.2,
        b: 0.75,
        stem: false,
        stop20: false,
        qtf: false,
    };
    /// The judged collections' baseline of `SOURCE.txt`, stemmed or not.
    pub fn judged(stem: bool) -> Flavour {
        Flavour {
            k1: 1.5,
            b: 0.75,
            stem,
            stop20: true,
            qtf: true,
        }
    }
}

fn tokens_as(text: &str, f: Flavour) -> Vec<String> {
    let stop = if f.stop20 { STOP20 } else { STOP };
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !stop.contains(&w.as_str()))
        .map(|w| {
            if f.stem {
                stemmer.stem(&w).into_owned()
            } else {
                w
            }
        })
        .collect()
}

/// An inverted index of documents by id.
pub struct Okapi {
    flavour: Flavour,
    ids: Vec<String>,
    lengths: Vec<f64>,
    avg_len: f64,
    postings: HashMap<String, Vec<(usize, u32)>>,
}

impl Okapi {
    pub fn new<'a>(docs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Okapi {
        Okapi::with(Flavour::REPO, docs)
    }

    pub fn with<'a>(flavour: Flavour, docs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Okapi {
        let (mut ids, mut lengths) = (Vec::new(), Vec::new());
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        for (id, text) in docs {
            let n = ids.len();
            let toks = tokens_as(text, flavour);
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
            flavour,
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
        let (k1, b) = (self.flavour.k1, self.flavour.b);
        let mut terms = tokens_as(query, self.flavour);
        if !self.flavour.qtf {
            terms.sort();
            terms.dedup();
        }
        for t in terms {
            let Some(list) = self.postings.get(&t) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(doc, tf) in list {
                let tf = tf as f64;
                let norm = k1 * (1.0 - b + b * self.lengths[doc] / self.avg_len);
                *scores.entry(doc).or_default() += idf * tf * (k1 + 1.0) / (tf + norm);
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
#[cfg(test)]
pub fn measures(ranked: &[String], judged: &HashMap<String, u32>, k: usize) -> [f64; 3] {
    [
        ndcg(ranked, judged, k),
        recall(ranked, judged, k),
        ranked
            .iter()
            .position(|id| judged.get(id).is_some_and(|r| *r > 0))
            .map_or(0.0, |p| 1.0 / (p as f64 + 1.0)),
    ]
}

/// nDCG@k with graded gains.
pub fn ndcg(ranked: &[String], judged: &HashMap<String, u32>, k: usize) -> f64 {
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
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

fn relevant(judged: &HashMap<String, u32>) -> usize {
    judged.values().filter(|r| **r > 0).count()
}

/// The share of the relevant documents in the top k.
pub fn recall(ranked: &[String], judged: &HashMap<String, u32>, k: usize) -> f64 {
    let found = ranked
        .iter()
        .take(k)
        .filter(|id| judged.get(*id).is_some_and(|r| *r > 0))
        .count() as f64;
    found / relevant(judged).max(1) as f64
}

/// Average precision of the ranking (as deep as it goes) over every relevant document.
pub fn average_precision(ranked: &[String], judged: &HashMap<String, u32>) -> f64 {
    let (mut found, mut sum) = (0.0, 0.0);
    for (i, id) in ranked.iter().enumerate() {
        if judged.get(id).is_some_and(|r| *r > 0) {
            found += 1.0;
            sum += found / (i as f64 + 1.0);
        }
    }
    sum / relevant(judged).max(1) as f64
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
        // Relevant at ranks 2 and 4 of 2 relevant: (1/2 + 2/4) / 2.
        let ranked = ["z".into(), "x".into(), "w".into(), "y".into()];
        assert_eq!(average_precision(&ranked, &judged), 0.5);
        assert_eq!(average_precision(&perfect, &judged), 1.0);
    }

    #[test]
    fn the_judged_flavour_stems_and_keeps_short_function_words_out() {
        let f = Flavour::judged(true);
        assert_eq!(
            tokens_as("The retrieval of retrieved documents", f),
            ["retriev", "retriev", "document"]
        );
        assert_eq!(
            tokens_as("how are they", Flavour::judged(false)),
            ["how", "they"]
        );
    }
}
