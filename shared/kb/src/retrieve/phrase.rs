//! Exact phrases: quoted phrases (`"…"`, `“…”`) and long verbatim queries must win.
//!
//! Detection: every quoted run of at least two words is a phrase the answer must hold; an
//! unquoted query of at least [`VERBATIM_MIN_WORDS`] words is itself a phrase it may hold
//! (text copied from a source). Matching compares words — runs of letters and digits,
//! lower-cased — so whitespace, case and punctuation never matter (`don’t` = `don't`).
//!
//! Verification is backend-independent: the BM25 candidates (widened to
//! [`PHRASE_CANDIDATES`]) are fetched and checked word by word. A chunk holding the whole
//! phrase covers it fully; one that ends with the phrase's beginning or starts with its end
//! (a phrase cut by a chunk boundary, e.g. between two caption cues) covers the part it
//! holds when that is at least half of it. Coverage boosts the fused score by
//! [`PHRASE_BOOST`] × coverage, which is more than any fusion score: verified phrase
//! matches rank first, the chunk holding most of a cut phrase before the other.

use std::sync::LazyLock;

use evident_core::{Chunk, Visibility};
use evident_store::ScoredId;

use crate::{Kb, Result};

/// An unquoted query of this many words or more is checked as a verbatim phrase.
pub const VERBATIM_MIN_WORDS: usize = 8;
/// BM25 candidates verified for a phrase.
pub const PHRASE_CANDIDATES: usize = 100;
/// Added to a chunk's fused score per unit of phrase coverage (fusion scores stay below
/// 0.02: `Σ weights / (k + 1)`).
pub const PHRASE_BOOST: f32 = 1.0;
/// A chunk boundary may cut a phrase; the part a chunk holds counts from this many words
/// (and at least half the phrase).
const MIN_PART_WORDS: usize = 3;

static QUOTED: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r#""([^"]+)"|“([^”]+)”|„([^“”]+)[“”]"#).expect("static regex")
});

/// The words of a text for phrase matching: runs of letters and digits, lower-cased.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The phrases of a query, as words.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Phrases {
    pub phrases: Vec<Vec<String>>,
    /// The phrases were quoted (the user asked for them), not a long query taken verbatim.
    pub quoted: bool,
}

impl Phrases {
    pub fn is_empty(&self) -> bool {
        self.phrases.is_empty()
    }

