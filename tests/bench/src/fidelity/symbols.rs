//! What the store holds for a file, read back the way an agent would reach it — from the
//! file node along `contains` / `has_method` edges — and compared with an oracle.
//!
//! Comparison rules: a stored symbol and an oracle definition match when they are in the same
//! file, have the same name and the same kind, and the oracle's line lies within the stored
//! symbol's line span (oracles give the line of the name; Evident's span starts at the
//! declaration's first line, annotations, decorators and doc attributes included). Matching is
//! one-to-one (overloads and redefinitions each need their own node). Stored symbols reached
//! from the file but declared in another file (a Go method on a type declared here) belong to
//! that other file.

use std::collections::BTreeMap;

use evident_core::{Scope, Visibility, keys};
use evident_kb::Kb;
use evident_store::{Direction, TraverseOptions};

use super::oracles::{CALLABLE, Def, VALUE};

/// A symbol as stored: name, kind (node type), line span.
#[derive(Debug, Clone)]
pub struct Stored {
    pub name: String,
    pub kind: String,
    pub line_start: usize,
    pub line_end: usize,
}

const SYMBOL_TYPES: [&str; 8] = [
    "class",
    "interface",
    "struct",
    "enum",
    "trait",
    "type",
    "function",
    "method",
];

/// The symbols reachable from `file`'s node and declared in it; `None` when the store has no
/// node for the file (the indexer skipped it).
pub async fn stored_symbols(kb: &Kb, repository: &str, file: &str) -> Option<Vec<Stored>> {
    let vis = Visibility::of(Scope::client("bench"));
    let start = keys::file(repository, file);
    let graph = &kb.stores().graph;
    // A commit's edges name every file it touched; only a file the structure pass indexed is
    // contained by its branch.
    let indexed = graph
        .traverse(
            &vis,
            std::slice::from_ref(&start),
            &TraverseOptions {
                max_depth: 1,
                direction: Direction::In,
                edge_types: vec!["contains_file".into()],
                max_nodes: 10,
            },
        )
        .await
        .expect("traverse");
    if indexed.edges.is_empty() {
        return None;
    }
    let sub = graph
        .traverse(
            &vis,
            &[start],
            &TraverseOptions {
                max_depth: 16,
                direction: Direction::Out,
                edge_types: vec!["contains".into(), "has_method".into()],
                max_nodes: 1_000_000,
            },
        )
        .await
        .expect("traverse");
    let line = |n: &evident_core::Node, k: &str| n.props.get(k).and_then(|v| v.as_u64());
    Some(
        sub.nodes
            .iter()
            .map(|(n, _)| n)
            .filter(|n| SYMBOL_TYPES.contains(&n.node_type.as_str()))
            .filter(|n| n.props.get("path").and_then(|p| p.as_str()) == Some(file))
            .filter(|n| !is_rust_union(n))
            .filter_map(|n| {
                Some(Stored {
                    name: n.props.get("name")?.as_str()?.to_string(),
                    kind: n.node_type.clone(),
                    line_start: line(n, "lineStart")? as usize,
                    line_end: line(n, "lineEnd")? as usize,
                })
            })
            .collect(),
    )
}

/// A Rust `union` (stored as a struct): ctags 5.9 does not know the keyword and reports
/// none, so unions are left out of the comparison rather than counted against precision.
fn is_rust_union(n: &evident_core::Node) -> bool {
    n.node_type == "struct"
        && n.props.get("language").and_then(|l| l.as_str()) == Some("rust")
        && n.props
            .get("signature")
            .and_then(|s| s.as_str())
            .is_some_and(|s| {
                s.split_whitespace()
                    .find(|w| !w.starts_with("pub") && !w.starts_with('#'))
                    == Some("union")
            })
}

/// Matches of one file: (matched, stored only, oracle only), with the unmatched listed.
#[derive(Default)]
pub struct FileScore {
    pub matched: usize,
    pub extra: Vec<Stored>,
    pub missing: Vec<Def>,
}

/// JavaScript private names are `#name` for Evident and the TypeScript compiler (the `#` is
/// part of the name) and `name` for ctags: compared without it on both sides.
fn comparable_name(name: &str) -> String {
    name.strip_prefix('#').unwrap_or(name).to_string()
}

pub fn compare(stored: Vec<Stored>, oracle: &[Def]) -> FileScore {
    let mut groups: BTreeMap<(String, &str), Vec<Stored>> = BTreeMap::new();
    for s in &stored {
        groups
            .entry((comparable_name(&s.name), s.kind.as_str()))
            .or_default()
            .push(s.clone());
    }
    let mut score = FileScore::default();
    let mut oracle: Vec<&Def> = oracle.iter().collect();
    oracle.sort_by_key(|d| d.line);
    for d in oracle {
        let kinds: &[&str] = match d.kind {
            CALLABLE | VALUE => &["function", "method"],
            k => &[k],
        };
        // The innermost span holding the line wins (a nested redefinition before its outer).
        let best = kinds
            .iter()
            .filter_map(|k| {
                let group = groups.get(&(comparable_name(&d.name), *k))?;
                group
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.line_start <= d.line && d.line <= s.line_end)
                    .min_by_key(|(_, s)| s.line_end - s.line_start)
                    .map(|(i, s)| (s.line_end - s.line_start, *k, i))
            })
            .min();
        match best {
            Some((_, k, i)) => {
                if let Some(g) = groups.get_mut(&(comparable_name(&d.name), k)) {
                    g.remove(i);
                }
                score.matched += 1;
            }
            // A value is not a symbol: only a stored function can confirm it.
            None if d.kind == VALUE => {}
            None => score.missing.push(d.clone()),
        }
    }
    score.extra = groups.into_values().flatten().collect();
    score
}
