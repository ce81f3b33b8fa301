//! Breadth-first bookkeeping for [`GraphStore::traverse`](crate::GraphStore::traverse),
//! shared by backends: they fetch each hop's edges their own way (SQL, AQL) and feed them
//! here, which decides what is reached at which depth, caps the node count, and merges the
//! same edge seen in two partitions into one.

use std::collections::HashMap;

use evident_core::{Edge, NodeKey};
use serde_json::{Map, Value};

/// One edge of a hop, as a backend read it (only the reader's visible evidence).
pub struct WalkedEdge {
    pub from: NodeKey,
    pub edge_type: String,
    pub to: NodeKey,
    pub props: Map<String, Value>,
    pub evidence: Vec<String>,
}

impl WalkedEdge {
    /// An edge as stored: its endpoints' canonical keys, its type, props and the evidence
    /// the reader sees.
    pub fn stored(
        from: String,
        edge_type: String,
        to: String,
        props: Map<String, Value>,
        evidence: Vec<String>,
    ) -> WalkedEdge {
        WalkedEdge {
            from: NodeKey::from_canonical(from),
            edge_type,
            to: NodeKey::from_canonical(to),
            props,
            evidence,
        }
    }
}

pub struct Walk {
    depth_of: HashMap<NodeKey, usize>,
    order: Vec<NodeKey>,
    frontier: Vec<NodeKey>,
    next: Vec<NodeKey>,
    edges: Vec<Edge>,
    edge_index: HashMap<(NodeKey, String, NodeKey), usize>,
    max_nodes: usize,
}

impl Walk {
    /// Starts at `start` (the visible start nodes, depth 0), reaching at most `max_nodes`.
    pub fn new(start: impl IntoIterator<Item = NodeKey>, max_nodes: usize) -> Walk {
        let mut walk = Walk {
            depth_of: HashMap::new(),
            order: Vec::new(),
            frontier: Vec::new(),
            next: Vec::new(),
            edges: Vec::new(),
            edge_index: HashMap::new(),
            max_nodes: max_nodes.max(1),
        };
        for key in start {
            if !walk.depth_of.contains_key(&key) {
                walk.depth_of.insert(key.clone(), 0);
                walk.order.push(key.clone());
                walk.frontier.push(key);
            }
        }
        walk
    }

    /// The nodes whose edges the current hop reads.
    pub fn frontier(&self) -> &[NodeKey] {
        &self.frontier
    }

    /// An edge read at hop `depth` (1-based). Walked from whichever endpoint is already
    /// reached; the other one is reached now unless the cap is hit (then the edge is left out
    /// too). Edges without visible evidence are ignored.
    pub fn visit(&mut self, depth: usize, edge: WalkedEdge) {
        if edge.evidence.is_empty() {
            return;
        }
        let other = if self.depth_of.contains_key(&edge.from) {
            &edge.to
        } else {
            &edge.from
        };
        if !self.depth_of.contains_key(other) {
            if self.depth_of.len() >= self.max_nodes {
                return;
            }
            self.depth_of.insert(other.clone(), depth);
            self.order.push(other.clone());
            self.next.push(other.clone());
        }
        let identity = (edge.from.clone(), edge.edge_type.clone(), edge.to.clone());
        match self.edge_index.get(&identity) {
            Some(&i) => {
                let ids = &mut self.edges[i].evidence_chunk_ids;
                for id in edge.evidence {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
            None => {
                self.edge_index.insert(identity, self.edges.len());
                self.edges.push(Edge {
                    from: edge.from,
                    to: edge.to,
                    edge_type: edge.edge_type,
                    props: edge.props,
                    evidence_chunk_ids: edge.evidence,
                });
            }
        }
    }

    /// Ends a hop: the nodes it reached become the frontier. `false` when it reached none
    /// (the walk is over).
    pub fn next_hop(&mut self) -> bool {
        self.frontier = std::mem::take(&mut self.next);
        !self.frontier.is_empty()
    }

    /// Every reached key in the order reached, the depth of each, and the edges walked.
    pub fn finish(self) -> (Vec<NodeKey>, HashMap<NodeKey, usize>, Vec<Edge>) {
        (self.order, self.depth_of, self.edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> NodeKey {
        NodeKey::from_canonical(s)
    }

    fn e(from: &str, to: &str, ev: &[&str]) -> WalkedEdge {
        WalkedEdge {
            from: k(from),
            edge_type: "links".into(),
            to: k(to),
            props: Map::new(),
            evidence: ev.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn hops_cap_and_merge() {
        let mut w = Walk::new([k("a:1")], 3);
        w.visit(1, e("a:1", "b:1", &["c1"]));
        w.visit(1, e("c:1", "a:1", &["c2"]));
        w.visit(1, e("a:1", "b:1", &["c3", "c1"]));
        w.visit(1, e("a:1", "d:1", &[]));
        assert!(w.next_hop());
        assert_eq!(w.frontier().len(), 2);
        w.visit(2, e("b:1", "e:1", &["c4"]));
        assert!(!w.next_hop(), "the cap left e out");
        let (order, depth, edges) = w.finish();
        assert_eq!(order, vec![k("a:1"), k("b:1"), k("c:1")]);
        assert_eq!(depth[&k("c:1")], 1);
        assert_eq!(edges.len(), 2);
        assert_eq!(edges[0].evidence_chunk_ids, vec!["c1", "c3"]);
    }
}
