//! Wire tests: the adapter against recorded Weaviate exchanges (`tests/fixtures/*.json`,
//! written from Weaviate's REST and GraphQL reference — see `tests/fixtures/SOURCE.txt`).
//!
//! Every fixture pins the exact request (method, path, query parameters and JSON body,
//! including the GraphQL text with its `where` filters); each test checks how the recorded
//! answers, successes and failures alike, are handled, and that every exchange was used.
//! Write batches carry time-based `seq`/`createdAt` values, so their bodies are checked here
//! from the received requests instead of being pinned in the fixture.

use evident_core::{Chunk, Locator, NodeKey, Scope, Visibility};
use evident_store::conformance::assert_error;
use evident_store::{ChunkFilter, ChunkStore, ErrorKind, Health, VectorSpace};
use evident_store_weaviate::{WeaviateConfig, WeaviateStore, object_id};
use evident_wire::WireServer;
use serde_json::{Value, json};

mod common;

use common::{config, load, requests};

/// A store connected to an up-to-date collection, with the given fixtures queued after.
async fn connected(names: &[&str]) -> (WireServer, WeaviateStore) {
    let mut all = vec!["connect_existing"];
    all.extend_from_slice(names);
    let server = WireServer::start(load(&all)).await;
    let store = WeaviateStore::connect(&config(&server))
        .await
        .expect("connect");
    (server, store)
}

fn chunk(scope: Scope, id: &str, content: &str, ordinal: usize) -> Chunk {
    evident_store::conformance::chunk(&scope, "urn:doc", id, "doc", content, ordinal)
}

fn vis(scope: Scope) -> Visibility {
    Visibility::of(scope)
}

