//! `notifications/cancelled` over stateless streamable HTTP.
//!
//! rmcp's stateless server has no session to find the call a cancellation names, so it
//! accepts and drops the notification. This layer keeps the calls in flight by caller and
//! JSON-RPC id: a request gets a token (carried in the request's extensions to the tool,
//! see [`Call`](super::call::Call)); a cancellation accepted by rmcp cancels the token of
//! the caller's call with that id. The caller is the bearer token's principal: a token
//! holder can cancel only its own calls (two clients sharing one token and one id at the
//! same moment both stop — the protocol gives a stateless server nothing to tell them
//! apart). Closing the HTTP request cancels too (rmcp does that).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::auth::Principal;
use crate::error::ApiError;

/// (principal id, JSON-RPC id as JSON text) → the calls in flight under it, by serial.
type Key = (String, String);

#[derive(Clone)]
pub struct Inflight {
    calls: Arc<Mutex<HashMap<Key, HashMap<u64, CancellationToken>>>>,
    next: Arc<std::sync::atomic::AtomicU64>,
    max_body_bytes: usize,
}

/// One registered call; leaves the registry when dropped (with the request it came in).
pub struct InflightCall {
    registry: Inflight,
    key: Key,
    serial: u64,
    token: CancellationToken,
}

impl InflightCall {
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for InflightCall {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.registry.calls.lock()
            && let Some(by_serial) = calls.get_mut(&self.key)
        {
            by_serial.remove(&self.serial);
            if by_serial.is_empty() {
                calls.remove(&self.key);
            }
        }
    }
}

impl Inflight {
    pub fn new(max_body_bytes: usize) -> Inflight {
        Inflight {
            calls: Arc::default(),
            next: Arc::default(),
            max_body_bytes,
        }
    }

    fn register(&self, key: Key) -> InflightCall {
        let serial = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let token = CancellationToken::new();
        if let Ok(mut calls) = self.calls.lock() {
            calls
                .entry(key.clone())
                .or_default()
                .insert(serial, token.clone());
        }
        InflightCall {
            registry: self.clone(),
            key,
            serial,
            token,
        }
    }

    /// Cancels the caller's calls with this id; how many there were.
    fn cancel(&self, key: &Key) -> usize {
        let Ok(calls) = self.calls.lock() else {
            return 0;
        };
        calls.get(key).map_or(0, |by_serial| {
            by_serial.values().for_each(CancellationToken::cancel);
            by_serial.len()
        })
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.calls.lock().map_or(0, |c| c.len())
    }
}

/// Just what routing needs of a JSON-RPC message (the rest is skipped, not built).
#[derive(Deserialize)]
struct Peek {
    method: Option<String>,
    id: Option<Value>,
}

#[derive(Deserialize)]
struct Cancelled {
    params: CancelledParams,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams {
    request_id: Value,
}

/// A JSON-RPC error answer (`id` null: the request's id could not be read), HTTP 400.
fn rpc_error(code: i64, message: String) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

/// Why a JSON body cannot be a JSON-RPC message: not JSON at all (-32700 parse error), or
/// JSON that is no request, notification or response (-32600 invalid request). `None` for a
/// readable message, and for a body sent as another content type (rmcp refuses that).
fn unreadable(headers: &axum::http::HeaderMap, bytes: &[u8]) -> Option<Response> {
    let json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        });
    if !json {
        return None;
    }
    if let Err(e) = serde_json::from_slice::<Value>(bytes) {
        return Some(rpc_error(-32700, format!("Parse error: {e}")));
    }
    if let Err(e) = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(bytes) {
        return Some(rpc_error(
            -32600,
            format!("Invalid Request: not a JSON-RPC 2.0 message: {e}"),
        ));
    }
    None
}

/// The `/mcp` layer: registers requests, applies cancellations (after rmcp accepted them:
/// the same host, origin and protocol checks as every message).
pub async fn track(State(inflight): State<Inflight>, req: Request, next: Next) -> Response {
    let Some(principal) = req.extensions().get::<Principal>().map(|p| p.id.clone()) else {
        return next.run(req).await;
    };
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, inflight.max_body_bytes).await else {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "request body is larger than server.max_body_bytes",
        )
        .into_response();
    };
    // rmcp answers a body it cannot read with a plain-text 415: JSON-RPC clients get the
    // protocol's own errors instead, as JSON.
    if let Some(refusal) = unreadable(&parts.headers, &bytes) {
        return refusal;
    }
    let peek = serde_json::from_slice::<Peek>(&bytes).ok();
    let cancels = match &peek {
        Some(Peek {
            method: Some(m),
            id: None,
            ..
        }) if m == "notifications/cancelled" => serde_json::from_slice::<Cancelled>(&bytes)
            .ok()
            .map(|c| (principal.clone(), c.params.request_id.to_string())),
        Some(Peek {
            method: Some(_),
            id: Some(id),
            ..
        }) => {
            let call = inflight.register((principal.clone(), id.to_string()));
            parts.extensions.insert(Arc::new(call));
            None
        }
        _ => None,
    };
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if let Some(key) = cancels
        && response.status() == StatusCode::ACCEPTED
    {
        let n = inflight.cancel(&key);
        tracing::debug!(request_id = %key.1, calls = n, "MCP call cancelled by the client");
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_reaches_only_the_callers_call_with_that_id_and_leaves_with_it() {
        let inflight = Inflight::new(1024);
        let key = |who: &str, id: &str| (who.to_string(), id.to_string());
        let mine = inflight.register(key("alice", "7"));
        let other_id = inflight.register(key("alice", "8"));
        let other_caller = inflight.register(key("bob", "7"));
        assert_eq!(inflight.cancel(&key("alice", "7")), 1);
        assert!(mine.token().is_cancelled());
        assert!(!other_id.token().is_cancelled());
        assert!(!other_caller.token().is_cancelled());
        drop((mine, other_id, other_caller));
        assert_eq!(inflight.len(), 0, "finished calls leave the registry");
        assert_eq!(inflight.cancel(&key("alice", "7")), 0);
    }
}
