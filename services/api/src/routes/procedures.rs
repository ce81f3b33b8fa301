//! Procedural memory: CRUD under `/api/v1/procedures`, `POST /api/v1/procedures/match` and
//! `POST /api/v1/procedures/{id}/outcome` (ranking and statistics: `evident_kb::procedures`).

use axum::Json;
use axum::extract::State;
use evident_kb::procedures::{
    DEFAULT_LIST_LIMIT, DEFAULT_MATCH_LIMIT, ProcedureMatches, ProcedureView,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::bodies::procedures::{
    MatchProceduresRequest, ProcedureOutcomeRequest, SaveProcedureRequest,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeQuery {
    client_id: String,
    #[serde(default)]
    project_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListQuery {
    client_id: String,
    #[serde(default)]
    project_id: Option<String>,
    /// Procedures with an id after this one (the last id of the previous page).
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

pub async fn create(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<SaveProcedureRequest>,
) -> ApiResult<Json<ProcedureView>> {
    let def = req.definition();
    Ok(Json(
        s.kb.save_procedure(
            &req.client_id,
            req.project_id.as_deref(),
            req.id,
            def,
            s.clock.now_ms(),
        )
        .await?,
    ))
}

pub async fn update(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<SaveProcedureRequest>,
) -> ApiResult<Json<ProcedureView>> {
    if req.id.as_deref().is_some_and(|body| body != id) {
        return Err(ApiError::bad_request(
            "invalid_field",
            "field `id` differs from the path's id (leave it out)",
        ));
    }
    Ok(Json(
        s.kb.update_procedure(
            &req.client_id,
            req.project_id.as_deref(),
            &id,
            req.definition(),
            s.clock.now_ms(),
        )
        .await?,
    ))
}

pub async fn get(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeQuery>,
) -> ApiResult<Json<ProcedureView>> {
    Ok(Json(
        s.kb.procedure(&q.client_id, q.project_id.as_deref(), &id)
            .await?,
    ))
}

pub async fn list(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    let procedures =
        s.kb.procedures(
            &q.client_id,
            q.project_id.as_deref(),
            q.after.as_deref(),
            q.limit.unwrap_or(DEFAULT_LIST_LIMIT),
        )
        .await?;
    Ok(Json(json!({ "procedures": procedures })))
}

pub async fn delete(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeQuery>,
) -> ApiResult<Json<Value>> {
    s.kb.delete_procedure(&q.client_id, q.project_id.as_deref(), &id)
        .await?;
    Ok(Json(json!({ "deleted": true, "id": id })))
}

pub async fn match_task(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<MatchProceduresRequest>,
) -> ApiResult<Json<ProcedureMatches>> {
    Ok(Json(
        s.kb.match_procedures(
            &req.client_id,
            req.project_id.as_deref(),
            &req.task,
            req.limit.unwrap_or(DEFAULT_MATCH_LIMIT),
            s.clock.now_ms(),
        )
        .await?,
    ))
}

pub async fn outcome(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<ProcedureOutcomeRequest>,
) -> ApiResult<Json<ProcedureView>> {
    Ok(Json(
        s.kb.record_procedure_outcome(
            &req.client_id,
            req.project_id.as_deref(),
            &id,
            req.success,
            s.clock.now_ms(),
        )
        .await?,
    ))
}
