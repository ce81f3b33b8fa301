//! Graph reads: a node with its edges, a node's evidence, traversal, node search.

use evident_core::refs::{self, NodeKey};
use evident_core::{Chunk, Edge, Node, Visibility, validate};
use evident_store::{Direction, NodePage, Subgraph, TraverseOptions};
use serde::Serialize;

use crate::{Kb, KbError, Result};

/// Hard caps on traversal requests, whatever the caller asks.
pub const MAX_DEPTH: usize = 5;
pub const MAX_TRAVERSE_NODES: usize = 1000;
/// Most nodes one page of [`Kb::list_nodes`] returns.
pub const MAX_LIST_NODES: usize = 500;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    pub key: NodeKey,
    #[serde(rename = "type")]
    pub node_type: String,
    pub label: String,
    pub props: serde_json::Map<String, serde_json::Value>,
    pub evidence_chunk_ids: Vec<String>,
    pub edges: Vec<Edge>,
}

/// A walk of the graph from one node, for [`Kb::traverse`] (the reader's visibility is given
/// beside it). A domain type: the HTTP API's body converts into it.
#[derive(Debug, Clone, PartialEq)]
pub struct TraverseQuery {
    pub start_key: String,
    pub max_depth: usize,
    pub direction: Direction,
    /// Only edges of these types (all when empty).
    pub edge_types: Vec<String>,
    pub max_nodes: usize,
}

