use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde_json::json;

use crate::error::ApiError;
use crate::{AppState, OPENAPI_JSON};

pub async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// 200 when every configured backend answers, 503 otherwise; each backend reported.
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let mut reports = Vec::new();
    for h in &state.kb.stores().health {
        reports.push(h.check().await);
    }
    let ready = reports.iter().all(|r| r.ready);
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(
            json!({"ready": ready, "backends": reports, "embedder": state.kb.embedder().identity()}),
        ),
    )
}

pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let (interactive, bulk) = state.kb.pools().available();
    metrics::gauge!("evident_write_pool_available", "pool" => "interactive")
        .set(interactive as f64);
    metrics::gauge!("evident_write_pool_available", "pool" => "bulk").set(bulk as f64);
    // Queue depth by state and priority, read at scrape time.
    if let Ok(counts) = state.tasks.queue().counts(None).await {
        for st in evident_store::queue::TaskState::ALL {
            for p in 0..=9u8 {
                let n = counts
                    .by_state_priority
                    .iter()
                    .find(|(s, pr, _)| *s == st && *pr == p)
                    .map(|(_, _, n)| *n)
                    .unwrap_or(0);
                metrics::gauge!("evident_queue_tasks", "state" => st.as_str(), "priority" => p.to_string()).set(n as f64);
            }
        }
    }
    let body = state.metrics.map(|h| h.render()).unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body)
}

pub async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON)
}

pub async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "route_not_found",
        "no such endpoint; see /api/v1/openapi.json",
    )
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this endpoint does not take that method; see /api/v1/openapi.json",
    )
}
