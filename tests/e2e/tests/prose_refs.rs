//! Prose makes no structural nodes (issue 13 item 6): a document that mentions `thread:x`,
//! `commit:abc`, a file, a URL, a time or a shell command stores none of them as nodes, while
//! explicit relationships naming the same namespaces still make their nodes and edges.

use evident_e2e::{Embed, TestApp, enc, field_strs};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_mentioning_structural_keys_makes_no_structural_nodes() {
    let app = TestApp::new(Embed::Hashing).await;
    let content = "\
# Debugging the release thread

I read it with `notmuch show thread:some-thread-id` and then:
$ git show commit:abc999 --stat
The fix is commit:abc123 in file:shop/src/Cart.java (module:billing), symbol:Cart.total, on
branch:main of repository:shop; see https://lists.example.org/thread:42/message:7 at 10:30.
Owner user:jan, ticket jira:PAY-9.
";
    let out = app
        .post_ok(
            "/api/v1/ingest",
            &json!({
                "clientId": "acme",
                "sourceUrn": "notes:debugging",
                "kind": "doc",
                "title": "Debugging the release thread",
                "content": content,
                "relationships": [
                    "jira:PAY-9|fixed_by|commit:def456",
                    "thread:t1|mentions|jira:PAY-9"
                ]
            }),
        )
        .await;
    let mut nodes: Vec<&str> = out["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    nodes.sort();
    assert_eq!(
        nodes,
        vec!["commit:def456", "jira:pay-9", "thread:t1", "user:jan"],
        "prose refs in open namespaces and the explicit relationships' ends only"
    );
    for absent in ["thread:some-thread-id", "commit:abc123", "commit:abc999"] {
        let (status, _) = app
            .get(&format!("/api/v1/graph/node/{}?clientId=acme", enc(absent)))
            .await;
        assert_eq!(status, 404, "{absent}");
    }
    let view = app
        .post_ok(
            "/api/v1/traverse",
            &json!({"clientId": "acme", "startKey": "jira:PAY-9", "maxDepth": 1}),
        )
        .await;
    let mut edges: Vec<String> = view["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| format!("{} {} {}", e["from"], e["edgeType"], e["to"]))
        .collect();
    edges.sort();
    assert_eq!(
        edges,
        vec![
            "\"jira:pay-9\" \"fixed_by\" \"commit:def456\"",
            "\"thread:t1\" \"mentions\" \"jira:pay-9\""
        ]
    );
    // A question still finds a structural node by its key.
    let pack = app
        .post_ok(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "what fixed commit:def456"}),
        )
        .await;
    let graph_nodes = field_strs(&pack["graph"]["nodes"], "key");
    assert!(graph_nodes.contains(&"commit:def456"), "{graph_nodes:?}");
}
