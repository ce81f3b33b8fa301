//! Git through the real router: registering sources, pushes from external indexers
//! (structure with content or outline, commits with diffs, call graphs), and the questions an
//! engineering orchestrator asks of code — who changed X, which commits touched F, what
//! methods does C have, what imports M — answered by traverse and retrieve.

use evident_e2e::{Embed, TestApp, enc, field_strs};
use serde_json::{Value, json};

const CART: &str = "package shop;\n\nimport java.util.List;\n\npublic class Cart {\n    private List<Item> items;\n\n    public int total() {\n        int sum = 0;\n        for (Item i : items) {\n            sum += i.price();\n        }\n        return sum;\n    }\n\n    public void clear() {\n        items.clear();\n    }\n}\n";

const C1: &str = "1111111111111111111111111111111111111111";
const C2: &str = "2222222222222222222222222222222222222222";

fn keys(v: &Value, field: &str) -> Vec<String> {
    v[field]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| {
                    n["key"]
                        .as_str()
                        .or(n["node"]["key"].as_str())
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn traverse(
    app: &TestApp,
    start: &str,
    direction: &str,
    types: &[&str],
    depth: usize,
) -> Value {
    app
        .post_ok(
            "/api/v1/traverse",
            &json!({"clientId": "acme", "startKey": start, "direction": direction, "edgeTypes": types, "maxDepth": depth}),
        )
        .await
}

fn node_keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            n["node"]["key"]
                .as_str()
                .or(n["key"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect();
    k.sort();
    k
}

async fn seed(app: &TestApp) {
    let v = app
        .post_ok(
            "/api/v1/ingest/git-structure",
            &json!({
                "clientId": "acme", "repository": "shop", "branch": "main", "commit": C2,
                "files": [
                    {"path": "src/shop/Cart.java", "content": CART},
                    {"path": "src/shop/Checkout.kt", "language": "kotlin",
                     "symbols": [
                        {"kind": "class", "name": "Checkout", "qualifiedName": "shop.Checkout", "lineStart": 3, "lineEnd": 30, "signature": "class Checkout(val cart: Cart)"},
                        {"kind": "method", "name": "pay", "qualifiedName": "shop.Checkout.pay", "parent": "shop.Checkout", "lineStart": 10, "lineEnd": 20}
                     ],
                     "imports": ["java.util.List"]},
                    {"path": "vendor/lib.js", "content": "var x = 1;\n"},
                    {"path": "empty.rs", "content": "   \n"}
                ]
            }),
        )
        .await;
    assert_eq!(
        (v["received"].as_u64(), v["indexed"].as_u64()),
        (Some(4), Some(2)),
        "{v}"
    );
    let skipped = field_strs(&v["skipped"], "reason");
    assert_eq!(skipped, vec!["vendored", "empty"], "{v}");

    let diff = "diff --git a/src/shop/Cart.java b/src/shop/Cart.java\n--- a/src/shop/Cart.java\n+++ b/src/shop/Cart.java\n@@ -9,3 +9,5 @@ public int total()\n         int sum = 0;\n-        for (Item i : items) sum += i.price();\n+        for (Item i : items) {\n+            sum += i.price();\n+        }\n         return sum;\n";
    let v = app
        .post_ok(
            "/api/v1/ingest/git-commits",
            &json!({
                "clientId": "acme", "repository": "shop", "branch": "main", "issueTracker": "github:acme/shop",
                "commits": [
                    {"hash": C1, "parents": [], "authorName": "Ada Lovelace", "authorEmail": "ada@example.com",
                     "date": "2026-10-01T09:00:00Z", "message": "Add the cart",
                     "files": [{"path": "src/shop/Cart.java", "status": "A"}]},
                    {"hash": C2, "parents": [C1], "authorName": "Grace Hopper", "authorEmail": "grace@example.com",
                     "date": "2026-10-02T09:00:00Z", "message": "Fix cart total rounding (fixes #7)",
                     "files": [{"path": "src/shop/Cart.java", "status": "M"}], "diff": diff},
                    {"hash": "not-hex", "authorName": "X", "authorEmail": "x@example.com", "date": "2026-10-02T09:00:00Z", "message": "bad"}
                ]
            }),
        )
        .await;
    assert_eq!(v["indexed"], 2, "{v}");
    assert!(
        v["skipped"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("hexadecimal")),
        "{v}"
    );

    let v = app
        .post_ok(
            "/api/v1/ingest/cpg",
            &json!({"clientId": "acme", "repository": "shop", "edges": [
                {"from": "shop.Checkout.pay", "to": "shop.Cart.total", "type": "calls", "path": "src/shop/Checkout.kt", "line": 12},
                {"from": "shop.Checkout.pay", "to": "payments.Gateway.charge", "type": "calls"}
            ]}),
        )
        .await;
    assert_eq!(
        (v["edges"].as_u64(), v["unresolved"].as_u64()),
        (Some(2), Some(1)),
        "{v}"
    );
    assert_eq!(v["unresolvedExamples"][0], "payments.Gateway.charge");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_questions_are_answered_by_traverse_and_retrieve() {
    let app = TestApp::new(Embed::Hashing).await;
    seed(&app).await;

    // What methods does class Cart have?
    let v = traverse(&app, "symbol:shop/shop.Cart", "out", &["has_method"], 1).await;
    assert_eq!(
        node_keys(&v),
        vec![
            "symbol:shop/shop.Cart",
            "symbol:shop/shop.Cart.clear()",
            "symbol:shop/shop.Cart.total()"
        ]
    );
    // … and from an outline-only push.
    let v = traverse(&app, "symbol:shop/shop.Checkout", "out", &["has_method"], 1).await;
    assert!(node_keys(&v).contains(&"symbol:shop/shop.Checkout.pay()".to_string()));

    // What imports java.util.List?
    let v = traverse(&app, "import:java.util.List", "in", &["imports"], 1).await;
    assert_eq!(
        node_keys(&v),
        vec![
            "file:shop/src/shop/Cart.java",
            "file:shop/src/shop/Checkout.kt",
            "import:java.util.List"
        ]
    );

    // Which commits touched Cart.java, and who made them?
    let v = traverse(
        &app,
        "file:shop/src/shop/Cart.java",
        "any",
        &["creates", "modifies", "authored_by"],
        2,
    )
    .await;
    let reached = node_keys(&v);
    for k in [
        format!("commit:{C1}"),
        format!("commit:{C2}"),
        "user:ada_example_com".into(),
        "user:grace_example_com".into(),
    ] {
        assert!(reached.contains(&k), "{k} in {reached:?}");
    }
    // The commit fixes issue #7 of its tracker; the branch holds both commits.
    let v = app
        .get_ok(&format!(
            "/api/v1/graph/node/{}?clientId=acme",
            enc(&format!("commit:{C2}"))
        ))
        .await;
    let edges = v["edges"].as_array().expect("edges");
    assert!(
        edges
            .iter()
            .any(|e| e["edgeType"] == "fixes" && e["to"] == "github:acme_shop_7"),
        "{v}"
    );
    assert!(
        edges
            .iter()
            .any(|e| e["edgeType"] == "has_commit" && e["from"] == "branch:shop/main"),
        "{v}"
    );
    assert!(edges.iter().any(|e| e["edgeType"] == "parent"), "{v}");

    // An exact key with `/`, `.` and upper case names its node through the path; so does
    // its old folded spelling.
    for raw in [
        "file:shop/src/shop/Cart.java",
        "file:shop_src_shop_cart_java",
    ] {
        let (s, v) = app
            .get(&format!("/api/v1/graph/node/{}?clientId=acme", enc(raw)))
            .await;
        assert_eq!(s, 200, "{raw}: {v}");
        assert_eq!(v["key"], "file:shop/src/shop/Cart.java", "{v}");
    }

    // A commit is found by its hash.
    let (s, v) = app
        .get(&format!(
            "/api/v1/graph/search?clientId=acme&type=commit&q={}",
            &C2[..12]
        ))
        .await;
    assert_eq!(s, 200);
    assert_eq!(keys(&v, "nodes"), vec![format!("commit:{C2}")]);

    // The call graph links the outline's method to the parsed one.
    let v = traverse(
        &app,
        "symbol:shop/shop.Checkout.pay()",
        "out",
        &["calls"],
        1,
    )
    .await;
    assert!(node_keys(&v).contains(&"symbol:shop/shop.Cart.total()".to_string()));
    // The old folded spelling still names the method.
    let v = traverse(&app, "symbol:shop_shop_checkout_pay", "out", &["calls"], 1).await;
    assert!(node_keys(&v).contains(&"symbol:shop/shop.Cart.total()".to_string()));

    // Retrieval over code: the diff chunk cites file, lines and commit; code chunks the symbol.
    let pack = app
        .post_ok(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "who changed the cart total price loop", "maxResults": 10}),
        )
        .await;
    let items = pack["items"].as_array().expect("items");
    let diff = items
        .iter()
        .find(|i| i["kind"] == "git-diff")
        .expect("a diff chunk");
    assert_eq!(diff["locator"]["type"], "file");
    assert_eq!(diff["locator"]["path"], "src/shop/Cart.java");
    assert_eq!(diff["locator"]["commit"], C2);
    assert_eq!(
        (
            diff["locator"]["lineStart"].as_u64(),
            diff["locator"]["lineEnd"].as_u64()
        ),
        (Some(9), Some(13))
    );
    // A class within the chunk budget is one chunk: it cites the class, methods included.
    let code = items
        .iter()
        .find(|i| i["kind"] == "code" && i["locator"]["symbol"] == "shop.Cart")
        .expect("the class's chunk");
    assert!(
        code["content"]
            .as_str()
            .is_some_and(|c| c.contains("public int total()"))
    );
    let graph_edges = pack["graph"]["edges"].as_array().expect("graph edges");
    assert!(
        graph_edges
            .iter()
            .all(|e| !e["evidenceChunkIds"].as_array().expect("ids").is_empty())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_sources_are_registered_seen_by_their_client_only_and_removed() {
    // The process's access: client `acme` may name `SHOP_TOKEN`, for GitHub only.
    let credentials = [(
        "SHOP_TOKEN".to_string(),
        evident_sources::credentials::CredentialRule {
            clients: vec!["acme".into()],
            hosts: vec!["github.com".into()],
        },
    )]
    .into_iter()
    .collect();
    evident_indexers::access::install(evident_indexers::access::Access::strict().with_credentials(
        evident_sources::credentials::CredentialRules::new(&credentials).expect("credentials"),
    ));
    let app = TestApp::new(Embed::Hashing).await;
    let bad = [
        json!({"url": "https://example.com/r.git"}),
        json!({"clientId": "acme"}),
        json!({"clientId": "acme", "url": "https://u:secret@example.com/r.git"}),
        json!({"clientId": "acme", "path": "relative/dir"}),
        json!({"clientId": "acme", "url": "https://example.com/r.git", "intervalSecs": 0}),
        json!({"clientId": "acme", "url": "https://example.com/r.git", "bogus": 1}),
    ];
    for b in bad {
        let (s, v) = app.post("/api/v1/sources/git", &b).await;
        assert_eq!(s, 400, "{b} → {v}");
        assert!(v["code"].is_string());
    }
    let (s, v) = app
        .post("/api/v1/sources/git", &json!({"clientId": "acme", "url": "https://github.com/acme/shop.git", "branches": ["main", "release/*"], "tokenEnv": "SHOP_TOKEN"}))
        .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["id"], "acme.shop");
    assert_eq!(v["config"]["tokenEnv"], "SHOP_TOKEN");
    // The same id in another client is another source: ids belong to their client, and
    // nothing tells one client what ids another uses.
    let (s, v) = app
        .post(
            "/api/v1/sources/git",
            &json!({"clientId": "other", "id": "acme.shop", "url": "https://x.example/y.git"}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    // The variable allowed to acme is refused to another client.
    let (s, v) = app
        .post(
            "/api/v1/sources/git",
            &json!({"clientId": "other", "id": "other.shop", "url": "https://github.com/acme/shop.git", "tokenEnv": "SHOP_TOKEN"}),
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (403, Some("credential_not_allowed")),
        "{v}"
    );
    let (_, v) = app.get("/api/v1/sources/git?clientId=acme").await;
    assert_eq!(v["sources"].as_array().map(Vec::len), Some(1));
    let (_, v) = app.get("/api/v1/sources/git?clientId=other").await;
    assert_eq!(
        v["sources"][0]["config"]["url"], "https://x.example/y.git",
        "another client sees its own source only: {v}"
    );
    assert_eq!(v["sources"].as_array().map(Vec::len), Some(1));
    let (s, v) = app
        .call(
            "DELETE",
            "/api/v1/sources/git/acme.shop?clientId=acme",
            None,
            &[],
        )
        .await;
    assert_eq!(s, 202, "{v}");
    assert!(v["taskId"].is_string());
    let (s, _) = app.get("/api/v1/sources/git/acme.shop?clientId=acme").await;
    assert_eq!(s, 404);
    let (s, _) = app
        .get("/api/v1/sources/git/acme.shop?clientId=other")
        .await;
    assert_eq!(s, 200, "the other client's source of that id stays");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_pushes_are_refused_and_change_nothing() {
    let app = TestApp::new(Embed::Hashing).await;
    let before = app.fingerprint().await;
    for (uri, body) in [
        (
            "/api/v1/ingest/git-structure",
            json!({"clientId": "acme", "repository": "r", "branch": "main", "files": []}),
        ),
        (
            "/api/v1/ingest/git-structure",
            json!({"repository": "r", "branch": "main", "files": [{"path": "a.rs", "content": "fn a() {}"}]}),
        ),
        (
            "/api/v1/ingest/git-commits",
            json!({"clientId": "acme", "repository": "r", "commits": []}),
        ),
        (
            "/api/v1/ingest/cpg",
            json!({"clientId": "acme", "repository": "r", "edges": [{"from": "a", "to": "b", "type": "eats"}]}),
        ),
        (
            "/api/v1/ingest/cpg",
            json!({"clientId": "acme", "repository": "r", "edges": [{"from": "a", "to": "b"}]}),
        ),
    ] {
        let (s, v) = app.post(uri, &body).await;
        assert_eq!(s, 400, "{uri} {body} → {v}");
    }
    assert_eq!(
        app.fingerprint().await,
        before,
        "refused pushes wrote nothing"
    );
    // A pushed file with a credential is stored redacted, never verbatim.
    app
        .post_ok(
            "/api/v1/ingest/git-structure",
            &json!({"clientId": "acme", "repository": "r", "branch": "main",
                    "files": [{"path": "config/app.yaml", "content": "db:\n  password: \"hunter2-super-secret\"\n  port: 5432\n"}]}),
        )
        .await;
    let (_, pack) = app
        .post(
            "/api/v1/chunks/by-kind",
            &json!({"clientId": "acme", "kinds": ["code"]}),
        )
        .await;
    let text = pack.to_string();
    assert!(!text.contains("hunter2") && text.contains("5432"), "{text}");
    assert_ne!(app.fingerprint().await, before);
}

/// Call-graph exports are larger than file or commit pushes: 5,001 edges (one over the file
/// and commit limit) are taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_graph_push_may_exceed_the_file_and_commit_limit() {
    let app = TestApp::new(Embed::Hashing).await;
    seed(&app).await;
    let edges: Vec<Value> = (0..5_001)
        .map(|i| json!({"from": "shop.Checkout.pay", "to": format!("lib.f{i}"), "type": "calls"}))
        .collect();
    let v = app
        .post_ok(
            "/api/v1/ingest/cpg",
            &json!({"clientId": "acme", "repository": "shop", "name": "big", "edges": edges}),
        )
        .await;
    assert_eq!(v["edges"], 5_001, "{v}");
}

/// A commit stored again under another fingerprint (here: pushed on a second branch with a
/// longer message) replaces its chunks, and with them the evidence of its links; the link
/// from the first branch must be put back, not lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_stored_again_keeps_the_links_of_every_branch() {
    let app = TestApp::new(Embed::Hashing).await;
    seed(&app).await;
    let v = app
        .post_ok(
            "/api/v1/ingest/git-commits",
            &json!({
                "clientId": "acme", "repository": "shop", "branch": "release",
                "commits": [
                    {"hash": C2, "parents": [C1], "authorName": "Grace Hopper", "authorEmail": "grace@example.com",
                     "date": "2026-10-02T09:00:00Z", "message": "Fix cart total rounding (fixes #7)\n\nCherry-picked for the release.",
                     "files": [{"path": "src/shop/Cart.java", "status": "M"}]}
                ]
            }),
        )
        .await;
    assert_eq!(v["indexed"], 1, "{v}");
    let v = traverse(&app, &format!("commit:{C2}"), "in", &["has_commit"], 1).await;
    assert_eq!(
        node_keys(&v),
        vec![
            "branch:shop/main".to_string(),
            "branch:shop/release".into(),
            format!("commit:{C2}")
        ]
    );
}
