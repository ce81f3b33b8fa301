//! [`GraphStore::list_nodes`](evident_store::GraphStore::list_nodes) on ArangoDB: one
//! [`aql::LIST_NODES`] query over both of the reader's partitions, then the nodes merged by
//! [`ArangoStore::read_nodes`].

use evident_core::{NodeKey, Visibility};
use evident_store::{NodePage, Result};
use serde_json::{Value, json};

use super::decode;
use crate::error::Error;
use crate::{ArangoStore, aql, keys, vis_bind};

/// The bind variables of [`aql::LIST_NODES`] over the node collections `first`, `second`.
fn bind(
    first: &str,
    second: &str,
    vis: &Visibility,
    node_type: Option<&str>,
    after: Option<&NodeKey>,
    limit: usize,
) -> Value {
    json!({
        "@first": first,
        "@second": second,
        "type": node_type,
        "after": after.map(NodeKey::as_str),
        "vis": vis_bind(vis),
        "limit": limit,
    })
}

impl ArangoStore {
    /// Up to `limit` visible keys after `after`, in the server's order, across the reader's
    /// partitions. When a partition was never written (its collection is missing, so the
    /// joint query fails) each partition is asked alone; if by then both exist (one was
    /// created in between) the joint query runs once more, so a page is never merged out
    /// of the server's order.
    async fn list_keys(
        &self,
        vis: &Visibility,
        node_type: Option<&str>,
        after: Option<&NodeKey>,
        limit: usize,
    ) -> std::result::Result<Vec<String>, Error> {
        let partitions = vis.partitions();
        let names: Vec<String> = partitions
            .iter()
            .map(|p| keys::partition_names(p).nodes)
            .collect();
        let (first, second) = match names.as_slice() {
            [one] => (one, one),
            [first, .., second] => (first, second),
            [] => return Ok(Vec::new()),
        };
        for _ in 0..2 {
            let joint = bind(first, second, vis, node_type, after, limit);
            match self.client().cursor(aql::LIST_NODES, joint).await {
                Ok(rows) => return rows.into_iter().map(decode::<String>).collect(),
                Err(e) if e.is_collection_missing() => {}
                Err(e) => return Err(e),
            }
            let mut existing: Vec<Vec<Value>> = Vec::new();
            for (partition, name) in partitions.iter().zip(&names) {
                let alone = bind(name, name, vis, node_type, after, limit);
                if let Some(rows) = self
                    .partition_query(partition, aql::LIST_NODES, alone)
                    .await?
                {
                    existing.push(rows);
                }
            }
            if existing.len() < 2 {
                let rows = existing.into_iter().flatten();
                return rows.map(decode::<String>).collect();
            }
        }
        Err(Error::Protocol(
            "node collections kept appearing and disappearing while listing".into(),
        ))
    }

    pub(crate) async fn list_nodes_page(
        &self,
        vis: &Visibility,
        node_type: Option<&str>,
        after: Option<&NodeKey>,
        limit: usize,
    ) -> Result<NodePage> {
        if limit == 0 {
            return Ok(NodePage::default());
        }
        let mut found = self
            .list_keys(vis, node_type, after, limit.saturating_add(1))
            .await?;
        let next_after = if found.len() > limit {
            found.truncate(limit);
            found.last().map(|k| NodeKey::from_canonical(k.clone()))
        } else {
            None
        };
        let found: Vec<NodeKey> = found.into_iter().map(NodeKey::from_canonical).collect();
        let mut nodes = self.read_nodes(vis, &found).await?;
        if let Some(t) = node_type {
            nodes.retain(|n| n.node_type == t);
        }
        Ok(NodePage { nodes, next_after })
    }
}
