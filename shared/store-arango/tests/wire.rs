//! Wire tests: the adapter talks real HTTP to a local server answering from recorded
//! exchanges (`tests/fixtures/*.json`, see `SOURCE.txt`). Each fixture pins the exact request
//! — method, path, query parameters, and for AQL the query text and every bind variable —
//! and each test checks how the recorded answer (success or error) is decoded.

use evident_core::{EdgeWrite, Evidence, NodeKey, NodeWrite, Scope, Visibility};
use evident_store::conformance::assert_error;
use evident_store::{
    AliasRegistry, Direction, EdgeKey, ErrorKind, GraphStore, Health, TraverseOptions,
};
use evident_store_arango::{ArangoConfig, ArangoStore};
use evident_wire::{Exchange, WireServer, fixtures};
use serde_json::{Map, json};

const DIR: &str = env!("CARGO_MANIFEST_DIR");

fn load(names: &[&str]) -> Vec<Exchange> {
    fixtures(DIR, names)
}

async fn start(names: &[&str]) -> (WireServer, ArangoStore) {
    let server = WireServer::start(load(names)).await;
    let store = ArangoStore::connect(&ArangoConfig::new(server.base.clone(), "evident"))
        .await
        .expect("connect");
    (server, store)
}

fn key(s: &str) -> NodeKey {
    NodeKey::from_canonical(s)
}

fn ev(id: &str, scope: &Scope) -> Evidence {
    Evidence {
        chunk_id: id.to_string(),
        scope: scope.clone(),
    }
}

