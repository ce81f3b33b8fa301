//! Writing nodes, edges and their evidence rows (the graph half of a source write).
//!
//! The writer thread is the store's one serial resource, so this path is written for
//! statements per row: node and edge rows are upserted one statement each (each needs its row
//! id back), evidence rows — the most numerous — are collected and inserted many per
//! statement, and props are merged with `json_patch` only when they add something (a file or
//! symbol written again with the same props, the common case of a re-index or of a commit
//! touching a known file, keeps its stored text as is).

use std::collections::{HashMap, HashSet};

use evident_core::{EdgeWrite, Evidence, NodeKey, NodeWrite};
use evident_store::Result;
use rusqlite::types::ToSql;
use rusqlite::{Connection, OptionalExtension};
use serde_json::{Map, Value as Json};

use crate::{json_err, now_millis, sqlite_err};

/// Evidence rows per multi-row statement (5 parameters each). Smaller remainders go in
/// power-of-two statements, so at most 7 distinct statements per table are ever prepared.
const EVIDENCE_BATCH: usize = 64;

fn props_json(props: &Map<String, Json>) -> Result<String> {
    serde_json::to_string(props).map_err(json_err)
}

/// Evidence rows waiting to be inserted: (owner row id, evidence).
struct Pending<'a> {
    table: &'static str,
    id_col: &'static str,
    rows: Vec<(i64, &'a Evidence)>,
}

impl<'a> Pending<'a> {
    fn new(table: &'static str, id_col: &'static str) -> Self {
        Pending {
            table,
            id_col,
            rows: Vec::new(),
        }
    }

    fn add(&mut self, id: i64, evidence: &'a [Evidence]) {
        self.rows.extend(evidence.iter().map(|e| (id, e)));
    }

    /// Inserts every collected row (`INSERT OR IGNORE`, as one statement per row would).
    fn flush(self, conn: &Connection) -> Result<()> {
        let mut rest = self.rows.as_slice();
        while !rest.is_empty() {
            let n = if rest.len() >= EVIDENCE_BATCH {
                EVIDENCE_BATCH
            } else {
                1 << rest.len().ilog2()
            };
            let (batch, tail) = rest.split_at(n);
            let q = format!(
                "INSERT OR IGNORE INTO {}({}, chunk_id, client_id, project_id, group_id) VALUES {}",
                self.table,
                self.id_col,
                vec!["(?, ?, ?, ?, ?)"; n].join(", ")
            );
            let mut params: Vec<&dyn ToSql> = Vec::with_capacity(n * 5);
            for (id, ev) in batch {
                params.extend([
                    id as &dyn ToSql,
                    &ev.chunk_id,
                    &ev.scope.client_id,
                    &ev.scope.project_id,
                    &ev.scope.group_id,
                ]);
            }
            conn.prepare_cached(&q)
                .map_err(sqlite_err)?
                .execute(params.as_slice())
                .map_err(sqlite_err)?;
            rest = tail;
        }
        Ok(())
    }
}

fn upsert_node(conn: &Connection, partition: &str, n: &NodeWrite) -> Result<i64> {
    // `json_patch` only when the new props change something: the same props again (or none)
    // keep the stored text, which is what the patch would have produced.
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO nodes(partition, key, type, label, props, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             ON CONFLICT(partition, key) DO UPDATE SET type = excluded.type, label = excluded.label, \
             props = CASE WHEN excluded.props IN ('{}', nodes.props) THEN nodes.props \
             ELSE json_patch(nodes.props, excluded.props) END, \
             updated_at = excluded.updated_at RETURNING nid, label, props",
        )
        .map_err(sqlite_err)?;
    let (nid, label, props): (i64, String, String) = stmt
        .query_row(
            rusqlite::params![
                partition,
                n.key.as_str(),
                n.node_type,
                n.label,
                props_json(&n.props)?,
                now_millis()
            ],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map_err(sqlite_err)?;
    // The names as stored (merged props); unchanged names cost one lookup.
    crate::entity_index::index_node(conn, nid, partition, n.key.as_str(), &label, &props)?;
    Ok(nid)
}

/// Makes sure a node exists without overwriting what is known about it: created as
/// `described` says (type, label) when missing. Returns its row id.
fn ensure_node(
    conn: &Connection,
    partition: &str,
    key: &NodeKey,
    described: Option<(&str, &str)>,
) -> Result<i64> {
    // An existing node is only read: the upsert's no-op UPDATE rewrote its row, a WAL page
    // per node per write for nothing.
    if let Some(nid) = conn
        .prepare_cached("SELECT nid FROM nodes WHERE partition = ?1 AND key = ?2")
        .map_err(sqlite_err)?
        .query_row(rusqlite::params![partition, key.as_str()], |r| r.get(0))
        .optional()
        .map_err(sqlite_err)?
    {
        return Ok(nid);
    }
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO nodes(partition, key, type, label, props, updated_at) VALUES (?1, ?2, ?3, ?4, '{}', ?5) \
             ON CONFLICT(partition, key) DO UPDATE SET updated_at = nodes.updated_at RETURNING nid",
        )
        .map_err(sqlite_err)?;
    let (node_type, label) = described.unwrap_or_else(|| {
        let label = if key.value().is_empty() {
            key.as_str()
        } else {
            key.value()
        };
        (key.namespace(), label)
    });
    let nid = stmt
        .query_row(
            rusqlite::params![partition, key.as_str(), node_type, label, now_millis()],
            |r| r.get(0),
        )
        .map_err(sqlite_err)?;
    crate::entity_index::index_node(conn, nid, partition, key.as_str(), label, "{}")?;
    Ok(nid)
}

