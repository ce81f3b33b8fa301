//! Evidence back-links ([`GraphStore::evidenced_by`](evident_store::GraphStore::evidenced_by)):
//! from chunks to the nodes and edges they evidence, read through the `node_evidence_chunk`
//! and `edge_evidence_chunk` indexes (evidence rows by chunk id) that purges already use.
//!
//! Visibility as in [`crate::graph::read_nodes`]: each evidence row's scope is admitted (or
//! not) by [`Visibility::admits`] in Rust, one rule for every read.

use std::collections::{BTreeSet, HashMap};

use evident_core::{NodeKey, Visibility};
use evident_store::{EdgeKey, Evidenced, MAX_EVIDENCED_PER_CHUNK, Result};
use rusqlite::{Connection, params_from_iter};

use crate::{sql, sqlite_err};

/// Chunk ids per statement (the partitions add at most two more parameters).
const BATCH: usize = 400;

#[derive(Default)]
struct Found {
    nodes: BTreeSet<NodeKey>,
    edges: BTreeSet<EdgeKey>,
}

/// See [`GraphStore::evidenced_by`](evident_store::GraphStore::evidenced_by).
pub(crate) fn evidenced_by(
    conn: &Connection,
    vis: &Visibility,
    chunk_ids: &[String],
) -> Result<Vec<Evidenced>> {
    let mut found: HashMap<String, Found> = HashMap::new();
    let parts = vis.partitions();
    for batch in chunk_ids.chunks(BATCH) {
        let ph = sql::placeholders(batch.len());
        let pp = sql::placeholders(parts.len());
        let mut params = sql::texts(batch.iter().map(String::as_str));
        params.extend(sql::texts(parts.iter().copied()));
        let q = format!(
            "SELECT ev.chunk_id, ev.client_id, ev.project_id, ev.group_id, n.key \
             FROM node_evidence ev JOIN nodes n ON n.nid = ev.nid \
             WHERE ev.chunk_id IN {ph} AND n.partition IN {pp}"
        );
        let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
        let mut rows = stmt
            .query(params_from_iter(params.iter()))
            .map_err(sqlite_err)?;
        while let Some(r) = rows.next().map_err(sqlite_err)? {
            if !vis.admits(&sql::scope_at(r, 1).map_err(sqlite_err)?) {
                continue;
            }
            let chunk: String = r.get(0).map_err(sqlite_err)?;
            let key: String = r.get(4).map_err(sqlite_err)?;
            let f = found.entry(chunk).or_default();
            f.nodes.insert(NodeKey::from_canonical(key));
        }
        let q = format!(
            "SELECT ev.chunk_id, ev.client_id, ev.project_id, ev.group_id, \
             e.from_key, e.edge_type, e.to_key \
             FROM edge_evidence ev JOIN edges e ON e.eid = ev.eid \
             WHERE ev.chunk_id IN {ph} AND e.partition IN {pp}"
        );
        let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
        let mut rows = stmt
            .query(params_from_iter(params.iter()))
            .map_err(sqlite_err)?;
        while let Some(r) = rows.next().map_err(sqlite_err)? {
            if !vis.admits(&sql::scope_at(r, 1).map_err(sqlite_err)?) {
                continue;
            }
            let chunk: String = r.get(0).map_err(sqlite_err)?;
            let edge = EdgeKey {
                from: NodeKey::from_canonical(r.get::<_, String>(4).map_err(sqlite_err)?),
                edge_type: r.get(5).map_err(sqlite_err)?,
                to: NodeKey::from_canonical(r.get::<_, String>(6).map_err(sqlite_err)?),
            };
            found.entry(chunk).or_default().edges.insert(edge);
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