/// The AQL text of every cursor the server was sent, in order.
fn cursor_queries(server: &WireServer) -> Vec<String> {
    server
        .received()
        .into_iter()
        .filter(|r| r.path == "/_db/evident/_api/cursor")
        .map(|r| r.body["query"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn props(v: serde_json::Value) -> Map<String, serde_json::Value> {
    v.as_object().cloned().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// connect

#[tokio::test]
async fn connect_checks_the_server_and_prepares_the_alias_collection() {
    let (server, store) = start(&["connect"]).await;
    assert_eq!(store.database(), "evident");
    let paths: Vec<String> = server.received().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        vec![
            "/_db/evident/_api/version",
            "/_db/evident/_api/database/current",
            "/_db/evident/_api/collection",
            "/_db/evident/_api/index",
            "/_db/evident/_api/index",
        ]
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn connect_creates_a_missing_database_and_accepts_existing_collections() {
    let server = WireServer::start(load(&["connect_creates_database"])).await;
    ArangoStore::connect(&ArangoConfig::new(server.base.clone(), "evident"))
        .await
        .expect("connect");
    let paths: Vec<String> = server.received().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths[..2],
        [
            "/_db/evident/_api/version".to_string(),
            "/_db/_system/_api/version".to_string()
        ],
        "the version is asked through the database, through _system while it is missing"
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn a_hardened_server_that_hides_its_version_still_connects() {
    let server = WireServer::start(load(&["connect_hardened"])).await;
    let store = ArangoStore::connect(&ArangoConfig::new(server.base.clone(), "evident"))
        .await
        .expect("a version answer without `version` is not an error");
    assert_eq!(store.database(), "evident");
    server.assert_exhausted();
}

#[tokio::test]
async fn a_user_without_system_access_is_told_what_is_really_wrong() {
    let server = WireServer::start(load(&["connect_restricted"])).await;
    let err = match ArangoStore::connect(&ArangoConfig::new(server.base.clone(), "evident")).await {
        Err(e) => e,
        Ok(_) => panic!("creating the database is refused"),
    };
    assert_error(&err, ErrorKind::Unavailable, "create database");
    let paths: Vec<String> = server.received().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        vec![
            "/_db/evident/_api/version",
            "/_db/_system/_api/version",
            "/_db/evident/_api/database/current",
            "/_db/_system/_api/database",
        ],
        "a refused _system version is an unknown version, not the failure"
    );
    server.assert_exhausted();
}

/// A node and an edge whose props hold nulls (top level, nested, inside an array), the
/// writes of the `upsert_null_props` fixture.
async fn upsert_with_null_props(store: &ArangoStore) {
    let c1 = Scope::client("c1");
    store
        .upsert(
            "c1",
            vec![NodeWrite {
                key: key("jira:a-3"),
                node_type: "jira".into(),
                label: "A-3".into(),
                props: props(
                    json!({"status": "open", "assignee": null, "meta": {"sprint": 3, "epic": null}, "labels": [null]}),
                ),
                evidence: vec![ev("e5", &c1)],
                mention_only: false,
            }],
            vec![EdgeWrite {
                from: key("jira:a-3"),
                to: key("jira:a-4"),
                edge_type: "blocks".into(),
                props: props(json!({"weight": null, "since": 1})),
                evidence: vec![ev("e5", &c1)],
            }],
        )
        .await
        .expect("upsert");
}

#[tokio::test]
async fn partition_indexes_are_not_unique_and_aliases_live_in_one_shard() {
    let (server, store) = start(&["connect", "upsert_null_props"]).await;
    upsert_with_null_props(&store).await;
    let sent = server.received();
    let unique: Vec<(String, serde_json::Value)> = sent
        .iter()
        .filter(|r| r.path == "/_db/evident/_api/index" && r.body["unique"] == json!(true))
        .map(|r| {
            let coll = r
                .query
                .iter()
                .find(|(k, _)| k == "collection")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            (coll, r.body["fields"].clone())
        })
        .collect();
    assert_eq!(
        unique,
        vec![("aliases".to_string(), json!(["clientId", "aliasKey"]))],
        "only the single-shard alias collection has a unique index"
    );
    let aliases = sent
        .iter()
        .find(|r| r.path == "/_db/evident/_api/collection" && r.body["name"] == json!("aliases"))
        .expect("aliases created");
    assert_eq!(aliases.body["numberOfShards"], json!(1));
    let partition: Vec<&serde_json::Value> = sent
        .iter()
        .filter(|r| r.path == "/_db/evident/_api/collection" && r.body["name"] != json!("aliases"))
        .map(|r| &r.body)
        .collect();
    assert_eq!(partition.len(), 2);
    assert!(
        partition.iter().all(|b| b.get("numberOfShards").is_none()),
        "partition collections keep the server's sharding: {partition:?}"
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn refused_credentials_are_unavailable_with_a_hint() {
    let server = WireServer::start(load(&["connect_unauthorized"])).await;
    // A variable cargo sets for test runs, else one every environment has.
    let var = if std::env::var("CARGO_PKG_NAME").is_ok() {
        "CARGO_PKG_NAME"
    } else {
        "PATH"
    };
    let user = std::env::var(var).expect("variable set");
    let mut cfg = ArangoConfig::new(server.base.clone(), "evident");
    cfg.username_env = Some(var.to_string());
    let err = match ArangoStore::connect(&cfg).await {
        Err(e) => e,
        Ok(_) => panic!("a 401 must fail the connect"),
    };
    assert_error(&err, ErrorKind::Unavailable, "username_env");
    let sent = server.received();
    assert_eq!(
        sent[0].header("authorization").map(str::to_string),
        Some(format!(
            "Basic {}",
            base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                format!("{user}:")
            )
        ))
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn a_named_but_unset_credentials_variable_fails_before_any_request() {
    let server = WireServer::start(Vec::new()).await;
    let mut cfg = ArangoConfig::new(server.base.clone(), "evident");
    cfg.username_env = Some("EVIDENT_WIRE_TEST_SURELY_UNSET_91b2".into());
    let err = match ArangoStore::connect(&cfg).await {
        Err(e) => e,
        Ok(_) => panic!("missing credentials must fail"),
    };
    assert_eq!(err.kind, ErrorKind::Invalid);
    assert!(err.message.contains("EVIDENT_WIRE_TEST_SURELY_UNSET_91b2"));
    assert!(server.received().is_empty());
}

#[tokio::test]
async fn no_server_is_unavailable() {
    let mut cfg = ArangoConfig::new("http://127.0.0.1:9", "evident");
    cfg.timeout_secs = 5;
    let err = match ArangoStore::connect(&cfg).await {
        Err(e) => e,
        Ok(_) => panic!("nothing listens on port 9"),
    };
    assert_eq!(err.kind, ErrorKind::Unavailable);
    assert!(err.is_retryable());
}

// ---------------------------------------------------------------------------------------
// graph

#[tokio::test]
async fn upsert_prepares_the_partition_once_and_writes_one_batch() {
    let (server, store) = start(&["connect", "upsert"]).await;
    let c1 = Scope::client("c1");
    let ticket = NodeWrite {
        key: key("jira:a-1"),
        node_type: "jira".into(),
        label: "A-1 Login fails".into(),
        props: props(json!({"status": "open"})),
        evidence: vec![ev("e1", &c1)],
        mention_only: false,
    };
    // A mention: its type and label are inserted when the node is missing (never update it);
    // its props are never written.
    let mention = NodeWrite {
        key: key("user:jan_novák"),
        node_type: "user".into(),
        label: "jan novák".into(),
        props: props(json!({"ignored": true})),
        evidence: vec![ev("e1", &c1)],
        mention_only: true,
    };
    let blocks = EdgeWrite {
        from: key("jira:a-1"),
        to: key("jira:a-2"),
        edge_type: "blocks".into(),
        props: Map::new(),
        evidence: vec![ev("e1", &c1)],
    };
    store
        .upsert("c1", vec![ticket, mention], vec![blocks.clone()])
        .await
        .expect("first upsert creates the partition (existing parts are fine)");
    // Second write to the same partition: no more collection/index/graph requests; this
    // time the server reports a write-write conflict.
    let err = store
        .upsert("c1", vec![], vec![blocks.clone()])
        .await
        .expect_err("conflict");
    assert_eq!(err.kind, ErrorKind::Conflict);
    assert!(err.is_retryable());
    // An edge without evidence never reaches the server.
    let mut bare = blocks;
    bare.evidence.clear();
    assert_eq!(
        store
            .upsert("c1", vec![], vec![bare])
            .await
            .expect_err("invalid")
            .kind,
        ErrorKind::Invalid
    );
    server.assert_exhausted();
}

/// A new node or edge is inserted without the nulls of its props (UPSERT's `keepNull: false`
/// only applies to updates); an existing one gets the patch with them, which deletes them.
#[tokio::test]
async fn upsert_inserts_props_without_nulls_and_updates_with_them() {
    let (server, store) = start(&["connect", "upsert_null_props"]).await;
    upsert_with_null_props(&store).await;
    let sent = server.received();
    let query = sent
        .iter()
        .find(|r| r.path == "/_db/evident/_api/cursor")
        .expect("one query");
    let node = &query.body["bindVars"]["nodes"][0];
    assert_eq!(
        node["insertProps"],
        json!({"status": "open", "meta": {"sprint": 3}, "labels": [null]})
    );
    assert_eq!(
        node["props"],
        json!({"status": "open", "assignee": null, "meta": {"sprint": 3, "epic": null}, "labels": [null]})
    );
    let text = query.body["query"].as_str().unwrap_or_default();
    assert!(
        text.contains(
            "INSERT { _key: w._key, key: w.key, type: w.type, label: w.label, props: w.insertProps,"
        ),
        "{text}"
    );
    let edge = &query.body["bindVars"]["edges"][0];
    assert_eq!(edge["insertProps"], json!({"since": 1}));
    assert!(
        text.contains("edgeType: v.edgeType, props: v.insertProps,"),
        "{text}"
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn remove_evidence_deletes_what_only_those_chunks_evidence_then_strips() {
    let (server, store) = start(&["connect", "remove_evidence"]).await;
    let removed = store
        .remove_evidence("c1", &["e2".into()])
        .await
        .expect("remove");
    assert_eq!((removed.chunks, removed.edges, removed.nodes), (0, 1, 2));
    // A partition that was never written has no collections: nothing to remove.
    let none = store
        .remove_evidence("", &["e9".into()])
        .await
        .expect("missing partition");
    assert_eq!((none.edges, none.nodes), (0, 0));
    assert_eq!(
        store.remove_evidence("c1", &[]).await.expect("empty").nodes,
        0,
        "no request for no chunks"
    );
    let queries = cursor_queries(&server);
    assert!(queries[0].contains("REMOVE d IN @@edges"), "delete first");
    assert!(
        queries[1].contains("UPDATE d WITH { evidence: kept }"),
        "then strip"
    );
    server.assert_exhausted();
}

/// The strip step fails after the delete step succeeded: the same call again deletes
/// nothing more and strips, instead of finding nothing to do and leaving documents behind.
#[tokio::test]
async fn remove_evidence_converges_when_retried_after_the_second_step_failed() {
    let (server, store) = start(&["connect", "remove_evidence_retry"]).await;
    let chunks = ["e2".to_string(), "e3".to_string()];
    let err = store
        .remove_evidence("c1", &chunks)
        .await
        .expect_err("the strip step answers 503");
    assert_eq!(err.kind, ErrorKind::Unavailable);
    assert!(err.is_retryable());
    let again = store.remove_evidence("c1", &chunks).await.expect("retry");
    assert_eq!(
        (again.edges, again.nodes),
        (0, 0),
        "deleted by the first try"
    );
    let steps: Vec<(bool, bool)> = cursor_queries(&server)
        .iter()
        .map(|q| (q.contains("REMOVE d IN"), q.contains("UPDATE d WITH")))
        .collect();
    assert_eq!(
        steps,
        vec![(true, false), (false, true), (true, false), (false, true)],
        "delete, strip (fails); delete, strip"
    );
    server.assert_exhausted();
}

/// A write racing the delete step leaves a document only the removed chunk evidences; the
/// strip step leaves it alone and reports it, and a second round deletes it.
#[tokio::test]
async fn remove_evidence_runs_another_round_for_documents_a_racing_write_left() {
    let (server, store) = start(&["connect", "remove_evidence_race"]).await;
    let removed = store
        .remove_evidence("c1", &["e4".to_string()])
        .await
        .expect("remove");
    assert_eq!(
        (removed.edges, removed.nodes),
        (1, 1),
        "summed over both rounds"
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn remove_edges_deletes_by_identity_and_is_idempotent() {
    let (server, store) = start(&["connect", "remove_edges"]).await;
    let gone = EdgeKey {
        from: key("branch:main"),
        edge_type: "has_commit".into(),
        to: key("commit:a1"),
    };
    assert_eq!(
        store
            .remove_edges("c1", std::slice::from_ref(&gone))
            .await
            .expect("remove"),
        1
    );
    assert_eq!(store.remove_edges("c1", &[gone]).await.expect("again"), 0);
    server.assert_exhausted();
}

#[tokio::test]
async fn fold_node_moves_evidence_and_edges_then_deletes_the_alias() {
    let (server, store) = start(&["connect", "fold_node"]).await;
    for (into, folded, why) in [
        ("user:ann@x.io", true, "folded"),
        ("user:ann@x.io", false, "idempotent"),
        ("user:ann", false, "folding a key into itself does nothing"),
    ] {
        let got = store.fold_node("c1", &key("user:ann"), &key(into)).await;
        assert_eq!(got.expect(why), folded, "{why}");
    }
    server.assert_exhausted();
}

#[tokio::test]
async fn get_nodes_merges_partitions_and_follows_cursor_batches() {
    let (server, store) = start(&["connect", "get_nodes"]).await;
    let reader = Visibility::of(Scope::client("c1").with_project("p1"));
    let got = store
        .get_nodes(
            &reader,
            &[
                key("user:jan_novák"),
                key("jira:x-1"),
                key("missing:z"),
                key("user:jan_novák"),
            ],
        )
        .await
        .expect("get");
    assert_eq!(got.len(), 2, "missing skipped, duplicates once");
    assert_eq!(got[0].key, key("user:jan_novák"));
    assert_eq!(
        (got[0].node_type.as_str(), got[0].label.as_str()),
        ("user", "Jan Novák"),
        "the client's record wins"
    );
    assert_eq!(got[0].props, props(json!({"a": 1, "b": 2})));
    assert_eq!(got[0].evidence_chunk_ids, vec!["g1", "c3"]);
    assert_eq!(got[1].key, key("jira:x-1"));
    assert_eq!(got[1].evidence_chunk_ids, vec!["c1", "c2"]);
    assert!(
        store
            .get_nodes(&reader, &[])
            .await
            .expect("none")
            .is_empty(),
        "no request for no keys"
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn a_cursor_failing_part_way_is_deleted() {
    let (server, store) = start(&["connect", "get_nodes_batch_fails"]).await;
    let err = store
        .get_nodes(&Visibility::of(Scope::client("c1")), &[key("user:jan")])
        .await
        .expect_err("the second batch answers 503");
    assert_eq!(err.kind, ErrorKind::Unavailable);
    let last = server.received().pop().expect("requests");
    assert_eq!(
        (last.method.as_str(), last.path.as_str()),
        ("DELETE", "/_db/evident/_api/cursor/7822")
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn an_unavailable_server_is_retryable() {
    let (server, store) = start(&["connect", "get_nodes_unavailable"]).await;
    let err = store
        .get_nodes(&Visibility::of(Scope::client("c1")), &[key("user:jan")])
        .await
        .expect_err("503");
    assert_eq!(err.kind, ErrorKind::Unavailable);
    assert!(err.is_retryable());
    server.assert_exhausted();
}

#[tokio::test]
async fn traverse_walks_hop_by_hop_with_filters_in_the_query() {
    let (server, store) = start(&["connect", "traverse"]).await;
    let sub = store
        .traverse(
            &Visibility::of(Scope::client("c1")),
            &[key("file:a")],
            &TraverseOptions {
                max_depth: 2,
                direction: Direction::Out,
                edge_types: vec!["imports".into()],
                max_nodes: 10,
            },
        )
        .await
        .expect("traverse");
    let nodes: Vec<(String, usize)> = sub
        .nodes
        .iter()
        .map(|(n, d)| (n.key.to_string(), *d))
        .collect();
    assert_eq!(
        nodes,
        vec![
            ("file:a".to_string(), 0),
            ("file:b".to_string(), 1),
            ("file:c".to_string(), 2)
        ]
    );
    let edges: Vec<(String, String, Vec<String>)> = sub
        .edges
        .iter()
        .map(|e| {
            (
                e.from.to_string(),
                e.to.to_string(),
                e.evidence_chunk_ids.clone(),
            )
        })
        .collect();
    assert_eq!(
        edges,
        vec![
            ("file:a".into(), "file:b".into(), vec!["t1".to_string()]),
            ("file:b".into(), "file:c".into(), vec!["t1".to_string()]),
        ],
        "the edge without visible evidence is not walked"
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn search_nodes_ranks_short_keys_first_and_reports_query_errors() {
    let (server, store) = start(&["connect", "search_nodes"]).await;
    let vis = Visibility::of(Scope::client("c1"));
    let found = store
        .search_nodes(&vis, "FILE:B", None, 10)
        .await
        .expect("search");
    assert_eq!(
        found.iter().map(|n| n.key.as_str()).collect::<Vec<_>>(),
        vec!["file:b", "file:bb"]
    );
    let err = store
        .search_nodes(&vis, "file", Some("commit"), 10)
        .await
        .expect_err("parse error");
    assert_eq!(err.kind, ErrorKind::Invalid);
    assert!(!err.is_retryable());
    server.assert_exhausted();
}

#[tokio::test]
async fn list_nodes_pages_both_partitions_in_one_query() {
    let (server, store) = start(&["connect", "list_nodes"]).await;
    let c1 = Visibility::of(Scope::client("c1"));
    let keys = |nodes: &[evident_core::Node]| -> Vec<String> {
        nodes.iter().map(|n| n.key.to_string()).collect()
    };
    let first = store
        .list_nodes(&c1, Some("thread"), None, 2)
        .await
        .expect("page 1");
    assert_eq!(keys(&first.nodes), ["thread:a0", "thread:a1"]);
    assert_eq!(first.next_after, Some(key("thread:a1")));
    let last = store
        .list_nodes(&c1, Some("thread"), first.next_after.as_ref(), 2)
        .await
        .expect("page 2");
    assert_eq!(
        (keys(&last.nodes), last.next_after),
        (vec!["thread:a2".to_string()], None)
    );
    // A client that never wrote sees the global partition.
    let c2 = store
        .list_nodes(&Visibility::of(Scope::client("c2")), None, None, 5)
        .await
        .expect("c2");
    assert_eq!(
        (keys(&c2.nodes), c2.next_after),
        (vec!["thread:a0".to_string()], None)
    );
    let err = store
        .list_nodes(&c1, Some("meeting"), None, 10)
        .await
        .expect_err("503");
    assert_eq!(err.kind, ErrorKind::Unavailable);
    assert!(err.is_retryable());
    server.assert_exhausted();
}

// ---------------------------------------------------------------------------------------
// aliases

#[tokio::test]
async fn resolve_is_one_read_and_flush_writes_counts_later() {
    let (server, store) = start(&["connect", "alias_resolve"]).await;
    let got = store
        .resolve(
            "c1",
            &[key("user:jnovak"), key("user:nobody"), key("user:jnovak")],
        )
        .await
        .expect("resolve");
    assert_eq!(
        got,
        vec![
            key("user:jan_novak"),
            key("user:nobody"),
            key("user:jan_novak")
        ]
    );
    // The first flush fails: the counts are kept and the next flush sends them again.
    assert_eq!(
        store.flush().await.expect_err("503").kind,
        ErrorKind::Unavailable
    );
    store.flush().await.expect("flush");
    store.flush().await.expect("nothing pending: no request");
    server.assert_exhausted();
}

#[tokio::test]
async fn register_retries_a_unique_violation_as_an_update_and_refuses_cycles() {
    let (server, store) = start(&["connect", "alias_register"]).await;
    let entry = store
        .register("c1", &key("user:jnovak"), &key("user:jan_novak"))
        .await
        .expect("register");
    assert_eq!(entry.alias, key("user:jnovak"));
    assert_eq!(entry.canonical, key("user:jan_novak"));
    assert_eq!(entry.seen_count, 2);
    assert_eq!(entry.first_seen_at, "2026-11-22T10:00:00.000Z");
    let err = store
        .register("c1", &key("user:jan_novak"), &key("user:jnovak"))
        .await
        .expect_err("cycle");
    assert_eq!(err.kind, ErrorKind::Invalid);
    server.assert_exhausted();
}

#[tokio::test]
async fn merge_repoints_aliases_and_the_source() {
    let (server, store) = start(&["connect", "alias_merge"]).await;
    assert_eq!(
        store
            .merge("c1", &key("user:jan_novak"), &key("user:jan"))
            .await
            .expect("merge"),
        3
    );
    assert_eq!(
        store
            .merge("c1", &key("user:jan"), &key("user:jan"))
            .await
            .expect_err("self")
            .kind,
        ErrorKind::Invalid
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn list_returns_entries_in_alias_order() {
    let (server, store) = start(&["connect", "alias_list"]).await;
    let listed: Vec<String> = store
        .list("c1", &key("user:jan"))
        .await
        .expect("list")
        .into_iter()
        .map(|e| e.alias.to_string())
        .collect();
    assert_eq!(
        listed,
        vec![
            "user:jan_novak",
            "user:jan_novak_example_com",
            "user:jnovak"
        ]
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn stats_flushes_first() {
    let (server, store) = start(&["connect", "alias_stats"]).await;
    store
        .resolve("c1", &[key("user:jnovak")])
        .await
        .expect("resolve");
    let stats = store.stats("c1", 1).await.expect("stats");
    assert_eq!((stats.total_aliases, stats.unique_canonicals), (3, 1));
    assert_eq!(stats.top_aliases.len(), 1);
    assert_eq!(stats.top_aliases[0].alias, key("user:jnovak"));
    assert_eq!(stats.top_aliases[0].seen_count, 6);
    server.assert_exhausted();
}

// ---------------------------------------------------------------------------------------
// health

#[tokio::test]
async fn health_reports_version_and_database() {
    let (server, store) = start(&["connect", "health"]).await;
    let report = store.check().await;
    assert!(report.ready, "{report:?}");
    assert_eq!(report.backend, "arango");
    assert_eq!(report.roles, vec!["graph", "aliases"]);
    let detail = report.detail.unwrap_or_default();
    assert!(
        detail.contains("3.12.4") && detail.contains("evident"),
        "{detail}"
    );
    let report = store.check().await;
    assert!(
        !report.ready,
        "the second check finds the server shutting down"
    );
    assert!(report.detail.unwrap_or_default().contains("503"));
    server.assert_exhausted();
}

#[tokio::test]
async fn health_accepts_a_server_that_hides_its_version() {
    let (server, store) = start(&["connect", "health_hardened"]).await;
    let report = store.check().await;
    assert!(report.ready, "{report:?}");
    let detail = report.detail.unwrap_or_default();
    assert!(
        detail.contains("version not disclosed") && detail.contains("evident"),
        "{detail}"
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn count_asks_each_partition_once_leaving_out_what_earlier_ones_counted() {
    let (server, store) = start(&["connect", "count_graph"]).await;
    let c1 = Visibility::of(Scope::client("c1"));
    let counts = |nodes, edges| evident_store::GraphCounts { nodes, edges };
    assert_eq!(store.count(&c1).await.expect("c1"), counts(7, 3));
    // A client that never wrote sees what the global partition holds.
    let c2 = Visibility::of(Scope::client("c2"));
    assert_eq!(store.count(&c2).await.expect("c2"), counts(3, 1));
    // No global partition: the client's is asked without naming it.
    assert_eq!(store.count(&c1).await.expect("no global"), counts(5, 2));
    let err = store.count(&c1).await.expect_err("503");
    assert_eq!(err.kind, ErrorKind::Unavailable);
    assert!(err.is_retryable());
    server.assert_exhausted();
}

#[tokio::test]
async fn evidenced_by_asks_each_partition_once_and_unions_the_links() {
    let (server, store) = start(&["connect", "evidenced_by"]).await;
    let c1 = Visibility::of(Scope::client("c1"));
    let chunks: Vec<String> = ["k1", "k2", "k3"].map(String::from).to_vec();
    let links = store.evidenced_by(&c1, &chunks).await.expect("c1");
    let edge = evident_store::EdgeKey {
        from: key("service:billing"),
        edge_type: "depends_on".into(),
        to: key("service:ledger"),
    };
    assert_eq!(
        links,
        vec![
            evident_store::Evidenced {
                chunk_id: "k1".into(),
                nodes: vec![key("service:billing"), key("service:ledger")],
                edges: vec![edge],
            },
            evident_store::Evidenced {
                chunk_id: "k3".into(),
                nodes: vec![key("topic:a0")],
                edges: vec![],
            },
        ]
    );
    // A client that never wrote: its missing collections add nothing.
    let c2 = Visibility::of(Scope::client("c2"));
    assert!(
        store
            .evidenced_by(&c2, &chunks)
            .await
            .expect("c2")
            .is_empty()
    );
    let err = store.evidenced_by(&c1, &chunks).await.expect_err("503");
    assert_eq!(err.kind, ErrorKind::Unavailable);
    server.assert_exhausted();
}
