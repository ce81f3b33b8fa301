//! Call-graph exports (a code property graph from an external analyser): `calls`, `extends`,
//! `implements` and `uses_type` edges between qualified names, stored as a listing document
//! whose chunks evidence the edges. Endpoints that no structural ingest defined are kept as
//! bare symbol nodes (recorded, never silently dropped) and counted by the caller.

use evident_core::hashing::content_hash;
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedEdge, PreparedSource, keys,
};
use serde::{Deserialize, Serialize};
use serde_json::Map;

use crate::structure::RepoContext;

/// Edge types a CPG export may carry.
pub const CPG_EDGE_TYPES: &[&str] = &["calls", "extends", "implements", "uses_type"];
/// Listing lines per chunk.
const LINES_PER_CHUNK: usize = 60;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CpgEdge {
    /// Qualified name of the source symbol (`pkg.Class.method`, `crate::m::f`).
    pub from: String,
    pub to: String,
    #[serde(rename = "type")]
    pub edge_type: String,
    /// Where the relation is stated, if the analyser knows.
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub line: Option<usize>,
}

pub fn cpg_urn(source_id: &str, name: &str) -> String {
    format!("git:{source_id}:cpg:{name}")
}

/// The keys of an edge's endpoints: `calls` joins callables, `extends` / `implements` join
/// types, `uses_type` goes from a callable to a type; a name ending in a parameter list
/// (`f()`, `add(Item,int)`) is a callable whatever the edge ([`keys::callable`], [`keys::symbol`]).
pub fn edge_keys(repository: &str, e: &CpgEdge) -> (NodeKey, NodeKey) {
    let key = |name: &str, callable: bool| {
        if callable || (name.ends_with(')') && name.contains('(')) {
            keys::callable(repository, name)
        } else {
            keys::symbol(repository, name)
        }
    };
    let (from_callable, to_callable) = match e.edge_type.as_str() {
        "calls" => (true, true),
        "uses_type" => (true, false),
        _ => (false, false),
    };
    (key(&e.from, from_callable), key(&e.to, to_callable))
}

/// The prepared source of one CPG export. Edge types must be in [`CPG_EDGE_TYPES`] (the
/// caller validates); the listing is sorted, so the same export always yields the same chunks.
pub fn cpg_source(ctx: &RepoContext, name: &str, edges: &[CpgEdge]) -> PreparedSource {
    let mut sorted: Vec<&CpgEdge> = edges.iter().collect();
    sorted.sort_by(|a, b| (&a.from, &a.edge_type, &a.to).cmp(&(&b.from, &b.edge_type, &b.to)));
    sorted.dedup_by(|a, b| (&a.from, &a.edge_type, &a.to) == (&b.from, &b.edge_type, &b.to));
    let uri = format!("cpg:{}/{name}", ctx.repository);
    let mut chunks = Vec::new();
    let mut prepared_edges = Vec::new();
    let mut offset = 0;
    for group in sorted.chunks(LINES_PER_CHUNK) {
        let mut text = String::new();
        for e in group {
            text.push_str(&format!("{} {} {}", e.from, e.edge_type, e.to));
            if let Some(p) = &e.path {
                text.push_str(&format!(
                    " ({p}{})",
                    e.line.map(|l| format!(":{l}")).unwrap_or_default()
                ));
            }
            text.push('\n');
            let (from, to) = edge_keys(&ctx.repository, e);
            prepared_edges.push(PreparedEdge {
                from,
                to,
                edge_type: e.edge_type.clone(),
                props: Map::new(),
                evidence: EvidenceSpec::chunk(chunks.len()),
            });
        }
        let len = text.chars().count();
        let mut c = PreparedChunk::new(
            text,
            Locator::Document {
                uri: uri.clone(),
                char_start: offset,
                char_end: offset + len,
                page: None,
                section: None,
            },
        );
        c.kind = Some("git-cpg".into());
        offset += len;
        chunks.push(c);
    }
    let listing: String = chunks.iter().map(|c| c.text.as_str()).collect();
    PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: cpg_urn(&ctx.source_id, name),
        kind: "git-cpg".into(),
        title: Some(format!("call graph {name} of {}", ctx.repository)),
        fingerprint: content_hash(&format!("cpg-v2\0{}\0{listing}", ctx.repository)),
        observed_at: None,
        chunks,
        nodes: Vec::new(),
        edges: prepared_edges,
        aliases: Vec::new(),
        merges: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evident_core::Scope;

    #[test]
    fn edges_are_evidenced_by_their_listing_chunk() {
        let ctx = RepoContext {
            source_id: "s".into(),
            repository: "shop".into(),
            scope: Scope::client("acme"),
        };
        let edges: Vec<CpgEdge> = (0..100)
            .map(|i| CpgEdge {
                from: format!("shop.Cart.m{i}"),
                to: "shop.Price.total".into(),
                edge_type: "calls".into(),
                path: Some("src/Cart.java".into()),
                line: Some(i + 1),
            })
            .collect();
        let p = cpg_source(&ctx, "nightly", &edges);
        assert_eq!(p.chunks.len(), 2);
        assert_eq!(p.edges.len(), 100);
        let e = &p.edges[99];
        let EvidenceSpec::Chunks(ix) = &e.evidence else {
            panic!("chunk evidence")
        };
        assert!(
            p.chunks[ix[0]]
                .text
                .contains(&format!("{} calls", "shop.Cart.m99"))
        );
        assert_eq!(e.to.as_str(), "symbol:shop/shop.Price.total()");
        assert_eq!(e.from.as_str(), "symbol:shop/shop.Cart.m99()");
    }

    #[test]
    fn endpoints_are_callables_or_types_by_edge() {
        let e = |from: &str, t: &str, to: &str| {
            let (a, b) = edge_keys(
                "r",
                &CpgEdge {
                    from: from.into(),
                    to: to.into(),
                    edge_type: t.into(),
                    path: None,
                    line: None,
                },
            );
            (a.as_str().to_string(), b.as_str().to_string())
        };
        assert_eq!(
            e("p.A", "extends", "p.B"),
            ("symbol:r/p.A".into(), "symbol:r/p.B".into())
        );
        assert_eq!(
            e("p.A.f", "uses_type", "p.B"),
            ("symbol:r/p.A.f()".into(), "symbol:r/p.B".into())
        );
        assert_eq!(
            e("m::f", "calls", "m::g()"),
            ("symbol:r/m.f()".into(), "symbol:r/m.g()".into())
        );
        assert_eq!(e("p.A.f()", "implements", "p.I").0, "symbol:r/p.A.f()");
    }
}
