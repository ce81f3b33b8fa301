//! `namespace:value` refs found in free text ([`extract_refs`]).

use std::collections::HashSet;

use unicode_normalization::char::is_combining_mark;

use super::key::NodeKey;
use super::normalize::{has_alnum, normalize_ref};
use super::{MAX_NS_CHARS, PROSE_PREFIXES, URL_SCHEMES, offset_in};

/// A `namespace:value` ref found in text, with its byte span (`start..end`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundRef {
    pub key: NodeKey,
    pub start: usize,
    pub end: usize,
}

/// Extract `namespace:value` refs from free text (rules in the module docs): `jira:TASK-1`,
/// `user:jan.novak`, `Ž:Příliš` are refs; URLs and anything inside them, times, Windows
/// paths, IPv6 addresses, `key: value`, ratios, emoji shortcodes and URL schemes are not.
/// Keys are normalised with [`normalize_ref`]; results are deduplicated by key (first
/// occurrence kept) in order of appearance.
///
/// What a text writes is not a structure it has: refs in the reserved namespaces of the
/// structural vocabulary ([`crate::keys::RESERVED_NAMESPACES`]: `thread:x`, `commit:abc`,
/// `file:a.rs`, …) are left out, and so are command lines (a line opening with a shell prompt,
/// `$ notmuch show thread:x`). Those nodes come only from extractors and explicit
/// relationships. To look up what a question names, reserved namespaces included, use
/// [`extract_query_refs`].
pub fn extract_refs(text: &str) -> Vec<FoundRef> {
    scan_refs(text, false)
}

/// Every ref a question names, reserved namespaces included (`commit:abc123` finds the
/// commit): for looking nodes up, never for writing them.
pub fn extract_query_refs(text: &str) -> Vec<FoundRef> {
    scan_refs(text, true)
}

fn scan_refs(text: &str, reserved: bool) -> Vec<FoundRef> {
    let mut out = Vec::new();
    let mut seen: HashSet<NodeKey> = HashSet::new();
    for line in text.split('\n').filter(|l| reserved || !is_command_line(l)) {
        for word in line.split(char::is_whitespace) {
            if word.len() < 3 || !word.contains(':') {
                continue;
            }
            scan_word_refs(text, word, &mut out, &mut seen);
        }
    }
    if !reserved {
        out.retain(|r| !crate::keys::is_reserved(&r.key));
    }
    out
}

/// A line that opens with a shell prompt (`$ `, `% `, `PS> `, after any indentation and mail
/// quote markers): a command, whose arguments are not refs.
pub fn is_command_line(line: &str) -> bool {
    let rest = line.trim_start_matches(|c: char| c.is_whitespace() || c == '>');
    ["$ ", "% ", "PS> "].iter().any(|p| rest.starts_with(p))
}

pub(super) fn is_url_scheme(ns: &str) -> bool {
    URL_SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(ns))
}

fn is_prose_prefix(ns: &str) -> bool {
    PROSE_PREFIXES.iter().any(|s| s.eq_ignore_ascii_case(ns))
}

/// `T10:30`, `h2:45`: a namespace ending in a digit with an all-digit value is a time.
pub(super) fn looks_like_time(ns: &str, value: &str) -> bool {
    ns.chars().last().is_some_and(|c| c.is_ascii_digit())
        && !value.is_empty()
        && value.bytes().all(|b| b.is_ascii_digit())
}

/// Where the URL part of a whitespace-delimited word starts (its length when none).
fn url_cut(word: &str) -> usize {
    let bytes = word.as_bytes();
    let mut cut = word.len();
    if let Some(p) = word.find("://") {
        let mut s = p;
        while s > 0
            && (bytes[s - 1].is_ascii_alphanumeric() || matches!(bytes[s - 1], b'+' | b'.' | b'-'))
        {
            s -= 1;
        }
        cut = s;
    }
    for (p, _) in word.match_indices("www.") {
        if p >= cut {
            break;
        }
        if p == 0 || !bytes[p - 1].is_ascii_alphanumeric() {
            cut = p;
            break;
        }
    }
    cut
}

