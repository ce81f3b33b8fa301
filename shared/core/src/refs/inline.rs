//! Relationships written inline in free text: pipe and arrow tokens, bracket arrows; Markdown
//! tables and metadata blocks are skipped.

use unicode_normalization::char::is_combining_mark;

use super::normalize::has_alnum;
use super::relationship::{FoundRelationship, MainNode, build_relationship, split3};
use super::text::{is_url_scheme, looks_like_time};
use super::{MAX_EDGE_CHARS, MAX_NS_CHARS, MAX_TOKEN_ENDPOINT_BYTES, offset_in};

fn in_regions(regions: &[(usize, usize)], pos: usize) -> bool {
    let idx = regions.partition_point(|&(_, end)| end <= pos);
    idx < regions.len() && regions[idx].0 <= pos
}

/// A Markdown table delimiter row such as `|---|:--:|` or `-|-`.
fn is_table_delimiter(t: &str) -> bool {
    t.contains('|')
        && t.contains('-')
        && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

/// Which lines belong to a Markdown table (pipe relationships are not read there).
fn table_flags(lines: &[&str]) -> Vec<bool> {
    let mut flags = vec![false; lines.len()];
    let mut in_table = false;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if is_table_delimiter(t) {
            flags[i] = true;
            if i > 0 && lines[i - 1].contains('|') {
                flags[i - 1] = true;
            }
            in_table = true;
            continue;
        }
        let outer_pipe = t.starts_with('|') || t.ends_with('|');
        if outer_pipe || (in_table && t.contains('|')) {
            flags[i] = true;
        } else {
            in_table = false;
        }
    }
    flags
}

pub(super) fn scan_inline(
    text: &str,
    main: &MainNode,
    regions: &[(usize, usize)],
    found: &mut Vec<FoundRelationship>,
) {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let tables = table_flags(&lines);
    for (idx, line) in lines.iter().enumerate() {
        let has_pipe = line.contains('|');
        let has_arrow = line.contains("->");
        if !has_pipe && !has_arrow {
            continue;
        }
        if has_arrow {
            scan_brackets(text, line, main, regions, found);
        }
        scan_tokens(text, line, !tables[idx], main, regions, found);
    }
}

/// Leading and trailing punctuation that wraps a token in prose or Markdown.
fn strip_token_punct(tok: &str) -> &str {
    tok.trim_start_matches(['"', '\'', '`', '(', '[', '{', '*'])
        .trim_end_matches([
            '"', '\'', '`', ')', ']', '}', '*', ',', ';', '.', '!', '?', ':',
        ])
}

/// An edge written inline: an identifier of letters, digits, `_` and `-`, starting with a
/// letter or digit, containing a letter, at most 64 chars.
fn token_edge_ok(edge: &str) -> bool {
    if edge.is_empty() || edge.len() > MAX_EDGE_CHARS * 4 {
        return false;
    }
    let mut count = 0usize;
    for c in edge.chars() {
        count += 1;
        if count > MAX_EDGE_CHARS || !(c.is_alphanumeric() || c == '_' || c == '-') {
            return false;
        }
    }
    edge.chars().next().is_some_and(char::is_alphanumeric) && edge.chars().any(char::is_alphabetic)
}

/// An edge in capitals (`DEPENDS_ON`, `MENTIONS`): how people and models write edge types.
fn is_shouty(edge: &str) -> bool {
    edge.chars().filter(|c| c.is_alphabetic()).count() >= 2 && !edge.chars().any(char::is_lowercase)
}

/// A namespace as it may appear in text: starts with a letter, letters/digits/`_`, at most
/// 32 chars; a single ASCII letter (a drive letter) is not one; no URL scheme.
fn text_namespace_ok(ns: &str) -> bool {
    let mut chars = ns.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if !first.is_alphabetic() {
        return false;
    }
    let mut count = 1usize;
    for c in chars {
        count += 1;
        if count > MAX_NS_CHARS || !(c.is_alphanumeric() || c == '_' || is_combining_mark(c)) {
            return false;
        }
    }
    if count == 1 && first.is_ascii() {
        return false;
    }
    !is_url_scheme(ns)
}

