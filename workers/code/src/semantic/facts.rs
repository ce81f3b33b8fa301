//! Facts of one file: the syntax tree walked for uses and bindings, per language, each use
//! attributed to the innermost outline symbol whose declaration holds it.

use tree_sitter::Node;

use super::{FileFacts, ScopeFacts};
use crate::lang::Language;
use crate::outline::Outline;

/// The facts of a parsed file; `None` for a language without semantic extraction yet.
pub fn facts(outline: &Outline, root: Node<'_>, src: &str, path: &str) -> Option<FileFacts> {
    let mut out = FileFacts {
        module: outline.package.clone(),
        scopes: vec![ScopeFacts::default(); outline.symbols.len()],
        ..FileFacts::default()
    };
    let symbols = SymbolSpans::new(outline);
    match outline.language {
        Language::Python => super::python::extract(root, src, path, &symbols, &mut out),
        Language::Java => super::java::extract(root, src, &symbols, &mut out),
        _ => return None,
    }
    out.refs.sort_by_key(|r| (r.from, r.line));
    Some(out)
}

/// Which outline symbol a declaration node is, by where it starts.
pub(super) struct SymbolSpans {
    by_start: std::collections::HashMap<usize, usize>,
    /// Per symbol: whether it is a type (else a callable).
    is_type: Vec<bool>,
}

impl SymbolSpans {
    fn new(outline: &Outline) -> SymbolSpans {
        let mut by_start = std::collections::HashMap::new();
        for (i, s) in outline.symbols.iter().enumerate() {
            by_start.entry(s.byte_start).or_insert(i);
        }
        SymbolSpans {
            by_start,
            is_type: outline.symbols.iter().map(|s| s.kind.is_type()).collect(),
        }
    }

    /// The outline symbol declared by `node`, if it declares one.
    pub(super) fn of(&self, node: Node<'_>) -> Option<usize> {
        self.by_start.get(&node.start_byte()).copied()
    }

    pub(super) fn is_type(&self, i: usize) -> bool {
        self.is_type.get(i).copied().unwrap_or(false)
    }
}

/// The node's source text (empty when it is not valid UTF-8).
pub(super) fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    node.utf8_text(src.as_bytes()).unwrap_or("")
}

pub(super) fn field<'t>(node: Node<'t>, name: &str) -> Option<Node<'t>> {
    node.child_by_field_name(name)
}

pub(super) fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

pub(super) fn line(node: Node<'_>) -> usize {
    node.start_position().row + 1
}

/// Arguments of an argument list, or `None` when one is spread (its count is unknown).
pub(super) fn arity(args: Option<Node<'_>>, spreads: &[&str]) -> Option<usize> {
    let Some(args) = args else { return Some(0) };
    let mut n = 0;
    for c in named_children(args) {
        if spreads.contains(&c.kind()) {
            return None;
        }
        if c.kind() != "comment" {
            n += 1;
        }
    }
    Some(n)
}
