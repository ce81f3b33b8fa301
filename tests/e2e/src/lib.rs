//! Test harness: a real router over a fresh embedded store in a temp dir, driven in-process
//! through `tower::ServiceExt::oneshot` (no sockets, no sleeps).

pub mod fixtures;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use evident_ai::{Embedder, HashingEmbedder, StaticEmbedder};
use evident_kb::{Kb, PoolConfig};
use evident_store::VectorSpace;
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

pub struct TestApp {
    pub router: axum::Router,
    pub kb: Kb,
    pub store: EmbeddedStore,
    pub dir: tempfile::TempDir,
    /// An operator token, sent by [`TestApp::call`] unless the call names its own
    /// `authorization` header (an empty value sends none; likewise `content-type`).
    pub token: String,
}

/// Stores a token with `grant` directly in the store; returns its secret.
pub async fn mint(
    store: &EmbeddedStore,
    id: &str,
    grant: evident_core::access::Grant,
    expires_at: Option<i64>,
) -> String {
    let secret = format!(
        "evd_test_{id}_{}",
        evident_store::conformance::unique_suffix()
    );
    store
        .stores()
        .access
        .create_token(evident_store::access::TokenRecord {
            id: id.into(),
            name: format!("{id} (test)"),
            secret_hash: evident_core::access::token_hash(&secret),
            grant,
            created_at: 0,
            expires_at,
            revoked_at: None,
            created_by: Some("test".into()),
        })
        .await
        .expect("mint token");
    secret
}

/// Which embedder a test needs: semantics (the built-in static table) or none (hashing).
pub enum Embed {
    Static,
    Hashing,
}

impl TestApp {
    pub async fn new(embed: Embed) -> TestApp {
        Self::with_body_limit(embed, 1024 * 1024).await
    }

    /// A test app whose API reads time from a paused clock starting at `start_ms`; the
    /// clock, to move it.
    pub async fn with_clock(
        embed: Embed,
        start_ms: i64,
    ) -> (TestApp, Arc<evident_store::queue::ManualClock>) {
        let mut app = Self::new(embed).await;
        let clock = Arc::new(evident_store::queue::ManualClock::new(start_ms));
        app.router = evident_api::router(
            evident_api::App {
                kb: app.kb.clone(),
                tasks: evident_kb::TaskSubmitter::new(app.kb.stores().queue.clone()),
                clock: clock.clone(),
            },
            None,
            evident_api::ApiConfig::default(),
        );
        (app, clock)
    }

    /// A test app authenticating as `auth` says (e.g. without the failed-authentication
    /// limit, for tests that present many bad tokens on purpose).
    pub async fn with_auth(embed: Embed, auth: evident_api::auth::AuthConfig) -> TestApp {
        let embedder: Arc<dyn Embedder> = match embed {
            Embed::Static => Arc::new(StaticEmbedder::builtin()),
            Embed::Hashing => Arc::new(HashingEmbedder::new(64).expect("dim")),
        };
        Self::with_api_config(
            embedder,
            tempfile::tempdir().expect("temp dir"),
            evident_api::ApiConfig {
                max_body_bytes: 1024 * 1024,
                auth,
                ..Default::default()
            },
        )
        .await
    }

    pub async fn with_body_limit(embed: Embed, max_body_bytes: usize) -> TestApp {
        let embedder: Arc<dyn Embedder> = match embed {
            Embed::Static => Arc::new(StaticEmbedder::builtin()),
            Embed::Hashing => Arc::new(HashingEmbedder::new(64).expect("dim")),
        };
        Self::with_embedder(
            embedder,
            max_body_bytes,
            tempfile::tempdir().expect("temp dir"),
        )
        .await
    }

    /// A router over the store in `dir` (which may already hold data) with `embedder`.
    pub async fn with_embedder(
        embedder: Arc<dyn Embedder>,
        max_body_bytes: usize,
        dir: tempfile::TempDir,
    ) -> TestApp {
        Self::with_api_config(
            embedder,
            dir,
            evident_api::ApiConfig {
                max_body_bytes,
                ..Default::default()
            },
        )
        .await
    }

    /// A router with its own API configuration (auth, limits, CORS).
    pub async fn with_api_config(
        embedder: Arc<dyn Embedder>,
        dir: tempfile::TempDir,
        config: evident_api::ApiConfig,
    ) -> TestApp {
        let store = EmbeddedStore::open(EmbeddedOptions {
            dir: dir.path().to_path_buf(),
            vector_space: VectorSpace {
                embedder: embedder.identity().to_string(),
                dim: embedder.dim(),
            },
            background_indexer: true,
        })
        .expect("open store");
        let kb = Kb::new(store.stores(), embedder, PoolConfig::default())
            .await
            .expect("kb");
        let router = evident_api::router(evident_api::App::new(kb.clone()), None, config);
        let token = mint(
            &store,
            "operator",
            evident_core::access::Grant::operator(),
            None,
        )
        .await;
        TestApp {
            router,
            kb,
            store,
            dir,
            token,
        }
    }

