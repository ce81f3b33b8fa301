//! A file's resolution as graph edges: keyed like the structural graph, evidenced by the chunk
//! holding each use, ambiguous targets with their `confidence`.

use evident_core::{EvidenceSpec, NodeKey, PreparedEdge, keys};
use serde_json::{Map, Value};

use super::Resolution;
use crate::outline::Symbol;
use crate::structure::symbol_key;

/// The edges of `res` between keys of `repository`; `chunk_of(line)` is the chunk holding a
/// 1-based line. Edges of one (from, type, to) merge their evidence in the write path.
pub fn semantic_edges(
    repository: &str,
    symbols: &[Symbol],
    res: &Resolution,
    chunk_of: impl Fn(usize) -> usize,
) -> Vec<PreparedEdge> {
    res.edges
        .iter()
        .filter_map(|e| {
            let from = symbol_key(repository, symbols.get(e.from)?);
            let to: NodeKey = if e.to_type {
                keys::symbol(repository, &e.to)
            } else {
                keys::callable(repository, &e.to)
            };
            let mut props = Map::new();
            if e.candidates > 1 {
                props.insert("confidence".into(), Value::from(1.0 / e.candidates as f64));
            }
            Some(PreparedEdge {
                from,
                to,
                edge_type: e.kind.as_str().into(),
                props,
                evidence: EvidenceSpec::chunk(chunk_of(e.line)),
            })
        })
        .collect()
}

/// Per symbol index, the callee names that resolved to nothing in the repository.
pub fn unresolved_by_symbol(res: &Resolution) -> std::collections::BTreeMap<usize, Vec<String>> {
    let mut out: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
    for (i, n) in &res.unresolved {
        out.entry(*i).or_default().push(n.clone());
    }
    out
}