impl TraverseQuery {
    /// A walk with the defaults: 2 hops both ways over every edge type, up to 200 nodes.
    pub fn new(start_key: impl Into<String>) -> Self {
        TraverseQuery {
            start_key: start_key.into(),
            max_depth: 2,
            direction: Direction::Any,
            edge_types: Vec::new(),
            max_nodes: 200,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphView {
    pub nodes: Vec<NodeAtDepth>,
    pub edges: Vec<Edge>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAtDepth {
    #[serde(flatten)]
    pub node: Node,
    pub depth: usize,
}

impl From<Subgraph> for GraphView {
    fn from(s: Subgraph) -> Self {
        GraphView {
            nodes: s
                .nodes
                .into_iter()
                .map(|(node, depth)| NodeAtDepth { node, depth })
                .collect(),
            edges: s.edges,
        }
    }
}

/// Parses a key given by a caller: canonical keys pass through unchanged, free text is normalised.
pub fn parse_key(field: &'static str, raw: &str) -> Result<NodeKey> {
    validate::identifier(field, raw)?;
    refs::normalize_ref(raw).ok_or(KbError::Field(validate::FieldError::Invalid {
        field,
        reason: "has no letters or digits".into(),
    }))
}

impl Kb {
    async fn resolve_for(&self, vis: &Visibility, key: NodeKey) -> Result<NodeKey> {
        let client = vis.reader().partition().to_string();
        Ok(self
            .stores
            .aliases
            .resolve(&client, std::slice::from_ref(&key))
            .await?
            .into_iter()
            .next()
            .unwrap_or(key))
    }

    /// The node a caller's key names: an exact structural key (`file:shop/src/Cart.java`,
    /// see `evident_core::keys`) of a node the reader can see as written; anything else
    /// normalised and resolved through the aliases (so `file:shop_src_cart_java` finds it).
    pub(crate) async fn lookup(
        &self,
        vis: &Visibility,
        field: &'static str,
        raw: &str,
    ) -> Result<NodeKey> {
        validate::identifier(field, raw)?;
        let exact = NodeKey::from_canonical(raw);
        if evident_core::keys::is_exact(&exact)
            && !self
                .stores
                .graph
                .get_nodes(vis, std::slice::from_ref(&exact))
                .await?
                .is_empty()
        {
            return Ok(exact);
        }
        self.resolve_for(vis, parse_key(field, raw)?).await
    }

    /// A node with its direct edges (both directions), or NotFound when the reader cannot see it.
    pub async fn node(&self, vis: &Visibility, raw_key: &str) -> Result<NodeView> {
        let key = self.lookup(vis, "key", raw_key).await?;
        let sub = self
            .stores
            .graph
            .traverse(
                vis,
                std::slice::from_ref(&key),
                &TraverseOptions {
                    max_depth: 1,
                    max_nodes: 501,
                    ..Default::default()
                },
            )
            .await?;
        let node = sub
            .nodes
            .into_iter()
            .find(|(n, _)| n.key == key)
            .map(|(n, _)| n)
            .ok_or_else(|| KbError::NotFound {
                what: format!("node `{key}`"),
            })?;
        Ok(NodeView {
            key: node.key,
            node_type: node.node_type,
            label: node.label,
            props: node.props,
            evidence_chunk_ids: node.evidence_chunk_ids,
            edges: sub.edges,
        })
    }

    /// The chunks that evidence a node and its edges, with locators.
    pub async fn node_evidence(
        &self,
        vis: &Visibility,
        raw_key: &str,
        limit: usize,
    ) -> Result<Vec<Chunk>> {
        let view = self.node(vis, raw_key).await?;
        let mut ids: Vec<String> = Vec::new();
        for id in view
            .evidence_chunk_ids
            .iter()
            .chain(view.edges.iter().flat_map(|e| e.evidence_chunk_ids.iter()))
        {
            if !ids.contains(id) {
                ids.push(id.clone());
            }
            if ids.len() >= limit {
                break;
            }
        }
        Ok(self.stores.chunks.get(vis, &ids).await?)
    }

    pub async fn traverse(&self, vis: &Visibility, req: &TraverseQuery) -> Result<GraphView> {
        let start = self.lookup(vis, "startKey", &req.start_key).await?;
        if req.max_depth == 0 || req.max_depth > MAX_DEPTH {
            return Err(KbError::Invalid(format!(
                "maxDepth must be 1..={MAX_DEPTH}"
            )));
        }
        let mut edge_types = Vec::new();
        for t in &req.edge_types {
            edge_types.push(
                refs::canonical_relation(t)
                    .ok_or_else(|| KbError::Invalid(format!("`{t}` is not an edge type")))?,
            );
        }
        let opts = TraverseOptions {
            max_depth: req.max_depth,
            direction: req.direction,
            edge_types,
            max_nodes: req.max_nodes.clamp(1, MAX_TRAVERSE_NODES),
        };
        Ok(self
            .stores
            .graph
            .traverse(vis, &[start], &opts)
            .await?
            .into())
    }

    pub async fn search_nodes(
        &self,
        vis: &Visibility,
        q: &str,
        node_type: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>> {
        validate::identifier("q", q)?;
        let node_type = node_type.map(evident_core::keys::node_type_filter);
        Ok(self
            .stores
            .graph
            .search_nodes(vis, q, node_type.as_deref(), limit.clamp(1, 500))
            .await?)
    }

    /// One page of the visible nodes of a type (every type when `None`), in key order,
    /// after `after` (the previous page's `next_after`); at most `limit` (1..=500).
    pub async fn list_nodes(
        &self,
        vis: &Visibility,
        node_type: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<NodePage> {
        if !(1..=MAX_LIST_NODES).contains(&limit) {
            return Err(KbError::Invalid(format!(
                "limit must be 1..={MAX_LIST_NODES}"
            )));
        }
        let node_type = match node_type {
            Some(t) => {
                validate::identifier("type", t)?;
                Some(evident_core::keys::node_type_filter(t))
            }
            None => None,
        };
        let after = match after {
            Some(a) => {
                validate::identifier("after", a)?;
                Some(NodeKey::from_canonical(a))
            }
            None => None,
        };
        Ok(self
            .stores
            .graph
            .list_nodes(vis, node_type.as_deref(), after.as_ref(), limit)
            .await?)
    }
}
