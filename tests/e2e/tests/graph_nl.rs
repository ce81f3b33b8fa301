//! The graph answers natural language (issue 31) through the real router: a passage's
//! evidence back-links (the nodes and edges it evidences, an agent's edge citing it
//! included) reach the pack's items and graph, and go when the evidence is purged.

use evident_e2e::{Embed, TestApp};
use serde_json::{Value, json};

async fn ingest(app: &TestApp, urn: &str, content: &str) -> String {
    app.post_ok(
        "/api/v1/ingest",
        &json!({"clientId": "acme", "sourceUrn": urn, "kind": "doc", "title": urn, "content": content}),
    )
    .await;
    let chunks = app
        .kb
        .stores()
        .chunks
        .source_chunks("acme", urn)
        .await
        .expect("chunks");
    chunks[0].0.clone()
}

async fn ask(app: &TestApp, query: &str) -> Value {
    app.post_ok(
        "/api/v1/retrieve",
        &json!({"clientId": "acme", "query": query, "maxResults": 5}),
    )
    .await
}

fn strs(list: &Value) -> Vec<&str> {
    list.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn has_edge(list: &Value, from: &str, edge_type: &str, to: &str, type_field: &str) -> bool {
    list.as_array().is_some_and(|a| {
        a.iter()
            .any(|e| e["from"] == from && e[type_field] == edge_type && e["to"] == to)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_edge_is_found_from_the_passage_it_cites_and_goes_with_it() {
    let app = TestApp::new(Embed::Hashing).await;
    let note = ingest(
        &app,
        "doc:billing-design",
        "Billing posts every invoice to the ledger before the payment settles.",
    )
    .await;
    ingest(
        &app,
        "doc:runbook",
        "The billing runbook: restart the workers when invoices stall.",
    )
    .await;
    let edge = json!({"clientId": "acme", "from": "service:billing", "edgeType": "depends_on",
        "to": "service:ledger", "evidence": {"chunkIds": [note]}});
    app.post_ok("/api/v1/graph/edges", &edge).await;

    for query in ["what does billing depend on", "billing ledger"] {
        let pack = ask(&app, query).await;
        let item = pack["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|i| i["chunkId"] == note.as_str())
            .unwrap_or_else(|| panic!("{query}: the cited passage is retrieved: {pack}"));
        let refs = strs(&item["graphRefs"]);
        assert!(
            refs.contains(&"service:billing") && refs.contains(&"service:ledger"),
            "{query}: {item}"
        );
        assert!(
            has_edge(
                &item["graphEdges"],
                "service:billing",
                "depends_on",
                "service:ledger",
                "type"
            ),
            "{query}: {item}"
        );
        let nodes: Vec<&str> = pack["graph"]["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .filter_map(|n| n["key"].as_str())
            .collect();
        assert!(nodes.contains(&"service:billing"), "{query}: {pack}");
        // The entity index links "billing" in words to the node, reported with its score.
        let linked = pack["entities"].as_array().is_some_and(|e| {
            e.iter()
                .any(|e| e["key"] == "service:billing" && e["score"].as_f64() > Some(0.0))
        });
        assert!(linked, "{query}: {}", pack["entities"]);
        assert!(
            has_edge(
                &pack["graph"]["edges"],
                "service:billing",
                "depends_on",
                "service:ledger",
                "edgeType"
            ),
            "{query}: {}",
            pack["graph"]
        );
    }

    // The cited passage purged: the edge loses its only evidence and leaves the graph, the
    // other passage about billing carries no link to it.
    app.post_ok(
        "/api/v1/purge",
        &json!({"clientId": "acme", "sourceUrn": "doc:billing-design"}),
    )
    .await;
    let pack = ask(&app, "what does billing depend on").await;
    let items = pack["items"].as_array().expect("items");
    assert!(!items.is_empty(), "{pack}");
    for item in items {
        assert_ne!(item["chunkId"], note.as_str());
        assert!(item.get("graphEdges").is_none(), "{item}");
        assert!(
            !strs(&item["graphRefs"]).contains(&"service:ledger"),
            "{item}"
        );
    }
    assert!(
        !has_edge(
            &pack["graph"]["edges"],
            "service:billing",
            "depends_on",
            "service:ledger",
            "edgeType"
        ),
        "{}",
        pack["graph"]
    );
    app.fingerprint().await; // integrity holds throughout
}
