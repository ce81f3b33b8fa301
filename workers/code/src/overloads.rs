//! Callables that would share a qualified name in one file, told apart so each definition is
//! its own node (keys are `symbol:{repo}/{qualified name}()`, one node per key).
//!
//! In this order:
//! 1. TypeScript overload signatures are one function with their implementation
//!    (`function f(a: string): void; function f(a: any) {…}`): the signatures are folded into
//!    it, its span starting at the first; signatures without an implementation (interface or
//!    `declare` overloads) fold into the first.
//! 2. Rust methods and associated types of several trait impls of one type (`fmt` of
//!    `Debug` and of `Display`, `from` of `From<u8>` and `From<u16>`, `type Output` of `Add`
//!    and `Sub`): the trait joins the qualified name, `krate::m::Point::Display::fmt`.
//! 3. Overloads in languages with parameter types (Java, Kotlin, TypeScript): each gets its
//!    parameter types as written, names and generic arguments dropped: `com.acme.Cart.add(Item,int)`
//!    (key `symbol:shop/com.acme.Cart.add(Item,int)`).
//! 4. Whatever still collides — Rust items under alternative `#[cfg]`s, Go's several `init`
//!    functions, JavaScript static and instance
//!    methods of one name, getter and setter pairs, Python redefinitions (property setters,
//!    `if`/`else` alternatives) — is numbered in source order from the second on:
//!    `name#2`, `name#3`.
//!
//! A callable that is the only one of its name keeps its plain `name()` key: adding an
//! overload renames the existing node, as it changes what the plain name designates.

use std::collections::HashMap;

use tree_sitter::Node;

use crate::lang::Language;
use crate::outline::{Symbol, SymbolKind};

/// What may tell a callable apart from another of the same name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extra {
    /// `(int,String)`: parameter types (languages that declare them).
    params: Option<String>,
    /// The trait of the Rust `impl` the method is in.
    trait_name: Option<String>,
    /// A TypeScript declaration without a body (an overload signature).
    signature_only: bool,
}

impl Extra {
    pub(crate) fn of(lang: Language, node: Node<'_>, src: &str, impl_trait: Option<&str>) -> Extra {
        Extra {
            params: parameter_types(lang, node, src),
            trait_name: impl_trait.map(str::to_string),
            signature_only: matches!(lang, Language::TypeScript | Language::Tsx)
                && matches!(
                    node.kind(),
                    "function_signature" | "method_signature" | "abstract_method_signature"
                ),
        }
    }
}

fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    node.utf8_text(src.as_bytes()).unwrap_or("")
}

/// A type as written, without whitespace, generic arguments or annotations: `Map<K, V>` →
/// `Map`, `final @NonNull String[]` → `String[]`.
fn normalise_type(raw: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in raw.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            c if depth == 0 && !c.is_whitespace() => out.push(c),
            _ => {}
        }
    }
    // Annotations and modifiers written before the type (`@NonNull`, `final`).
    let out = out.rsplit(')').next().unwrap_or(&out).to_string();
    let mut out = out.as_str();
    while let Some(rest) = out.strip_prefix('@') {
        out = rest.trim_start_matches(|c: char| c.is_alphanumeric() || c == '.' || c == '_');
    }
    out.trim_start_matches("final").to_string()
}

fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// `(T1,T2)` for a callable of a language with parameter types; `None` otherwise.
fn parameter_types(lang: Language, node: Node<'_>, src: &str) -> Option<String> {
    let types: Vec<String> = match lang {
        Language::Java => {
            let params = node.child_by_field_name("parameters")?;
            named_children(params)
                .into_iter()
                .filter_map(|p| match p.kind() {
                    "formal_parameter" => p
                        .child_by_field_name("type")
                        .map(|t| normalise_type(text(t, src))),
                    "spread_parameter" => named_children(p)
                        .into_iter()
                        .find(|c| !matches!(c.kind(), "modifiers" | "variable_declarator"))
                        .map(|t| normalise_type(text(t, src)) + "..."),
                    _ => None,
                })
                .collect()
        }
        Language::Kotlin => {
            let params = named_children(node)
                .into_iter()
                .find(|c| c.kind() == "function_value_parameters")?;
            named_children(params)
                .into_iter()
                .filter(|p| p.kind() == "parameter")
                .filter_map(|p| {
                    named_children(p)
                        .last()
                        .map(|t| normalise_type(text(*t, src)))
                })
                .collect()
        }
        Language::TypeScript | Language::Tsx => {
            let params = node.child_by_field_name("parameters")?;
            named_children(params)
                .into_iter()
                .filter(|p| matches!(p.kind(), "required_parameter" | "optional_parameter"))
                .map(|p| {
                    let ty = p
                        .child_by_field_name("type")
                        .map(|t| text(t, src).trim_start_matches(':').to_string())
                        .unwrap_or_else(|| "any".into());
                    let rest = named_children(p)
                        .first()
                        .is_some_and(|c| c.kind() == "rest_pattern");
                    let optional = if p.kind() == "optional_parameter" {
                        "?"
                    } else {
                        ""
                    };
                    format!(
                        "{}{}{optional}",
                        if rest { "..." } else { "" },
                        normalise_type(&ty)
                    )
                })
                .collect()
        }
        _ => return None,
    };
    Some(format!("({})", types.join(",")))
}

