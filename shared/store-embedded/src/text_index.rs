//! In-memory BM25 index over chunk text (title weighted ×2), maintained in the commit critical
//! section like the vector row map, and rebuilt from SQLite at open.
//!
//! Why not FTS5: FTS5 scores every match of an OR query through the virtual-table machinery;
//! measured here at 4 ms p50 / 16 ms p99 per query at 10k chunks and growing linearly. Plain
//! term-at-a-time scoring over compact posting lists into a dense score buffer does the same
//! work in tens of microseconds per thousand postings, and a chunk is searchable the moment its
//! commit is published. Stop words are neither indexed nor queried.

use std::cell::RefCell;
use std::collections::HashMap;

use parking_lot::RwLock;
use unicode_normalization::UnicodeNormalization;

use crate::dense::DenseMap;
use crate::vectors::RowFilter;

const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Title tokens count this many times.
const TITLE_WEIGHT: u16 = 2;

/// English function words that match most documents and carry no topic.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most",
    "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our",
    "ours", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that",
    "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "through",
    "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where",
    "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
];

/// Terms of a text: runs of letters and digits, lower-cased, diacritics removed, stop words
/// dropped. `parse_config` → `parse`, `config`; `Příliš` → `prilis`.
pub fn terms(text: &str, mut each: impl FnMut(&str)) {
    let mut buf = String::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() || word.len() > 64 {
            continue;
        }
        buf.clear();
        if word.is_ascii() {
            buf.extend(word.chars().map(|c| c.to_ascii_lowercase()));
        } else {
            buf.extend(
                word.nfd()
                    .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
                    .flat_map(char::to_lowercase),
            );
        }
        if !STOPWORDS.contains(&buf.as_str()) {
            each(&buf);
        }
    }
}

#[derive(Default)]
struct Postings {
    rids: Vec<u32>,
    tfs: Vec<u16>,
}

#[derive(Default)]
struct Inner {
    term_ids: HashMap<Box<str>, u32>,
    postings: Vec<Postings>,
    /// Live rows and their length in terms.
    doc_len: DenseMap<u32>,
    total_len: u64,
    /// Postings of removed rows still in the lists (dropped on compaction).
    dead: usize,
    live_postings: usize,
}

#[derive(Default)]
pub struct TextIndex {
    inner: RwLock<Inner>,
}

