//! The batched graph write stores exactly what the row-by-row write it replaced stored.
//!
//! `reference` below is the previous implementation, kept verbatim in substance (one evidence
//! row per statement, `json_patch` on every conflict). The same sequence of writes — typed and
//! mention-only nodes, props added, repeated and changed, edges whose endpoints were or were not
//! written, evidence shared, repeated and beyond one batch, two partitions — goes through both
//! into two databases, and every row of `nodes`, `edges` and both evidence tables must agree.

use super::*;
use evident_core::Scope;
use serde_json::json;

mod reference {
    use super::*;

    fn add_evidence(conn: &Connection, table: &str, col: &str, id: i64, ev: &[Evidence]) {
        let q = format!(
            "INSERT OR IGNORE INTO {table}({col}, chunk_id, client_id, project_id, group_id) VALUES (?1, ?2, ?3, ?4, ?5)"
        );
        for e in ev {
            conn.execute(
                &q,
                rusqlite::params![
                    id,
                    e.chunk_id,
                    e.scope.client_id,
                    e.scope.project_id,
                    e.scope.group_id
                ],
            )
            .expect("evidence");
        }
    }

    fn ensure(conn: &Connection, p: &str, key: &NodeKey, d: Option<(&str, &str)>, ev: &[Evidence]) {
        let (t, l) = d.unwrap_or_else(|| {
            let l = if key.value().is_empty() {
                key.as_str()
            } else {
                key.value()
            };
            (key.namespace(), l)
        });
        let nid: i64 = conn
            .query_row(
                "INSERT INTO nodes(partition, key, type, label, props, updated_at) VALUES (?1, ?2, ?3, ?4, '{}', 0) \
                 ON CONFLICT(partition, key) DO UPDATE SET updated_at = nodes.updated_at RETURNING nid",
                rusqlite::params![p, key.as_str(), t, l],
                |r| r.get(0),
            )
            .expect("ensure");
        add_evidence(conn, "node_evidence", "nid", nid, ev);
    }

    pub(super) fn upsert_graph(
        conn: &Connection,
        p: &str,
        nodes: &[NodeWrite],
        edges: &[EdgeWrite],
    ) {
        let mut written: HashMap<&str, HashSet<&str>> = HashMap::new();
        for n in nodes {
            if n.mention_only {
                ensure(conn, p, &n.key, Some((&n.node_type, &n.label)), &n.evidence);
            } else {
                let nid: i64 = conn
                    .query_row(
                        "INSERT INTO nodes(partition, key, type, label, props, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, 0) \
                         ON CONFLICT(partition, key) DO UPDATE SET type = excluded.type, label = excluded.label, \
                         props = json_patch(nodes.props, excluded.props), updated_at = excluded.updated_at RETURNING nid",
                        rusqlite::params![p, n.key.as_str(), n.node_type, n.label, props_json(&n.props).expect("props")],
                        |r| r.get(0),
                    )
                    .expect("node");
                add_evidence(conn, "node_evidence", "nid", nid, &n.evidence);
            }
            let have = written.entry(n.key.as_str()).or_default();
            have.extend(n.evidence.iter().map(|e| e.chunk_id.as_str()));
        }
        for e in edges {
            let eid: i64 = conn
                .query_row(
                    "INSERT INTO edges(partition, from_key, edge_type, to_key, props) VALUES (?1, ?2, ?3, ?4, ?5) \
                     ON CONFLICT(partition, from_key, edge_type, to_key) DO UPDATE SET props = json_patch(edges.props, excluded.props) RETURNING eid",
                    rusqlite::params![p, e.from.as_str(), e.edge_type, e.to.as_str(), props_json(&e.props).expect("props")],
                    |r| r.get(0),
                )
                .expect("edge");
            add_evidence(conn, "edge_evidence", "eid", eid, &e.evidence);
            for end in [&e.from, &e.to] {
                let covered = written
                    .get(end.as_str())
                    .is_some_and(|h| e.evidence.iter().all(|x| h.contains(x.chunk_id.as_str())));
                if !covered {
                    ensure(conn, p, end, None, &e.evidence);
                }
            }
        }
    }
}

fn ev(chunks: &[&str], scope: &Scope) -> Vec<Evidence> {
    chunks
        .iter()
        .map(|c| Evidence {
            chunk_id: c.to_string(),
            scope: scope.clone(),
        })
        .collect()
}

fn node(key: &str, props: serde_json::Value, chunks: &[&str], scope: &Scope) -> NodeWrite {
    let key = NodeKey::from_canonical(key);
    NodeWrite {
        node_type: key.namespace().to_string(),
        label: format!("label of {key}"),
        key,
        props: props.as_object().cloned().unwrap_or_default(),
        evidence: ev(chunks, scope),
        mention_only: false,
    }
}

fn mention(key: &str, chunks: &[&str], scope: &Scope) -> NodeWrite {
    NodeWrite {
        mention_only: true,
        ..node(key, json!({}), chunks, scope)
    }
}

fn edge(
    from: &str,
    t: &str,
    to: &str,
    props: serde_json::Value,
    chunks: &[&str],
    scope: &Scope,
) -> EdgeWrite {
    EdgeWrite {
        from: NodeKey::from_canonical(from),
        to: NodeKey::from_canonical(to),
        edge_type: t.into(),
        props: props.as_object().cloned().unwrap_or_default(),
        evidence: ev(chunks, scope),
    }
}

