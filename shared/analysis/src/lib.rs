//! Text analysis: the one definition of what the BM25 index stores for a text and what a
//! query looks up, used at index time and at query time by every backend (the embedded text
//! index, and the analysed-text property of Weaviate's collection).
//!
//! A text is cut into **compounds** — runs of letters, digits, apostrophes and the joiners
//! `_`, `-`, `/` — and each compound into words: at the joiners, by Unicode word
//! segmentation (UAX #29: an ideograph is a word of its own, `don't` stays one word), and at
//! camel-case boundaries (`HTTPServer` → `HTTP`, `Server`). Then, per word:
//! - case folded and diacritics removed (`Příliš` → `prilis`); stop words ([`STOPWORDS`],
//!   English function words) and words over [`MAX_TERM`] bytes are dropped;
//! - **stemmed** with the Snowball stemmer of the text's language ([`Language::detect`]:
//!   English unless the text's function words say otherwise) — the stem is the word's term,
//!   so `retries`, `retried` and `retry` meet at `retri`;
//! - and, when the stem differs from the word, the **exact form** is kept beside it as a
//!   marked term (`=retried`, [`EXACT`]), so a query word matches its inflections and its
//!   own form more: exact forms score above stemmed matches.
//!
//! A compound of several words is also kept **whole** (joiners kept, lower-cased, never
//! stemmed: `token_hash`, `tokenhash`, `shared/kb/src`), so an exact identifier in a query
//! matches its rarer whole term first, while "token hash" still finds both parts. Stop words
//! are dropped from prose and from an identifier's parts, never from the whole identifier
//! (`is_empty` keeps `is_empty`).
//!
//! The analysis is **versioned** ([`VERSION`], [`fingerprint`]): an index stores the
//! fingerprint of the analysis it was built with and is rebuilt when it differs, never
//! searched with another analysis.

use std::sync::OnceLock;

use rust_stemmers::Stemmer;
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

mod language;
mod options;
#[cfg(test)]
mod tests;

pub use language::Language;
pub use options::{Options, options, set_options};

/// Bump when the analysis changes in a way [`fingerprint`]'s probe might not show.
/// 3: stemming, exact forms, Unicode word segmentation, defined names (2 was the unstemmed
/// tokeniser).
pub const VERSION: u32 = 3;

/// Longer terms (hashes, base64 runs) are noise for BM25.
pub const MAX_TERM: usize = 64;

/// The mark of an exact (unstemmed) form: `=retried` beside the stem `retri`. No analysed
/// term starts with it otherwise (`=` is neither a letter, a digit nor a joiner).
pub const EXACT: char = '=';

/// The mark of a defined name: `#tokenhash` for a chunk that defines `token_hash`.
pub const DEFINES: char = '#';

/// A query's words joined, up to this many, are asked as a defined name.
const NAME_WORDS: usize = 4;

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

/// What an analysed term is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Term {
    /// A word's stem (or the word, when not stemmed): counts in the text's length.
    Word,
    /// The exact form of a word whose stem differs (marked with [`EXACT`]): a second term of
    /// the same word, so it does not count in the length.
    Exact,
    /// A whole compound of several words (`token_hash`): counts in the length.
    Whole,
    /// The name a chunk defines ([`definition_term`], marked with [`DEFINES`]): a second term
    /// of its heading, so it does not count in the length.
    Defines,
}

impl Term {
    /// Whether the term counts in a text's length (one per word, one per compound).
    pub fn counts(self) -> bool {
        !matches!(self, Term::Exact | Term::Defines)
    }
}

/// A query's term and the weight its BM25 contribution is multiplied by.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    pub text: String,
    pub kind: Term,
    pub weight: f32,
}

fn is_joiner(c: char) -> bool {
    matches!(c, '_' | '-' | '/')
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}')
}

fn stemmer(lang: Language) -> &'static Stemmer {
    static STEMMERS: OnceLock<Vec<Stemmer>> = OnceLock::new();
    let all = STEMMERS.get_or_init(|| {
        Language::ALL
            .iter()
            .map(|l| Stemmer::create(l.algorithm()))
            .collect()
    });
    &all[lang as usize]
}

/// The terms of a document's text in `lang` (see the crate documentation): every word's stem
/// and, where it differs, its exact form; the whole of every compound of several words.
pub fn document_terms(text: &str, lang: Language, mut each: impl FnMut(&str, Term)) {
    analyse(text, lang, false, &mut each);
}