/// An endpoint written inline: a whitespace-free token without separators, brackets or
/// quotes, with a letter or digit; when it has a `:`, a plausible ref (not a URL, time, path).
fn token_endpoint_ok(e: &str) -> bool {
    if e.is_empty() || e.len() > MAX_TOKEN_ENDPOINT_BYTES || e.contains("->") || e.contains("://") {
        return false;
    }
    let bad = |c: char| {
        c.is_whitespace()
            || c.is_control()
            || matches!(
                c,
                '|' | '[' | ']' | '<' | '>' | '"' | '`' | '(' | ')' | '{' | '}' | ',' | ';'
            )
    };
    if e.contains(bad) || !has_alnum(e) {
        return false;
    }
    match e.split_once(':') {
        Some((ns, value)) => {
            text_namespace_ok(ns)
                && value.chars().next().is_some_and(char::is_alphanumeric)
                && !value.contains(':')
                && !looks_like_time(ns, value)
        }
        None => true,
    }
}

/// Pipe and arrow relationships: single whitespace-free tokens.
fn scan_tokens(
    text: &str,
    line: &str,
    pipes_allowed: bool,
    main: &MainNode,
    regions: &[(usize, usize)],
    found: &mut Vec<FoundRelationship>,
) {
    for tok in line.split(char::is_whitespace) {
        if tok.len() < 5 || tok.contains("-[") {
            continue;
        }
        let pipe = pipes_allowed && tok.contains('|');
        if !pipe && !tok.contains("->") {
            continue;
        }
        let tok_start = offset_in(text, tok);
        if in_regions(regions, tok_start) || in_regions(regions, tok_start + tok.len() - 1) {
            continue;
        }
        let core = strip_token_punct(tok);
        if core.is_empty() {
            continue;
        }
        let parts = if pipe {
            split3(core, "|")
        } else {
            split3(core, "->")
        };
        let Some((from, edge, to)) = parts else {
            continue;
        };
        if !token_edge_ok(edge) || !token_endpoint_ok(from) || !token_endpoint_ok(to) {
            continue;
        }
        let Some((rel, anchored)) = build_relationship(from, edge, to, main) else {
            continue;
        };
        if !anchored && !is_shouty(edge) {
            continue;
        }
        let start = offset_in(text, core);
        found.push(FoundRelationship {
            rel,
            start,
            end: start + core.len(),
        });
    }
}

/// The whitespace-free token at the end of `s`, if short enough.
fn last_token(s: &str) -> Option<&str> {
    let mut start = s.len();
    for (i, c) in s.char_indices().rev() {
        if c.is_whitespace() {
            break;
        }
        start = i;
        if s.len() - start > MAX_TOKEN_ENDPOINT_BYTES + 8 {
            return None;
        }
    }
    if start == s.len() {
        None
    } else {
        Some(&s[start..])
    }
}

/// The whitespace-free token at the start of `s`, if short enough.
fn first_token(s: &str) -> Option<&str> {
    let mut end = 0usize;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            break;
        }
        end = i + c.len_utf8();
        if end > MAX_TOKEN_ENDPOINT_BYTES + 8 {
            return None;
        }
    }
    if end == 0 { None } else { Some(&s[..end]) }
}

/// Bracket relationships `from -[EDGE]-> to` (spaces or tabs around the arrow optional).
fn scan_brackets(
    text: &str,
    line: &str,
    main: &MainNode,
    regions: &[(usize, usize)],
    found: &mut Vec<FoundRelationship>,
) {
    for (p, _) in line.match_indices("-[") {
        if in_regions(regions, offset_in(text, line) + p) {
            continue;
        }
        let after = &line[p + 2..];
        let mut edge_end = 0usize;
        let mut count = 0usize;
        for (i, c) in after.char_indices() {
            if !(c.is_alphanumeric() || c == '_' || c == '-') {
                break;
            }
            count += 1;
            if count > MAX_EDGE_CHARS {
                break;
            }
            edge_end = i + c.len_utf8();
        }
        if count == 0 || count > MAX_EDGE_CHARS {
            continue;
        }
        let edge = &after[..edge_end];
        let Some(rest) = after[edge_end..].strip_prefix("]->") else {
            continue;
        };
        let left = line[..p].trim_end_matches([' ', '\t']);
        let right = rest.trim_start_matches([' ', '\t']);
        let (Some(from_tok), Some(to_tok)) = (last_token(left), first_token(right)) else {
            continue;
        };
        let from = strip_token_punct(from_tok);
        let to = strip_token_punct(to_tok);
        if !token_edge_ok(edge) || !token_endpoint_ok(from) || !token_endpoint_ok(to) {
            continue;
        }
        let Some((rel, _)) = build_relationship(from, edge, to, main) else {
            continue;
        };
        let start = offset_in(text, from);
        let end = offset_in(text, to) + to.len();
        found.push(FoundRelationship { rel, start, end });
    }
}
