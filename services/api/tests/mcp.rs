//! MCP over the real router, in process: JSON-RPC bodies POSTed to `/mcp` behind the same
//! bearer tokens and grants as REST — what a client through the binary cannot set up:
//! narrowed grants, the audit log, a store whose embedder is held mid-call (cancellation),
//! progress of a large store. Schemas, every tool and resources are driven by the Rust SDK's
//! client through the real binary (`services/evident/tests/mcp.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use evident_ai::{EmbedError, Embedder, HashingEmbedder, Priority};
use evident_core::access::{Grant, Role, token_hash};
use evident_store::VectorSpace;
use evident_store::access::{AuditFilter, TokenRecord};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};
use serde_json::{Value, json};
use tower::ServiceExt;

struct App {
    router: Router,
    store: EmbeddedStore,
    _dir: tempfile::TempDir,
}

/// The hashing embedder, which a test can hold: while held, every call announces itself and
/// never returns (a slow model, made deterministic).
struct HeldEmbedder {
    inner: HashingEmbedder,
    held: AtomicBool,
    entered: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl Embedder for HeldEmbedder {
    fn identity(&self) -> &str {
        self.inner.identity()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    async fn embed(
        &self,
        texts: &[String],
        priority: Priority,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.held.load(Ordering::SeqCst) {
            self.entered.notify_one();
            std::future::pending::<()>().await;
        }
        self.inner.embed(texts, priority).await
    }
}

impl App {
    /// The audit records of client `acme` made by token `token_id`, newest first.
    async fn audit_of(&self, token_id: &str) -> Vec<evident_store::access::AuditEvent> {
        self.store
            .stores()
            .access
            .list_audit(&AuditFilter {
                client_id: Some("acme".into()),
                token_id: Some(token_id.into()),
                route: None,
                since: None,
                before: None,
                limit: 100,
            })
            .await
            .expect("audit")
    }

    async fn new() -> App {
        App::with_embedder(Arc::new(HashingEmbedder::new(32).expect("dim"))).await
    }

    async fn with_embedder(embedder: Arc<dyn Embedder>) -> App {
        let dir = tempfile::tempdir().expect("tmp");
        let store = EmbeddedStore::open(EmbeddedOptions {
            dir: dir.path().to_path_buf(),
            vector_space: VectorSpace {
                embedder: embedder.identity().to_string(),
                dim: embedder.dim(),
            },
            background_indexer: false,
        })
        .expect("store");
        let kb = evident_kb::Kb::new(store.stores(), embedder, Default::default())
            .await
            .expect("kb");
        let router = evident_api::router(evident_api::App::new(kb), None, Default::default());
        App {
            router,
            store,
            _dir: dir,
        }
    }

    async fn token(&self, id: &str, grant: Grant) -> String {
        let secret = format!("evd_test_{id}_secret_0123456789");
        self.store
            .stores()
            .access
            .create_token(TokenRecord {
                id: id.into(),
                name: format!("{id} (test)"),
                secret_hash: token_hash(&secret),
                grant,
                created_at: 0,
                expires_at: None,
                revoked_at: None,
                created_by: None,
            })
            .await
            .expect("token");
        secret
    }

    /// POSTs one JSON-RPC message; the HTTP status and the JSON answer.
    async fn post(&self, token: Option<&str>, body: Value) -> (StatusCode, Value) {
        let mut req = Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("host", "evident.example.com")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req.body(Body::from(body.to_string())).expect("request");
        let resp = self.router.clone().oneshot(req).await.expect("answer");
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24)
            .await
            .expect("body");
        let v = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| json!({ "raw": String::from_utf8_lossy(&bytes).to_string() }));
        (status, v)
    }

