//! The harness: an app over the embedded store (optionally with an embedder a test can
//! hold), tokens with narrowed grants, and JSON-RPC calls to `/mcp`.

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

pub(crate) struct App {
    pub(crate) router: Router,
    pub(crate) store: EmbeddedStore,
    pub(crate) _dir: tempfile::TempDir,
}

/// The hashing embedder, which a test can hold: while held, every call announces itself and
/// never returns (a slow model, made deterministic).
pub(crate) struct HeldEmbedder {
    pub(crate) inner: HashingEmbedder,
    pub(crate) held: AtomicBool,
    pub(crate) entered: tokio::sync::Notify,
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
    pub(crate) async fn audit_of(&self, token_id: &str) -> Vec<evident_store::access::AuditEvent> {
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

    pub(crate) async fn new() -> App {
        App::with_embedder(Arc::new(HashingEmbedder::new(32).expect("dim"))).await
    }

    pub(crate) async fn with_embedder(embedder: Arc<dyn Embedder>) -> App {
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

    pub(crate) async fn token(&self, id: &str, grant: Grant) -> String {
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

    /// The token `writer`: write access to client `acme`.
    pub(crate) async fn writer(&self) -> String {
        self.token("writer", Grant::client("acme", Role::Write))
            .await
    }

    /// POSTs one JSON-RPC message; the HTTP status and the JSON answer.
    pub(crate) async fn post(&self, token: Option<&str>, body: Value) -> (StatusCode, Value) {
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

    pub(crate) async fn rpc(&self, token: &str, method: &str, params: Value) -> Value {
        let (status, v) = self
            .post(
                Some(token),
                json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{method}: {v}");
        v
    }

    /// `tools/call` of `tool` with `args`: the JSON-RPC answer, result or error.
    async fn tools_call(&self, token: &str, tool: &str, args: Value) -> Value {
        let params = json!({ "name": tool, "arguments": args });
        self.rpc(token, "tools/call", params).await
    }

    /// `tools/call` → the result (panics on a JSON-RPC error).
    pub(crate) async fn call(&self, token: &str, tool: &str, args: Value) -> Value {
        let v = self.tools_call(token, tool, args).await;
        assert!(v.get("error").is_none(), "{tool}: {v}");
        assert_ne!(v["result"]["isError"], true, "{tool}: {v}");
        v["result"].clone()
    }

    /// `tools/call` expected to fail → the JSON-RPC error.
    pub(crate) async fn call_err(&self, token: &str, tool: &str, args: Value) -> Value {
        let v = self.tools_call(token, tool, args).await;
        assert!(v.get("error").is_some(), "{tool} should fail: {v}");
        v["error"].clone()
    }

    /// `tools/call` refused as REST refuses it: a JSON-RPC error with HTTP status 403 in its
    /// data; the error.
    pub(crate) async fn forbidden(&self, token: &str, tool: &str, args: Value) -> Value {
        let e = self.call_err(token, tool, args).await;
        assert_eq!(e["data"]["status"], 403, "{tool}: {e}");
        e
    }
}
