//! The BM25 tokeniser: words, and the parts of identifiers.
//!
//! Code and docs name things `retrieveWithExpansion`, `parse_config`, `store-embedded`,
//! `shared/kb/src`; a person asks "retrieve with expansion". So a compound — a run of letters
//! and digits joined by `_`, `-` or `/` — is indexed as its parts, each split again at
//! camel-case boundaries (`HTTPServer` → `http`, `server`), *and* as the whole token (joiners
//! kept, lower-cased), so an exact identifier in a query still matches its rarer whole term
//! first. Queries go through the same function, so both sides agree. Terms are lower-cased,
//! diacritics removed; stop words and terms over [`MAX_TERM`] bytes are dropped. No
//! stemming: an English plural folding was measured and left out (`docs/benchmarks.md`).

use unicode_normalization::UnicodeNormalization;

/// Longer terms (hashes, base64 runs) are noise for BM25.
pub const MAX_TERM: usize = 64;

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

fn is_joiner(c: char) -> bool {
    matches!(c, '_' | '-' | '/')
}

/// Terms of a text: every word and identifier part, plus the whole of each compound of
/// several parts (see the module documentation). `parse_config()` → `parse`, `config`,
/// `parse_config`; `retrieveWithExpansion` → `retrieve`, `expansion`,
/// `retrievewithexpansion`; `Příliš` → `prilis`.
pub fn terms(text: &str, mut each: impl FnMut(&str)) {
    let mut buf = String::new();
    for compound in text.split(|c: char| !(c.is_alphanumeric() || is_joiner(c))) {
        let compound = compound.trim_matches(is_joiner);
        if compound.is_empty() {
            continue;
        }
        let mut parts = 0usize;
        for piece in compound.split(is_joiner).filter(|p| !p.is_empty()) {
            camel_parts(piece, |part| {
                parts += 1;
                emit(part, &mut buf, &mut each);
            });
        }
        if parts > 1 {
            emit(compound, &mut buf, &mut each);
        }
    }
}

/// Normalises one term into `buf` and hands it on unless it is a stop word or too long.
fn emit(term: &str, buf: &mut String, each: &mut impl FnMut(&str)) {
    if term.len() > MAX_TERM {
        return;
    }
    buf.clear();
    if term.is_ascii() {
        buf.extend(term.chars().map(|c| c.to_ascii_lowercase()));
    } else {
        buf.extend(
            term.nfd()
                .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
                .flat_map(char::to_lowercase),
        );
    }
    // A word of combining marks alone folds to nothing.
    if !buf.is_empty() && !STOPWORDS.contains(&buf.as_str()) {
        each(buf);
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        terms(text, |w| out.push(w.to_string()));
        out
    }

    #[test]
    fn identifiers_give_their_parts_and_the_whole() {
        for (text, want) in [
            (
                "retrieveWithExpansion",
                &["retrieve", "expansion", "retrievewithexpansion"][..],
            ),
            ("RetrieveQuery", &["retrieve", "query", "retrievequery"]),
            ("parse_config()", &["parse", "config", "parse_config"]),
            ("store-embedded", &["store", "embedded", "store-embedded"]),
            ("shared/kb/src", &["shared", "kb", "src", "shared/kb/src"]),
            ("HTTPServer", &["http", "server", "httpserver"]),
            ("v2Api utf8", &["v2", "api", "v2api", "utf8"]),
            ("MAX_RESULTS", &["max", "results", "max_results"]),
            ("plain words here", &["plain", "words"]),
            ("__init__", &["init"]),
            ("a - b", &["b"]),
            ("Příliš žluťoučký", &["prilis", "zlutoucky"]),
        ] {
            assert_eq!(all(text), want, "{text}");
        }
    }

    #[test]
    fn file_names_of_path_titles() {
        for (title, want) in [
            ("shared/kb/src/retrieve/fusion.rs", Some("fusion")),
            ("docs/adr/0006-queue.md", Some("0006-queue")),
            ("README.md", Some("README")),
            ("Cargo.toml", Some("Cargo")),
            ("Weekly note", None),
            ("Makefile", None),
            ("v2.3.1 release notes", None),
            (".gitignore", None),
            ("", None),
        ] {
            assert_eq!(file_name(title), want, "{title}");
        }
    }

    #[test]
    fn camel_parts_split_at_case_changes_only() {
        for (word, want) in [
            (
                "retrieveWithExpansion",
                &["retrieve", "With", "Expansion"][..],
            ),
            ("XMLHttpRequest", &["XML", "Http", "Request"]),
            ("ABC", &["ABC"]),
            ("lower", &["lower"]),
            ("Ünïcode", &["Ünïcode"]),
            ("a1B2", &["a1", "B2"]),
        ] {
            let mut out = Vec::new();
            camel_parts(word, |p| out.push(p));
            assert_eq!(out, want, "{word}");
        }
    }

    fn word() -> impl Strategy<Value = String> {
        "[a-z]{2,8}".prop_filter("not a stop word", |w| !STOPWORDS.contains(&w.as_str()))
    }

    fn capitalised(w: &str) -> String {
        let mut c = w.chars();
        c.next()
            .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
            .unwrap_or_default()
    }

    proptest! {
        /// Any identifier style built from words yields every word and the whole, so the
        /// words as a query find it.
        #[test]
        fn joined_words_are_found_by_the_words(ws in prop::collection::vec(word(), 2..5), style in 0..5u8) {
            let ident = match style {
                0 => ws[0].clone() + &ws[1..].iter().map(|w| capitalised(w)).collect::<String>(),
                1 => ws.iter().map(|w| capitalised(w)).collect(),
                2 => ws.join("_"),
                3 => ws.join("-"),
                _ => ws.join("/"),
            };
            let got = all(&ident);
            for w in &ws {
                prop_assert!(got.contains(w), "{ident}: {got:?} lacks {w}");
            }
            prop_assert!(got.contains(&ident.to_lowercase()), "{ident}: no whole term in {got:?}");
            let query = all(&ws.join(" "));
            prop_assert!(query.iter().all(|q| got.contains(q)));
        }

        /// Any text: terms are non-empty, lower-case, bounded, never stop words.
        #[test]
        fn terms_are_well_formed(text in "\\PC{0,80}") {
            terms(&text, |t| {
                assert!(!t.is_empty() && t.len() <= MAX_TERM * 4);
                assert!(!STOPWORDS.contains(&t));
                assert_eq!(t, t.to_lowercase());
            });
        }
    }
}
