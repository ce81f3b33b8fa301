//! The README's worked examples, answered in the top 3 (issue 30): the MCP worked example
//! (`store_knowledge` "Payment retries…", then `search` "how often are charges retried" —
//! `retried` ≠ `retries` without stemming) and the quickstart's questions over the
//! documentation it ingests (`--ingest README.md ARCHITECTURE.md`), with other notes beside
//! them so "top 3" means something.

use axum::body::Body;
use evident_e2e::{Embed, TestApp};
use serde_json::{Value, json};

const README: &str = include_str!("../../../README.md");
const ARCHITECTURE: &str = include_str!("../../../ARCHITECTURE.md");

/// Notes on neighbouring subjects: payments, charges, schedules, retries of other things.
const OTHER_NOTES: &[(&str, &str)] = &[
    (
        "Refund policy",
        "Refunds of a charge are approved by service:billing within five days.",
    ),
    (
        "Invoice schedule",
        "Invoices are sent on the first day of every month.",
    ),
    (
        "Ledger",
        "service:ledger keeps double-entry records of every payment.",
    ),
    (
        "Backups",
        "Database backups run every night and are kept for thirty days.",
    ),
    (
        "Upload limits",
        "An upload over 50 MiB is refused; the client may try again later.",
    ),
    (
        "Card networks",
        "Charges to cards go through the card network of the issuing bank.",
    ),
    (
        "Webhook delivery",
        "Webhooks are delivered once; a failed delivery is logged.",
    ),
    (
        "On-call",
        "The payments team is on call during business hours.",
    ),
];

/// One MCP `tools/call` through the router with the operator's token.
async fn mcp(app: &TestApp, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    let (s, v) = app
        .call(
            "POST",
            "/mcp",
            Some(Body::from(body.to_string())),
            &[
                ("host", "evident.example.com"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2025-06-18"),
            ],
        )
        .await;
    assert_eq!(s, 200, "{tool}: {v}");
    v
}

async fn seeded() -> TestApp {
    let app = TestApp::new(Embed::Static).await;
    for (uri, content) in [("README.md", README), ("ARCHITECTURE.md", ARCHITECTURE)] {
        app.post_ok(
            "/api/v1/ingest",
            &json!({"clientId": "default", "sourceUrn": format!("file:{uri}"), "kind": "document",
                    "title": uri, "content": content}),
        )
        .await;
    }
    for (subject, content) in OTHER_NOTES {
        mcp(
            &app,
            "store_knowledge",
            json!({"clientId": "default", "subject": subject, "content": content}),
        )
        .await;
    }
    app
}

fn urns(items: &Value) -> Vec<String> {
    items
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["sourceUrn"].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_worked_example_is_answered_in_the_top_3() {
    let app = seeded().await;
    // Exactly the README's calls.
    let stored = mcp(
        &app,
        "store_knowledge",
        json!({"clientId": "default", "subject": "Payment retries",
               "content": "service:payments retries a failed charge three times, then parks it.",
               "relationships": ["service:payments|DEPENDS_ON|service:ledger"]}),
    )
    .await;
    assert_eq!(
        stored["result"]["structuredContent"]["sourceUrn"], "knowledge:payment_retries",
        "{stored}"
    );
    let found = mcp(
        &app,
        "search",
        json!({"clientId": "default", "query": "how often are charges retried"}),
    )
    .await;
    let urns = urns(&found["result"]["structuredContent"]["items"]);
    let rank = urns.iter().position(|u| u == "knowledge:payment_retries");
    assert!(rank.is_some_and(|r| r < 3), "rank {rank:?}: {urns:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quickstart_questions_find_the_architecture_in_the_top_3() {
    let app = seeded().await;
    // README.md holds these questions verbatim; the answer is ARCHITECTURE.md's text.
    for query in [
        "how does retrieval fuse BM25 and vectors",
        "credential rejection at ingest",
        "what is the visibility rule",
    ] {
        let pack = app
            .post_ok(
                "/api/v1/retrieve",
                &json!({"clientId": "default", "query": query, "maxResults": 10}),
            )
            .await;
        let urns = urns(&pack["items"]);
        let rank = urns.iter().position(|u| u == "file:ARCHITECTURE.md");
        assert!(
            rank.is_some_and(|r| r < 3),
            "{query}: rank {rank:?}: {urns:?}"
        );
    }
}
