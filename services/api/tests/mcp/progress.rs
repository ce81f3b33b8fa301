//! Progress notifications and cancellation of long calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use evident_ai::HashingEmbedder;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::app::*;

/// A `tools/call` message asking for progress (`_meta.progressToken`).
fn call_with_progress(id: u64, tool: &str, args: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": args, "_meta": { "progressToken": format!("p{id}") } }
    })
}

fn cancellation(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": id, "reason": "the user stopped it" }
    })
}

/// POSTs on a router (from a spawned task): the content type and the messages of the answer
/// (one JSON answer, or every `data:` of an event stream, in order).
async fn post_messages(router: Router, token: String, body: Value) -> (String, Vec<Value>) {
    let req = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "evident.example.com")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(body.to_string()))
        .expect("request");
    let resp = router.oneshot(req).await.expect("answer");
    let content_type = resp.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_string();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24)
        .await
        .expect("body");
    let text = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
    let messages = if content_type.starts_with("text/event-stream") {
        text.split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .collect();
                (!data.is_empty()).then(|| serde_json::from_str(&data.join("\n")).expect("json"))
            })
            .collect()
    } else {
        vec![serde_json::from_str(&text).expect("json")]
    };
    (content_type, messages)
}

fn progress_of(messages: &[Value]) -> Vec<(f64, Option<f64>, String)> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            let p = &m["params"];
            (
                p["progress"].as_f64().expect("progress"),
                p["total"].as_f64(),
                p["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

// Long on purpose: one scenario told in order, each step reading the state the last left.
#[tokio::test]
async fn long_calls_report_progress_at_their_stages_when_asked() {
    let app = App::new().await;
    let w = app.writer().await;
    // A large document: well over one embedding batch of new chunks.
    let content: String = (0..150)
        .map(|i| {
            let words: Vec<String> = (0..120).map(|j| format!("w{i}x{j}")).collect();
            format!(
                "Section {i} of the runbook for service:ledger. {}\n\n",
                words.join(" ")
            )
        })
        .collect();
    let (content_type, messages) = post_messages(
        app.router.clone(),
        w.clone(),
        call_with_progress(
            11,
            "store_knowledge",
            json!({ "subject": "Ledger runbook", "content": content }),
        ),
    )
    .await;
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let result = messages.last().expect("answer");
    assert_eq!(result["id"], 11, "the result comes last: {result}");
    let chunks = result["result"]["structuredContent"]["chunks"]["total"]
        .as_u64()
        .expect("chunk count");
    assert!(chunks > 64, "{chunks} chunks");
    let progress = progress_of(&messages);
    let stages: Vec<&str> = progress.iter().map(|(_, _, m)| m.as_str()).collect();
    assert!(stages[0].starts_with("chunked: "), "{stages:?}");
    assert!(
        stages.iter().filter(|m| m.starts_with("embedded ")).count() >= 2,
        "{stages:?}"
    );
    assert!(
        stages.last().is_some_and(|m| m.starts_with("writing ")),
        "{stages:?}"
    );
    assert!(
        progress.windows(2).all(|w| w[0].0 < w[1].0),
        "progress rises: {progress:?}"
    );
    assert!(
        progress.iter().all(|(p, t, _)| t.is_some_and(|t| *p < t)),
        "{progress:?}"
    );
    assert!(
        messages[..messages.len() - 1]
            .iter()
            .all(|m| m["params"]["progressToken"] == "p11")
    );

    let (content_type, messages) = post_messages(
        app.router.clone(),
        w.clone(),
        call_with_progress(12, "search", json!({ "query": "ledger runbook section 7" })),
    )
    .await;
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let stages: Vec<String> = progress_of(&messages)
        .into_iter()
        .map(|(_, _, m)| m)
        .collect();
    assert!(stages[0].starts_with("searched: "), "{stages:?}");
    assert!(
        stages.iter().any(|m| m.starts_with("expanded the graph")),
        "{stages:?}"
    );
    assert!(messages.last().expect("answer")["result"]["structuredContent"]["items"].is_array());

    // Without a progress token: one JSON answer, as before.
    let (content_type, messages) = post_messages(
        app.router.clone(),
        w,
        json!({ "jsonrpc": "2.0", "id": 13, "method": "tools/call",
                "params": { "name": "search", "arguments": { "query": "ledger" } } }),
    )
    .await;
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    assert_eq!(messages.len(), 1);
}

#[tokio::test]
async fn a_cancelled_store_stops_before_writing_anything() {
    let embedder = Arc::new(HeldEmbedder {
        inner: HashingEmbedder::new(32).expect("dim"),
        held: AtomicBool::new(true),
        entered: tokio::sync::Notify::new(),
    });
    let app = App::with_embedder(embedder.clone()).await;
    let w = app.writer().await;
    let call = tokio::spawn(post_messages(
        app.router.clone(),
        w.clone(),
        call_with_progress(
            21,
            "store_knowledge",
            json!({ "subject": "Held", "content": "The held store names service:held." }),
        ),
    ));
    // The call is embedding (and would never finish).
    embedder.entered.notified().await;
    // The caller's cancellation stops it (another token's could not: the calls in flight
    // are keyed by caller, see `inflight`'s unit test).
    let (status, _) = app.post(Some(&w), cancellation(21)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, messages) = call.await.expect("call");
    let stages: Vec<String> = progress_of(&messages)
        .into_iter()
        .map(|(_, _, m)| m)
        .collect();
    assert_eq!(stages, ["chunked: 1 chunk(s), 1 to embed"], "{messages:?}");
    let answer = messages.last().expect("answer");
    assert_eq!(answer["id"], 21);
    assert_eq!(answer["error"]["data"]["code"], "cancelled", "{answer}");

    // Nothing was written: no source, no chunk, no node.
    embedder.held.store(false, Ordering::SeqCst);
    let src = app.call(&w, "source_status", json!({})).await;
    assert_eq!(src["structuredContent"]["indexed"], json!([]), "{src}");
    let e = app
        .call_err(&w, "get_node", json!({ "key": "service:held" }))
        .await;
    assert_eq!(e["data"]["code"], "not_found", "{e}");
    let found = app
        .call(&w, "search", json!({ "query": "held store" }))
        .await;
    assert_eq!(found["structuredContent"]["items"], json!([]), "{found}");
    // The refused audit names the cancellation.
    let audit = app.audit_of("writer").await;
    assert!(
        audit
            .iter()
            .any(|e| e.route == "mcp:store_knowledge" && e.outcome == "cancelled"),
        "{audit:?}"
    );
}