/// Callables, the associated types of Rust trait impls (`type Output` of `Add` and of
/// `Sub`), and any Rust item: what several declarations of one scope may name alike (Rust
/// `#[cfg(…)]` alternatives — `#[cfg(unix)] type Fd = i32;` next to `#[cfg(windows)] type Fd =
/// u64;` — are each a definition).
fn may_collide(lang: Language, s: &Symbol, e: &Extra) -> bool {
    matches!(s.kind, SymbolKind::Function | SymbolKind::Method)
        || (s.kind == SymbolKind::Type && e.trait_name.is_some())
        || lang == Language::Rust
}

/// Indexes of symbols that may collide grouped by key — qualified name, and whether a type
/// (a callable's key ends in `()`, so it never meets a type's) — groups of two or more, in
/// source order.
fn collisions(lang: Language, symbols: &[Symbol], extras: &[Extra]) -> Vec<Vec<usize>> {
    let mut by_name: HashMap<(bool, &str), Vec<usize>> = HashMap::new();
    for (i, s) in symbols
        .iter()
        .enumerate()
        .filter(|(i, s)| may_collide(lang, s, &extras[*i]))
    {
        by_name
            .entry((s.kind.is_type(), &s.qualified_name))
            .or_default()
            .push(i);
    }
    let mut groups: Vec<Vec<usize>> = by_name.into_values().filter(|g| g.len() > 1).collect();
    groups.sort();
    groups
}

/// Step 1: TypeScript signatures folded into their implementation.
fn fold_signatures(symbols: &mut Vec<Symbol>, extras: &mut Vec<Extra>) {
    let mut remove = Vec::new();
    for group in collisions(Language::TypeScript, symbols, extras) {
        if !group.iter().any(|&i| extras[i].signature_only) {
            continue;
        }
        let implementations: Vec<usize> = group
            .iter()
            .copied()
            .filter(|&i| !extras[i].signature_only)
            .collect();
        let keep = match implementations.as_slice() {
            [one] => *one,
            [] => group[0],
            // Several bodies: real duplicates, numbered later.
            _ => continue,
        };
        let first = group[0];
        let last = *group.last().unwrap_or(&first);
        let (start_line, start_byte) = (symbols[first].line_start, symbols[first].byte_start);
        let (end_line, end_byte) = (symbols[last].line_end, symbols[last].byte_end);
        let kept = &mut symbols[keep];
        kept.line_start = kept.line_start.min(start_line);
        kept.byte_start = kept.byte_start.min(start_byte);
        kept.line_end = kept.line_end.max(end_line);
        kept.byte_end = kept.byte_end.max(end_byte);
        remove.extend(group.into_iter().filter(|&i| i != keep));
    }
    remove.sort_unstable();
    for i in remove.into_iter().rev() {
        symbols.remove(i);
        extras.remove(i);
    }
}

/// Replaces the last segment `name` of a qualified name with `insert + name`.
fn with_segment(qualified: &str, name: &str, sep: &str, segment: &str) -> String {
    let prefix = qualified.strip_suffix(name).unwrap_or(qualified);
    format!("{prefix}{segment}{sep}{name}")
}

pub(crate) fn disambiguate(lang: Language, symbols: &mut Vec<Symbol>, mut extras: Vec<Extra>) {
    debug_assert_eq!(symbols.len(), extras.len());
    if symbols.len() != extras.len() {
        return;
    }
    if matches!(lang, Language::TypeScript | Language::Tsx) {
        fold_signatures(symbols, &mut extras);
    }
    let sep = lang.separator();
    for group in collisions(lang, symbols, &extras) {
        for i in group {
            let s = &mut symbols[i];
            if let Some(t) = &extras[i].trait_name {
                s.qualified_name = with_segment(&s.qualified_name, &s.name, sep, t);
            } else if let Some(p) = &extras[i].params {
                s.qualified_name.push_str(p);
            }
        }
    }
    for group in collisions(lang, symbols, &extras) {
        for (n, i) in group.into_iter().enumerate().skip(1) {
            symbols[i].qualified_name = format!("{}#{}", symbols[i].qualified_name, n + 1);
        }
    }
}