    /// The text to search BM25 candidates with: the phrases' words.
    pub fn search_text(&self) -> String {
        self.phrases
            .iter()
            .map(|p| p.join(" "))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// How much of the phrases `text` holds, 0..=1 (the mean over the phrases).
    pub fn coverage(&self, text: &str) -> f32 {
        if self.phrases.is_empty() {
            return 0.0;
        }
        let haystack = words(text);
        let total: f32 = self
            .phrases
            .iter()
            .map(|p| phrase_coverage(p, &haystack))
            .sum();
        total / self.phrases.len() as f32
    }
}

/// Finds the phrases of a query (see the module documentation).
pub fn phrases(query: &str) -> Phrases {
    let quoted: Vec<Vec<String>> = QUOTED
        .captures_iter(query)
        .filter_map(|c| c.iter().skip(1).flatten().next().map(|m| words(m.as_str())))
        .filter(|w| w.len() >= 2)
        .collect();
    if !quoted.is_empty() {
        return Phrases {
            phrases: quoted,
            quoted: true,
        };
    }
    let all = words(query);
    Phrases {
        phrases: if all.len() >= VERBATIM_MIN_WORDS {
            vec![all]
        } else {
            Vec::new()
        },
        quoted: false,
    }
}

/// 1 when `haystack` holds `phrase`; the share it holds at one of its ends when a chunk
/// boundary cut the phrase there and that share is big enough; else 0.
fn phrase_coverage(phrase: &[String], haystack: &[String]) -> f32 {
    let n = phrase.len();
    if n == 0 || haystack.is_empty() {
        return 0.0;
    }
    if haystack.windows(n).any(|w| w == phrase) {
        return 1.0;
    }
    let min_part = MIN_PART_WORDS.max(n.div_ceil(2));
    let longest = (min_part..n)
        .rev()
        .find(|&k| haystack.ends_with(&phrase[..k]) || haystack.starts_with(&phrase[n - k..]));
    longest.map_or(0.0, |k| k as f32 / n as f32)
}

/// The phrase channel: the candidates holding (part of) the phrases, best coverage first
/// (ties in candidate order), each with its coverage as score.
pub fn phrase_hits(phrases: &Phrases, candidates: &[Chunk]) -> Vec<ScoredId> {
    let mut hits: Vec<ScoredId> = candidates
        .iter()
        .filter_map(|c| {
            let coverage = phrases.coverage(&c.content);
            (coverage > 0.0).then(|| ScoredId {
                chunk_id: c.id.clone(),
                score: coverage,
            })
        })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits
}

impl Kb {
    /// Reads the phrase pool and verifies the phrases in it: the phrase hits and the chunks
    /// read (the pack reuses them). Nothing is read for a query without phrases.
    pub(crate) async fn verify_phrases(
        &self,
        vis: &Visibility,
        phrases: &Phrases,
        pool: &[ScoredId],
    ) -> Result<(Vec<ScoredId>, Vec<Chunk>)> {
        if phrases.is_empty() || pool.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let ids: Vec<String> = pool.iter().map(|h| h.chunk_id.clone()).collect();
        let chunks = self.stores.chunks.get(vis, &ids).await?;
        Ok((phrase_hits(phrases, &chunks), chunks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> Vec<String> {
        words(text)
    }

    #[test]
    fn quoted_phrases_are_found_and_long_queries_taken_verbatim() {
        let q = phrases(r#"what did she say about "wreck a nice beach" and “the browser”"#);
        assert!(q.quoted);
        assert_eq!(q.phrases, vec![w("wreck a nice beach"), w("the browser")]);
        assert!(
            phrases(r#"a "single" word"#).is_empty(),
            "one quoted word is a term"
        );
        assert!(phrases("short question here").is_empty());
        let long = phrases("so with an eye on the clock I will start");
        assert!(!long.quoted);
        assert_eq!(long.phrases.len(), 1);
    }

    #[test]
    fn matching_ignores_case_whitespace_and_punctuation() {
        let p = phrases(r#""Don't  wreck, a NICE beach""#);
        for (text, want) in [
            ("They said: don’t wreck a nice\nbeach — twice.", 1.0),
            ("dont wreck a nice beach", 0.0),
            ("don't wreck the nice beach", 0.0),
        ] {
            assert_eq!(p.coverage(text), want, "{text}");
        }
    }

    #[test]
    fn a_phrase_cut_by_a_chunk_boundary_counts_the_part_each_side_holds() {
        let p = phrases("one two three four five six seven eight nine ten");
        // The first chunk ends with six words of it, the next starts with the last four.
        let first = "before it one two three four five six";
        let second = "seven eight nine ten and after";
        assert_eq!(p.coverage(first), 0.6);
        assert_eq!(p.coverage(second), 0.0, "four of ten is less than half");
        let even = "six seven eight nine ten after";
        assert_eq!(p.coverage(even), 0.5);
        assert_eq!(
            p.coverage("one two three"),
            0.0,
            "a short prefix is no match"
        );
    }

    #[test]
    fn hits_rank_full_matches_before_parts() {
        let chunk = |id: &str, content: &str| Chunk {
            id: id.into(),
            content: content.into(),
            ..evident_store::conformance::chunk(
                &evident_core::Scope::client("c"),
                "urn:t",
                id,
                "doc",
                content,
                0,
            )
        };
        let p = phrases(r#""alpha beta gamma delta""#);
        let hits = phrase_hits(
            &p,
            &[
                chunk("part", "x alpha beta gamma"),
                chunk("none", "alpha gamma beta delta"),
                chunk("full", "y alpha beta gamma delta z"),
            ],
        );
        let ids: Vec<&str> = hits.iter().map(|h| h.chunk_id.as_str()).collect();
        assert_eq!(ids, ["full", "part"]);
    }
}
