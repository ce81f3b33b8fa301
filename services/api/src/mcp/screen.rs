//! The credential scan of MCP tool calls, before rmcp dispatches them: every argument of a
//! tool that writes (any tool not annotated read-only), at any depth, with the rules of
//! the REST request scan ([`crate::auth::secrets`]); the scope ids of the others. A refused
//! call answers the JSON-RPC error its tool would (`data.code = "credential_detected"`,
//! `data.status = 422`, the message naming the argument, never the secret) and is audited
//! like a refused write (`mcp:<tool>`).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use evident_core::Scope;
use serde_json::{Map, Value, json};

use super::access::mcp_error;
use crate::AppState;
use crate::auth::{self, Principal, secrets};
use crate::error::ApiError;

/// A call refused for a credential.
struct Refused {
    id: Value,
    tool: String,
    scope: Scope,
    error: ApiError,
}

/// The `/mcp` layer: see the module documentation.
pub async fn screen(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(principal) = req.extensions().get::<Principal>().cloned() else {
        return next.run(req).await;
    };
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, state.config.max_body_bytes).await else {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "request body is larger than server.max_body_bytes",
        )
        .into_response();
    };
    // Not JSON: rmcp answers it (with its own error); nothing reaches a tool.
    if let Ok(message) = serde_json::from_slice::<Value>(&bytes)
        && let Some(r) = refused(&message, &principal)
    {
        auth::record_tool_call(
            &state,
            &principal,
            &r.tool,
            r.scope,
            r.error.status,
            r.error.code.to_string(),
        )
        .await;
        let answer = json!({"jsonrpc": "2.0", "id": r.id, "error": mcp_error(r.error)});
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            answer.to_string(),
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The first tool call of a message (or of a batch) that carries a credential.
fn refused(message: &Value, principal: &Principal) -> Option<Refused> {
    match message {
        Value::Array(batch) => batch.iter().find_map(|m| refused(m, principal)),
        Value::Object(m) if m.get("method").and_then(Value::as_str) == Some("tools/call") => {
            let params = m.get("params").and_then(Value::as_object)?;
            let tool = params.get("name").and_then(Value::as_str).unwrap_or("");
            let empty = Map::new();
            let args = params
                .get("arguments")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let scanned = if super::is_read_only(tool) {
                secrets::scan_scope_fields(args)
            } else {
                secrets::scan_json(&Value::Object(args.clone()), &[])
            };
            let error = scanned.err()?;
            Some(Refused {
                id: m.get("id").cloned().unwrap_or(Value::Null),
                tool: tool.to_string(),
                scope: scope_of(args, principal),
                error,
            })
        }
        _ => None,
    }
}

/// The scope a call names, for its audit record (redacted there like every record).
fn scope_of(args: &Map<String, Value>, principal: &Principal) -> Scope {
    let id = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    Scope {
        client_id: id("clientId").or_else(|| principal.grant.default_client().map(str::to_string)),
        project_id: id("projectId"),
        group_id: id("groupId"),
    }
}
