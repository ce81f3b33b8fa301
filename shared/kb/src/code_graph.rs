//! Code questions over the semantic edges the git indexer writes (`calls`, `extends`,
//! `implements`, `uses_type`): *who calls this*, *what does it call*, *what implements or
//! extends it*, *where is this type used* — each one [`traverse`](evident_store::GraphStore)
//! from the symbol along one relation, to a depth.
//!
//! A symbol is named by its node key (`symbol:shop/shop.Cart.price()`) or by a plain name:
//! `price`, `Cart.price`, `shop.Cart.price`, `crate::cart::Cart` (`::` reads as `.`), with
//! `()` or an overload's parameter list (`add(Item,int)`) allowed at the end. A name matches
//! every visible symbol node whose qualified name is it or ends in `.`/`/` followed by it, in
//! every repository of the reader's scope; an ambiguous name answers for each match and says
//! so (`ambiguous`), it never picks one.

use std::collections::BTreeMap;

use evident_core::{Edge, Node, NodeKey, Visibility, validate};
use evident_store::{Direction, TraverseOptions};
use serde::Serialize;

use crate::graph::{MAX_DEPTH, MAX_TRAVERSE_NODES, NodeAtDepth};
use crate::{Kb, KbError, Result};

/// The node types of code symbols (`evident-code`'s symbol kinds).
pub const SYMBOL_TYPES: &[&str] = &[
    "class",
    "interface",
    "struct",
    "enum",
    "trait",
    "type",
    "function",
    "method",
];

/// Most symbols one name may match; past it the answer says `truncatedMatches`.
pub const MAX_MATCHES: usize = 50;
/// Candidate nodes read per search pattern when a plain name is resolved.
const CANDIDATES: usize = 500;

/// What is asked about a symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CodeRelation {
    /// The functions and methods that call it (`calls`, incoming).
    Callers,
    /// What it calls (`calls`, outgoing).
    Callees,
    /// The types that implement or extend it (`implements`, `extends`, incoming).
    Implementations,
    /// The symbols whose signatures, fields or annotations use the type (`uses_type`, incoming).
    Uses,
}

impl CodeRelation {
    pub const ALL: [CodeRelation; 4] = [
        CodeRelation::Callers,
        CodeRelation::Callees,
        CodeRelation::Implementations,
        CodeRelation::Uses,
    ];

    pub fn parse(raw: &str) -> Result<CodeRelation> {
        CodeRelation::ALL
            .into_iter()
            .find(|r| r.as_str() == raw)
            .ok_or_else(|| {
                KbError::Invalid(format!(
                    "relation must be callers, callees, implementations or uses, not `{raw}`"
                ))
            })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CodeRelation::Callers => "callers",
            CodeRelation::Callees => "callees",
            CodeRelation::Implementations => "implementations",
            CodeRelation::Uses => "uses",
        }
    }

    pub fn edge_types(self) -> &'static [&'static str] {
        match self {
            CodeRelation::Callers | CodeRelation::Callees => &["calls"],
            CodeRelation::Implementations => &["implements", "extends"],
            CodeRelation::Uses => &["uses_type"],
        }
    }

    pub fn direction(self) -> Direction {
        match self {
            CodeRelation::Callees => Direction::Out,
            _ => Direction::In,
        }
    }
}

/// A code question: `relation` of `symbol`, up to `depth` hops (1 = direct).
#[derive(Debug, Clone, PartialEq)]
pub struct CodeQuery {
    pub symbol: String,
    pub relation: CodeRelation,
    pub depth: usize,
    /// Most nodes reached per matched symbol (1..=1000).
    pub max_nodes: usize,
}

impl CodeQuery {
    /// Hops followed when a request names none: direct answers only.
    pub const DEFAULT_DEPTH: usize = 1;
    /// Nodes reached per matched symbol when a request names no limit.
    pub const DEFAULT_MAX_NODES: usize = 200;

    /// Direct answers ([`Self::DEFAULT_DEPTH`]), up to [`Self::DEFAULT_MAX_NODES`] per match.
    pub fn new(symbol: impl Into<String>, relation: CodeRelation) -> Self {
        Self::with_limits(symbol, relation, None, None)
    }