/// Start of the namespace that ends at `colon` (letters, digits, `_`, combining marks; at
/// most 32 chars; starting with a letter; a single ASCII letter is a drive letter).
fn namespace_start(w: &str, colon: usize) -> Option<usize> {
    let mut start = colon;
    let mut count = 0usize;
    for (i, c) in w[..colon].char_indices().rev() {
        if c.is_alphanumeric() || c == '_' || is_combining_mark(c) {
            count += 1;
            if count > MAX_NS_CHARS {
                return None;
            }
            start = i;
        } else {
            break;
        }
    }
    let first = w[start..colon].chars().next()?;
    if !first.is_alphabetic() || (count == 1 && first.is_ascii()) {
        return None;
    }
    Some(start)
}

/// Characters that, right before a namespace, show it is part of something else (a host
/// name, a path, a chain, a CSS declaration, an identifier).
fn is_denied_before_namespace(c: char) -> bool {
    matches!(
        c,
        '_' | '-' | '.' | '/' | '\\' | ':' | '@' | '#' | '$' | '%' | '&' | '+' | '~' | '^' | ';'
    )
}

/// Scan a ref value starting at `start`: returns (raw end, end with trailing `.`/`-` trimmed).
/// The value must start with a letter or digit (else both ends equal `start`).
fn scan_ref_value(w: &str, start: usize) -> (usize, usize) {
    let s = &w[start..];
    let mut end = 0usize;
    let mut iter = s.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let ok = if i == 0 {
            c.is_alphanumeric()
        } else if c.is_alphanumeric() || matches!(c, '_' | '-' | '.') || is_combining_mark(c) {
            true
        } else if c == '@' {
            matches!(iter.peek(), Some(&(_, next)) if next.is_alphanumeric())
        } else {
            false
        };
        if !ok {
            break;
        }
        end = i + c.len_utf8();
    }
    let trimmed = s[..end].trim_end_matches(['.', '-']);
    (start + end, start + trimmed.len())
}

/// What follows a ref value shows it was part of a path, a chain or a declaration list.
fn value_followed_badly(rest: &str) -> bool {
    let mut it = rest.chars();
    match it.next() {
        Some('/' | '\\') => true,
        Some(':') => {
            matches!(it.next(), Some(c) if c.is_alphanumeric() || matches!(c, ':' | '/' | '\\'))
        }
        Some(';') => matches!(it.next(), Some(c) if c.is_alphanumeric()),
        _ => false,
    }
}

fn scan_word_refs(text: &str, word: &str, out: &mut Vec<FoundRef>, seen: &mut HashSet<NodeKey>) {
    let base = offset_in(text, word);
    let w = &word[..url_cut(word)];
    let mut search_from = 0usize;
    while let Some(rel) = w[search_from..].find(':') {
        let colon = search_from + rel;
        search_from = colon + 1;
        let Some(ns_start) = namespace_start(w, colon) else {
            continue;
        };
        if w[..ns_start]
            .chars()
            .next_back()
            .is_some_and(is_denied_before_namespace)
        {
            continue;
        }
        let ns = &w[ns_start..colon];
        if is_url_scheme(ns) {
            // `mailto:a@b?subject=re:x`, `javascript:…`: nothing else in this word is a ref.
            return;
        }
        if is_prose_prefix(ns) {
            continue;
        }
        let (raw_end, end) = scan_ref_value(w, colon + 1);
        if end <= colon + 1 {
            continue;
        }
        let value = &w[colon + 1..end];
        if !has_alnum(value) || value_followed_badly(&w[raw_end..]) || looks_like_time(ns, value) {
            continue;
        }
        if let Some(key) = normalize_ref(&w[ns_start..end])
            && seen.insert(key.clone())
        {
            out.push(FoundRef {
                key,
                start: base + ns_start,
                end: base + end,
            });
        }
    }
}
