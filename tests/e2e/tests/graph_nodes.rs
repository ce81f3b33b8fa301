//! Listing nodes by type (`GET /api/v1/graph/nodes`) and typed node search through the real
//! router: keyset pages in key order, the reader's visibility, bad input refused, and the
//! structural types (`issue`, `person`, `thread`) matched exactly rather than through the
//! entity-type aliases.

use evident_ai::Priority;
use evident_core::prepared::{EvidenceSpec, PreparedNode};
use evident_core::{Locator, NodeKey, PreparedChunk, PreparedSource, Scope, keys};
use evident_e2e::{Embed, TestApp};
use serde_json::{Map, Value};

fn node(key: NodeKey, node_type: &str, label: &str) -> PreparedNode {
    PreparedNode {
        key,
        node_type: node_type.into(),
        label: label.into(),
        props: Map::new(),
        evidence: EvidenceSpec::AllChunks,
    }
}

/// A source of `client` whose one chunk evidences `nodes`.
async fn ingest(app: &TestApp, client: &str, urn: &str, nodes: Vec<PreparedNode>) {
    let text = format!("Mail and tracker items of {urn}.");
    let src = PreparedSource {
        scope: Scope::client(client),
        source_urn: urn.into(),
        kind: "mail".into(),
        title: None,
        fingerprint: urn.into(),
        observed_at: None,
        chunks: vec![PreparedChunk::new(
            text.clone(),
            Locator::for_chunk(None, urn, None, 0, text.chars().count(), 0, 0),
        )],
        nodes,
        edges: Vec::new(),
        aliases: Vec::new(),
        merges: Vec::new(),
    };
    app.kb
        .ingest_prepared(src, Priority::DEFAULT)
        .await
        .expect("ingest");
}

fn keys_of(answer: &Value) -> Vec<String> {
    answer["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["key"].as_str().map(str::to_string))
        .collect()
}

async fn seeded() -> TestApp {
    let app = TestApp::new(Embed::Hashing).await;
    let threads = (1..=5)
        .map(|i| {
            node(
                NodeKey::from_canonical(format!("thread:t{i}")),
                "thread",
                "a thread",
            )
        })
        .collect();
    ingest(&app, "acme", "mail:acme-threads", threads).await;
    let jan = keys::person(Some("Jan Novák"), Some("jan@example.com")).expect("person key");
    let issue = keys::issue("github", "acme/shop", 12);
    let tracker = vec![
        node(issue, "issue", "Checkout fails on empty cart"),
        node(jan, "person", "Jan Novák"),
    ];
    ingest(&app, "acme", "tracker:acme-shop-12", tracker).await;
    let other = vec![node(
        NodeKey::from_canonical("thread:t0"),
        "thread",
        "theirs",
    )];
    ingest(&app, "other", "mail:other-threads", other).await;
    app
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_are_listed_by_type_a_page_at_a_time() {
    let app = seeded().await;
    let mut listed = Vec::new();
    let mut uri = "/api/v1/graph/nodes?clientId=acme&type=thread&limit=2".to_string();
    for _ in 0..10 {
        let page = app.get_ok(&uri).await;
        let keys = keys_of(&page);
        assert!(keys.len() <= 2, "{page}");
        listed.extend(keys);
        match page["nextAfter"].as_str() {
            Some(next) => {
                uri = format!(
                    "/api/v1/graph/nodes?clientId=acme&type=thread&limit=2&after={}",
                    evident_e2e::enc(next)
                );
            }
            None => {
                assert!(page["nextAfter"].is_null(), "{page}");
                break;
            }
        }
    }
    assert_eq!(
        listed,
        [
            "thread:t1",
            "thread:t2",
            "thread:t3",
            "thread:t4",
            "thread:t5"
        ],
        "every thread of acme once, in key order, none of the other client's"
    );

    // Empty `type` and `after` are no filter and the start; the default page holds them all.
    let all = app
        .get_ok("/api/v1/graph/nodes?clientId=acme&type=&after=")
        .await;
    assert_eq!(keys_of(&all).len(), 7, "{all}");
    assert!(all["nextAfter"].is_null());
    let (_, other) = app
        .get("/api/v1/graph/nodes?clientId=other&type=thread")
        .await;
    assert_eq!(keys_of(&other), ["thread:t0"]);
    let (_, issues) = app
        .get("/api/v1/graph/nodes?clientId=acme&type=issue")
        .await;
    assert_eq!(
        keys_of(&issues),
        [keys::issue("github", "acme/shop", 12).to_string()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_refuses_bad_input_with_a_clear_error() {
    let app = seeded().await;
    for (query, code) in [
        ("clientId=acme&type=thread&limit=0", "invalid_request"),
        ("clientId=acme&type=thread&limit=501", "invalid_request"),
        ("clientId=acme&type=thread&limit=many", "invalid_query"),
        ("clientId=acme&kind=thread", "invalid_query"),
    ] {
        let (status, err) = app.get(&format!("/api/v1/graph/nodes?{query}")).await;
        assert_eq!(status, 400, "{query}: {err}");
        assert!(err["message"].is_string(), "{query}: {err}");
        assert_eq!(err["code"], code, "{query}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_matches_structural_types_exactly() {
    let app = seeded().await;
    let issues = app
        .get_ok("/api/v1/graph/search?clientId=acme&q=shop&type=issue")
        .await;
    assert_eq!(
        keys_of(&issues),
        [keys::issue("github", "acme/shop", 12).to_string()],
        "`issue` is the tracker's node type, not the `jira` alias"
    );
    let (_, people) = app
        .get("/api/v1/graph/search?clientId=acme&q=jan&type=person")
        .await;
    assert_eq!(keys_of(&people).len(), 1, "{people}");
    assert!(keys_of(&people)[0].contains("jan"), "{people}");
    let (_, threads) = app
        .get("/api/v1/graph/search?clientId=acme&q=t3&type=Thread")
        .await;
    assert_eq!(keys_of(&threads), ["thread:t3"]);
}