/// The terms of a query, each once, with their weights: a term counts once per occurrence
/// (a long question that says "retrieval" three times is mostly about retrieval), an exact
/// form [`Options::exact_weight`] per occurrence. A query asks for the exact form of every
/// word, inflected or not: a document of another language keeps the exact form of a word
/// its own stemmer changed.
pub fn query_terms(text: &str) -> Vec<QueryTerm> {
    let lang = Language::detect(text);
    let opts = options();
    let mut out: Vec<QueryTerm> = Vec::new();
    analyse(text, lang, true, &mut |t: &str, kind: Term| {
        let weight = if kind == Term::Exact {
            opts.exact_weight
        } else {
            1.0
        };
        match out.iter_mut().find(|q| q.text == t) {
            Some(q) => q.weight += weight,
            None => out.push(QueryTerm {
                text: t.to_string(),
                kind,
                weight,
            }),
        }
    });
    if opts.definition_weight > 0.0 {
        query_names(text, &mut |name: &str| {
            if !out.iter().any(|q| q.text == name) {
                out.push(QueryTerm {
                    text: name.to_string(),
                    kind: Term::Defines,
                    weight: opts.definition_weight,
                });
            }
        });
    }
    out.retain(|q| q.weight > 0.0);
    out
}

/// The term of a name a chunk defines (a symbol's qualified name, a graph key): its last
/// segment after `::`, `.` or `/`, without a parameter list, letters and digits only,
/// lower-cased — `evident_core::access::token_hash()`, `TokenHash` and `token-hash` all give
/// `#tokenhash`. A query asks for the names its words make joined ([`query_terms`]), so the
/// chunk that *defines* `token_hash` is found above the chunks that use it, by `token_hash`,
/// `tokenHash` or "token hash".
pub fn definition_term(qualified: &str) -> Option<String> {
    let name = qualified.split('(').next().unwrap_or(qualified);
    let last = name.rsplit([':', '.', '/', '#']).find(|s| !s.is_empty())?;
    let mut out = String::with_capacity(last.len() + 1);
    out.push(DEFINES);
    out.extend(
        last.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase),
    );
    (out.len() > 1 && out.len() <= MAX_TERM).then_some(out)
}

/// The defined names a query's words make: every run of up to [`NAME_WORDS`] consecutive
/// words (stop words included: `is_empty`), joined.
fn query_names(text: &str, each: &mut dyn FnMut(&str)) {
    let mut words: Vec<String> = Vec::new();
    for piece in text.split(|c: char| !c.is_alphanumeric()) {
        camel_parts(piece, |p| {
            if !p.is_empty() {
                words.push(p.to_lowercase());
            }
        });
    }
    let mut name = String::new();
    for start in 0..words.len() {
        name.clear();
        name.push(DEFINES);
        for w in words.iter().skip(start).take(NAME_WORDS) {
            name.push_str(w);
            if name.len() <= MAX_TERM {
                each(&name);
            }
        }
    }
}

/// The plain terms of a text as a list (a document's analysis in its detected language):
/// what tests and tools that compare term sets need.
pub fn terms_of(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    document_terms(text, Language::detect(text), |t: &str, _| {
        out.push(t.to_string())
    });
    out
}

fn analyse(text: &str, lang: Language, query: bool, each: &mut dyn FnMut(&str, Term)) {
    let mut buf = String::new();
    let mut stem_buf = String::new();
    let split = |c: char| !(c.is_alphanumeric() || is_joiner(c) || is_apostrophe(c));
    for compound in text.split(split) {
        let compound = compound.trim_matches(|c| is_joiner(c) || is_apostrophe(c));
        if compound.is_empty() {
            continue;
        }
        // Parts made by joiners and case changes (not by the segmentation of scripts without
        // spaces: a run of ideographs is words, not an identifier).
        let mut parts = 0usize;
        for piece in compound.split(is_joiner).filter(|p| !p.is_empty()) {
            let mut camel = 0;
            for word in piece.unicode_words() {
                camel_parts(word, |part| {
                    camel += 1;
                    word_terms(part, lang, query, &mut buf, &mut stem_buf, each);
                });
            }
            let segmented = piece.unicode_words().nth(1).is_some();
            parts += if segmented { 1 } else { camel };
        }
        if parts > 1 && fold(compound, &mut buf) && buf.len() <= MAX_TERM {
            each(&buf, Term::Whole);
        }
    }
}

/// Case-folds `term` into `buf` without diacritics or apostrophes; false when nothing is
/// left (a word of combining marks alone).
fn fold(term: &str, buf: &mut String) -> bool {
    buf.clear();
    if term.is_ascii() {
        buf.extend(
            term.chars()
                .filter(|c| *c != '\'')
                .map(|c| c.to_ascii_lowercase()),
        );
    } else {
        buf.extend(
            term.nfd()
                .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
                .filter(|c| !is_apostrophe(*c))
                .flat_map(char::to_lowercase),
        );
    }
    !buf.is_empty()
}

