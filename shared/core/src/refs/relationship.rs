//! Relationships: their types, short-hand expansion to the main node, explicit parsing
//! (pipe, arrow, bracket), and [`find_relationships`] over whole content.

use super::block::scan_metadata_blocks;
use super::inline::scan_inline;
use super::key::NodeKey;
use super::normalize::{canonical_relation, has_alnum, key_from_parts, normalize_ref};
use super::{ENTITY, MAX_LIST_ENDPOINT_BYTES};

/// A directed, typed relationship between two canonical keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Relationship {
    pub from: NodeKey,
    pub edge_type: String,
    pub to: NodeKey,
}

/// A relationship found inside a text, with the byte span (`start..end`) of the text that
/// states it, so a caller can tell which chunk evidences it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundRelationship {
    pub rel: Relationship,
    pub start: usize,
    pub end: usize,
}

/// The main node of a document, for short-hand expansion.
pub(super) struct MainNode {
    /// Canonical form of the main key; `None` when there is no main node or it has no value.
    key: Option<NodeKey>,
}

impl MainNode {
    fn new(main: Option<&NodeKey>) -> MainNode {
        let key = main.and_then(|m| {
            if m.value().is_empty() {
                None
            } else {
                key_from_parts(m.namespace(), m.value(), false)
            }
        });
        MainNode { key }
    }

    /// The main key when `bare` (an id without `:`) names it.
    fn expand(&self, bare: &str) -> Option<NodeKey> {
        let main = self.key.as_ref()?;
        let candidate = key_from_parts(main.namespace(), bare, false)?;
        if candidate == *main {
            Some(candidate)
        } else {
            None
        }
    }
}

/// Resolve one endpoint; the flag tells whether it is anchored (an explicit `ns:value` or
/// the main node) rather than a bare `entity:` id.
fn resolve_endpoint(raw: &str, main: &MainNode) -> Option<(NodeKey, bool)> {
    let raw = raw.trim();
    if raw.is_empty() {
        return None;
    }
    if raw.contains(':') {
        return normalize_ref(raw).map(|k| (k, true));
    }
    if let Some(k) = main.expand(raw) {
        return Some((k, true));
    }
    key_from_parts(ENTITY, raw, false).map(|k| (k, false))
}

/// Build a relationship from its three raw parts; the flag tells whether an end is anchored.
pub(super) fn build_relationship(
    from: &str,
    edge: &str,
    to: &str,
    main: &MainNode,
) -> Option<(Relationship, bool)> {
    let edge_type = canonical_relation(edge)?;
    let (from_key, from_anchored) = resolve_endpoint(from, main)?;
    let (to_key, to_anchored) = resolve_endpoint(to, main)?;
    let rel = if edge_type == "blocked_by" {
        Relationship {
            from: to_key,
            edge_type: "blocks".to_string(),
            to: from_key,
        }
    } else {
        Relationship {
            from: from_key,
            edge_type,
            to: to_key,
        }
    };
    Some((rel, from_anchored || to_anchored))
}

/// Strip one layer of matching quotes or backticks around `s`.
pub(super) fn strip_matching_quotes(s: &str) -> &str {
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b[b.len() - 1] && matches!(b[0], b'"' | b'\'' | b'`') {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// Split `s` into exactly three trimmed parts at `sep`.
pub(super) fn split3<'a>(s: &'a str, sep: &str) -> Option<(&'a str, &'a str, &'a str)> {
    let mut it = s.splitn(4, sep);
    let a = it.next()?;
    let b = it.next()?;
    let c = it.next()?;
    if it.next().is_some() {
        return None;
    }
    Some((a.trim(), b.trim(), c.trim()))
}

/// Split an explicit relationship string: bracket, then pipe, then arrow.
fn split_relationship(s: &str) -> Option<(&str, &str, &str)> {
    if let Some(open) = s.find("-[") {
        let after = &s[open + 2..];
        let close = after.find(']')?;
        let edge = &after[..close];
        let rest = &after[close + 1..];
        let to = rest.strip_prefix("->").or_else(|| rest.strip_prefix('>'))?;
        return Some((s[..open].trim(), edge.trim(), to.trim()));
    }
    if s.contains('|') {
        return split3(s, "|");
    }
    if s.contains("->") {
        return split3(s, "->");
    }
    None
}

/// An endpoint of an explicit relationship: no separators or brackets, no URL, and no
/// whitespace in its namespace (or anywhere, for a bare id); spaces inside a ref value are
/// allowed (`user:John Smith`).
fn list_endpoint_ok(e: &str) -> bool {
    if e.is_empty() || e.len() > MAX_LIST_ENDPOINT_BYTES || e.contains("->") || e.contains("://") {
        return false;
    }
    if e.contains(|c: char| matches!(c, '|' | '[' | ']') || c.is_control()) {
        return false;
    }
    let head = match e.find(':') {
        Some(i) => &e[..i],
        None => e,
    };
    !head.contains(char::is_whitespace) && has_alnum(e)
}

pub(super) fn parse_relationship_with(s: &str, main: &MainNode) -> Option<Relationship> {
    let s = strip_matching_quotes(s.trim()).trim();
    if s.is_empty() || s.contains(['\n', '\r']) {
        return None;
    }
    let (from, edge, to) = split_relationship(s)?;
    if !list_endpoint_ok(from) || !list_endpoint_ok(to) {
        return None;
    }
    build_relationship(from, edge, to, main).map(|(rel, _)| rel)
}

/// Parse ONE explicit relationship: pipe `a|EDGE|b`, arrow `a->EDGE->b` or bracket
/// `a -[EDGE]-> b` (one layer of surrounding quotes is ignored; spaces around separators are
/// allowed).
///
/// Endpoints are normalised with [`normalize_ref`] after short-hand expansion: a bare id (no
/// `:`) that names the main node's value (`TASK-123` for `jira:task-123`, compared after
/// normalising both) becomes the main key (canonical form); other bare ids become
/// `entity:<id>`. The edge goes through [`canonical_relation`]; `A|blocked_by|B` is returned
/// as `B blocks A`.
///
/// `None` unless the string is exactly one well-formed relationship (three non-empty parts,
/// a valid edge, endpoints without separators, brackets, URLs or line breaks).
pub fn parse_relationship(s: &str, main: Option<&NodeKey>) -> Option<Relationship> {
    parse_relationship_with(s, &MainNode::new(main))
}

/// Find relationships in free content (see the module docs for what counts): metadata blocks
/// (`relationships: [ "a|B|c", … ]`, YAML-style `relationships:` + `- a|B|c` lines), and
/// pipe, arrow or bracket relationships inline. Results are in order of appearance; spans are
/// byte ranges of `text` (for block entries, the entry inside its quotes). The same
/// relationship stated twice is returned twice, with both spans.
pub fn find_relationships(text: &str, main: Option<&NodeKey>) -> Vec<FoundRelationship> {
    let main = MainNode::new(main);
    let mut found = Vec::new();
    let regions = scan_metadata_blocks(text, &main, &mut found);
    scan_inline(text, &main, &regions, &mut found);
    found.sort_by_key(|f| (f.start, f.end));
    found
}