    pub async fn call(
        &self,
        method: &str,
        uri: &str,
        body: Option<Body>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        let names = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        let mut req = Request::builder().method(method).uri(uri);
        // JSON and the operator's token unless the call names its own (empty: none).
        if !names("content-type") {
            req = req.header("content-type", "application/json");
        }
        if !names("authorization") {
            req = req.header("authorization", format!("Bearer {}", self.token));
        }
        for (k, v) in headers {
            if !v.is_empty() {
                req = req.header(*k, *v);
            }
        }
        let req = req.body(body.unwrap_or_else(Body::empty)).expect("request");
        let resp = self
            .router
            .clone()
            .oneshot(req)
            .await
            .expect("router answers");
        let status = resp.status();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        (status, value)
    }

    /// `method uri` with the JSON `body` and `authorization` as that header's value (usually
    /// [`bearer`] of a token's secret; empty: none).
    pub async fn call_auth(
        &self,
        authorization: &str,
        method: &str,
        uri: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let body = body.map(|b| Body::from(b.to_string()));
        self.call(method, uri, body, &[("authorization", authorization)])
            .await
    }

    pub async fn post(&self, uri: &str, body: &Value) -> (StatusCode, Value) {
        self.call("POST", uri, Some(Body::from(body.to_string())), &[])
            .await
    }

    pub async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call("GET", uri, None, &[]).await
    }

    /// `POST uri` with `body`, which must answer 200 (else the test fails with the answer);
    /// the answer.
    pub async fn post_ok(&self, uri: &str, body: &Value) -> Value {
        let (s, v) = self.post(uri, body).await;
        assert_eq!(s, StatusCode::OK, "POST {uri}: {v}");
        v
    }

    /// `GET uri`, which must answer 200 (else the test fails with the answer); the answer.
    pub async fn get_ok(&self, uri: &str) -> Value {
        let (s, v) = self.get(uri).await;
        assert_eq!(s, StatusCode::OK, "GET {uri}: {v}");
        v
    }

    /// A token with `grant`, without expiry, stored as `id`; its secret.
    pub async fn token(&self, id: &str, grant: evident_core::access::Grant) -> String {
        mint(&self.store, id, grant, None).await
    }

    /// A token of `role` over client `client`, without expiry, stored as `id`; its secret.
    pub async fn client_token(
        &self,
        id: &str,
        client: &str,
        role: evident_core::access::Role,
    ) -> String {
        self.token(id, evident_core::access::Grant::client(client, role))
            .await
    }

    /// A queue worker over this app's queue and task handlers, its clock far ahead so every
    /// queued task is due.
    pub fn qualifier(&self) -> evident_qualifier::Qualifier {
        evident_qualifier::Qualifier {
            queue: self.kb.stores().queue.clone(),
            handlers: evident_kb::TaskHandlers::new(&self.kb),
            clock: Arc::new(evident_store::queue::ManualClock::new(i64::MAX / 2)),
            config: evident_qualifier::QueueConfig::default(),
            worker_id: "test".into(),
            band: evident_store::queue::PriorityBand::ALL,
        }
    }

    /// Row counts of every table: a cheap "store unchanged" fingerprint for bad-input tests.
    pub async fn fingerprint(&self) -> (i64, i64, i64) {
        let r = self.store.check_integrity().await.expect("integrity");
        assert!(r.is_ok(), "integrity: {r:?}");
        (r.chunks, r.nodes, r.edges)
    }
}

/// Wraps an embedder and counts the texts it was asked to embed.
pub struct CountingEmbedder {
    pub inner: Arc<dyn Embedder>,
    pub texts: std::sync::atomic::AtomicUsize,
}

impl CountingEmbedder {
    pub fn hashing() -> Arc<CountingEmbedder> {
        Arc::new(CountingEmbedder {
            inner: Arc::new(HashingEmbedder::new(64).expect("dim")),
            texts: Default::default(),
        })
    }
    pub fn count(&self) -> usize {
        self.texts.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Embedder for CountingEmbedder {
    fn identity(&self) -> &str {
        self.inner.identity()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    async fn embed(
        &self,
        texts: &[String],
        priority: evident_ai::Priority,
    ) -> Result<Vec<Vec<f32>>, evident_ai::EmbedError> {
        self.texts
            .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
        self.inner.embed(texts, priority).await
    }
}

/// Percent-encodes a string for a query value or path segment.
pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The string `field` of each object in the array `list` (no array fails the test).
pub fn field_strs<'a>(list: &'a Value, field: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap_or_else(|| panic!("an array of objects with `{field}`: {list}"))
        .iter()
        .filter_map(|e| e[field].as_str())
        .collect()
}

/// `Bearer {secret}`, for an `authorization` header.
pub fn bearer(secret: &str) -> String {
    format!("Bearer {secret}")
}

/// A grant of `role` over `client`, narrowed to `projects` and `groups`.
pub fn narrowed(
    role: evident_core::access::Role,
    client: &str,
    projects: &[&str],
    groups: &[&str],
) -> evident_core::access::Grant {
    evident_core::access::Grant {
        role,
        client_id: Some(client.into()),
        projects: projects.iter().map(|s| s.to_string()).collect(),
        groups: groups.iter().map(|s| s.to_string()).collect(),
    }
}
