//! Retrieval quality rules through the real router (issue 19): current state before its
//! history for a plain question, history first — with its commit's author and date — for a
//! question about change; identifier splitting; graph expansion that keeps only edges that
//! relate to the question.

use evident_e2e::{Embed, TestApp};
use serde_json::{Value, json};

const CART: &str = "package shop;\n\npublic class Cart {\n    private List<Item> items;\n\n    public int total() {\n        int sum = 0;\n        for (Item i : items) {\n            sum += i.price();\n        }\n        return sum;\n    }\n}\n";
const C1: &str = "1111111111111111111111111111111111111111";
const C2: &str = "2222222222222222222222222222222222222222";

/// The tree at C2, and the two commits that wrote it (C2's hunk is now the current code).
async fn seed(app: &TestApp) {
    let imports: Vec<String> = (0..20).map(|i| format!("vendor.lib{i}.Module")).collect();
    app
        .post_ok(
            "/api/v1/ingest/git-structure",
            &json!({
                "clientId": "acme", "repository": "shop", "branch": "main", "commit": C2,
                "files": [
                    {"path": "src/shop/Cart.java", "content": CART},
                    {"path": "src/shop/Checkout.kt", "language": "kotlin",
                     "symbols": [{"kind": "class", "name": "Checkout", "qualifiedName": "shop.Checkout", "lineStart": 3, "lineEnd": 30, "signature": "class Checkout(val cart: Cart)"}],
                     "imports": imports}
                ]
            }),
        )
        .await;
    let diff = "diff --git a/src/shop/Cart.java b/src/shop/Cart.java\n--- a/src/shop/Cart.java\n+++ b/src/shop/Cart.java\n@@ -7,3 +7,5 @@ public int total()\n         int sum = 0;\n-        for (Item i : items) sum += i.price();\n+        for (Item i : items) {\n+            sum += i.price();\n+        }\n         return sum;\n";
    app
        .post_ok(
            "/api/v1/ingest/git-commits",
            &json!({
                "clientId": "acme", "repository": "shop", "branch": "main",
                "commits": [
                    {"hash": C1, "parents": [], "authorName": "Ada Lovelace", "authorEmail": "ada@example.com",
                     "date": "2026-10-01T09:00:00Z", "message": "Add the cart",
                     "files": [{"path": "src/shop/Cart.java", "status": "A"}]},
                    {"hash": C2, "parents": [C1], "authorName": "Grace Hopper", "authorEmail": "grace@example.com",
                     "date": "2026-10-02T09:00:00Z", "message": "Cart total: loop over the items in a block",
                     "files": [{"path": "src/shop/Cart.java", "status": "M"}], "diff": diff}
                ]
            }),
        )
        .await;
}

async fn retrieve(app: &TestApp, query: &str) -> Value {
    app.post_ok(
        "/api/v1/retrieve",
        &json!({"clientId": "acme", "query": query, "maxResults": 10}),
    )
    .await
}

fn kinds(pack: &Value) -> Vec<String> {
    pack["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["kind"].as_str().unwrap_or("").to_string())
        .collect()
}

fn is_history(kind: &str) -> bool {
    kind == "git-diff" || kind == "git-commit"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn current_code_comes_before_its_history_for_a_plain_question() {
    let app = TestApp::new(Embed::Hashing).await;
    seed(&app).await;
    let pack = retrieve(&app, "cart total items price loop").await;
    let kinds = kinds(&pack);
    assert_eq!(kinds.first().map(String::as_str), Some("code"), "{kinds:?}");
    let first_history = kinds.iter().position(|k| is_history(k));
    let last_current = kinds.iter().rposition(|k| !is_history(k));
    if let (Some(h), Some(c)) = (first_history, last_current) {
        assert!(
            c < h,
            "every current item before any history item: {kinds:?}"
        );
    }
    // C2's hunk is the current code of Cart.java, which the pack holds: it adds nothing.
    assert!(!kinds.iter().any(|k| k == "git-diff"), "{kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_comes_first_with_author_and_date_for_a_who_changed_question() {
    let app = TestApp::new(Embed::Hashing).await;
    seed(&app).await;
    let pack = retrieve(&app, "who changed the cart total items price loop").await;
    let items = pack["items"].as_array().expect("items");
    assert!(
        is_history(items[0]["kind"].as_str().unwrap_or("")),
        "{:?}",
        kinds(&pack)
    );
    let diff = items
        .iter()
        .find(|i| i["kind"] == "git-diff")
        .expect("the hunk that changed the loop");
    assert_eq!(diff["commit"]["hash"], C2, "{diff}");
    assert_eq!(diff["commit"]["author"], "Grace Hopper");
    assert_eq!(diff["commit"]["date"], "2026-10-02T09:00:00Z");
    // Current items carry no commit.
    assert!(
        items
            .iter()
            .filter(|i| !is_history(i["kind"].as_str().unwrap_or("")))
            .all(|i| i.get("commit").is_none())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identifier_splitting_finds_a_camel_case_name_from_its_words() {
    let app = TestApp::new(Embed::Hashing).await;
    for (urn, content) in [
        (
            "doc:target",
            "Call retrieveWithExpansion when the pack needs graph context.",
        ),
        (
            "doc:other-1",
            "Retrieval settings are documented in the operations guide.",
        ),
        (
            "doc:other-2",
            "Expansion joints let the bridge move in summer heat.",
        ),
    ] {
        let body = json!({"clientId": "acme", "sourceUrn": urn, "kind": "doc", "content": content});
        app.post_ok("/api/v1/ingest", &body).await;
    }
    let pack = retrieve(&app, "retrieve with expansion").await;
    let first = &pack["items"][0];
    assert_eq!(first["sourceUrn"], "doc:target", "{pack}");
    assert!(
        first["scores"]["bm25"].as_f64().is_some(),
        "found by BM25: {first}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graph_expansion_keeps_the_edges_that_relate_to_the_question() {
    let app = TestApp::new(Embed::Hashing).await;
    seed(&app).await;
    let pack = retrieve(&app, "class Checkout cart").await;
    let edges = pack["graph"]["edges"].as_array().expect("edges");
    assert!(!edges.is_empty(), "{}", pack["graph"]);
    let imports = edges.iter().filter(|e| e["edgeType"] == "imports").count();
    assert!(
        imports <= 2,
        "{imports} unrelated imports edges: {}",
        pack["graph"]
    );
    assert!(edges.len() <= 20);
    assert!(
        edges
            .iter()
            .all(|e| !e["evidenceChunkIds"].as_array().expect("ids").is_empty())
    );
    // Every node listed is an endpoint of a kept edge or a seed of the expansion.
    assert!(pack["graph"]["nodes"].as_array().expect("nodes").len() <= edges.len() * 2 + 10);
}
