//! [`GraphStore::evidenced_by`](evident_store::GraphStore::evidenced_by) on ArangoDB: one
//! [`aql::EVIDENCED_BY`] per partition of the reader, served by the persistent array indexes
//! on `evidence[*].chunkId` that every partition's collections get at creation.

use std::collections::{BTreeSet, HashMap};

use evident_core::{NodeKey, Visibility};
use evident_store::{EdgeKey, Evidenced, MAX_EVIDENCED_PER_CHUNK, Result};
use serde::Deserialize;
use serde_json::json;

use crate::{ArangoStore, aql, keys, vis_bind};

/// Chunk ids sent in one query.
const BATCH: usize = 1000;

#[derive(Deserialize)]
struct NodeLink {
    chunk: String,
    key: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EdgeLink {
    chunk: String,
    from: String,
    edge_type: String,
    to: String,
}

#[derive(Deserialize)]
struct Links {
    nodes: Vec<NodeLink>,
    edges: Vec<EdgeLink>,
}

#[derive(Default)]
struct Found {
    nodes: BTreeSet<NodeKey>,
    edges: BTreeSet<EdgeKey>,
}

impl ArangoStore {
    /// Unions the partitions' links per chunk (a key in both partitions once), then answers
    /// in the order of `chunk_ids`; a partition never written (collections missing) adds
    /// nothing.
    pub(crate) async fn evidence_links(
        &self,
        vis: &Visibility,
        chunk_ids: &[String],
    ) -> Result<Vec<Evidenced>> {
        let vis_json = vis_bind(vis);
        let mut found: HashMap<String, Found> = HashMap::new();
        for partition in vis.partitions() {
            let names = keys::partition_names(partition);
            for batch in chunk_ids.chunks(BATCH) {
                let bind = json!({
                    "@nodes": names.nodes,
                    "@edges": names.edges,
                    "chunks": batch,
                    "vis": vis_json,
                });
                let Some(links) = self
                    .partition_single::<Links>(partition, aql::EVIDENCED_BY, bind)
                    .await?
                else {
                    break;
                };
                for n in links.nodes {
                    let f = found.entry(n.chunk).or_default();
                    f.nodes.insert(NodeKey::from_canonical(n.key));
                }
                for e in links.edges {
                    found.entry(e.chunk).or_default().edges.insert(EdgeKey {
                        from: NodeKey::from_canonical(e.from),
                        edge_type: e.edge_type,
                        to: NodeKey::from_canonical(e.to),
                    });
                }
            }
        }
        let mut out = Vec::new();
        for id in chunk_ids {
            if let Some(f) = found.remove(id) {
                out.push(Evidenced {
                    chunk_id: id.clone(),
                    nodes: f.nodes.into_iter().take(MAX_EVIDENCED_PER_CHUNK).collect(),
                    edges: f.edges.into_iter().take(MAX_EVIDENCED_PER_CHUNK).collect(),
                });
            }
        }
        Ok(out)
    }
}