thread_local! {
    static SCORES: RefCell<(Vec<f32>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// A text's terms with their weighted counts, and its length: computed before the write (off
/// the commit critical section), inserted at publish.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Analyzed {
    terms: Vec<(Box<str>, u16)>,
    len: u32,
}

impl Analyzed {
    pub fn of(title: Option<&str>, content: &str) -> Analyzed {
        let mut tf: HashMap<String, u16> = HashMap::new();
        let mut len = 0u32;
        // Count into the map without allocating a key for terms already seen (the common case).
        let mut count = |w: &str, weight: u16| {
            match tf.get_mut(w) {
                Some(n) => *n = n.saturating_add(weight),
                None => {
                    tf.insert(w.to_string(), weight);
                }
            }
            len += weight as u32;
        };
        if let Some(t) = title {
            terms(t, |w| count(w, TITLE_WEIGHT));
        }
        terms(content, |w| count(w, 1));
        Analyzed {
            terms: tf
                .into_iter()
                .map(|(t, n)| (t.into_boxed_str(), n))
                .collect(),
            len,
        }
    }
}

impl TextIndex {
    pub fn add(&self, rid: u64, title: Option<&str>, content: &str) {
        self.insert(rid, Analyzed::of(title, content));
    }

    /// Indexes a row from its analysis (no tokenizing under the lock).
    pub fn insert(&self, rid: u64, analyzed: Analyzed) {
        let rid = rid as u32;
        let mut inner = self.inner.write();
        if inner.doc_len.contains(rid as u64) {
            return; // already indexed (idempotent publish)
        }
        for (term, n) in analyzed.terms {
            let id = match inner.term_ids.get(&*term) {
                Some(id) => *id,
                None => {
                    let id = inner.postings.len() as u32;
                    inner.term_ids.insert(term, id);
                    inner.postings.push(Postings::default());
                    id
                }
            };
            let p = &mut inner.postings[id as usize];
            p.rids.push(rid);
            p.tfs.push(n);
            inner.live_postings += 1;
        }
        inner.doc_len.insert(rid as u64, analyzed.len);
        inner.total_len += analyzed.len as u64;
    }

    /// Forgets rows; their postings are skipped and dropped at the next compaction.
    pub fn remove(&self, rids: &[u64]) {
        let mut inner = self.inner.write();
        for rid in rids {
            if let Some(len) = inner.doc_len.remove(*rid) {
                inner.total_len -= len as u64;
                let _ = len;
                inner.dead += 1;
            }
        }
        // Compact when dead rows could hold a large share of the postings.
        if inner.dead * 4 > inner.doc_len.len().max(1) {
            let Inner {
                postings, doc_len, ..
            } = &mut *inner;
            let mut live = 0;
            for p in postings.iter_mut() {
                let mut k = 0;
                for i in 0..p.rids.len() {
                    if doc_len.contains(p.rids[i] as u64) {
                        p.rids[k] = p.rids[i];
                        p.tfs[k] = p.tfs[i];
                        k += 1;
                    }
                }
                p.rids.truncate(k);
                p.tfs.truncate(k);
                live += k;
            }
            inner.live_postings = live;
            inner.dead = 0;
        }
    }

    /// Top `k` rows admitted by `filter`, by BM25 over the query's terms (any term matches;
    /// documents matching more and rarer terms score higher). Scores are positive.
    pub fn search(&self, query: &str, filter: &RowFilter<'_>, k: usize) -> Vec<(u64, f32)> {
        let inner = self.inner.read();
        let n = inner.doc_len.len() as f32;
        if n == 0.0 || k == 0 {
            return Vec::new();
        }
        let avgdl = (inner.total_len as f32 / n).max(1.0);
        let mut query_terms: Vec<u32> = Vec::new();
        terms(query, |w| {
            if let Some(id) = inner.term_ids.get(w)
                && !query_terms.contains(id)
            {
                query_terms.push(*id);
            }
        });
        SCORES.with(|cell| {
            let (scores, touched) = &mut *cell.borrow_mut();
            for &t in &query_terms {
                let p = &inner.postings[t as usize];
                let df = p.rids.len() as f32;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                for (&rid, &tf) in p.rids.iter().zip(&p.tfs) {
                    let Some(&dl) = inner.doc_len.get(rid as u64) else {
                        continue;
                    };
                    let slot = rid as usize;
                    if slot >= scores.len() {
                        scores.resize((slot + 1).next_power_of_two(), 0.0);
                    }
                    if scores[slot] == 0.0 {
                        touched.push(rid);
                    }
                    let tf = tf as f32;
                    scores[slot] +=
                        idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl as f32 / avgdl));
                }
            }
            let mut hits: Vec<(u64, f32)> = Vec::with_capacity(k + 1);
            for &rid in touched.iter() {
                let s = scores[rid as usize];
                scores[rid as usize] = 0.0;
                if s > 0.0 && filter.admits(rid as u64) {
                    hits.push((rid as u64, s));
                }
            }
            touched.clear();
            let by_score = |a: &(u64, f32), b: &(u64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
            if hits.len() > k {
                hits.select_nth_unstable_by(k, by_score);
                hits.truncate(k);
            }
            hits.sort_by(by_score);
            hits
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_fold_case_and_diacritics_and_drop_stop_words() {
        let mut out = Vec::new();
        terms("How is parse_config() used in Příliš?", |w| {
            out.push(w.to_string())
        });
        assert_eq!(out, vec!["parse", "config", "used", "prilis"]);
    }
}
