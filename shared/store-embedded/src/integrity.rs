//! Integrity check: SQLite's own checks plus Evident's invariants.

use rusqlite::Connection;
use serde::Serialize;

use crate::{EmbeddedStore, sqlite_err};
use evident_store::Result;

/// Violations found; empty vectors mean the store is sound.
#[derive(Debug, Default, Clone, Serialize)]
pub struct IntegrityReport {
    pub sqlite: Vec<String>,
    /// Invariant name → number of violating rows.
    pub violations: Vec<(String, i64)>,
    pub chunks: i64,
    pub nodes: i64,
    pub edges: i64,
}

impl IntegrityReport {
    pub fn is_ok(&self) -> bool {
        self.sqlite.is_empty() && self.violations.is_empty()
    }
}

const INVARIANTS: &[(&str, &str)] = &[
    (
        "edge without evidence",
        "SELECT count(*) FROM edges e WHERE NOT EXISTS (SELECT 1 FROM edge_evidence v WHERE v.eid = e.eid)",
    ),
    (
        "node without evidence",
        "SELECT count(*) FROM nodes n WHERE NOT EXISTS (SELECT 1 FROM node_evidence v WHERE v.nid = n.nid)",
    ),
    (
        "edge evidence citing a missing chunk",
        "SELECT count(*) FROM edge_evidence v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = v.chunk_id)",
    ),
    (
        "node evidence citing a missing chunk",
        "SELECT count(*) FROM node_evidence v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = v.chunk_id)",
    ),
    (
        "edge endpoint without a node",
        "SELECT count(*) FROM edges e WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.partition = e.partition AND n.key = e.from_key) OR NOT EXISTS (SELECT 1 FROM nodes n WHERE n.partition = e.partition AND n.key = e.to_key)",
    ),
    (
        "duplicate chunk content within a source position",
        "SELECT count(*) FROM (SELECT partition, source_urn, ordinal FROM chunks GROUP BY 1, 2, 3 HAVING count(*) > 1)",
    ),
    (
        "chunk count differs from source registry",
        "SELECT count(*) FROM sources s WHERE s.status = 'indexed' AND s.chunk_count <> (SELECT count(*) FROM chunks c WHERE c.partition = s.partition AND c.source_urn = s.source_urn)",
    ),
];

fn check(conn: &Connection) -> Result<IntegrityReport> {
    let mut report = IntegrityReport::default();
    let mut stmt = conn.prepare("PRAGMA integrity_check").map_err(sqlite_err)?;
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .map_err(sqlite_err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(sqlite_err)?;
    report.sqlite.extend(rows.into_iter().filter(|r| r != "ok"));
    for (name, q) in INVARIANTS {
        let n: i64 = conn.query_row(q, [], |r| r.get(0)).map_err(sqlite_err)?;
        if n > 0 {
            report.violations.push((name.to_string(), n));
        }
    }
    report.chunks = conn
        .query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))
        .map_err(sqlite_err)?;
    report.nodes = conn
        .query_row("SELECT count(*) FROM nodes", [], |r| r.get(0))
        .map_err(sqlite_err)?;
    report.edges = conn
        .query_row("SELECT count(*) FROM edges", [], |r| r.get(0))
        .map_err(sqlite_err)?;
    Ok(report)
}

impl EmbeddedStore {
    /// Runs SQLite's integrity checks and Evident's invariants (every edge and node has
    /// evidence that exists, chunk counts match the registry, no duplicate chunk positions).
    pub async fn check_integrity(&self) -> Result<IntegrityReport> {
        self.write(|conn, _| check(conn)).await
    }
}
