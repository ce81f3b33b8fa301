//! [`GraphStore::count`](evident_store::GraphStore::count) on ArangoDB: one
//! [`aql::COUNT_GRAPH`] per partition of the reader, counted on the server.

use evident_core::Visibility;
use evident_store::{GraphCounts, Result};
use serde_json::json;

use crate::{ArangoStore, aql, keys, vis_bind};

impl ArangoStore {
    /// Sums the partitions' counts. Each partition leaves out the keys an earlier one already
    /// counted (`before`: the collections of the earlier partitions that exist), so a key in
    /// both partitions counts once; a partition never written (collections missing) counts
    /// nothing and is left out of `before`, since naming a missing collection fails the query.
    pub(crate) async fn count_graph(&self, vis: &Visibility) -> Result<GraphCounts> {
        let vis_json = vis_bind(vis);
        let mut total = GraphCounts::default();
        let (mut before_nodes, mut before_edges): (Vec<String>, Vec<String>) = Default::default();
        for partition in vis.partitions() {
            let names = keys::partition_names(partition);
            let bind = json!({
                "@nodes": names.nodes,
                "@edges": names.edges,
                "beforeNodes": before_nodes,
                "beforeEdges": before_edges,
                "vis": vis_json,
            });
            let Some(counted) = self
                .partition_single::<GraphCounts>(partition, aql::COUNT_GRAPH, bind)
                .await?
            else {
                continue;
            };
            total.nodes += counted.nodes;
            total.edges += counted.edges;
            before_nodes.push(names.nodes);
            before_edges.push(names.edges);
        }
        Ok(total)
    }
}