/// A file with 150 symbols (evidence beyond two batches), written, re-written unchanged,
/// re-written with changed props, plus a commit touching it and a second partition.
fn writes() -> Vec<(String, Vec<NodeWrite>, Vec<EdgeWrite>)> {
    let c = Scope::client("c");
    let p = Scope {
        client_id: Some("c".into()),
        project_id: Some("p".into()),
        group_id: None,
    };
    let file = "file:repo/src/lib.rs";
    let mut nodes = vec![node(
        file,
        json!({"path": "src/lib.rs", "repository": "repo"}),
        &["k0"],
        &c,
    )];
    let mut edges = Vec::new();
    for i in 0..150 {
        let sym = format!("symbol:repo/lib.f{i}()");
        let chunk = format!("k{}", i / 3 + 1);
        nodes.push(node(
            &sym,
            json!({"line": i, "kind": "function", "name": format!("f{i}")}),
            &[&chunk, "k0"],
            &c,
        ));
        edges.push(edge(file, "contains", &sym, json!({}), &[&chunk], &c));
        if i % 7 == 0 {
            // An endpoint this write did not define: created bare, evidenced by the edge.
            edges.push(edge(
                &sym,
                "imports",
                &format!("import:dep{i}"),
                json!({"via": "use"}),
                &[&chunk],
                &c,
            ));
        }
    }
    nodes.push(mention("topic:parsing", &["k1", "k2"], &c));
    let mut changed = nodes.clone();
    changed[0].props.insert("language".into(), json!("rust"));
    changed[3].props.insert("line".into(), json!(99));
    let commit = vec![
        node(
            "commit:abc",
            json!({"hash": "abc", "message": "Fix \"quotes\" — é \u{1f}"}),
            &["m0"],
            &p,
        ),
        node(
            file,
            json!({"path": "src/lib.rs", "repository": "repo"}),
            &["m0"],
            &p,
        ),
        mention("person:ada", &["m0"], &p),
    ];
    let commit_edges = vec![
        edge(
            "commit:abc",
            "modifies",
            file,
            json!({"status": "M", "oldPath": null}),
            &["m1", "m2"],
            &p,
        ),
        edge(
            "commit:abc",
            "authored_by",
            "person:ada",
            json!({}),
            &["m0"],
            &p,
        ),
        edge("commit:abc", "parent", "commit:abb", json!({}), &["m0"], &p),
    ];
    vec![
        ("c".into(), nodes.clone(), edges.clone()),
        ("c".into(), nodes, edges.clone()),
        ("c".into(), changed, edges),
        ("c".into(), commit.clone(), commit_edges.clone()),
        ("d".into(), commit, commit_edges),
    ]
}

/// Every row of the graph tables, ids replaced by keys, props parsed (text order of keys is
/// not meaningful; the values are).
fn dump(conn: &Connection) -> Vec<String> {
    let mut out = Vec::new();
    let queries = [
        "SELECT 'node', partition, key, type, label, props FROM nodes",
        "SELECT 'edge', partition, from_key || ' ' || edge_type || ' ' || to_key, '', '', props FROM edges",
        "SELECT 'nev', n.partition, n.key, ev.chunk_id, coalesce(ev.client_id, '') || '/' || coalesce(ev.project_id, '') || '/' || coalesce(ev.group_id, ''), '{}' \
         FROM node_evidence ev JOIN nodes n ON n.nid = ev.nid",
        "SELECT 'eev', e.partition, e.from_key || ' ' || e.edge_type || ' ' || e.to_key, ev.chunk_id, coalesce(ev.client_id, '') || '/' || coalesce(ev.project_id, '') || '/' || coalesce(ev.group_id, ''), '{}' \
         FROM edge_evidence ev JOIN edges e ON e.eid = ev.eid",
    ];
    for q in queries {
        let mut stmt = conn.prepare(q).expect("dump");
        let rows = stmt
            .query_map([], |r| {
                let props: String = r.get(5)?;
                let props: serde_json::Value = serde_json::from_str(&props).expect("props json");
                Ok(format!(
                    "{} {} {} {} {} {props}",
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?
                ))
            })
            .expect("rows");
        out.extend(rows.map(|r| r.expect("row")));
    }
    out.sort();
    out
}

fn db() -> Connection {
    let c = Connection::open_in_memory().expect("open");
    crate::schema::configure(&c).expect("configure");
    c.execute_batch(crate::schema::DDL).expect("schema");
    c
}

#[test]
fn batched_graph_write_stores_what_the_row_by_row_write_stored() {
    let (old, new) = (db(), db());
    for (partition, nodes, edges) in writes() {
        reference::upsert_graph(&old, &partition, &nodes, &edges);
        upsert_graph(&new, &partition, &nodes, &edges).expect("batched write");
        assert_eq!(dump(&old), dump(&new), "after a write to {partition}");
    }
    let rows = dump(&new);
    assert!(rows.iter().filter(|r| r.starts_with("nev ")).count() > 2 * EVIDENCE_BATCH);
    assert!(
        rows.iter().any(|r| r.contains("\"language\":\"rust\"")),
        "props patched"
    );
    assert!(
        rows.iter().any(|r| r.contains("\"line\":99")),
        "props replaced"
    );
}

#[test]
fn an_edge_without_evidence_is_refused() {
    let conn = db();
    let c = Scope::client("c");
    let bad = edge("a:1", "rel", "b:1", json!({}), &[], &c);
    assert!(upsert_graph(&conn, "c", &[], &[bad]).is_err());
}