    /// The question as a request states it: the defaults stand for what it leaves out
    /// (REST, MCP and the CLI all come through here, so they share them).
    pub fn with_limits(
        symbol: impl Into<String>,
        relation: CodeRelation,
        depth: Option<usize>,
        max_nodes: Option<usize>,
    ) -> Self {
        CodeQuery {
            symbol: symbol.into(),
            relation,
            depth: depth.unwrap_or(Self::DEFAULT_DEPTH),
            max_nodes: max_nodes.unwrap_or(Self::DEFAULT_MAX_NODES),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeAnswer {
    pub symbol: String,
    pub relation: CodeRelation,
    pub depth: usize,
    /// More than one symbol matched the name: each has its own answer.
    pub ambiguous: bool,
    /// More than [`MAX_MATCHES`] symbols matched; only the first (in key order) are answered.
    pub truncated_matches: bool,
    /// Says, in words, that the name was ambiguous (absent when it was not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub matches: Vec<CodeMatch>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeMatch {
    /// The symbol the name resolved to.
    pub symbol: Node,
    /// The symbols reached (the start left out), nearest first, then by key.
    pub results: Vec<NodeAtDepth>,
    /// The edges walked, with their evidence chunk ids (and `confidence` when a use had
    /// several candidates).
    pub edges: Vec<Edge>,
    /// The walk stopped at `maxNodes`.
    pub truncated: bool,
}

/// A plain name as the tail of a qualified name: `::` as `.`, a trailing `()` dropped (a real
/// parameter list kept), and whether it names a callable only.
fn normalise_name(raw: &str) -> (String, bool) {
    let name = raw.trim().replace("::", ".");
    match name.strip_suffix("()") {
        Some(base) => (base.to_string(), true),
        None => {
            let callable = name.ends_with(')') && name.contains('(');
            (name, callable)
        }
    }
}

/// The last component of a (normalised) name, before any parameter list.
fn last_component(name: &str) -> &str {
    let base = name.split('(').next().unwrap_or(name);
    base.rsplit(['.', '/']).next().unwrap_or(base)
}

/// Whether the symbol key `key` is named by `name` (see the module doc).
fn key_matches(key: &str, name: &str, callable_only: bool) -> bool {
    let Some(rest) = key.strip_prefix("symbol:") else {
        return false;
    };
    let Some((_repo, qualified)) = rest.split_once('/') else {
        return false;
    };
    let is_callable = qualified.ends_with(')');
    if callable_only && !is_callable {
        return false;
    }
    // Compare with the parameter list only when the name gives one.
    let target = if name.contains('(') {
        qualified
    } else {
        match qualified.find('(') {
            Some(i) if is_callable => &qualified[..i],
            _ => qualified,
        }
    };
    target == name
        || target
            .strip_suffix(name)
            .is_some_and(|head| head.ends_with('.') || head.ends_with('/'))
}

impl Kb {
    /// The symbol nodes `raw` names for this reader: the node of an exact key, or every
    /// symbol whose qualified name ends in the name (at most [`MAX_MATCHES`] + 1, key order).
    pub async fn resolve_symbols(&self, vis: &Visibility, raw: &str) -> Result<Vec<Node>> {
        validate::identifier("symbol", raw)?;
        let exact = NodeKey::from_canonical(raw.trim());
        if evident_core::keys::is_exact(&exact) {
            let found = self
                .stores
                .graph
                .get_nodes(vis, std::slice::from_ref(&exact))
                .await?;
            if !found.is_empty() || exact.as_str().starts_with("symbol:") {
                return Ok(found);
            }
        }
        let (name, callable_only) = normalise_name(raw);
        let last = last_component(&name);
        if last.is_empty() {
            return Err(KbError::Invalid(format!("`{raw}` names no symbol")));
        }
        let mut patterns = vec![format!(".{last}("), format!("/{last}(")];
        if !callable_only {
            patterns.extend([format!(".{last}"), format!("/{last}")]);
        }
        let mut found: BTreeMap<String, Node> = BTreeMap::new();
        for p in patterns {
            let nodes = self
                .stores
                .graph
                .search_nodes(vis, &p, None, CANDIDATES)
                .await?;
            for n in nodes {
                if SYMBOL_TYPES.contains(&n.node_type.as_str())
                    && key_matches(n.key.as_str(), &name, callable_only)
                {
                    found.insert(n.key.as_str().to_string(), n);
                }
            }
        }
        Ok(found.into_values().take(MAX_MATCHES + 1).collect())
    }

    /// Answers a code question for every symbol the name matches; `NotFound` when none does.
    pub async fn code_query(&self, vis: &Visibility, q: &CodeQuery) -> Result<CodeAnswer> {
        if q.depth == 0 || q.depth > MAX_DEPTH {
            return Err(KbError::Invalid(format!("depth must be 1..={MAX_DEPTH}")));
        }
        let mut symbols = self.resolve_symbols(vis, &q.symbol).await?;
        if symbols.is_empty() {
            return Err(KbError::NotFound {
                what: format!("symbol `{}`", q.symbol.trim()),
            });
        }
        let truncated_matches = symbols.len() > MAX_MATCHES;
        symbols.truncate(MAX_MATCHES);
        let max_nodes = q.max_nodes.clamp(1, MAX_TRAVERSE_NODES);
        let opts = TraverseOptions {
            max_depth: q.depth,
            direction: q.relation.direction(),
            edge_types: q
                .relation
                .edge_types()
                .iter()
                .map(|t| t.to_string())
                .collect(),
            // One more than asked for, the start node among them.
            max_nodes: max_nodes + 1,
        };
        let mut matches = Vec::with_capacity(symbols.len());
        for symbol in symbols {
            let sub = self
                .stores
                .graph
                .traverse(vis, std::slice::from_ref(&symbol.key), &opts)
                .await?;
            let truncated = sub.nodes.len() > max_nodes;
            let mut results: Vec<NodeAtDepth> = sub
                .nodes
                .into_iter()
                .filter(|(n, _)| n.key != symbol.key)
                .map(|(node, depth)| NodeAtDepth { node, depth })
                .collect();
            results.sort_by(|a, b| (a.depth, &a.node.key).cmp(&(b.depth, &b.node.key)));
            results.truncate(max_nodes);
            let mut edges = sub.edges;
            edges.sort_by(|a, b| {
                (&a.from, &a.edge_type, &a.to).cmp(&(&b.from, &b.edge_type, &b.to))
            });
            matches.push(CodeMatch {
                symbol,
                results,
                edges,
                truncated,
            });
        }
        let note = (matches.len() > 1).then(|| {
            format!(
                "`{}` is ambiguous: it names {}{} symbols, each answered on its own",
                q.symbol.trim(),
                if truncated_matches { "more than " } else { "" },
                matches.len()
            )
        });
        Ok(CodeAnswer {
            symbol: q.symbol.trim().to_string(),
            relation: q.relation,
            depth: q.depth,
            ambiguous: matches.len() > 1,
            truncated_matches,
            note,
            matches,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_tail_of_a_qualified_name_at_a_separator() {
        let m = |key: &str, raw: &str| {
            let (name, callable) = normalise_name(raw);
            key_matches(key, &name, callable)
        };
        let price = "symbol:shop/shop.Cart.price()";
        for raw in [
            "price",
            "price()",
            "Cart.price",
            "shop.Cart.price",
            "shop::Cart::price()",
        ] {
            assert!(m(price, raw), "{raw}");
        }
        for raw in ["rice", "art.price", "Cart", "shop.Cart.price(int)"] {
            assert!(!m(price, raw), "{raw}");
        }
        let cart = "symbol:shop/shop.Cart";
        assert!(m(cart, "Cart") && m(cart, "shop.Cart"));
        assert!(!m(cart, "Cart()"), "a type is not a callable");
        let add = "symbol:shop/shop.Cart.add(Item,int)";
        assert!(m(add, "add") && m(add, "Cart.add(Item,int)"));
        assert!(!m(add, "add(int)"));
        // Go packages are qualified by directory.
        assert!(m("symbol:r/internal/store.Open()", "Open"));
        assert!(m("symbol:r/internal/store.Open()", "store.Open"));
        assert!(!m("file:shop/src/Cart.java", "Cart"));
    }

    #[test]
    fn relations_parse_and_walk_their_edges() {
        for r in CodeRelation::ALL {
            assert_eq!(CodeRelation::parse(r.as_str()).expect("parses"), r);
        }
        assert!(CodeRelation::parse("callerz").is_err());
        assert_eq!(CodeRelation::Callees.direction(), Direction::Out);
        assert_eq!(
            CodeRelation::Implementations.edge_types(),
            &["implements", "extends"]
        );
    }

    #[test]
    fn the_last_component_ignores_the_parameter_list() {
        assert_eq!(last_component("shop.Cart.add(a.B,int)"), "add");
        assert_eq!(last_component("dir/pkg.Open"), "Open");
        assert_eq!(last_component("Cart"), "Cart");
    }
}
