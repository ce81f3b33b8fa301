//! Prompt context (`POST /api/v1/context`), entity profiles
//! (`PUT /api/v1/graph/node/{key}/profile`) and the structured loader
//! (`POST /api/v1/ingest/structured`): bodies converted, `evident-kb` called.

use axum::extract::State;
use axum::{Extension, Json};
use evident_kb::IngestOutcome;
use evident_kb::context::ContextAnswer;
use evident_kb::structured::LoadReport;
use serde_json::Value;

use crate::AppState;
use crate::auth::Principal;
use crate::context_bodies::{ContextRequest, ProfileRequest, StructuredRequest};
use crate::error::ApiError;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, RequestPriority};
use crate::scoped::ScopedRequest;

pub async fn context(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiJson(req): ApiJson<ContextRequest>,
) -> ApiResult<Json<Value>> {
    let record_gap = req.record_gap;
    let q = req.into_query(s.clock.now_ms());
    let answer: ContextAnswer = s.kb.context(&q).await?;
    let mut out = serde_json::to_value(&answer)
        .map_err(|e| ApiError::bad_request("invalid_request", e.to_string()))?;
    if record_gap
        && answer.query_unanswered
        && let Some(query) = &q.query
    {
        let scope = (&q.client_id, &q.project_id, &q.group_id);
        let gap = super::gaps::record_query_gap(&s, &by, scope, query).await?;
        out["recordedGap"] = serde_json::json!(gap);
    }
    Ok(Json(out))
}

pub async fn put_profile(
    State(s): State<AppState>,
    ApiPath(key): ApiPath<String>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<ProfileRequest>,
) -> ApiResult<Json<IngestOutcome>> {
    let scope = req.write_scope()?;
    Ok(Json(s.kb.put_profile(scope, req.into_write(key), p).await?))
}

pub async fn ingest_structured(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<StructuredRequest>,
) -> ApiResult<Json<LoadReport>> {
    let scope = req.write_scope()?;
    let urn = req.source_urn.clone();
    Ok(Json(
        s.kb.load_structured(scope, &urn, req.file(), p).await?,
    ))
}
