//! The built-in static embedder gives real semantics; BM25 covers exact identifiers.

use evident_e2e::{Embed, TestApp};
use serde_json::json;

const DOCS: &[(&str, &str)] = &[
    (
        "doc:passwords",
        "To regain access to your account, open the sign-in page, choose the recovery link and follow the e-mail we send you to set new login credentials.",
    ),
    (
        "doc:weather",
        "The forecast for Paris this weekend is sunny and warm, with a light breeze in the afternoon.",
    ),
    (
        "doc:guitar",
        "She has played acoustic and electric instruments with six strings in several bands since her teens.",
    ),
    (
        "doc:database",
        "Adding an index on the customer_id column cut the latency of the orders lookup from seconds to milliseconds.",
    ),
    (
        "doc:ident",
        "The retry policy for outbound webhooks backs off exponentially and gives up after a day; incident zq9f3c2ab7d1 documented the last change to it and who approved it.",
    ),
    (
        "doc:build",
        "Build 7c1e0d9b4a passed on the second attempt after the cache was cleared.",
    ),
    (
        "doc:checksum",
        "Checksum a93f0c27e1 was verified against the mirror before the release was published.",
    ),
];

async fn seeded() -> TestApp {
    let app = TestApp::new(Embed::Static).await;
    for (urn, content) in DOCS {
        app.post_ok(
            "/api/v1/ingest",
            &json!({"clientId": "acme", "sourceUrn": urn, "kind": "doc", "content": content}),
        )
        .await;
    }
    app
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paraphrase_sharing_no_word_retrieves_its_target() {
    let app = seeded().await;
    for (query, target) in [
        ("how do I reset my forgotten password", "doc:passwords"),
        ("speed up slow database queries", "doc:database"),
        ("who performs music on a guitar", "doc:guitar"),
    ] {
        let target_text = DOCS
            .iter()
            .find(|(u, _)| *u == target)
            .map(|(_, c)| c.to_lowercase())
            .unwrap_or_default();
        let shared: Vec<&str> = query
            .split_whitespace()
            .filter(|w| w.len() > 2 && target_text.contains(*w))
            .collect();
        assert!(
            shared.is_empty(),
            "query `{query}` shares {shared:?} with its target — not a paraphrase test"
        );
        let pack = app
            .post_ok(
                "/api/v1/retrieve",
                &json!({"clientId": "acme", "query": query, "maxResults": 1, "expandGraph": false}),
            )
            .await;
        assert_eq!(pack["items"][0]["sourceUrn"], target, "`{query}`: {pack}");
        assert!(
            pack["items"][0]["scores"]["bm25"].is_null(),
            "found by meaning, not by words"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bm25_finds_exact_identifiers_the_vectors_miss() {
    let app = seeded().await;
    let (_, pack) = app.post("/api/v1/retrieve", &json!({"clientId": "acme", "query": "zq9f3c2ab7d1", "maxResults": 1, "expandGraph": false})).await;
    assert_eq!(pack["items"][0]["sourceUrn"], "doc:ident", "{pack}");
    assert!(
        pack["items"][0]["scores"]["bm25"]
            .as_f64()
            .is_some_and(|s| s > 0.0)
    );
    // The vector channel alone does not put the identifier's chunk first: opaque ids look
    // alike to a static embedding, so other hex-ish chunks win there.
    let v = app
        .kb
        .embedder()
        .embed(
            &["zq9f3c2ab7d1".to_string()],
            evident_ai::Priority::INTERACTIVE,
        )
        .await
        .expect("embed");
    let vis = evident_core::Visibility::of(evident_core::Scope::client("acme"));
    let hits = app
        .kb
        .stores()
        .chunks
        .search_vector(&vis, &v[0], &Default::default(), 5)
        .await
        .expect("knn");
    let text = app
        .kb
        .stores()
        .chunks
        .search_text(&vis, "zq9f3c2ab7d1", &Default::default(), 5)
        .await
        .expect("bm25");
    assert_eq!(text.len(), 1, "exactly one chunk has the identifier");
    assert_ne!(
        hits.first().map(|h| &h.chunk_id),
        Some(&text[0].chunk_id),
        "vectors miss it: {hits:?}"
    );
}
