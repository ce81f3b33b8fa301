//! [`GraphStore`] on ArangoDB: one AQL query per step, visibility evaluated inside AQL,
//! partitions merged in Rust exactly as the embedded reference store merges them.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use evident_core::{EdgeWrite, Evidence, Node, NodeKey, NodeWrite, Visibility};
use evident_store::walk::{Walk, WalkedEdge};
use evident_store::{
    Direction, EdgeKey, ErrorKind, GraphCounts, GraphStore, NodePage, RemovedCounts, Result,
    StoreError, Subgraph, TraverseOptions,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::Error;
use crate::keys::{self, PartitionNames};
use crate::{ArangoStore, aql, vis_bind};

/// Most edges followed from one node, per direction and partition, in one hop: bounds
/// expansion around hub nodes (as the embedded store does).
const MAX_EDGES_PER_NODE: usize = 500;
/// Keys or ids sent in one query.
const BATCH: usize = 1000;

fn evidence_doc(e: &Evidence) -> Value {
    json!({
        "chunkId": e.chunk_id,
        "clientId": e.scope.client_id,
        "projectId": e.scope.project_id,
        "groupId": e.scope.group_id,
    })
}

/// Rounds of [`aql::REMOVE_EMPTIED`] + [`aql::STRIP_EVIDENCE`] one `remove_evidence` runs
/// while writes racing it leave documents only the removed chunks evidence.
const MAX_REMOVE_ROUNDS: usize = 3;

/// JSON merge of `patch` into `target`, keeping `null`s: the server applies the combined
/// patch with `keepNull: false`, so a `null` still deletes the attribute there.
fn merge_patch(target: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (k, v) in patch {
        match (target.get_mut(k), v) {
            (Some(Value::Object(t)), Value::Object(p)) => merge_patch(t, p),
            _ => {
                target.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `patch` applied as a JSON merge-patch to nothing: its `null`s removed at every depth of
/// nested objects (arrays are values, kept as they are). What a new document is inserted
/// with, since `keepNull: false` only applies when UPSERT updates.
fn without_nulls(patch: &Map<String, Value>) -> Map<String, Value> {
    patch
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let v = match v {
                Value::Object(o) => Value::Object(without_nulls(o)),
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// Evidence of one write, each chunk once (the first scope given for a chunk stays).
#[derive(Default)]
struct EvidenceSet {
    items: Vec<Value>,
    chunks: HashSet<String>,
}

impl EvidenceSet {
    fn add(&mut self, evidence: &[Evidence]) {
        for e in evidence {
            if self.chunks.insert(e.chunk_id.clone()) {
                self.items.push(evidence_doc(e));
            }
        }
    }
}

/// Everything one `upsert` call does to one node.
struct NodeOp {
    key: NodeKey,
    /// Some write describes the node (not only mentions it): type, label and props apply.
    describe: bool,
    node_type: String,
    label: String,
    props: Map<String, Value>,
    evidence: EvidenceSet,
}

impl NodeOp {
    /// A node known only by its key: typed by its namespace, labelled by its value.
    fn mention(key: &NodeKey) -> NodeOp {
        let label = if key.value().is_empty() {
            key.as_str()
        } else {
            key.value()
        };
        NodeOp {
            key: key.clone(),
            describe: false,
            node_type: key.namespace().to_string(),
            label: label.to_string(),
            props: Map::new(),
            evidence: EvidenceSet::default(),
        }
    }

    fn doc(self) -> Value {
        json!({
            "_key": keys::node_key(&self.key),
            "key": self.key.as_str(),
            "describe": self.describe,
            "type": self.node_type,
            "label": self.label,
            "insertProps": without_nulls(&self.props),
            "props": self.props,
            "evidence": self.evidence.items,
        })
    }
}

struct EdgeOp {
    from: NodeKey,
    to: NodeKey,
    edge_type: String,
    props: Map<String, Value>,
    evidence: EvidenceSet,
}

fn node_id(names: &PartitionNames, key: &NodeKey) -> String {
    format!("{}/{}", names.nodes, keys::node_key(key))
}

/// The `@nodes` and `@edges` of [`aql::UPSERT_GRAPH`]: one entry per node and per edge,
/// combining every write of the call in order (so a key is written once per query), with
/// edge endpoints ensured and evidenced by their edge's evidence.
fn plan_upsert(
    names: &PartitionNames,
    nodes: &[NodeWrite],
    edges: &[EdgeWrite],
) -> (Vec<Value>, Vec<Value>) {
    let mut node_ops: Vec<NodeOp> = Vec::with_capacity(nodes.len() + edges.len());
    let mut node_index: HashMap<NodeKey, usize> = HashMap::new();
    let mut op_for = |key: &NodeKey, ops: &mut Vec<NodeOp>| -> usize {
        *node_index.entry(key.clone()).or_insert_with(|| {
            ops.push(NodeOp::mention(key));
            ops.len() - 1
        })
    };
    for n in nodes {
        let i = op_for(&n.key, &mut node_ops);
        let op = &mut node_ops[i];
        if !n.mention_only {
            op.describe = true;
            op.node_type = n.node_type.clone();
            op.label = n.label.clone();
            merge_patch(&mut op.props, &n.props);
        } else if !op.describe {
            // A mention creates the node as written when it is missing (insert only).
            op.node_type = n.node_type.clone();
            op.label = n.label.clone();
        }
        op.evidence.add(&n.evidence);
    }
    let mut edge_ops: Vec<EdgeOp> = Vec::with_capacity(edges.len());
    let mut edge_index: HashMap<(NodeKey, String, NodeKey), usize> = HashMap::new();
    for e in edges {
        // An edge's evidence also evidences both endpoints.
        for end in [&e.from, &e.to] {
            let i = op_for(end, &mut node_ops);
            node_ops[i].evidence.add(&e.evidence);
        }
        let identity = (e.from.clone(), e.edge_type.clone(), e.to.clone());
        let i = *edge_index.entry(identity).or_insert_with(|| {
            edge_ops.push(EdgeOp {
                from: e.from.clone(),
                to: e.to.clone(),
                edge_type: e.edge_type.clone(),
                props: Map::new(),
                evidence: EvidenceSet::default(),
            });
            edge_ops.len() - 1
        });
        merge_patch(&mut edge_ops[i].props, &e.props);
        edge_ops[i].evidence.add(&e.evidence);
    }
    let node_docs = node_ops.into_iter().map(NodeOp::doc).collect();
    let edge_docs = edge_ops
        .into_iter()
        .map(|e| {
            json!({
                "_key": keys::edge_key(&e.from, &e.edge_type, &e.to),
                "_from": node_id(names, &e.from),
                "_to": node_id(names, &e.to),
                "fromKey": e.from.as_str(),
                "toKey": e.to.as_str(),
                "edgeType": e.edge_type,
                "insertProps": without_nulls(&e.props),
                "props": e.props,
                "evidence": e.evidence.items,
            })
        })
        .collect();
    (node_docs, edge_docs)
}

/// A node record of one partition as [`aql::GET_NODES`] returns it.
#[derive(Deserialize)]
struct NodeRow {
    key: String,
    #[serde(rename = "type", default)]
    node_type: Option<String>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    props: Option<Map<String, Value>>,
    evidence: Vec<String>,
}

/// An edge record of one partition as [`aql::EDGES_AT`] returns it.
#[derive(Deserialize)]
struct EdgeRow {
    id: String,
    from: String,
    to: String,
    #[serde(rename = "edgeType")]
    edge_type: String,
    #[serde(default)]
    props: Option<Map<String, Value>>,
    /// Evidence chunk ids the reader may see (empty: invisible to the reader).
    evidence: Vec<String>,
}

/// A stored edge as [`aql::FOLD_READ`] returns it.
#[derive(Deserialize)]
struct StoredEdge {
    #[serde(rename = "_key")]
    id: String,
    #[serde(rename = "fromKey")]
    from: String,
    #[serde(rename = "toKey")]
    to: String,
    #[serde(rename = "edgeType")]
    edge_type: String,
    #[serde(default)]
    props: Option<Map<String, Value>>,
    #[serde(default)]
    evidence: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct StoredNode {
    #[serde(rename = "type", default)]
    node_type: Option<String>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    props: Option<Map<String, Value>>,
    #[serde(default)]
    evidence: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct FoldRead {
    node: Option<StoredNode>,
    #[serde(default)]
    edges: Vec<StoredEdge>,
}

/// What [`aql::REMOVE_EMPTIED`] deleted.
#[derive(Deserialize)]
struct Collected {
    nodes: usize,
    edges: usize,
}

fn decode<T: serde::de::DeserializeOwned>(row: Value) -> std::result::Result<T, Error> {
    serde_json::from_value(row).map_err(|e| Error::Data(e.to_string()))
}

/// The single row of a query that returns one.
fn single<T: serde::de::DeserializeOwned>(rows: Vec<Value>) -> std::result::Result<T, Error> {
    match rows.into_iter().next() {
        Some(row) => decode(row),
        None => Err(Error::Protocol("query returned no row".into())),
    }
}

impl ArangoStore {
    /// [`ArangoStore::partition_query`] of a query that returns one row, decoded; `None` for a
    /// partition whose collections do not exist.
    async fn partition_single<T: serde::de::DeserializeOwned>(
        &self,
        partition: &str,
        query: &str,
        bind: Value,
    ) -> std::result::Result<Option<T>, Error> {
        match self.partition_query(partition, query, bind).await? {
            Some(rows) => single(rows).map(Some),
            None => Ok(None),
        }
    }
}

impl ArangoStore {
    /// Visible nodes among `requested` across the reader's partitions, merged per key as the
    /// embedded store does: the global record first, the client's record over it (type,
    /// label, top-level props), evidence ids unioned. In the order of `requested`, each once.
    pub(crate) async fn read_nodes(
        &self,
        vis: &Visibility,
        requested: &[NodeKey],
    ) -> Result<Vec<Node>> {
        if requested.is_empty() {
            return Ok(Vec::new());
        }
        let mut seen = HashSet::new();
        let wanted: Vec<String> = requested
            .iter()
            .filter(|k| seen.insert(k.as_str()))
            .map(keys::node_key)
            .collect();
        let vis_json = vis_bind(vis);
        let mut found: HashMap<String, Node> = HashMap::new();
        for partition in vis.partitions() {
            let names = keys::partition_names(partition);
            for batch in wanted.chunks(BATCH) {
                let bind = json!({
                    "@nodes": names.nodes,
                    "keys": batch,
                    "vis": vis_json,
                });
                let Some(rows) = self
                    .partition_query(partition, aql::GET_NODES, bind)
                    .await?
                else {
                    break;
                };
                for row in rows {
                    let row: NodeRow = decode(row)?;
                    let mut evidence = row.evidence;
                    evidence.sort();
                    evidence.dedup();
                    let props = row.props.unwrap_or_default();
                    match found.get_mut(&row.key) {
                        Some(n) => {
                            if let Some(t) = row.node_type {
                                n.node_type = t;
                            }
                            if let Some(l) = row.label {
                                n.label = l;
                            }
                            n.props.extend(props);
                            for id in evidence {
                                if !n.evidence_chunk_ids.contains(&id) {
                                    n.evidence_chunk_ids.push(id);
                                }
                            }
                        }
                        None => {
                            found.insert(
                                row.key.clone(),
                                Node {
                                    key: NodeKey::from_canonical(row.key),
                                    node_type: row.node_type.unwrap_or_default(),
                                    label: row.label.unwrap_or_default(),
                                    props,
                                    evidence_chunk_ids: evidence,
                                },
                            );
                        }
                    }
                }
            }
        }
        Ok(requested
            .iter()
            .filter_map(|k| found.remove(k.as_str()))
            .collect())
    }

    /// One hop from `frontier` in one partition: the edges at those nodes (with the evidence
    /// the reader may see), at most [`MAX_EDGES_PER_NODE`] per node and direction.
    async fn edges_at(
        &self,
        partition: &str,
        vis_json: &Value,
        frontier: &[NodeKey],
        opts: &TraverseOptions,
    ) -> Result<Vec<EdgeRow>> {
        let names = keys::partition_names(partition);
        let ids: Vec<String> = frontier.iter().map(|k| node_id(&names, k)).collect();
        let mut out = Vec::new();
        for batch in ids.chunks(BATCH) {
            let bind = json!({
                "@edges": names.edges,
                "ids": batch,
                "outbound": matches!(opts.direction, Direction::Out | Direction::Any),
                "inbound": matches!(opts.direction, Direction::In | Direction::Any),
                "types": opts.edge_types,
                "perNode": MAX_EDGES_PER_NODE,
                "vis": vis_json,
            });
            let Some(rows) = self.partition_query(partition, aql::EDGES_AT, bind).await? else {
                break;
            };
            for row in rows {
                let mut row: EdgeRow = decode(row)?;
                row.evidence.sort();
                row.evidence.dedup();
                out.push(row);
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl GraphStore for ArangoStore {
    async fn upsert(
        &self,
        partition: &str,
        nodes: Vec<NodeWrite>,
        edges: Vec<EdgeWrite>,
    ) -> Result<()> {
        if nodes.is_empty() && edges.is_empty() {
            return Ok(());
        }
        if let Some(e) = edges.iter().find(|e| e.evidence.is_empty()) {
            return Err(StoreError::invalid(format!(
                "edge {} -{}-> {} has no evidence",
                e.from, e.edge_type, e.to
            )));
        }
        let names = self.ensure_partition(partition).await?;
        let (node_docs, edge_docs) = plan_upsert(&names, &nodes, &edges);
        let bind = json!({
            "@nodes": names.nodes,
            "@edges": names.edges,
            "nodes": node_docs,
            "edges": edge_docs,
        });
        match self.client().cursor(aql::UPSERT_GRAPH, bind).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_collection_missing() => {
                // Dropped behind our back: the next write recreates them.
                self.forget_partition(partition);
                Err(StoreError::unavailable(format!(
                    "collections of partition `{partition}` disappeared (recreated on retry): {e}"
                )))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn remove_evidence(
        &self,
        partition: &str,
        chunk_ids: &[String],
    ) -> Result<RemovedCounts> {
        if chunk_ids.is_empty() {
            return Ok(RemovedCounts::default());
        }
        let names = keys::partition_names(partition);
        let bind = json!({
            "@nodes": names.nodes,
            "@edges": names.edges,
            "chunks": chunk_ids,
        });
        // Delete what only these chunks evidence, then strip them from the rest: a retry
        // after either step fails finds the same documents again (see `aql::REMOVE_EMPTIED`).
        let mut removed = RemovedCounts::default();
        for _ in 0..MAX_REMOVE_ROUNDS {
            let Some(collected) = self
                .partition_single::<Collected>(partition, aql::REMOVE_EMPTIED, bind.clone())
                .await?
            else {
                return Ok(removed);
            };
            removed.nodes += collected.nodes;
            removed.edges += collected.edges;
            // Documents a racing write left with only these chunks' evidence: another round.
            let left = self
                .partition_single::<usize>(partition, aql::STRIP_EVIDENCE, bind.clone())
                .await?;
            if left.is_none_or(|left| left == 0) {
                return Ok(removed);
            }
        }
        Err(StoreError::new(
            ErrorKind::Conflict,
            format!(
                "removing evidence from partition `{partition}`: concurrent writes keep adding \
                 the removed chunks; retry"
            ),
        ))
    }

    async fn remove_edges(&self, partition: &str, edges: &[EdgeKey]) -> Result<usize> {
        if edges.is_empty() {
            return Ok(0);
        }
        let names = keys::partition_names(partition);
        let mut seen = HashSet::new();
        let edge_keys: Vec<String> = edges
            .iter()
            .map(|e| keys::edge_key(&e.from, &e.edge_type, &e.to))
            .filter(|k| seen.insert(k.clone()))
            .collect();
        let bind = json!({ "@edges": names.edges, "keys": edge_keys });
        Ok(self
            .partition_query(partition, aql::REMOVE_EDGES, bind)
            .await?
            .map_or(0, |rows| rows.len()))
    }

    async fn fold_node(&self, partition: &str, from: &NodeKey, into: &NodeKey) -> Result<bool> {
        if from == into {
            return Ok(false);
        }
        let names = keys::partition_names(partition);
        let from_key = keys::node_key(from);
        let bind = json!({
            "@nodes": names.nodes,
            "@edges": names.edges,
            "key": from_key,
            "id": node_id(&names, from),
        });
        let Some(read) = self
            .partition_single::<FoldRead>(partition, aql::FOLD_READ, bind)
            .await?
        else {
            return Ok(false);
        };
        let Some(node) = read.node else {
            return Ok(false);
        };
        // `into` keeps its own type, label and props; `from` only fills what it lacks.
        let target = json!({
            "_key": keys::node_key(into),
            "key": into.as_str(),
            "type": node.node_type.unwrap_or_else(|| into.namespace().to_string()),
            "label": node.label.unwrap_or_default(),
            "props": node.props.unwrap_or_default(),
            "evidence": node.evidence.unwrap_or_default(),
        });
        let mut moved = Vec::with_capacity(read.edges.len());
        let mut old_keys = Vec::with_capacity(read.edges.len());
        for e in read.edges {
            let rekey = |k: String| {
                if k == from.as_str() {
                    into.clone()
                } else {
                    NodeKey::from_canonical(k)
                }
            };
            let (new_from, new_to) = (rekey(e.from), rekey(e.to));
            // An edge that would join `into` to itself is dropped.
            if new_from != new_to {
                moved.push(json!({
                    "_key": keys::edge_key(&new_from, &e.edge_type, &new_to),
                    "_from": node_id(&names, &new_from),
                    "_to": node_id(&names, &new_to),
                    "fromKey": new_from.as_str(),
                    "toKey": new_to.as_str(),
                    "edgeType": e.edge_type,
                    "props": e.props.unwrap_or_default(),
                    "evidence": e.evidence.unwrap_or_default(),
                }));
            }
            old_keys.push(e.id);
        }
        let bind = json!({
            "@nodes": names.nodes,
            "@edges": names.edges,
            "node": target,
            "edges": moved,
        });
        self.client().cursor(aql::FOLD_WRITE, bind).await?;
        let bind = json!({
            "@nodes": names.nodes,
            "@edges": names.edges,
            "key": from_key,
            "edges": old_keys,
        });
        self.client().cursor(aql::FOLD_REMOVE, bind).await?;
        Ok(true)
    }

    async fn get_nodes(&self, vis: &Visibility, wanted: &[NodeKey]) -> Result<Vec<Node>> {
        self.read_nodes(vis, wanted).await
    }

    async fn traverse(
        &self,
        vis: &Visibility,
        start: &[NodeKey],
        opts: &TraverseOptions,
    ) -> Result<Subgraph> {
        let start_keys = self
            .read_nodes(vis, start)
            .await?
            .into_iter()
            .map(|n| n.key);
        let mut walk = Walk::new(start_keys, opts.max_nodes);
        let vis_json = vis_bind(vis);
        // Each edge document once per partition (the same edge in two partitions is merged
        // by the walk).
        let mut seen: HashSet<(usize, String)> = HashSet::new();
        for depth in 1..=opts.max_depth.max(1) {
            let frontier = walk.frontier().to_vec();
            let mut rows = Vec::new();
            for (p, partition) in vis.partitions().into_iter().enumerate() {
                for row in self.edges_at(partition, &vis_json, &frontier, opts).await? {
                    rows.push((p, row));
                }
            }
            for (p, row) in rows {
                if !seen.insert((p, row.id.clone())) {
                    continue;
                }
                let props = row.props.unwrap_or_default();
                let edge = WalkedEdge::stored(row.from, row.edge_type, row.to, props, row.evidence);
                walk.visit(depth, edge);
            }
            if !walk.next_hop() {
                break;
            }
        }
        let (order, depth_of, edges) = walk.finish();
        let nodes = self
            .read_nodes(vis, &order)
            .await?
            .into_iter()
            .map(|n| {
                let d = depth_of.get(&n.key).copied().unwrap_or(0);
                (n, d)
            })
            .collect();
        Ok(Subgraph { nodes, edges })
    }

    async fn list_nodes(
        &self,
        vis: &Visibility,
        node_type: Option<&str>,
        after: Option<&NodeKey>,
        limit: usize,
    ) -> Result<NodePage> {
        self.list_nodes_page(vis, node_type, after, limit).await
    }

    async fn search_nodes(
        &self,
        vis: &Visibility,
        query: &str,
        node_type: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let cap = limit.saturating_mul(4).saturating_add(16);
        let q = query.to_lowercase();
        let vis_json = vis_bind(vis);
        let mut candidates: Vec<String> = Vec::new();
        for partition in vis.partitions() {
            let names = keys::partition_names(partition);
            let bind = json!({
                "@nodes": names.nodes,
                "q": q,
                "type": node_type,
                "vis": vis_json,
                "limit": cap,
            });
            if let Some(rows) = self
                .partition_query(partition, aql::SEARCH_NODES, bind)
                .await?
            {
                for row in rows {
                    candidates.push(decode::<String>(row)?);
                }
            }
        }
        // Shortest keys first: an exact or near-exact match beats a long key containing it.
        candidates.sort_by(|a, b| {
            a.chars()
                .count()
                .cmp(&b.chars().count())
                .then_with(|| a.cmp(b))
        });
        candidates.dedup();
        candidates.truncate(cap);
        let found: Vec<NodeKey> = candidates
            .into_iter()
            .map(NodeKey::from_canonical)
            .collect();
        let mut out = self.read_nodes(vis, &found).await?;
        out.truncate(limit);
        Ok(out)
    }

    async fn evidenced_by(
        &self,
        vis: &Visibility,
        chunk_ids: &[String],
    ) -> Result<Vec<evident_store::Evidenced>> {
        if chunk_ids.is_empty() {
            return Ok(Vec::new());
        }
        self.evidence_links(vis, chunk_ids).await
    }

    async fn count(&self, vis: &Visibility) -> Result<GraphCounts> {
        self.count_graph(vis).await
    }
}

mod count;
mod links;
mod list;

#[cfg(test)]
mod tests;
