//! Prompt context (`POST /api/v1/context`), entity profiles
//! (`PUT /api/v1/graph/node/{key}/profile`) and the structured loader
//! (`POST /api/v1/ingest/structured`): bodies converted, `evident-kb` called.

use axum::Json;
use axum::extract::State;
use evident_kb::IngestOutcome;
use evident_kb::context::ContextAnswer;
use evident_kb::structured::LoadReport;

use crate::AppState;
use crate::context_bodies::{ContextRequest, ProfileRequest, StructuredRequest};
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, RequestPriority};

pub async fn context(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<ContextRequest>,
) -> ApiResult<Json<ContextAnswer>> {
    let q = req.into_query(s.clock.now_ms());
    Ok(Json(s.kb.context(&q).await?))
}

pub async fn put_profile(
    State(s): State<AppState>,
    ApiPath(key): ApiPath<String>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<ProfileRequest>,
) -> ApiResult<Json<IngestOutcome>> {
    let scope = evident_kb::write_scope(
        req.client_id.as_deref(),
        req.project_id.as_deref(),
        req.group_id.as_deref(),
        req.global,
    )?;
    Ok(Json(s.kb.put_profile(scope, req.into_write(key), p).await?))
}

pub async fn ingest_structured(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<StructuredRequest>,
) -> ApiResult<Json<LoadReport>> {
    let scope = evident_kb::write_scope(
        req.client_id.as_deref(),
        req.project_id.as_deref(),
        req.group_id.as_deref(),
        req.global,
    )?;
    let urn = req.source_urn.clone();
    Ok(Json(
        s.kb.load_structured(scope, &urn, req.file(), p).await?,
    ))
}
