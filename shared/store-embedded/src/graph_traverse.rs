//! [`GraphStore::traverse`](evident_store::GraphStore::traverse) over SQLite, reading no
//! evidence row the result does not carry.
//!
//! Around hub nodes (a person named by hundreds of documents) most rows a naive walk reads
//! are thrown away: the start nodes' evidence lists only decide whether they are visible,
//! and of the up to [`MAX_EDGES_PER_NODE`] edges read per frontier node most reach nodes
//! past the walk's cap and are dropped with their evidence. So visibility is decided in SQL
//! by an indexed `EXISTS` on the evidence rows under the visibility rule (the same
//! `sql::visibility` clauses `count` uses, which agree with [`Visibility::admits`]), and the
//! evidence lists are read once the walk is over, only for the edges it kept and the nodes
//! it reached. The result is the same [`Subgraph`] the walk over fully read rows gives
//! (`graph_traverse_tests` compares both on a fixture with a hub).

use std::collections::{HashMap, HashSet};

use evident_core::{NodeKey, Visibility};
use evident_store::walk::{Walk, WalkedEdge};
use evident_store::{Direction, Result, Subgraph, TraverseOptions};
use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};

use crate::graph::read_nodes;
use crate::{json_err, sql, sqlite_err};

/// Most edges followed from one node in one hop: bounds expansion around hub nodes.
pub(crate) const MAX_EDGES_PER_NODE: usize = 500;

/// Keys per statement (SQLite's bound-parameter limit leaves room for the rest).
const BATCH: usize = 400;

/// An edge row of one hop, without its evidence: `visible` when some evidence row is.
struct EdgeRow {
    eid: i64,
    from: String,
    edge_type: String,
    to: String,
    props: String,
    visible: bool,
}

fn partitions_params(vis: &Visibility) -> (String, Vec<Value>) {
    let parts = vis.partitions();
    (sql::placeholders(parts.len()), sql::texts(parts))
}

/// The keys of `keys` with a record in the reader's partitions having visible evidence (what
/// `read_nodes` would return), in the order of `keys`, by an indexed probe per record.
fn visible_keys(conn: &Connection, vis: &Visibility, keys: &[NodeKey]) -> Result<Vec<NodeKey>> {
    let mut visible: HashSet<String> = HashSet::new();
    for batch in keys.chunks(BATCH) {
        let (ph, parts) = partitions_params(vis);
        let mut q = format!(
            "SELECT DISTINCT n.key FROM nodes n WHERE n.key IN {} AND n.partition IN {ph} \
             AND EXISTS (SELECT 1 FROM node_evidence ev WHERE ev.nid = n.nid AND ",
            sql::placeholders(batch.len())
        );
        let mut params = sql::texts(batch.iter().map(NodeKey::as_str));
        params.extend(parts);
        sql::visibility(vis, "ev.", &mut q, &mut params);
        q.push(')');
        let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
        let rows = stmt
            .query_map(params_from_iter(params), |r| r.get::<_, String>(0))
            .map_err(sqlite_err)?;
        for key in rows {
            visible.insert(key.map_err(sqlite_err)?);
        }
    }
    Ok(keys
        .iter()
        .filter(|k| visible.contains(k.as_str()))
        .cloned()
        .collect())
}

/// Edges at any of `keys` (one direction), one statement per [`BATCH`] keys, at most
/// [`MAX_EDGES_PER_NODE`] per node in `eid` order. The cap is numbered over the index alone
/// (the `eid` and the key), so a hub's edges beyond it are never read from the table, and
/// visibility is an `EXISTS` on the evidence rows instead of reading them.
fn edges_at(
    conn: &Connection,
    vis: &Visibility,
    keys: &[NodeKey],
    outgoing: bool,
    edge_types: &[String],
) -> Result<Vec<EdgeRow>> {
    let mut out: Vec<EdgeRow> = Vec::new();
    let col = if outgoing { "from_key" } else { "to_key" };
    for batch in keys.chunks(BATCH) {
        let (ph, parts) = partitions_params(vis);
        let mut inner = format!(
            "SELECT eid, row_number() OVER (PARTITION BY {col} ORDER BY eid) AS nth \
             FROM edges WHERE {col} IN {} AND partition IN {ph}",
            sql::placeholders(batch.len())
        );
        let mut params = sql::texts(batch.iter().map(NodeKey::as_str));
        params.extend(parts);
        if !edge_types.is_empty() {
            inner.push_str(&format!(
                " AND edge_type IN {}",
                sql::placeholders(edge_types.len())
            ));
            params.extend(sql::texts(edge_types.iter().map(String::as_str)));
        }
        // The window's parameters come first in the text, then the visibility clauses'.
        let mut q = format!(
            "WITH w AS ({inner}) SELECT e.eid, e.from_key, e.edge_type, e.to_key, e.props, \
             EXISTS (SELECT 1 FROM edge_evidence ev WHERE ev.eid = e.eid AND "
        );
        sql::visibility(vis, "ev.", &mut q, &mut params);
        q.push_str(&format!(
            ") FROM w JOIN edges e ON e.eid = w.eid \
             WHERE w.nth <= {MAX_EDGES_PER_NODE} ORDER BY e.eid"
        ));
        let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
        let mut rows = stmt.query(params_from_iter(params)).map_err(sqlite_err)?;
        while let Some(r) = rows.next().map_err(sqlite_err)? {
            out.push(EdgeRow {
                eid: r.get(0).map_err(sqlite_err)?,
                from: r.get(1).map_err(sqlite_err)?,
                edge_type: r.get(2).map_err(sqlite_err)?,
                to: r.get(3).map_err(sqlite_err)?,
                props: r.get(4).map_err(sqlite_err)?,
                visible: r.get(5).map_err(sqlite_err)?,
            });
        }
    }
    Ok(out)
}

