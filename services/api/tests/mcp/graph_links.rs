//! The billing example of issue 31 through MCP: an agent's `add_graph_edge` citing a passage
//! stored by `store_knowledge`; `search` in plain words returns the passage with the edge in
//! its `graphEdges`, its endpoints in its `graphRefs`, and the edge in the pack's graph.

use serde_json::{Value, json};

use crate::app::*;

fn find_edge(list: &Value, type_field: &str) -> bool {
    list.as_array().is_some_and(|a| {
        a.iter().any(|e| {
            e["from"] == "service:billing"
                && e[type_field] == "depends_on"
                && e["to"] == "service:ledger"
        })
    })
}

#[tokio::test]
async fn search_in_words_returns_the_agents_edge_and_its_passage() {
    let app = App::new().await;
    let w = app.writer().await;
    let stored = app
        .call(
            &w,
            "store_knowledge",
            json!({ "subject": "Billing design",
                    "content": "Billing posts every invoice to the ledger before the payment settles." }),
        )
        .await;
    assert_eq!(
        stored["structuredContent"]["status"], "ingested",
        "{stored}"
    );
    let found = app
        .call(
            &w,
            "search",
            json!({ "query": "invoice ledger payment", "maxResults": 3 }),
        )
        .await;
    let chunk = found["structuredContent"]["items"][0]["chunkId"]
        .as_str()
        .expect("a passage")
        .to_string();
    app.call(
        &w,
        "add_graph_edge",
        json!({ "from": "service:billing", "edgeType": "depends_on", "to": "service:ledger",
                "evidence": { "chunkIds": [chunk] } }),
    )
    .await;

    let pack = app
        .call(
            &w,
            "search",
            json!({ "query": "what does billing depend on", "maxResults": 5 }),
        )
        .await;
    let pack = &pack["structuredContent"];
    let item = pack["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["chunkId"] == chunk.as_str())
        .unwrap_or_else(|| panic!("the cited passage: {pack}"));
    assert!(find_edge(&item["graphEdges"], "type"), "{item}");
    let refs: Vec<&str> = item["graphRefs"]
        .as_array()
        .expect("refs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        refs.contains(&"service:billing") && refs.contains(&"service:ledger"),
        "{item}"
    );
    assert!(
        find_edge(&pack["graph"]["edges"], "edgeType"),
        "{}",
        pack["graph"]
    );
}
