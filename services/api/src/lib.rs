//! Evident's HTTP API. [`router`] builds the axum router over a [`Kb`]; [`serve`] runs it
//! until a cancellation token fires, finishing in-flight requests.
//!
//! Must not: contain product logic — handlers parse, call `evident-kb`, and shape replies.

#[macro_use]
mod scoped;

pub mod auth;
pub mod bodies;
pub mod claim_bodies;
pub mod context_bodies;
mod error;
mod extract;
pub mod mcp;
mod middleware;
pub mod routes;
pub mod ui;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use evident_kb::{Kb, TaskSubmitter};
use evident_store::queue::{Clock, SystemClock};
use metrics_exporter_prometheus::PrometheusHandle;
use tokio_util::sync::CancellationToken;

pub use error::{ApiError, ApiResult};

/// The OpenAPI document served at `/api/v1/openapi.json`.
pub const OPENAPI_JSON: &str = include_str!("../openapi.json");

#[derive(Clone)]
pub struct ApiConfig {
    pub max_body_bytes: usize,
    pub request_timeout: Duration,
    /// Bearer tokens on every route but health, readiness and metrics (on by default).
    pub auth: auth::AuthConfig,
    /// Browser origins allowed to call the API (CORS); empty: none.
    pub cors_origins: Vec<String>,
    /// The console's session cookie is `Secure` (set it behind TLS; it is also set when a
    /// proxy says `X-Forwarded-Proto: https`).
    pub ui_secure_cookie: bool,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            max_body_bytes: 10 * 1024 * 1024,
            request_timeout: Duration::from_secs(120),
            auth: auth::AuthConfig::default(),
            cors_origins: Vec::new(),
            ui_secure_cookie: false,
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    pub kb: Kb,
    pub tasks: TaskSubmitter,
    pub clock: Arc<dyn Clock>,
    pub metrics: Option<&'static PrometheusHandle>,
    pub(crate) config: Arc<ApiConfig>,
    pub(crate) auth: Arc<auth::Authenticator>,
}

/// What the API serves: the knowledge base, the queue's enqueue side, and a clock.
pub struct App {
    pub kb: Kb,
    pub tasks: TaskSubmitter,
    pub clock: Arc<dyn Clock>,
}

impl App {
    /// The usual wiring: the queue of the kb's stores and the system clock.
    pub fn new(kb: Kb) -> App {
        let tasks = TaskSubmitter::new(kb.stores().queue.clone());
        App {
            kb,
            tasks,
            clock: Arc::new(SystemClock),
        }
    }
}

/// The full router: `/api/v1/*`, the console at `/ui`, `/healthz`, `/readyz`, `/metrics`.
pub fn router(app: App, metrics: Option<&'static PrometheusHandle>, config: ApiConfig) -> Router {
    let auth = Arc::new(auth::Authenticator::new(
        config.auth.clone(),
        app.kb.stores().access.clone(),
    ));
    let state = AppState {
        kb: app.kb,
        tasks: app.tasks,
        clock: app.clock,
        metrics,
        config: Arc::new(config.clone()),
        auth,
    };
    // Outermost last: CORS answers preflights, `observe` times and counts every answer
    // (refusals included), `guard` authenticates and authorises before any handler.
    routes::all()
        .merge(ui::routes())
        .route("/mcp", mcp::route(state.clone()))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::guard,
        ))
        .layer(axum::middleware::from_fn(ui::html_errors))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::observe,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::cors,
        ))
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .with_state(state)
}

/// Serves `router` on `listener` until `cancel` fires; in-flight requests finish first.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    cancel: CancellationToken,
) -> std::io::Result<()> {
    // The peer's address reaches the guard (failed authentications are counted per address).
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(async move { cancel.cancelled().await })
    .await
}