/// The visible evidence of each of `eids`, in `chunk_id` order, one statement per
/// [`BATCH`] edges.
fn edge_evidence(
    conn: &Connection,
    vis: &Visibility,
    eids: &[i64],
) -> Result<HashMap<i64, Vec<String>>> {
    let mut out: HashMap<i64, Vec<String>> = HashMap::new();
    for batch in eids.chunks(BATCH) {
        let mut q = format!(
            "SELECT ev.eid, ev.chunk_id FROM edge_evidence ev WHERE ev.eid IN {} AND ",
            sql::placeholders(batch.len())
        );
        let mut params: Vec<Value> = batch.iter().map(|e| Value::Integer(*e)).collect();
        sql::visibility(vis, "ev.", &mut q, &mut params);
        q.push_str(" ORDER BY ev.eid, ev.chunk_id");
        let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
        let mut rows = stmt.query(params_from_iter(params)).map_err(sqlite_err)?;
        while let Some(r) = rows.next().map_err(sqlite_err)? {
            let eid: i64 = r.get(0).map_err(sqlite_err)?;
            out.entry(eid)
                .or_default()
                .push(r.get(1).map_err(sqlite_err)?);
        }
    }
    Ok(out)
}

/// See the module documentation. The walk is fed each edge row with its `eid` standing in
/// for its evidence (non-empty exactly when some evidence is visible), so the edges it keeps
/// — one per identity, merging the rows of two partitions in `eid` order — name the rows
/// whose evidence is then read and merged the way the walk would have merged it.
pub(crate) fn traverse(
    conn: &Connection,
    vis: &Visibility,
    start: &[NodeKey],
    opts: &TraverseOptions,
) -> Result<Subgraph> {
    let mut walk = Walk::new(visible_keys(conn, vis, start)?, opts.max_nodes);
    // Each edge row once (the same edge in two partitions is two rows, merged by the walk).
    let mut seen_eids: HashSet<i64> = HashSet::new();
    for depth in 1..=opts.max_depth.max(1) {
        let frontier = walk.frontier().to_vec();
        let mut rows = Vec::new();
        if matches!(opts.direction, Direction::Out | Direction::Any) {
            rows.extend(edges_at(conn, vis, &frontier, true, &opts.edge_types)?);
        }
        if matches!(opts.direction, Direction::In | Direction::Any) {
            rows.extend(edges_at(conn, vis, &frontier, false, &opts.edge_types)?);
        }
        rows.sort_by_key(|r| r.eid);
        for row in rows {
            if !seen_eids.insert(row.eid) || !row.visible {
                continue;
            }
            let props = serde_json::from_str(&row.props).map_err(json_err)?;
            let edge = WalkedEdge::stored(
                row.from,
                row.edge_type,
                row.to,
                props,
                vec![row.eid.to_string()],
            );
            walk.visit(depth, edge);
        }
        if !walk.next_hop() {
            break;
        }
    }
    let (order, depth_of, mut edges) = walk.finish();
    let kept: Vec<i64> = edges
        .iter()
        .flat_map(|e| e.evidence_chunk_ids.iter())
        .filter_map(|id| id.parse::<i64>().ok())
        .collect();
    let mut evidence = edge_evidence(conn, vis, &kept)?;
    for edge in &mut edges {
        let mut ids: Vec<String> = Vec::new();
        for eid in std::mem::take(&mut edge.evidence_chunk_ids) {
            let rows = eid.parse::<i64>().ok().and_then(|e| evidence.remove(&e));
            for id in rows.unwrap_or_default() {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        edge.evidence_chunk_ids = ids;
    }
    let nodes = read_nodes(conn, vis, &order)?
        .into_iter()
        .map(|n| {
            let d = depth_of[&n.key];
            (n, d)
        })
        .collect();
    Ok(Subgraph { nodes, edges })
}

#[cfg(test)]
#[path = "graph_traverse_tests.rs"]
mod tests;
