use axum::Json;
use axum::extract::{Extension, State};
use evident_kb::{IngestOutcome, PurgeOutcome};
use evident_store::AliasEntry;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::auth::Principal;
use crate::bodies::{AliasMergeRequest, AliasRegisterRequest, IngestRequest};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, RequestPriority};
use crate::scoped::ScopedRequest;

pub async fn ingest(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<IngestRequest>,
) -> ApiResult<Json<IngestOutcome>> {
    Ok(Json(s.kb.ingest(req, p).await?))
}

scoped_request! {
    global:
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct PurgeRequest {
        #[serde(default)]
        global: bool,
        source_urn: String,
    }
}

pub async fn purge(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<PurgeRequest>,
) -> ApiResult<Json<PurgeOutcome>> {
    let scope = req.write_scope()?;
    Ok(Json(s.kb.purge(&scope, &req.source_urn, p).await?))
}

pub async fn alias_register(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<AliasRegisterRequest>,
) -> ApiResult<Json<AliasEntry>> {
    Ok(Json(
        s.kb.alias_register(&req.client_id, &req.alias, req.canonical.as_deref())
            .await?,
    ))
}

pub async fn alias_merge(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<AliasMergeRequest>,
) -> ApiResult<Json<Value>> {
    let moved =
        s.kb.alias_merge(&req.client_id, &req.source, &req.target)
            .await?;
    Ok(Json(json!({ "moved": moved })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MoveRequest {
    client_id: String,
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default)]
    group_id: Option<String>,
    source_urn: String,
    /// Destination project within the same client (none: client- or group-level).
    #[serde(default)]
    to_project_id: Option<String>,
    #[serde(default)]
    to_group_id: Option<String>,
}

/// `POST /api/v1/move`: an admin moves a source it owns to another scope of its client (the
/// only way a source changes owner; ingest and purge from another scope are 409).
pub async fn move_source(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<MoveRequest>,
) -> ApiResult<Json<Value>> {
    let from = evident_kb::scope(
        Some(&req.client_id),
        req.project_id.as_deref(),
        req.group_id.as_deref(),
    )?;
    let to = evident_kb::scope(
        Some(&req.client_id),
        req.to_project_id.as_deref(),
        req.to_group_id.as_deref(),
    )?;
    // The guard checked the source's scope; the destination must be inside the grant too.
    by.grant
        .authorize(
            evident_core::access::Role::Admin,
            &to,
            evident_core::access::Intent::Write,
        )
        .map_err(|d| ApiError::new(axum::http::StatusCode::FORBIDDEN, d.code(), d.to_string()))?;
    let moved = s.kb.move_source(&from, &req.source_urn, &to, p).await?;
    Ok(Json(
        json!({ "sourceUrn": req.source_urn, "chunks": moved, "to": to }),
    ))
}
