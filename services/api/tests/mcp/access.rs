//! Scopes, grants and the audit: what MCP keeps apart and refuses, as REST does.

use axum::http::StatusCode;
use evident_core::access::{Grant, Role};
use serde_json::{Value, json};

use crate::app::*;

// Long on purpose: one scenario told in order, each step reading the state the last left.
#[tokio::test]
async fn subjects_are_kept_apart_the_same_subject_updates_and_writes_are_audited() {
    let app = App::new().await;
    // A single-client token: clientId is filled in.
    let w = app.writer().await;

    let first = app
        .call(
            &w,
            "store_knowledge",
            json!({
                "subject": "Payment retries",
                "content": "Payments are retried three times by service:payments with exponential backoff.",
                "relationships": ["service:payments|DEPENDS_ON|service:ledger"],
                "kind": "decision"
            }),
        )
        .await;
    let s = &first["structuredContent"];
    assert_eq!(s["status"], "ingested", "{first}");
    assert_eq!(s["sourceUrn"], "knowledge:payment_retries");
    let other = app
        .call(
            &w,
            "store_knowledge",
            json!({ "subject": "Refund policy", "content": "Refunds are approved by service:billing within five days." }),
        )
        .await;
    assert_eq!(
        other["structuredContent"]["sourceUrn"],
        "knowledge:refund_policy"
    );

    // Different subjects keep both.
    let both = app
        .call(
            &w,
            "search",
            json!({ "query": "payments retried refunds approved" }),
        )
        .await;
    let urns: Vec<&str> = both["structuredContent"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["sourceUrn"].as_str())
        .collect();
    assert!(urns.contains(&"knowledge:payment_retries"), "{both}");
    assert!(urns.contains(&"knowledge:refund_policy"), "{both}");

    // The same subject (spelled differently) updates.
    let again = app
        .call(
            &w,
            "store_knowledge",
            json!({
                "subject": "payment  RETRIES",
                "content": "Payments are retried five times by service:payments.",
                "relationships": ["service:payments|DEPENDS_ON|service:ledger"]
            }),
        )
        .await;
    assert_eq!(again["structuredContent"]["status"], "updated", "{again}");
    let found = app
        .call(
            &w,
            "search",
            json!({ "query": "payments retried", "maxResults": 10 }),
        )
        .await;
    let items = found["structuredContent"]["items"]
        .as_array()
        .expect("items")
        .clone();
    let retries: Vec<&Value> = items
        .iter()
        .filter(|i| i["sourceUrn"] == "knowledge:payment_retries")
        .collect();
    assert_eq!(retries.len(), 1, "{found}");
    assert!(
        retries[0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("five times"))
    );
    assert!(!found.to_string().contains("three times"));
    // Cited passages inside untrusted-data delimiters naming the source and citation.
    let text = found["content"][0]["text"].as_str().expect("text");
    assert!(
        text.contains("<untrusted-source-data source=\"knowledge:payment_retries\" citation=\""),
        "{text}"
    );
    assert!(text.contains("</untrusted-source-data>"));
    assert_eq!(found["structuredContent"]["contentTrust"], "untrusted");

    // list_nodes without `q`: every node of the type, a page at a time.
    let mut listed: Vec<Value> = Vec::new();
    let mut args = json!({ "type": "service", "limit": 1 });
    loop {
        let page = app.call(&w, "list_nodes", args.clone()).await;
        let page = &page["structuredContent"];
        listed.extend(page["nodes"].as_array().cloned().unwrap_or_default());
        match page["nextAfter"].as_str() {
            Some(next) => args["after"] = json!(next),
            None => break,
        }
        assert!(listed.len() < 20, "{page}");
    }
    let keys: Vec<&str> = listed.iter().filter_map(|n| n["key"].as_str()).collect();
    assert!(
        keys.contains(&"service:payments") && keys.contains(&"service:ledger"),
        "{keys:?}"
    );
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "key order: {keys:?}");

    app.call(
        &w,
        "memory_put",
        json!({ "sessionId": "s1", "key": "plan", "value": { "step": 2 } }),
    )
    .await;

    // Writes are audited like REST writes.
    let audit = app.audit_of("writer").await;
    let routes: Vec<&str> = audit.iter().map(|e| e.route.as_str()).collect();
    assert_eq!(
        routes
            .iter()
            .filter(|r| **r == "mcp:store_knowledge")
            .count(),
        3,
        "{routes:?}"
    );
    assert!(routes.contains(&"mcp:memory_put"), "{routes:?}");
}

// Long on purpose: one scenario told in order, each step reading the state the last left.
#[tokio::test]
async fn calls_are_refused_as_rest_refuses_them() {
    let app = App::new().await;
    let reader = app.token("reader", Grant::client("acme", Role::Read)).await;
    let writer = app.writer().await;

    // No token, a bad token: 401 before any MCP handling.
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    let (status, body) = app.post(None, list.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["code"], "unauthenticated");
    let (status, body) = app.post(Some("evd_not_a_token"), list).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["code"], "invalid_token");

    // Refused as REST refuses them, with the API's codes: a role too low for the tool,
    // another client's data, a narrowed token outside its project; a missing node.
    let narrowed = app
        .token(
            "p1-writer",
            Grant {
                role: Role::Write,
                client_id: Some("acme".into()),
                projects: vec!["p1".into()],
                groups: Vec::new(),
            },
        )
        .await;
    for (token, tool, args, code) in [
        (
            &reader,
            "store_knowledge",
            json!({ "subject": "x", "content": "y" }),
            "forbidden_role",
        ),
        (
            &reader,
            "memory_put",
            json!({ "sessionId": "s", "key": "k", "value": 1 }),
            "forbidden_role",
        ),
        (
            &writer,
            "search",
            json!({ "query": "x", "clientId": "globex" }),
            "forbidden_scope",
        ),
        (
            &narrowed,
            "store_knowledge",
            json!({ "subject": "x", "content": "y" }),
            "forbidden_scope",
        ),
        (
            &writer,
            "get_node",
            json!({ "key": "service:nowhere" }),
            "not_found",
        ),
    ] {
        let e = app.call_err(token, tool, args.clone()).await;
        assert_eq!(e["data"]["code"], code, "{tool} {args}: {e}");
        if code.starts_with("forbidden") {
            assert_eq!(e["data"]["status"], 403, "{tool} {args}: {e}");
        }
    }
    let e = app
        .rpc(
            &writer,
            "resources/read",
            json!({ "uri": "evident://chunk/abc?clientId=globex" }),
        )
        .await;
    assert_eq!(e["error"]["data"]["code"], "forbidden_scope", "{e}");
    app.call(
        &narrowed,
        "store_knowledge",
        json!({ "subject": "x", "content": "y", "projectId": "p1" }),
    )
    .await;

    // Refused writes are audited too.
    let audit = app.audit_of("reader").await;
    assert!(
        audit
            .iter()
            .any(|e| e.route == "mcp:store_knowledge" && e.outcome == "forbidden_role"),
        "{audit:?}"
    );
}