/// One word's terms: its stem, and its exact form when the stem differs (a query's always).
fn word_terms(
    word: &str,
    lang: Language,
    query: bool,
    buf: &mut String,
    stem_buf: &mut String,
    each: &mut dyn FnMut(&str, Term),
) {
    if word.len() > MAX_TERM || !fold(word, buf) {
        return;
    }
    let opts = options();
    if opts.stopwords && STOPWORDS.contains(&buf.as_str()) {
        return;
    }
    let stemmable =
        opts.stem && buf.chars().all(char::is_alphabetic) && buf.chars().nth(2).is_some();
    if !stemmable {
        each(buf.as_str(), Term::Word);
        return;
    }
    // Stemmers know their language's accents: stem the lower-cased word, then fold the stem.
    let lower: String = word
        .chars()
        .filter(|c| !is_apostrophe(*c))
        .flat_map(char::to_lowercase)
        .collect();
    let stem = stemmer(lang).stem(&lower);
    if !fold(&stem, stem_buf) {
        return;
    }
    each(stem_buf.as_str(), Term::Word);
    if opts.exact && (query || *stem_buf != *buf) {
        let exact = format!("{EXACT}{buf}");
        each(&exact, Term::Exact);
    }
}

/// The file name, without its extension, of a title that is a path (`shared/kb/src/
/// retrieve/fusion.rs` → `fusion`, `docs/adr/0006-queue.md` → `0006-queue`): the one part
/// of a path that names what the file is about, where its directories name the area. A
/// title with white space is prose, not a path.
pub fn file_name(title: &str) -> Option<&str> {
    if title.is_empty() || title.contains(char::is_whitespace) {
        return None;
    }
    let last = title.rsplit('/').next()?;
    let (stem, ext) = last.rsplit_once('.')?;
    let ext_ok =
        !ext.is_empty() && ext.len() <= 8 && ext.chars().all(|c| c.is_ascii_alphanumeric());
    (ext_ok && !stem.is_empty()).then_some(stem)
}

/// The camel-case parts of a word of letters and digits: a new part starts at an upper-case
/// letter after a lower-case letter or digit (`retrieveWith`), and at the last capital of a
/// run followed by a lower-case letter (`HTTPServer` → `HTTP`, `Server`). Digits stay with
/// their letters (`utf8`, `v2Api` → `v2`, `Api`).
pub fn camel_parts<'a>(word: &'a str, mut each: impl FnMut(&'a str)) {
    let mut start = 0;
    let mut prev: Option<char> = None;
    let mut iter = word.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if let Some(p) = prev
            && c.is_uppercase()
        {
            let next_lower = iter.peek().is_some_and(|(_, n)| n.is_lowercase());
            let boundary =
                p.is_lowercase() || p.is_ascii_digit() || (p.is_uppercase() && next_lower);
            if boundary && i > start {
                each(&word[start..i]);
                start = i;
            }
        }
        prev = Some(c);
    }
    if start < word.len() {
        each(&word[start..]);
    }
}

/// What the analysis makes of a probe text (words, inflections, identifiers, diacritics,
/// stop words, numbers, scripts without spaces, another language) with the [`VERSION`] and
/// the [`Options`] in force: an index built with another fingerprint is rebuilt.
pub fn fingerprint() -> u32 {
    const PROBE: &[&str] = &[
        "How is parse_config() used in Příliš žluťoučký kůň? The retrieveWithExpansion \
         step calls evident_kb::retrieve::fusion at v2.3.1 for RFC-7231, ÉCOLE, naïve café, \
         HTTPServer2Handler, snake_case_name, x86_64, 10,000 chunks, a/b/c.rs:42 and e-mail. \
         Payment retries happened; charges are retried hourly. Melanie's don't 東京都の天気",
        "Die Häuser der Stadt wurden und werden nicht mit den Mitteln gebaut, die es gab.",
    ];
    let mut h = crc32fast::Hasher::new();
    h.update(&VERSION.to_le_bytes());
    h.update(format!("{:?}", options()).as_bytes());
    h.update(
        definition_term("evident_core::access::TokenHash()")
            .unwrap_or_default()
            .as_bytes(),
    );
    for text in PROBE {
        let lang = Language::detect(text);
        h.update(&[lang as u8]);
        document_terms(text, lang, |t, kind| {
            h.update(t.as_bytes());
            h.update(&[kind as u8]);
        });
    }
    h.finalize()
}
