//! MCP over the real router, in process: JSON-RPC bodies POSTed to `/mcp` behind the same
//! bearer tokens and grants as REST.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use evident_ai::HashingEmbedder;
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

impl App {
    async fn new() -> App {
        let dir = tempfile::tempdir().expect("tmp");
        let embedder = Arc::new(HashingEmbedder::new(32).expect("dim"));
        let store = EmbeddedStore::open(EmbeddedOptions {
            dir: dir.path().to_path_buf(),
            vector_space: VectorSpace {
                embedder: evident_ai::Embedder::identity(embedder.as_ref()).to_string(),
                dim: 32,
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

const TOOLS: [&str; 14] = [
    "search",
    "traverse",
    "get_node",
    "list_nodes",
    "store_knowledge",
    "memory_get",
    "memory_put",
    "memory_list",
    "queue_status",
    "source_status",
    "get_user_context",
    "record_outcome",
    "session_append",
    "session_recent",
];

#[tokio::test]
async fn initialize_and_list_tools_with_schemas_and_annotations() {
    let app = App::new().await;
    let t = app.token("reader", Grant::client("acme", Role::Read)).await;
    let init = app
        .rpc(
            &t,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "test", "version": "1" }
            }),
        )
        .await;
    let r = &init["result"];
    assert_eq!(r["serverInfo"]["name"], "evident", "{init}");
    assert!(r["capabilities"]["tools"].is_object(), "{init}");
    assert!(r["capabilities"]["resources"].is_object(), "{init}");
    assert!(
        r["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("untrusted"))
    );

    let list = app.rpc(&t, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    let mut expected = TOOLS.to_vec();
    expected.sort_unstable();
    assert_eq!(names, expected);
    for tool in tools {
        let name = tool["name"].as_str().expect("name");
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 40),
            "{name} has a description for a model"
        );
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        let write = matches!(
            name,
            "store_knowledge" | "memory_put" | "record_outcome" | "session_append"
        );
        let a = &tool["annotations"];
        assert_eq!(a["readOnlyHint"], !write, "{name}: {a}");
        if write && name != "session_append" {
            assert_eq!(a["destructiveHint"], true, "{name}: {a}");
        }
    }
    let by_name = |n: &str| {
        tools
            .iter()
            .find(|t| t["name"] == n)
            .cloned()
            .expect("tool")
    };
    let search = by_name("search");
    assert_eq!(
        search["inputSchema"]["required"],
        json!(["query"]),
        "{search}"
    );
    for p in [
        "query",
        "clientId",
        "projectId",
        "groupId",
        "maxResults",
        "kinds",
    ] {
        assert!(
            search["inputSchema"]["properties"][p]["description"].is_string(),
            "search.{p}: {search}"
        );
    }
    assert!(search["outputSchema"]["properties"]["items"].is_object());
    let store = by_name("store_knowledge");
    for p in [
        "content",
        "subject",
        "title",
        "kind",
        "relationships",
        "priority",
    ] {
        assert!(
            store["inputSchema"]["properties"][p].is_object(),
            "store_knowledge.{p}"
        );
    }
    assert!(by_name("get_node")["outputSchema"]["properties"]["evidence"].is_object());

    let templates = app.rpc(&t, "resources/templates/list", json!({})).await;
    let uris: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .expect("templates")
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert_eq!(uris, ["evident://node/{key}", "evident://chunk/{id}"]);
}

#[tokio::test]
async fn every_tool_answers_and_a_citation_opens() {
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

    // The citation opens as a resource.
    let uri = retries[0]["resource"].as_str().expect("resource uri");
    assert!(
        uri.starts_with("evident://chunk/") && uri.ends_with("?clientId=acme"),
        "{uri}"
    );
    let read = app.rpc(&w, "resources/read", json!({ "uri": uri })).await;
    let contents = read["result"]["contents"].as_array().expect("contents");
    let body = contents[0]["text"].as_str().expect("text");
    assert!(body.contains("five times"), "{read}");
    assert!(body.contains("citation: "), "{read}");
    let meta: Value =
        serde_json::from_str(contents[1]["text"].as_str().expect("json")).expect("json");
    assert_eq!(meta["sourceUrn"], "knowledge:payment_retries");
    assert!(meta["locator"].is_object(), "{meta}");
    assert!(meta["citation"].is_string(), "{meta}");

    // Graph tools.
    let node = app
        .call(&w, "get_node", json!({ "key": "service:payments" }))
        .await;
    let n = &node["structuredContent"];
    assert_eq!(n["node"]["key"], "service:payments", "{node}");
    assert!(
        n["evidence"]
            .as_array()
            .is_some_and(|e| !e.is_empty() && e[0]["citation"].is_string()),
        "{node}"
    );
    let node_res = app
        .rpc(
            &w,
            "resources/read",
            json!({ "uri": "evident://node/service:payments" }),
        )
        .await;
    assert!(
        node_res["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("service:ledger")),
        "{node_res}"
    );
    let nodes = app.call(&w, "list_nodes", json!({ "q": "payments" })).await;
    assert!(
        nodes["structuredContent"]["nodes"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["key"] == "service:payments")),
        "{nodes}"
    );
    let walk = app
        .call(
            &w,
            "traverse",
            json!({ "startKey": "service:payments", "direction": "out" }),
        )
        .await;
    assert!(
        walk["structuredContent"]["edges"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["to"] == "service:ledger")),
        "{walk}"
    );

    // Memory.
    app.call(
        &w,
        "memory_put",
        json!({ "sessionId": "s1", "key": "plan", "value": { "step": 2 } }),
    )
    .await;
    let got = app
        .call(
            &w,
            "memory_get",
            json!({ "sessionId": "s1", "key": "plan" }),
        )
        .await;
    assert_eq!(got["structuredContent"]["value"]["step"], 2, "{got}");
    let listed = app
        .call(&w, "memory_list", json!({ "sessionId": "s1" }))
        .await;
    assert_eq!(
        listed["structuredContent"]["entries"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{listed}"
    );

    // Operators' views.
    let q = app.call(&w, "queue_status", json!({})).await;
    assert!(
        q["structuredContent"]["counts"]["queued"].is_number(),
        "{q}"
    );
    let src = app.call(&w, "source_status", json!({})).await;
    assert!(
        src["structuredContent"]["indexed"]
            .as_array()
            .is_some_and(|s| s.len() == 2),
        "{src}"
    );

    // Writes are audited like REST writes.
    let audit = app
        .store
        .stores()
        .access
        .list_audit(&AuditFilter {
            client_id: Some("acme".into()),
            token_id: Some("writer".into()),
            route: None,
            since: None,
            before: None,
            limit: 100,
        })
        .await
        .expect("audit");
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
    let audit = app
        .store
        .stores()
        .access
        .list_audit(&AuditFilter {
            client_id: Some("acme".into()),
            token_id: Some("reader".into()),
            route: None,
            since: None,
            before: None,
            limit: 100,
        })
        .await
        .expect("audit");
    assert!(
        audit
            .iter()
            .any(|e| e.route == "mcp:store_knowledge" && e.outcome == "forbidden_role"),
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
