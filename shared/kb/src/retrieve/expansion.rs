//! Step 3: graph expansion from the refs of the top fused hits and the named entities;
//! the evidence of the edges reached is the `graph` channel, nearer edges first.

use std::collections::{BTreeMap, HashMap};

use evident_core::refs::NodeKey;
use evident_core::{Chunk, Edge, Node, Visibility};
use evident_store::{ScoredId, Subgraph, TraverseOptions};

use super::{MAX_EXPANDED_NODES, MAX_GRAPH_CHUNKS, PackGraph};
use crate::{Kb, Result};

/// What expansion found: the subgraph for the pack and the graph channel's hits.
#[derive(Debug, Default)]
pub struct Expansion {
    pub graph: PackGraph,
    pub hits: Vec<ScoredId>,
}

/// The nodes to expand from: the named entities first, then the refs of the seed chunks,
/// each once.
pub fn expansion_seeds(entity_nodes: &[Node], seed_chunks: &[Chunk]) -> Vec<NodeKey> {
    let mut seeds: Vec<NodeKey> = entity_nodes.iter().map(|n| n.key.clone()).collect();
    for chunk in seed_chunks {
        for r in &chunk.graph_refs {
            if !seeds.contains(r) {
                seeds.push(r.clone());
            }
        }
    }
    seeds
}

/// The graph channel: evidence chunks of the subgraph's edges, nearer edges first (an
/// edge's distance is that of its farther endpoint), each once, at most
/// [`MAX_GRAPH_CHUNKS`].
pub fn graph_hits(nodes: &[(Node, usize)], edges: &[Edge]) -> Vec<ScoredId> {
    let depth_of: HashMap<&NodeKey, usize> = nodes.iter().map(|(n, d)| (&n.key, *d)).collect();
    let mut by_distance: BTreeMap<usize, Vec<&Edge>> = BTreeMap::new();
    for e in edges {
        let d = depth_of
            .get(&e.from)
            .copied()
            .unwrap_or(0)
            .max(depth_of.get(&e.to).copied().unwrap_or(0));
        by_distance.entry(d).or_default().push(e);
    }
    let mut hits: Vec<ScoredId> = Vec::new();
    for e in by_distance.values().flatten() {
        for id in &e.evidence_chunk_ids {
            if !hits.iter().any(|h| &h.chunk_id == id) {
                hits.push(ScoredId {
                    chunk_id: id.clone(),
                    score: 1.0,
                });
                if hits.len() >= MAX_GRAPH_CHUNKS {
                    return hits;
                }
            }
        }
    }
    hits
}

impl Kb {
    /// Expands `max_depth` hops in any direction from the entities and the refs of the
    /// `seed_ids` chunks (the top fused hits).
    pub(crate) async fn expand(
        &self,
        vis: &Visibility,
        entity_nodes: &[Node],
        seed_ids: &[String],
        max_depth: usize,
    ) -> Result<Expansion> {
        let seed_chunks = self.stores.chunks.get(vis, seed_ids).await?;
        let seeds = expansion_seeds(entity_nodes, &seed_chunks);
        if seeds.is_empty() {
            return Ok(Expansion::default());
        }
        let opts = TraverseOptions {
            max_depth,
            max_nodes: MAX_EXPANDED_NODES,
            ..Default::default()
        };
        let Subgraph { nodes, edges } = self.stores.graph.traverse(vis, &seeds, &opts).await?;
        let hits = graph_hits(&nodes, &edges);
        Ok(Expansion {
            graph: PackGraph {
                nodes: nodes.into_iter().map(|(n, _)| n).collect(),
                edges,
            },
            hits,
        })
    }
}
