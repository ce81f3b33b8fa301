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

    /// The nodes the chunks `ids` evidence, in the order of `ids`, each once.
    pub fn nodes_of<'a>(&'a self, ids: &'a [String]) -> impl Iterator<Item = &'a NodeKey> + 'a {
        let mut seen = std::collections::HashSet::new();
        ids.iter()
            .filter_map(|id| self.of(id))
            .flat_map(|e| e.nodes.iter())
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
        let nodes: Vec<&str> = links.nodes_of(&ids).map(NodeKey::as_str).collect();
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
}
