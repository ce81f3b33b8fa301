use axum::Json;
use axum::extract::State;
use evident_kb::{IngestOutcome, IngestRequest, PurgeOutcome};
use evident_store::AliasEntry;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, RequestPriority};

pub async fn ingest(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<IngestRequest>,
) -> ApiResult<Json<IngestOutcome>> {
    Ok(Json(s.kb.ingest(req, p).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PurgeRequest {
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default)]
    group_id: Option<String>,
    #[serde(default)]
    global: bool,
    source_urn: String,
}

pub async fn purge(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<PurgeRequest>,
) -> ApiResult<Json<PurgeOutcome>> {
    if req.client_id.is_none() && !req.global {
        return Err(ApiError::bad_request(
            "missing_field",
            "field `clientId` is required (or `global: true`)",
        ));
    }
    if req.client_id.is_some() && req.global {
        return Err(ApiError::bad_request(
            "invalid_request",
            "`global: true` takes no clientId",
        ));
    }
    let scope = evident_kb::scope(
        req.client_id.as_deref(),
        req.project_id.as_deref(),
        req.group_id.as_deref(),
    )?;
    Ok(Json(s.kb.purge(&scope, &req.source_urn, p).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AliasRegisterRequest {
    client_id: String,
    alias: String,
    #[serde(default)]
    canonical: Option<String>,
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

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AliasMergeRequest {
    client_id: String,
    source: String,
    target: String,
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