fn upsert_edge(conn: &Connection, partition: &str, e: &EdgeWrite) -> Result<i64> {
    if e.evidence.is_empty() {
        return Err(evident_store::StoreError::invalid(format!(
            "edge {} -{}-> {} has no evidence",
            e.from, e.edge_type, e.to
        )));
    }
    let props = props_json(&e.props)?;
    // An existing edge whose props would not change is only read (the upsert's UPDATE would
    // rewrite the row to the same values: a WAL page per edge per write for nothing).
    let stored: Option<(i64, String)> = conn
        .prepare_cached(
            "SELECT eid, props FROM edges \
             WHERE partition = ?1 AND from_key = ?2 AND edge_type = ?3 AND to_key = ?4",
        )
        .map_err(sqlite_err)?
        .query_row(
            rusqlite::params![partition, e.from.as_str(), e.edge_type, e.to.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sqlite_err)?;
    if let Some((eid, stored)) = stored
        && (props == "{}" || props == stored)
    {
        return Ok(eid);
    }
    conn.prepare_cached(
        "INSERT INTO edges(partition, from_key, edge_type, to_key, props) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT(partition, from_key, edge_type, to_key) DO UPDATE SET \
         props = CASE WHEN excluded.props IN ('{}', edges.props) THEN edges.props \
         ELSE json_patch(edges.props, excluded.props) END RETURNING eid",
    )
    .map_err(sqlite_err)?
    .query_row(
        rusqlite::params![
            partition,
            e.from.as_str(),
            e.edge_type,
            e.to.as_str(),
            props
        ],
        |r| r.get(0),
    )
    .map_err(sqlite_err)
}

/// Upserts `nodes` and `edges` of `partition` with their evidence. An edge's evidence also
/// evidences both endpoints (created bare when missing), so a node outlives its edges only
/// while something still mentions it.
pub(crate) fn upsert_graph(
    conn: &Connection,
    partition: &str,
    nodes: &[NodeWrite],
    edges: &[EdgeWrite],
) -> Result<()> {
    let mut node_evidence = Pending::new("node_evidence", "nid");
    let mut edge_evidence = Pending::new("edge_evidence", "eid");
    // What this write already gave each node (row id, evidence): an edge endpoint written
    // here with the edge's evidence needs no second statement (the knowledge base always
    // sends endpoints).
    let mut written: HashMap<&str, HashSet<&str>> = HashMap::with_capacity(nodes.len());
    for n in nodes {
        let nid = if n.mention_only {
            let described = (n.node_type.as_str(), n.label.as_str());
            ensure_node(conn, partition, &n.key, Some(described))?
        } else {
            upsert_node(conn, partition, n)?
        };
        node_evidence.add(nid, &n.evidence);
        written
            .entry(n.key.as_str())
            .or_default()
            .extend(n.evidence.iter().map(|e| e.chunk_id.as_str()));
    }
    for e in edges {
        let eid = upsert_edge(conn, partition, e)?;
        edge_evidence.add(eid, &e.evidence);
        for end in [&e.from, &e.to] {
            let covered = written.get(end.as_str()).is_some_and(|have| {
                e.evidence
                    .iter()
                    .all(|ev| have.contains(ev.chunk_id.as_str()))
            });
            if !covered {
                let nid = ensure_node(conn, partition, end, None)?;
                node_evidence.add(nid, &e.evidence);
            }
        }
    }
    node_evidence.flush(conn)?;
    edge_evidence.flush(conn)
}

#[cfg(test)]
#[path = "graph_write_tests.rs"]
mod tests;