fn kinds(k: &[&str]) -> ChunkFilter {
    ChunkFilter {
        kinds: k.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn space() -> VectorSpace {
    VectorSpace {
        embedder: "test:axis".into(),
        dim: 4,
    }
}

/// Removes the time-based `seq` and `createdAt` of every object of a batch body, checking
/// they are integers, and returns the `seq` values in order.
/// Each object's `metadata` property (a JSON string) parsed, so bodies compare by content:
/// the key order inside the string depends on whether serde_json keeps insertion order, which
/// other crates of the workspace switch on (`preserve_order`, through bson).
fn parse_metadata(body: &mut Value) {
    for object in body["objects"].as_array_mut().expect("objects") {
        let props = object["properties"].as_object_mut().expect("properties");
        if let Some(Value::String(m)) = props.get("metadata") {
            let parsed: Value = serde_json::from_str(m).expect("metadata is JSON");
            props.insert("metadata".into(), parsed);
        }
    }
}

fn strip_clock(body: &mut Value) -> Vec<i64> {
    let mut seqs = Vec::new();
    for object in body["objects"].as_array_mut().expect("objects") {
        let props = object["properties"].as_object_mut().expect("properties");
        let seq = props.remove("seq").and_then(|v| v.as_i64()).expect("seq");
        let created = props
            .remove("createdAt")
            .and_then(|v| v.as_i64())
            .expect("createdAt");
        assert!(
            created > 1_600_000_000_000,
            "createdAt is epoch milliseconds"
        );
        seqs.push(seq);
    }
    seqs
}

#[tokio::test]
async fn connect_creates_missing_collections() {
    let server = WireServer::start(load(&["connect_create"])).await;
    let store = WeaviateStore::connect(&config(&server))
        .await
        .expect("connect");
    assert_eq!(store.collection(), "EvidentChunk");
    server.assert_exhausted();
}

#[tokio::test]
async fn connect_adds_missing_properties_without_touching_data() {
    let server = WireServer::start(load(&["connect_migrate"])).await;
    WeaviateStore::connect(&config(&server))
        .await
        .expect("connect");
    server.assert_exhausted();
    let received = server.received();
    let added: Vec<&str> = requests(&received, "POST", "/v1/schema/EvidentChunk/properties")
        .iter()
        .map(|r| r.body["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        added,
        vec![
            "projectId",
            "createdAt",
            "seq",
            "knowledgeType",
            "infoType",
            "tags",
            "entity"
        ],
        "an empty collection needs no back-fill"
    );
    assert!(
        received
            .iter()
            .all(|r| r.method != "DELETE" && r.method != "PUT"),
        "migration only adds"
    );
}

#[tokio::test]
async fn connect_refuses_to_add_an_indexed_property_to_a_populated_collection() {
    for (fixture, multi_tenancy, property) in [
        ("connect_migrate_populated", false, "projectId"),
        ("connect_migrate_populated_mt", true, "groupId"),
    ] {
        let server = WireServer::start(load(&[fixture])).await;
        let mut cfg = config(&server);
        cfg.multi_tenancy = multi_tenancy;
        let err = WeaviateStore::connect(&cfg).await.expect_err("refused");
        assert_eq!(err.kind, ErrorKind::Incompatible, "{fixture}");
        assert!(
            err.message.contains(property) && err.message.contains("holds objects"),
            "{}",
            err.message
        );
        assert!(
            requests(
                &server.received(),
                "POST",
                "/v1/schema/EvidentChunk/properties"
            )
            .is_empty(),
            "nothing added"
        );
        server.assert_exhausted();
    }
}

/// Connects the adapter refuses, and what the error says: its kind and the words naming the
/// cause.
#[tokio::test]
async fn refused_connects_name_the_cause() {
    let cases: [(&str, ErrorKind, &[&str]); 4] = [
        // Exact-match fields must be `field`-tokenised.
        (
            "connect_incompatible",
            ErrorKind::Incompatible,
            &["sourceUrn", "`word`"],
        ),
        // A starting server: retry later.
        ("connect_unavailable", ErrorKind::Unavailable, &[]),
        // Too old for `ContainsAny`.
        ("connect_old_version", ErrorKind::Incompatible, &["1.19.6"]),
        // The server refuses the schema.
        (
            "connect_schema_invalid",
            ErrorKind::Invalid,
            &["422", "invalid vectorizer"],
        ),
    ];
    for (scenario, kind, words) in cases {
        let server = WireServer::start(load(&[scenario])).await;
        let err = WeaviateStore::connect(&config(&server))
            .await
            .expect_err(scenario);
        assert_eq!(err.kind, kind, "{scenario}");
        assert_eq!(
            err.is_retryable(),
            kind == ErrorKind::Unavailable,
            "{scenario}"
        );
        for word in words {
            assert!(err.message.contains(word), "{scenario}: {}", err.message);
        }
        server.assert_exhausted();
    }
}

#[tokio::test]
async fn connect_refuses_unreachable_servers_as_unavailable() {
    // Nothing listens on port 9 of the loopback (discard); the connection is refused.
    let mut cfg = WeaviateConfig::new("http://127.0.0.1:9");
    cfg.timeout_secs = 2;
    let err = WeaviateStore::connect(&cfg).await.expect_err("refused");
    assert_eq!(err.kind, ErrorKind::Unavailable, "{}", err.message);
}

#[tokio::test]
async fn the_api_key_goes_in_a_bearer_header() {
    // Cargo sets CARGO_PKG_NAME for the test process; it stands in for a key variable.
    let Ok(key) = std::env::var("CARGO_PKG_NAME") else {
        eprintln!("SKIPPED: CARGO_PKG_NAME is not set (not run by cargo)");
        return;
    };
    let server = WireServer::start(load(&["connect_existing"])).await;
    let mut cfg = config(&server);
    cfg.api_key_env = Some("CARGO_PKG_NAME".into());
    WeaviateStore::connect(&cfg).await.expect("connect");
    server.assert_exhausted();
    for r in server.received() {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {key}").as_str()),
            "{} {}",
            r.method,
            r.path
        );
    }
}

#[tokio::test]
async fn bind_vector_space_records_it_once_then_checks_it() {
    let (server, store) = connected(&["vector_space_new"]).await;
    store.bind_vector_space(&space()).await.expect("recorded");
    store.bind_vector_space(&space()).await.expect("same space");
    server.assert_exhausted();
    // Bound: vectors of another size are refused before any request.
    let err = store
        .upsert(vec![(
            chunk(Scope::client("c1"), "d1", "alpha", 0),
            vec![1.0, 0.0],
        )])
        .await
        .expect_err("wrong dimension");
    assert_eq!(err.kind, ErrorKind::Invalid);
    let err = store
        .search_vector(
            &vis(Scope::client("c1")),
            &[1.0, 0.0, 0.0],
            &ChunkFilter::default(),
            3,
        )
        .await
        .expect_err("wrong dimension");
    assert_eq!(err.kind, ErrorKind::Invalid);
    let err = store
        .upsert(vec![(
            chunk(Scope::client("c1"), "d1", "alpha", 0),
            vec![f32::NAN, 0.0, 0.0, 0.0],
        )])
        .await
        .expect_err("not finite");
    assert_eq!(err.kind, ErrorKind::Invalid);
    assert!(server.unmatched().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn bind_vector_space_refuses_another_embedder() {
    let (server, store) = connected(&["vector_space_incompatible"]).await;
    let err = store
        .bind_vector_space(&space())
        .await
        .expect_err("other space");
    assert_eq!(err.kind, ErrorKind::Incompatible);
    assert!(
        err.message.contains("ollama:nomic-embed-text:768") && err.message.contains("test:axis"),
        "{}",
        err.message
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn upsert_writes_batches_with_deterministic_ids() {
    let (server, store) = connected(&["upsert"]).await;
    let mut d1 = chunk(Scope::client("c1").with_project("p1"), "d1", "alpha one", 0);
    d1.title = Some("Intro".into());
    d1.graph_refs = vec![NodeKey::from_canonical("jira:abc-1")];
    d1.metadata.insert("lang".into(), json!("en"));
    evident_core::Typed::from_raw(
        Some(evident_core::KnowledgeType::Fact),
        Some("context"),
        &["Ops".into()],
        None,
    )
    .expect("labels")
    .insert_into(&mut d1.metadata);
    d1.observed_at = Some("2026-01-02T03:04:05Z".into());
    let d2 = chunk(Scope::client("c1"), "d2", "beta two", 1);
    let g1 = chunk(Scope::global(), "g1", "gamma", 2);
    store
        .upsert(vec![
            (d1, vec![1.0, 0.0, 0.0, 0.0]),
            (d2, vec![0.0, 1.0, 0.0, 0.0]),
            (g1, vec![0.0, 0.0, 1.0, 0.0]),
        ])
        .await
        .expect("upsert");
    server.assert_exhausted();
    let received = server.received();
    let batches = requests(&received, "POST", "/v1/batch/objects");
    assert_eq!(batches.len(), 2, "batch_size 2");
    let mut seqs = Vec::new();
    let mut bodies = Vec::new();
    for b in batches {
        let mut body = b.body.clone();
        seqs.extend(strip_clock(&mut body));
        parse_metadata(&mut body);
        bodies.push(body);
    }
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seq increases in write order: {seqs:?}"
    );
    assert_eq!(
        bodies[0],
        json!({"objects": [
            {
                "class": "EvidentChunk",
                "id": object_id("c1", "d1"),
                "vector": [1.0, 0.0, 0.0, 0.0],
                "properties": {
                    "chunkId": "d1", "partition": "c1", "clientId": "c1", "projectId": "p1",
                    "sourceUrn": "urn:doc", "kind": "doc", "title": "Intro",
                    "content": "alpha one", "contentHash": "sha256:d1",
                    "locator": "{\"type\":\"document\",\"uri\":\"urn:doc\",\"charStart\":0,\"charEnd\":9}",
                    "graphRefs": ["jira:abc-1"],
                    "metadata": {"knowledge": {"infoType": "context", "knowledgeType": "fact", "tags": ["ops"]}, "lang": "en"},
                    "observedAt": "2026-01-02T03:04:05Z", "ordinal": 0,
                    "knowledgeType": "fact", "infoType": "context", "tags": ["ops"]
                }
            },
            {
                "class": "EvidentChunk",
                "id": object_id("c1", "d2"),
                "vector": [0.0, 1.0, 0.0, 0.0],
                "properties": {
                    "chunkId": "d2", "partition": "c1", "clientId": "c1",
                    "sourceUrn": "urn:doc", "kind": "doc",
                    "content": "beta two", "contentHash": "sha256:d2",
                    "locator": "{\"type\":\"document\",\"uri\":\"urn:doc\",\"charStart\":0,\"charEnd\":8}",
                    "graphRefs": [], "metadata": {}, "ordinal": 1
                }
            }
        ]})
    );
    assert_eq!(
        bodies[1],
        json!({"objects": [{
            "class": "EvidentChunk",
            "id": object_id("", "g1"),
            "vector": [0.0, 0.0, 1.0, 0.0],
            "properties": {
                "chunkId": "g1", "partition": "",
                "sourceUrn": "urn:doc", "kind": "doc",
                "content": "gamma", "contentHash": "sha256:g1",
                "locator": "{\"type\":\"document\",\"uri\":\"urn:doc\",\"charStart\":0,\"charEnd\":5}",
                "graphRefs": [], "metadata": {}, "ordinal": 2
            }
        }]}),
        "global chunks have no scope properties at all"
    );
    for b in requests(&received, "POST", "/v1/batch/objects") {
        assert!(
            b.query
                .contains(&("consistency_level".to_string(), "QUORUM".to_string())),
            "writes wait for a quorum"
        );
    }
}

#[tokio::test]
async fn upsert_fails_when_weaviate_refuses_an_object() {
    let (server, store) = connected(&["upsert_object_error"]).await;
    let err = store
        .upsert(vec![
            (
                chunk(Scope::client("c1"), "d1", "alpha", 0),
                vec![1.0, 0.0, 0.0, 0.0],
            ),
            (
                chunk(Scope::client("c1"), "d2", "beta", 1),
                vec![1.0, 0.0, 0.0, 0.0, 0.0],
            ),
        ])
        .await
        .expect_err("one object failed");
    assert_eq!(err.kind, ErrorKind::Invalid);
    assert!(
        err.message.contains("`d2`") && err.message.contains("inconsistent vector lengths"),
        "{}",
        err.message
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn upsert_refuses_a_scope_without_client() {
    let (server, store) = connected(&[]).await;
    let broken = Scope {
        client_id: None,
        project_id: Some("p1".into()),
        group_id: None,
    };
    let err = store
        .upsert(vec![(chunk(broken, "d1", "alpha", 0), vec![1.0, 0.0])])
        .await
        .expect_err("inconsistent scope");
    assert_eq!(err.kind, ErrorKind::Invalid);
    server.assert_exhausted();
}

#[tokio::test]
async fn relocate_merges_properties_and_skips_missing_chunks() {
    let (server, store) = connected(&["relocate"]).await;
    let mut moved = chunk(Scope::client("c1").with_project("p1"), "d1", "alpha", 5);
    moved.title = Some("Renamed heading".into());
    moved.graph_refs = vec![NodeKey::from_canonical("jira:abc-1")];
    moved.locator = Locator::Document {
        uri: "urn:doc".into(),
        char_start: 100,
        char_end: 105,
        page: None,
        section: None,
    };
    let gone = chunk(Scope::client("c1").with_project("p1"), "gone", "alpha", 1);
    store.relocate(vec![moved, gone]).await.expect("relocate");
    server.assert_exhausted();
}

#[tokio::test]
async fn delete_counts_the_objects_that_existed() {
    let (server, store) = connected(&["delete"]).await;
    let ids: Vec<String> = ["d1", "d2", "d1", "gone"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(store.delete("c1", &ids).await.expect("delete"), 2);
    assert_eq!(
        store.delete("", &["g1".to_string()]).await.expect("delete"),
        1
    );
    assert_eq!(store.delete("c1", &[]).await.expect("nothing"), 0);
    server.assert_exhausted();
}

#[tokio::test]
async fn delete_repeats_until_a_low_server_limit_deleted_every_match() {
    let (server, store) = connected(&["delete_paged"]).await;
    let ids = vec!["d1".to_string(), "d2".to_string()];
    assert_eq!(store.delete("c1", &ids).await.expect("delete"), 2);
    server.assert_exhausted();
}

#[tokio::test]
async fn delete_reports_objects_weaviate_could_not_delete() {
    let (server, store) = connected(&["delete_failed"]).await;
    let err = store
        .delete("c1", &["d1".to_string()])
        .await
        .expect_err("failed");
    assert_eq!(
        err.kind,
        ErrorKind::Unavailable,
        "a read-only shard recovers"
    );
    assert!(err.message.contains("read-only"), "{}", err.message);
    server.assert_exhausted();
}

#[tokio::test]
async fn source_chunks_pages_in_ordinal_order() {
    let (server, store) = connected(&["source_chunks"]).await;
    let listed = store
        .source_chunks("c1", "urn:doc")
        .await
        .expect("source chunks");
    assert_eq!(
        listed,
        vec![
            ("d1".to_string(), "sha256:d1".to_string()),
            ("d2".to_string(), "sha256:d2".to_string()),
            ("d3".to_string(), "sha256:d3".to_string()),
        ]
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn get_keeps_the_asked_order_and_skips_missing() {
    let (server, store) = connected(&["get"]).await;
    let reader = vis(Scope::client("c1").with_project("p1"));
    let ids: Vec<String> = ["d2", "d1", "missing"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let got = store.get(&reader, &ids).await.expect("get");
    assert_eq!(
        got.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        vec!["d2", "d1"]
    );
    assert_eq!(got[0].title.as_deref(), Some("Intro"));
    assert_eq!(got[0].scope, Scope::client("c1"));
    assert_eq!(got[0].ordinal, 1);
    assert_eq!(
        got[1],
        chunk(Scope::client("c1").with_project("p1"), "d1", "alpha one", 0),
        "every field decodes back"
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn search_text_escapes_the_query_and_reads_scores() {
    let (server, store) = connected(&["search_text"]).await;
    let reader = vis(Scope::client("c1").with_project("p1").with_group("g1"));
    let hits = store
        .search_text(
            &reader,
            r#"say "quote" \ back\slash Příliš"#,
            &kinds(&["doc"]),
            5,
        )
        .await
        .expect("bm25");
    assert_eq!(
        hits.iter().map(|h| h.chunk_id.as_str()).collect::<Vec<_>>(),
        vec!["d1", "d2"]
    );
    assert!((hits[0].score - 1.2).abs() < 1e-6 && (hits[1].score - 0.4).abs() < 1e-6);
    assert!(
        store
            .search_text(&reader, "   ", &ChunkFilter::default(), 5)
            .await
            .expect("empty query")
            .is_empty()
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn search_vector_scores_cosine_similarity() {
    let (server, store) = connected(&["search_vector"]).await;
    let hits = store
        .search_vector(
            &vis(Scope::global()),
            &[1.0, 0.0, 0.0, 0.0],
            &ChunkFilter::default(),
            2,
        )
        .await
        .expect("knn");
    assert_eq!(
        hits.iter().map(|h| h.chunk_id.as_str()).collect::<Vec<_>>(),
        vec!["g1", "g2"]
    );
    assert!((hits[0].score - 0.875).abs() < 1e-6, "1 - distance");
    assert!((hits[1].score - 0.5).abs() < 1e-6);
    server.assert_exhausted();
}

#[tokio::test]
async fn by_kind_lists_newest_first() {
    let (server, store) = connected(&["by_kind"]).await;
    let listed = store
        .by_kind(&vis(Scope::client("c1")), &kinds(&["email", "doc"]), 2)
        .await
        .expect("by kind");
    assert_eq!(
        listed.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        vec!["k3", "k1"]
    );
    assert_eq!(listed[1].kind, "email");
    assert!(
        store
            .by_kind(&vis(Scope::client("c1")), &ChunkFilter::default(), 0)
            .await
            .expect("limit 0")
            .is_empty()
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn hybrid_search_fuses_text_and_vector() {
    let (server, store) = connected(&["hybrid"]).await;
    let reader = vis(Scope::client("c1"));
    let hits = store
        .search_hybrid(
            &reader,
            "alpha",
            &[0.0, 1.0, 0.0, 0.0],
            &ChunkFilter::default(),
            0.5,
            3,
        )
        .await
        .expect("hybrid");
    assert_eq!(
        hits.iter().map(|h| h.chunk_id.as_str()).collect::<Vec<_>>(),
        vec!["d1", "d2"]
    );
    let err = store
        .search_hybrid(
            &reader,
            "alpha",
            &[0.0, 1.0, 0.0, 0.0],
            &ChunkFilter::default(),
            2.0,
            3,
        )
        .await
        .expect_err("alpha out of range");
    assert_eq!(err.kind, ErrorKind::Invalid);
    server.assert_exhausted();
}

#[tokio::test]
async fn graphql_errors_in_a_200_and_http_failures_are_classified() {
    let (server, store) = connected(&["graphql_errors"]).await;
    let reader = vis(Scope::global());
    let f = ChunkFilter::default();
    let bad_query = store
        .search_text(&reader, "x", &f, 3)
        .await
        .expect_err("GraphQL error");
    assert_error(&bad_query, ErrorKind::Invalid, "title^2");
    let slow = store
        .search_text(&reader, "x", &f, 3)
        .await
        .expect_err("GraphQL timeout");
    assert_eq!(slow.kind, ErrorKind::Unavailable, "{}", slow.message);
    let down = store
        .search_text(&reader, "x", &f, 3)
        .await
        .expect_err("HTTP 503");
    assert_error(&down, ErrorKind::Unavailable, "503");
    server.assert_exhausted();
}

#[tokio::test]
async fn health_reports_readiness_and_the_collection() {
    let (server, store) = connected(&["health"]).await;
    let ok = store.check().await;
    assert_eq!(ok.backend, "weaviate");
    assert_eq!(ok.roles, vec!["chunks".to_string()]);
    assert!(ok.ready, "{:?}", ok.detail);
    let down = store.check().await;
    assert!(!down.ready);
    assert!(
        down.detail.as_deref().is_some_and(|d| d.contains("503")),
        "{:?}",
        down.detail
    );
    server.assert_exhausted();
}

#[tokio::test]
async fn multi_tenant_collections_route_every_call_to_its_tenant() {
    let server = WireServer::start(load(&["connect_existing_mt", "multi_tenant"])).await;
    let mut cfg = config(&server);
    cfg.multi_tenancy = true;
    let store = WeaviateStore::connect(&cfg).await.expect("connect");

    store
        .upsert(vec![
            (
                chunk(Scope::global(), "g1", "alpha global", 0),
                vec![1.0, 0.0, 0.0, 0.0],
            ),
            (
                chunk(Scope::client("c1"), "d1", "alpha", 0),
                vec![0.0, 1.0, 0.0, 0.0],
            ),
        ])
        .await
        .expect("upsert");
    let received = server.received();
    let batch = requests(&received, "POST", "/v1/batch/objects");
    assert_eq!(batch.len(), 1);
    let tenants: Vec<&str> = batch[0].body["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .map(|o| o["tenant"].as_str().expect("tenant"))
        .collect();
    assert_eq!(tenants, vec!["global", "c-c1"]);

    let hits = store
        .search_text(
            &vis(Scope::client("c1")),
            "alpha",
            &ChunkFilter::default(),
            5,
        )
        .await
        .expect("bm25 over two tenants");
    assert_eq!(
        hits.iter().map(|h| h.chunk_id.as_str()).collect::<Vec<_>>(),
        vec!["d1", "g1"],
        "merged by score"
    );
    assert!(
        store
            .by_kind(&vis(Scope::client("c2")), &kinds(&["doc"]), 10)
            .await
            .expect("a missing tenant reads as empty")
            .is_empty()
    );
    assert_eq!(
        store
            .delete("c2", &["x".to_string()])
            .await
            .expect("nothing to delete"),
        0
    );
    store
        .relocate(vec![chunk(Scope::client("c1"), "d1", "alpha", 0)])
        .await
        .expect("relocate");
    server.assert_exhausted();
}