    async fn rpc(&self, token: &str, method: &str, params: Value) -> Value {
        let (status, v) = self
            .post(
                Some(token),
                json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{method}: {v}");
        v
    }

    /// `tools/call` → the result (panics on a JSON-RPC error).
    async fn call(&self, token: &str, tool: &str, args: Value) -> Value {
        let v = self
            .rpc(
                token,
                "tools/call",
                json!({ "name": tool, "arguments": args }),
            )
            .await;
        assert!(v.get("error").is_none(), "{tool}: {v}");
        assert_ne!(v["result"]["isError"], true, "{tool}: {v}");
        v["result"].clone()
    }

    /// `tools/call` expected to fail → the JSON-RPC error.
    async fn call_err(&self, token: &str, tool: &str, args: Value) -> Value {
        let v = self
            .rpc(
                token,
                "tools/call",
                json!({ "name": tool, "arguments": args }),
            )
            .await;
        assert!(v.get("error").is_some(), "{tool} should fail: {v}");
        v["error"].clone()
    }
}

#[tokio::test]
async fn subjects_are_kept_apart_the_same_subject_updates_and_writes_are_audited() {
    let app = App::new().await;
    // A single-client token: clientId is filled in.
    let w = app
        .token("writer", Grant::client("acme", Role::Write))
        .await;

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

#[tokio::test]
async fn calls_are_refused_as_rest_refuses_them() {
    let app = App::new().await;
    let reader = app.token("reader", Grant::client("acme", Role::Read)).await;
    let writer = app
        .token("writer", Grant::client("acme", Role::Write))
        .await;

    // No token, a bad token: 401 before any MCP handling.
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    let (status, body) = app.post(None, list.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["code"], "unauthenticated");
    let (status, body) = app.post(Some("evd_not_a_token"), list).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["code"], "invalid_token");

    // A role too low for the tool.
    let e = app
        .call_err(
            &reader,
            "store_knowledge",
            json!({ "subject": "x", "content": "y" }),
        )
        .await;
    assert_eq!(e["data"]["code"], "forbidden_role", "{e}");
    assert_eq!(e["data"]["status"], 403);
    let e = app
        .call_err(
            &reader,
            "memory_put",
            json!({ "sessionId": "s", "key": "k", "value": 1 }),
        )
        .await;
    assert_eq!(e["data"]["code"], "forbidden_role", "{e}");

    // Another client's data.
    let e = app
        .call_err(
            &writer,
            "search",
            json!({ "query": "x", "clientId": "globex" }),
        )
        .await;
    assert_eq!(e["data"]["code"], "forbidden_scope", "{e}");
    let e = app
        .rpc(
            &writer,
            "resources/read",
            json!({ "uri": "evident://chunk/abc?clientId=globex" }),
        )
        .await;
    assert_eq!(e["error"]["data"]["code"], "forbidden_scope", "{e}");

    // A narrowed token writes only into its project.
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
    let e = app
        .call_err(
            &narrowed,
            "store_knowledge",
            json!({ "subject": "x", "content": "y" }),
        )
        .await;
    assert_eq!(e["data"]["code"], "forbidden_scope", "{e}");
    app.call(
        &narrowed,
        "store_knowledge",
        json!({ "subject": "x", "content": "y", "projectId": "p1" }),
    )
    .await;

    // Errors carry the API's code.
    let e = app
        .call_err(&writer, "get_node", json!({ "key": "service:nowhere" }))
        .await;
    assert_eq!(e["data"]["code"], "not_found", "{e}");

    // Refused writes are audited too.
    let audit = app.audit_of("reader").await;
    assert!(
        audit
            .iter()
            .any(|e| e.route == "mcp:store_knowledge" && e.outcome == "forbidden_role"),
        "{audit:?}"
    );
}

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

#[tokio::test]
async fn long_calls_report_progress_at_their_stages_when_asked() {
    let app = App::new().await;
    let w = app
        .token("writer", Grant::client("acme", Role::Write))
        .await;
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
    let w = app
        .token("writer", Grant::client("acme", Role::Write))
        .await;
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

#[tokio::test]
async fn user_knowledge_by_category_and_the_prefetch() {
    let app = App::new().await;
    let w = app
        .token("writer", Grant::client("acme", Role::Write))
        .await;
    let stored = app
        .call(
            &w,
            "store_knowledge",
            json!({ "subject": "BMS", "content": "Brokerage Management System", "category": "domain" }),
        )
        .await;
    assert_eq!(
        stored["structuredContent"]["sourceUrn"], "user-knowledge:domain:bms",
        "{stored}"
    );
    app.call(
        &w,
        "store_knowledge",
        json!({ "subject": "editor", "content": "uses Helix", "category": "preference" }),
    )
    .await;
    let ctx = app.call(&w, "get_user_context", json!({})).await;
    let md = ctx["structuredContent"]["markdown"]
        .as_str()
        .expect("markdown");
    assert!(
        md.contains("### Domain Context\n- **BMS**: Brokerage Management System"),
        "{ctx}"
    );
    assert!(
        md.contains("### Preferences\n- **editor**: uses Helix"),
        "{ctx}"
    );

    for (args, code) in [
        (
            json!({ "subject": "x", "content": "y", "category": "hobby" }),
            "invalid_field",
        ),
        (
            json!({ "subject": "x", "content": "y", "category": "general", "kind": "fact" }),
            "invalid_request",
        ),
        (
            json!({ "content": "y", "category": "general" }),
            "missing_field",
        ),
    ] {
        let e = app.call_err(&w, "store_knowledge", args.clone()).await;
        assert_eq!(e["data"]["code"], code, "{args}: {e}");
    }
    let outsider = app
        .token("outsider", Grant::client("globex", Role::Read))
        .await;
    let e = app
        .call_err(&outsider, "get_user_context", json!({ "clientId": "acme" }))
        .await;
    assert_eq!(e["data"]["status"], 403, "{e}");
}

#[tokio::test]
async fn outcomes_are_filtered_queued_and_checked_against_the_grant() {
    let app = App::new().await;
    let w = app
        .token("writer", Grant::client("acme", Role::Write))
        .await;
    let refused = app
        .call(
            &w,
            "record_outcome",
            json!({ "taskId": "T-1", "category": "advice", "finalResult": "an answer" }),
        )
        .await;
    assert_eq!(
        refused["structuredContent"],
        json!({ "ingested": false, "reason": "advice" }),
        "{refused}"
    );
    let kept = app
        .call(
            &w,
            "record_outcome",
            json!({
                "taskId": "T-2", "category": "epic", "finalResult": "shipped",
                "summary": "Split the importer into stages.", "topics": ["importer"]
            }),
        )
        .await;
    let s = &kept["structuredContent"];
    assert_eq!(s["ingested"], true, "{kept}");
    assert_eq!(s["sourceUrn"], "task-outcome:T-2");
    let reader = app.token("reader", Grant::client("acme", Role::Read)).await;
    let e = app
        .call_err(
            &reader,
            "record_outcome",
            json!({ "taskId": "T-3", "category": "epic", "finalResult": "x", "summary": "y" }),
        )
        .await;
    assert_eq!(e["data"]["status"], 403, "{e}");
}

#[tokio::test]
async fn the_session_log_is_appended_and_read_per_project() {
    let app = App::new().await;
    let w = app
        .token("writer", Grant::client("acme", Role::Write))
        .await;
    for (i, project) in ["p1", "p1", "p2"].iter().enumerate() {
        let e = app
            .call(
                &w,
                "session_append",
                json!({ "projectId": project, "source": "orchestrator_decision", "summary": format!("decision {i}") }),
            )
            .await;
        assert_eq!(e["structuredContent"]["clientId"], "acme", "{e}");
    }
    let recent = app
        .call(&w, "session_recent", json!({ "projectId": "p1" }))
        .await;
    let summaries: Vec<&str> = recent["structuredContent"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["summary"].as_str())
        .collect();
    assert_eq!(summaries, ["decision 1", "decision 0"]);
    let e = app
        .call_err(
            &w,
            "session_append",
            json!({ "source": "chat", "summary": "x".repeat(201) }),
        )
        .await;
    assert_eq!(e["data"]["code"], "invalid_field", "{e}");
    let narrowed = app
        .token(
            "p2-only",
            Grant {
                role: Role::Read,
                client_id: Some("acme".into()),
                projects: vec!["p2".into()],
                groups: vec![],
            },
        )
        .await;
    let e = app
        .call_err(&narrowed, "session_recent", json!({ "projectId": "p1" }))
        .await;
    assert_eq!(e["data"]["status"], 403, "{e}");
}

#[tokio::test]
async fn claims_are_learned_recalled_changed_and_audited_through_mcp() {
    let app = App::new().await;
    let w = app
        .token("writer", Grant::client("acme", Role::Write))
        .await;
    let e = app
        .call_err(
            &w,
            "learn",
            json!({ "text": "the retry cap is five minutes" }),
        )
        .await;
    assert_eq!(e["data"]["code"], "evidence_required", "{e}");
    let e = app
        .call_err(
            &w,
            "learn",
            json!({ "text": "x", "evidence": [{ "kind": "chunk", "ref": "nope" }] }),
        )
        .await;
    assert_eq!(e["data"]["code"], "evidence_not_visible", "{e}");
    let learn = |text: &str| {
        json!({ "text": text, "evidence": [{ "kind": "url", "ref": "https://docs.example/retry" }],
                "tags": ["retry"], "actor": { "type": "agent", "id": "reviewer" } })
    };
    let a = app
        .call(&w, "learn", learn("the retry cap is five minutes"))
        .await;
    let a = a["structuredContent"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let b = app
        .call(&w, "learn", learn("the retry cap is ten minutes"))
        .await;
    let b = b["structuredContent"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let r = app
        .call(
            &w,
            "recall",
            json!({ "question": "retry cap", "tags": ["retry"] }),
        )
        .await;
    assert_eq!(
        r["structuredContent"]["claims"].as_array().map(Vec::len),
        Some(2),
        "{r}"
    );
    let v = app
        .call(
            &w,
            "verify",
            json!({ "id": a, "evidence": [{ "kind": "user_statement", "ref": "m1" }] }),
        )
        .await;
    assert_eq!(v["structuredContent"]["status"], "verified", "{v}");
    let e = app.call_err(&w, "verify", json!({ "id": a })).await;
    assert_eq!(e["data"]["code"], "invalid_transition", "{e}");
    app.call(
        &w,
        "dispute",
        json!({ "id": a, "reason": "the code says ten" }),
    )
    .await;
    let s = app.call(&w, "supersede", json!({ "id": a, "by": b })).await;
    assert_eq!(s["structuredContent"]["supersededBy"], b.as_str(), "{s}");
    let h = app.call(&w, "claim_history", json!({ "id": a })).await;
    let to: Vec<&str> = h["structuredContent"]["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["to"].as_str())
        .collect();
    assert_eq!(
        to,
        ["observed", "verified", "disputed", "superseded"],
        "{h}"
    );
    let tools: Vec<String> = app
        .audit_of("writer")
        .await
        .into_iter()
        .map(|e| e.route)
        .collect();
    for tool in ["learn", "verify", "dispute", "supersede"] {
        assert!(
            tools.iter().any(|r| r.contains(tool)),
            "{tool} audited: {tools:?}"
        );
    }
    // Another client's reader sees none of it.
    let other = app.token("other", Grant::client("other", Role::Read)).await;
    let r = app
        .call(&other, "recall", json!({ "question": "retry cap" }))
        .await;
    assert_eq!(r["structuredContent"]["claims"], json!([]), "{r}");
    let e = app
        .call_err(&other, "claim_history", json!({ "id": a }))
        .await;
    assert_eq!(e["data"]["status"], 404, "{e}");
}
