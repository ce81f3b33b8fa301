//! Evidence back-links: from a passage to the nodes and edges it evidences
//! ([`GraphStore::evidenced_by`](evident_store::GraphStore::evidenced_by)).
//!
//! A chunk's `graph_refs` are the keys its text mentions, fixed when it was written; the
//! facts written later citing it (an agent's `service:billing -depends_on-> service:ledger`
//! citing a design note, a semantic edge evidenced by the chunk of its use) are known only
//! to the graph. Retrieval reads them back for the top passages (expansion starts from
//! them) and for every item of the pack (its `graphRefs` and `graphEdges`).

use std::collections::HashMap;

use evident_core::Visibility;
use evident_core::refs::NodeKey;
use evident_store::{EdgeKey, Evidenced};
use serde::{Deserialize, Serialize};

use super::EvidenceItem;
use crate::{Kb, Result};

/// Edge types the git indexer derives from a file's syntax alone, its skeleton
/// (`evident_code::structure`: `branch –contains_file→ file –contains→ class –has_method→
/// method`, `file –imports→`): plumbing a passage evidences, no fact an answer rests on.
pub fn is_skeleton(edge_type: &str) -> bool {
    matches!(
        edge_type,
        "contains_file" | "contains" | "has_method" | "imports"
    )
}

/// An edge a passage evidences, as the pack reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeRef {
    pub from: NodeKey,
    #[serde(rename = "type")]
    pub edge_type: String,
    pub to: NodeKey,
}

impl From<&EdgeKey> for EdgeRef {
    fn from(e: &EdgeKey) -> Self {
        EdgeRef {
            from: e.from.clone(),
            edge_type: e.edge_type.clone(),
            to: e.to.clone(),
        }
    }
}

/// What each chunk evidences, by chunk id (chunks evidencing nothing visible are absent).
#[derive(Debug, Default, Clone)]
pub struct Links {
    by_chunk: HashMap<String, Evidenced>,
    /// Chunk ids already asked about (found or not), so a second read asks only new ones.
    asked: std::collections::HashSet<String>,
}

impl Links {
    pub fn of(&self, chunk_id: &str) -> Option<&Evidenced> {
        self.by_chunk.get(chunk_id)
    }

    /// The nodes the chunks `ids` evidence as facts, in the order of `ids`, each once: the
    /// ends of the edges they evidence that are no file skeleton ([`is_skeleton`]), and the
    /// nodes they evidence without any edge. A code chunk evidences its file's whole
    /// skeleton (every import, every member); those nodes are reached from the chunk's own
    /// refs (the file, its symbol) when the question relates to them, never as seeds.
    pub fn fact_nodes_of<'a>(
        &'a self,
        ids: &'a [String],
    ) -> impl Iterator<Item = &'a NodeKey> + 'a {
        let mut seen = std::collections::HashSet::new();
        ids.iter()
            .filter_map(|id| self.of(id))
            .flat_map(|e| {
                let ends = |skeleton: bool| {
                    e.edges
                        .iter()
                        .filter(move |x| is_skeleton(&x.edge_type) == skeleton)
                        .flat_map(|x| [&x.from, &x.to])
                };
                let facts: std::collections::HashSet<&NodeKey> = ends(false).collect();
                let plumbing: std::collections::HashSet<&NodeKey> = ends(true).collect();
                e.nodes
                    .iter()
                    .filter(move |k| facts.contains(k) || !plumbing.contains(k))
            })
            .filter(move |k| seen.insert(*k))
    }

    /// The edges the chunks `ids` evidence.
    pub fn edges_of<'a>(&'a self, ids: &'a [String]) -> impl Iterator<Item = &'a EdgeKey> + 'a {
        ids.iter()
            .filter_map(|id| self.of(id))
            .flat_map(|e| e.edges.iter())
    }

    pub fn insert(&mut self, found: Vec<Evidenced>) {
        for e in found {
            self.by_chunk.insert(e.chunk_id.clone(), e);
        }
    }
}

/// Fills each item's `graph_refs` (its own refs first, then the nodes it evidences, each
/// once) and `graph_edges` (the edges it evidences) from `links`.
pub fn attach_links(items: &mut [EvidenceItem], links: &Links) {
    for item in items {
        let Some(found) = links.of(&item.chunk_id) else {
            continue;
        };
        for k in &found.nodes {
            if !item.graph_refs.contains(k) {
                item.graph_refs.push(k.clone());
            }
        }
        item.graph_edges = found.edges.iter().map(EdgeRef::from).collect();
    }
}

impl Kb {
    /// Reads the back-links of those of `ids` not asked about yet into `links`.
    pub(crate) async fn read_links(
        &self,
        vis: &Visibility,
        ids: &[String],
        links: &mut Links,
    ) -> Result<()> {
        let new: Vec<String> = ids
            .iter()
            .filter(|id| links.asked.insert((*id).clone()))
            .cloned()
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        let found = self.stores.graph.evidenced_by(vis, &new).await?;
        links.insert(found);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> NodeKey {
        NodeKey::from_canonical(s)
    }

    #[test]
    fn items_take_the_nodes_and_edges_their_chunk_evidences_once() {
        let mut links = Links::default();
        links.insert(vec![Evidenced {
            chunk_id: "c1".into(),
            nodes: vec![k("service:billing"), k("service:ledger")],
            edges: vec![EdgeKey {
                from: k("service:billing"),
                edge_type: "depends_on".into(),
                to: k("service:ledger"),
            }],
        }]);
        let ids = vec!["c0".to_string(), "c1".to_string()];
        let nodes: Vec<&str> = links.fact_nodes_of(&ids).map(NodeKey::as_str).collect();
        assert_eq!(nodes, ["service:billing", "service:ledger"]);
        assert_eq!(links.edges_of(&ids).count(), 1);
        let json =
            serde_json::to_value(EdgeRef::from(links.edges_of(&ids).next().expect("an edge")))
                .expect("json");
        assert_eq!(
            json,
            serde_json::json!({"from": "service:billing", "type": "depends_on", "to": "service:ledger"})
        );
    }

    /// A code chunk's file, imports and members are plumbing; the callee of a call it
    /// evidences and a node it evidences with no edge are facts.
    #[test]
    fn a_files_skeleton_is_no_fact_of_its_chunk() {
        let edge = |from: &str, t: &str, to: &str| EdgeKey {
            from: k(from),
            edge_type: t.into(),
            to: k(to),
        };
        let mut links = Links::default();
        links.insert(vec![Evidenced {
            chunk_id: "c".into(),
            nodes: vec![
                k("decision:retry"),
                k("file:r/Cart.java"),
                k("import:lib.A"),
                k("symbol:r/Cart.total()"),
                k("symbol:r/Tax.rate()"),
            ],
            edges: vec![
                edge("file:r/Cart.java", "imports", "import:lib.A"),
                edge("file:r/Cart.java", "contains", "symbol:r/Cart.total()"),
                edge("symbol:r/Cart.total()", "calls", "symbol:r/Tax.rate()"),
            ],
        }]);
        let ids = vec!["c".to_string()];
        let nodes: Vec<&str> = links.fact_nodes_of(&ids).map(NodeKey::as_str).collect();
        assert_eq!(
            nodes,
            [
                "decision:retry",
                "symbol:r/Cart.total()",
                "symbol:r/Tax.rate()"
            ]
        );
        assert!(is_skeleton("imports") && !is_skeleton("calls"));
    }
}
