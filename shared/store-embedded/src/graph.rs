//! GraphStore over SQLite: nodes and edges per client partition, evidence rows per chunk.
//!
//! Visibility is evaluated in Rust with [`Visibility::admits`] on each evidence row's scope,
//! so the graph uses exactly the rule the chunk search uses (one rule, one implementation).

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use evident_core::{EdgeWrite, Node, NodeKey, NodeWrite, Visibility};
use evident_store::{
    EdgeKey, GraphCounts, GraphStore, NodePage, RemovedCounts, Result, Subgraph, TraverseOptions,
};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use serde_json::{Map, Value as Json};

use crate::{EmbeddedStore, json_err, now_millis, sql, sqlite_err};

/// See [`GraphStore::fold_node`]. Runs inside the caller's transaction.
pub(crate) fn fold_node(
    conn: &Connection,
    partition: &str,
    from: &NodeKey,
    into: &NodeKey,
) -> Result<bool> {
    let found: Option<(i64, String, String, String)> = conn
        .prepare_cached(
            "SELECT nid, type, label, props FROM nodes WHERE partition = ?1 AND key = ?2",
        )
        .map_err(sqlite_err)?
        .query_row(rusqlite::params![partition, from.as_str()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()
        .map_err(sqlite_err)?;
    let Some((from_nid, node_type, label, props)) = found else {
        return Ok(false);
    };
    // `into` keeps its own type, label and props; `from` only fills what `into` lacks.
    let into_nid: i64 = conn
        .prepare_cached(
            "INSERT INTO nodes(partition, key, type, label, props, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             ON CONFLICT(partition, key) DO UPDATE SET props = json_patch(excluded.props, nodes.props), \
             updated_at = excluded.updated_at RETURNING nid",
        )
        .map_err(sqlite_err)?
        .query_row(
            rusqlite::params![partition, into.as_str(), node_type, label, props, now_millis()],
            |r| r.get(0),
        )
        .map_err(sqlite_err)?;
    conn.prepare_cached(
        "INSERT OR IGNORE INTO node_evidence(nid, chunk_id, client_id, project_id, group_id) \
         SELECT ?1, chunk_id, client_id, project_id, group_id FROM node_evidence WHERE nid = ?2",
    )
    .map_err(sqlite_err)?
    .execute(rusqlite::params![into_nid, from_nid])
    .map_err(sqlite_err)?;
    move_edges(conn, partition, from, into)?;
    conn.prepare_cached("DELETE FROM nodes WHERE nid = ?1")
        .map_err(sqlite_err)?
        .execute(rusqlite::params![from_nid])
        .map_err(sqlite_err)?;
    // `into` may have taken props (names) from `from`, and `from` is now its alias.
    crate::entity_index::reindex_key(conn, partition, into.as_str())?;
    Ok(true)
}

/// The edges at `from` re-keyed to `into` with their evidence (merging into an edge `into`
/// already has); one that would become a self-loop is dropped.
fn move_edges(conn: &Connection, partition: &str, from: &NodeKey, into: &NodeKey) -> Result<()> {
    let edges: Vec<(i64, String, String, String, String)> = conn
        .prepare_cached(
            "SELECT eid, from_key, edge_type, to_key, props FROM edges \
             WHERE partition = ?1 AND (from_key = ?2 OR to_key = ?2)",
        )
        .map_err(sqlite_err)?
        .query_map(rusqlite::params![partition, from.as_str()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .map_err(sqlite_err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(sqlite_err)?;
    let mut put_edge = conn
        .prepare_cached(
            "INSERT INTO edges(partition, from_key, edge_type, to_key, props) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT(partition, from_key, edge_type, to_key) DO UPDATE SET props = json_patch(excluded.props, edges.props) RETURNING eid",
        )
        .map_err(sqlite_err)?;
    let mut move_evidence = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO edge_evidence(eid, chunk_id, client_id, project_id, group_id) \
             SELECT ?1, chunk_id, client_id, project_id, group_id FROM edge_evidence WHERE eid = ?2",
        )
        .map_err(sqlite_err)?;
    let mut delete_edge = conn
        .prepare_cached("DELETE FROM edges WHERE eid = ?1")
        .map_err(sqlite_err)?;
    let rekey = |k: &str| if k == from.as_str() { into.as_str() } else { k }.to_string();
    for (eid, from_key, edge_type, to_key, props) in edges {
        let (new_from, new_to) = (rekey(&from_key), rekey(&to_key));
        if new_from != new_to {
            let new_eid: i64 = put_edge
                .query_row(
                    rusqlite::params![partition, new_from, edge_type, new_to, props],
                    |r| r.get(0),
                )
                .map_err(sqlite_err)?;
            move_evidence
                .execute(rusqlite::params![new_eid, eid])
                .map_err(sqlite_err)?;
        }
        delete_edge
            .execute(rusqlite::params![eid])
            .map_err(sqlite_err)?;
    }
    Ok(())
}

/// Graph rows that lost evidence and may now have none.
#[derive(Default)]
pub(crate) struct Affected {
    edges: HashSet<i64>,
    nodes: HashSet<i64>,
}

/// Deletes the evidence rows of `chunk_ids`, returning the rows that lost some.
pub(crate) fn drop_evidence(
    conn: &Connection,
    partition: &str,
    chunk_ids: &[String],
    affected: &mut Affected,
) -> Result<()> {
    let mut find_e = conn
        .prepare_cached("SELECT ev.eid FROM edge_evidence ev JOIN edges e ON e.eid = ev.eid WHERE ev.chunk_id = ?1 AND e.partition = ?2")
        .map_err(sqlite_err)?;
    let mut find_n = conn
        .prepare_cached("SELECT ev.nid FROM node_evidence ev JOIN nodes n ON n.nid = ev.nid WHERE ev.chunk_id = ?1 AND n.partition = ?2")
        .map_err(sqlite_err)?;
    let mut del_e = conn
        .prepare_cached("DELETE FROM edge_evidence WHERE eid = ?1 AND chunk_id = ?2")
        .map_err(sqlite_err)?;
    let mut del_n = conn
        .prepare_cached("DELETE FROM node_evidence WHERE nid = ?1 AND chunk_id = ?2")
        .map_err(sqlite_err)?;
    for chunk in chunk_ids {
        drop_rows(
            &mut find_e,
            &mut del_e,
            chunk,
            partition,
            &mut affected.edges,
        )?;
        drop_rows(
            &mut find_n,
            &mut del_n,
            chunk,
            partition,
            &mut affected.nodes,
        )?;
    }
    Ok(())
}

/// One chunk's evidence rows of one kind (edge or node): `find` lists the owners' ids
/// (`?1` chunk, `?2` partition), `delete` removes the row of one owner (`?1` owner,
/// `?2` chunk); the owners are added to `owners`.
fn drop_rows(
    find: &mut rusqlite::CachedStatement<'_>,
    delete: &mut rusqlite::CachedStatement<'_>,
    chunk: &str,
    partition: &str,
    owners: &mut HashSet<i64>,
) -> Result<()> {
    let ids: Vec<i64> = find
        .query_map(rusqlite::params![chunk, partition], |r| r.get(0))
        .map_err(sqlite_err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(sqlite_err)?;
    for id in ids {
        delete
            .execute(rusqlite::params![id, chunk])
            .map_err(sqlite_err)?;
        owners.insert(id);
    }
    Ok(())
}

/// Deletes the affected edges and nodes that have no evidence left.
pub(crate) fn collect_garbage(conn: &Connection, affected: Affected) -> Result<RemovedCounts> {
    let mut removed = RemovedCounts::default();
    let mut gc_e = conn
        .prepare_cached("DELETE FROM edges WHERE eid = ?1 AND NOT EXISTS (SELECT 1 FROM edge_evidence WHERE eid = ?1)")
        .map_err(sqlite_err)?;
    for eid in affected.edges {
        removed.edges += gc_e.execute([eid]).map_err(sqlite_err)?;
    }
    let mut gc_n = conn
        .prepare_cached("DELETE FROM nodes WHERE nid = ?1 AND NOT EXISTS (SELECT 1 FROM node_evidence WHERE nid = ?1)")
        .map_err(sqlite_err)?;
    for nid in affected.nodes {
        removed.nodes += gc_n.execute([nid]).map_err(sqlite_err)?;
    }
    Ok(removed)
}

pub(crate) fn remove_evidence(
    conn: &Connection,
    partition: &str,
    chunk_ids: &[String],
) -> Result<RemovedCounts> {
    let mut affected = Affected::default();
    drop_evidence(conn, partition, chunk_ids, &mut affected)?;
    collect_garbage(conn, affected)
}

fn partitions_params(vis: &Visibility) -> (String, Vec<Value>) {
    let parts = vis.partitions();
    (sql::placeholders(parts.len()), sql::texts(parts))
}

/// Reads one node across the reader's partitions; `None` unless some evidence is visible.
/// Reads nodes across the reader's partitions with their visible evidence, one statement per
/// 400 keys; returns visible nodes in the order of `keys`.
pub(crate) fn read_nodes(
    conn: &Connection,
    vis: &Visibility,
    keys: &[NodeKey],
) -> Result<Vec<Node>> {
    let mut found: HashMap<String, Node> = HashMap::new();
    // The partition whose record was merged last, per key.
    let mut merged_from: HashMap<String, String> = HashMap::new();
    for batch in keys.chunks(400) {
        let (ph, parts) = partitions_params(vis);
        let q = format!(
            "SELECT n.key, n.type, n.label, n.props, ev.chunk_id, ev.client_id, ev.project_id, ev.group_id, n.partition \
             FROM nodes n JOIN node_evidence ev ON ev.nid = n.nid \
             WHERE n.key IN {} AND n.partition IN {ph} ORDER BY n.key, n.partition, ev.chunk_id",
            sql::placeholders(batch.len())
        );
        let mut params = sql::texts(batch.iter().map(NodeKey::as_str));
        params.extend(parts);
        let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
        let mut rows = stmt.query(params_from_iter(params)).map_err(sqlite_err)?;
        // Rows come grouped by key, global partition ("") first, so the client's own record
        // wins on conflicts; a record contributes only if some of its evidence is visible.
        while let Some(r) = rows.next().map_err(sqlite_err)? {
            let scope = sql::scope_at(r, 5).map_err(sqlite_err)?;
            if !vis.admits(&scope) {
                continue;
            }
            let key: String = r.get(0).map_err(sqlite_err)?;
            let chunk: String = r.get(4).map_err(sqlite_err)?;
            let partition: String = r.get(8).map_err(sqlite_err)?;
            let record_is_new = merged_from.get(&key) != Some(&partition);
            if record_is_new {
                let node_type: String = r.get(1).map_err(sqlite_err)?;
                let label: String = r.get(2).map_err(sqlite_err)?;
                let props: Map<String, Json> =
                    serde_json::from_str(&r.get::<_, String>(3).map_err(sqlite_err)?)
                        .map_err(json_err)?;
                match found.get_mut(&key) {
                    Some(n) => {
                        n.node_type = node_type;
                        n.label = label;
                        n.props.extend(props);
                    }
                    None => {
                        found.insert(
                            key.clone(),
                            Node {
                                key: NodeKey::from_canonical(key.clone()),
                                node_type,
                                label,
                                props,
                                evidence_chunk_ids: Vec::new(),
                            },
                        );
                    }
                }
                merged_from.insert(key.clone(), partition);
            }
            if let Some(n) = found.get_mut(&key)
                && !n.evidence_chunk_ids.contains(&chunk)
            {
                n.evidence_chunk_ids.push(chunk);
            }
        }
    }
    Ok(keys
        .iter()
        .filter_map(|k| found.remove(k.as_str()))
        .collect())
}

/// One page of [`GraphStore::list_nodes`]: the keys come from one statement (type, keyset
/// and the visibility rule in SQL, `limit + 1` rows to know whether more follow), the nodes
/// from [`read_nodes`]; a node whose merged type is another (its client record retyped it)
/// is dropped from the page but still moves the cursor.
fn list_nodes(
    conn: &Connection,
    vis: &Visibility,
    node_type: Option<&str>,
    after: Option<&NodeKey>,
    limit: usize,
) -> Result<NodePage> {
    let (ph, mut params) = partitions_params(vis);
    let mut q = format!("SELECT DISTINCT n.key FROM nodes n WHERE n.partition IN {ph}");
    if let Some(t) = node_type {
        q.push_str(" AND n.type = ?");
        params.push(Value::Text(t.to_string()));
    }
    if let Some(after) = after {
        q.push_str(" AND n.key > ?");
        params.push(Value::Text(after.as_str().to_string()));
    }
    q.push_str(" AND EXISTS (SELECT 1 FROM node_evidence ev WHERE ev.nid = n.nid AND ");
    sql::visibility(vis, "ev.", &mut q, &mut params);
    q.push_str(") ORDER BY n.key LIMIT ?");
    params.push(Value::Integer(limit.saturating_add(1) as i64));
    let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
    let mut keys: Vec<NodeKey> = stmt
        .query_map(params_from_iter(params), |r| r.get::<_, String>(0))
        .map_err(sqlite_err)?
        .map(|k| k.map(NodeKey::from_canonical))
        .collect::<rusqlite::Result<_>>()
        .map_err(sqlite_err)?;
    let next_after = if keys.len() > limit {
        keys.truncate(limit);
        keys.last().cloned()
    } else {
        None
    };
    let mut nodes = read_nodes(conn, vis, &keys)?;
    if let Some(t) = node_type {
        nodes.retain(|n| n.node_type == t);
    }
    Ok(NodePage { nodes, next_after })
}

/// [`GraphStore::count`]: two `COUNT`s in SQL over the reader's partitions (the
/// `UNIQUE(partition, …)` indexes), each row admitted by an indexed probe of its evidence
/// rows under the visibility rule; `DISTINCT` makes a key in both partitions count once.
fn count(conn: &Connection, vis: &Visibility) -> Result<GraphCounts> {
    let nodes = count_visible(
        conn,
        vis,
        "SELECT DISTINCT n.key FROM nodes n WHERE n.partition IN",
        "SELECT 1 FROM node_evidence ev WHERE ev.nid = n.nid",
    )?;
    let edges = count_visible(
        conn,
        vis,
        "SELECT DISTINCT e.from_key, e.edge_type, e.to_key FROM edges e WHERE e.partition IN",
        "SELECT 1 FROM edge_evidence ev WHERE ev.eid = e.eid",
    )?;
    Ok(GraphCounts { nodes, edges })
}

/// `COUNT(*)` of `select` (rows of the reader's partitions) having some visible `evidence`.
fn count_visible(conn: &Connection, vis: &Visibility, select: &str, evidence: &str) -> Result<u64> {
    let (ph, mut params) = partitions_params(vis);
    let mut q = format!("SELECT COUNT(*) FROM ({select} {ph} AND EXISTS ({evidence} AND ");
    sql::visibility(vis, "ev.", &mut q, &mut params);
    q.push_str("))");
    let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
    let n: i64 = stmt
        .query_row(params_from_iter(params), |r| r.get(0))
        .map_err(sqlite_err)?;
    Ok(n.max(0) as u64)
}

#[async_trait]
impl GraphStore for EmbeddedStore {
    async fn upsert(
        &self,
        partition: &str,
        nodes: Vec<NodeWrite>,
        edges: Vec<EdgeWrite>,
    ) -> Result<()> {
        let partition = partition.to_string();
        // In the next group commit, under its own savepoint (all of it or nothing).
        self.write_grouped(move |conn| {
            crate::graph_write::upsert_graph(conn, &partition, &nodes, &edges)
        })
        .await
    }

    async fn remove_evidence(
        &self,
        partition: &str,
        chunk_ids: &[String],
    ) -> Result<RemovedCounts> {
        let (partition, ids) = (partition.to_string(), chunk_ids.to_vec());
        self.write(move |conn, _| {
            let tx = conn.transaction().map_err(sqlite_err)?;
            let removed = remove_evidence(&tx, &partition, &ids)?;
            tx.commit().map_err(sqlite_err)?;
            Ok(removed)
        })
        .await
    }

    async fn remove_edges(&self, partition: &str, edges: &[EdgeKey]) -> Result<usize> {
        let (partition, edges) = (partition.to_string(), edges.to_vec());
        self.write_grouped(move |conn| {
            let mut del = conn
                .prepare_cached(
                    "DELETE FROM edges WHERE partition = ?1 AND from_key = ?2 AND edge_type = ?3 AND to_key = ?4",
                )
                .map_err(sqlite_err)?;
            let mut removed = 0;
            for e in &edges {
                // Evidence rows go with the edge (ON DELETE CASCADE).
                removed += del
                    .execute(rusqlite::params![partition, e.from.as_str(), e.edge_type, e.to.as_str()])
                    .map_err(sqlite_err)?;
            }
            Ok(removed)
        })
        .await
    }

    async fn fold_node(&self, partition: &str, from: &NodeKey, into: &NodeKey) -> Result<bool> {
        if from == into {
            return Ok(false);
        }
        let (partition, from, into) = (partition.to_string(), from.clone(), into.clone());
        self.write_grouped(move |conn| fold_node(conn, &partition, &from, &into))
            .await
    }

    async fn get_nodes(&self, vis: &Visibility, keys: &[NodeKey]) -> Result<Vec<Node>> {
        let (vis, keys) = (vis.clone(), keys.to_vec());
        self.read(move |conn, _| read_nodes(conn, &vis, &keys))
            .await
    }

    async fn traverse(
        &self,
        vis: &Visibility,
        start: &[NodeKey],
        opts: &TraverseOptions,
    ) -> Result<Subgraph> {
        let (vis, start, opts) = (vis.clone(), start.to_vec(), opts.clone());
        self.read(move |conn, _| crate::graph_traverse::traverse(conn, &vis, &start, &opts))
            .await
    }

    async fn search_nodes(
        &self,
        vis: &Visibility,
        query: &str,
        node_type: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>> {
        let (vis, query, node_type) = (
            vis.clone(),
            query.to_lowercase(),
            node_type.map(str::to_string),
        );
        self.read(move |conn, _| {
            let (ph, parts) = partitions_params(&vis);
            let pattern = format!("%{}%", sql::like_escape(&query));
            let mut q = format!(
                "SELECT DISTINCT key FROM nodes WHERE partition IN {ph} AND (key LIKE ? ESCAPE '\\' OR label LIKE ? ESCAPE '\\')"
            );
            let mut params = parts;
            params.push(Value::Text(pattern.clone()));
            params.push(Value::Text(pattern));
            if let Some(t) = &node_type {
                q.push_str(" AND type = ?");
                params.push(Value::Text(t.clone()));
            }
            // Shortest keys first: an exact or near-exact match beats a long key containing it.
            q.push_str(" ORDER BY length(key), key LIMIT ?");
            params.push(Value::Integer((limit * 4 + 16) as i64));
            let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
            let keys: Vec<String> = stmt
                .query_map(params_from_iter(params), |r| r.get(0))
                .map_err(sqlite_err)?
                .collect::<rusqlite::Result<_>>()
                .map_err(sqlite_err)?;
            let keys: Vec<NodeKey> = keys.into_iter().map(NodeKey::from_canonical).collect();
            let mut out = read_nodes(conn, &vis, &keys)?;
            out.truncate(limit);
            Ok(out)
        })
        .await
    }

    async fn list_nodes(
        &self,
        vis: &Visibility,
        node_type: Option<&str>,
        after: Option<&NodeKey>,
        limit: usize,
    ) -> Result<NodePage> {
        if limit == 0 {
            return Ok(NodePage::default());
        }
        let (vis, node_type, after) = (vis.clone(), node_type.map(str::to_string), after.cloned());
        self.read(move |conn, _| {
            list_nodes(conn, &vis, node_type.as_deref(), after.as_ref(), limit)
        })
        .await
    }

    async fn count(&self, vis: &Visibility) -> Result<GraphCounts> {
        let vis = vis.clone();
        self.read(move |conn, _| count(conn, &vis)).await
    }

    async fn match_entities(
        &self,
        vis: &Visibility,
        query: &str,
        limit: usize,
    ) -> Result<Vec<evident_store::EntityMatch>> {
        let (vis, query) = (vis.clone(), query.to_string());
        self.read(move |conn, _| crate::entity_index::match_entities(conn, &vis, &query, limit))
            .await
    }

    async fn evidenced_by(
        &self,
        vis: &Visibility,
        chunk_ids: &[String],
    ) -> Result<Vec<evident_store::Evidenced>> {
        if chunk_ids.is_empty() {
            return Ok(Vec::new());
        }
        let (vis, ids) = (vis.clone(), chunk_ids.to_vec());
        self.read(move |conn, _| crate::graph_links::evidenced_by(conn, &vis, &ids))
            .await
    }
}
