//! Git sources (registration, status, removal) and the push endpoints for external indexers.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use evident_sources::git::service::{
    self, CommitsPush, CpgOutcome, CpgPush, GitSourceRequest, PushOutcome, StructurePush,
};
use evident_store::indexers::IndexerSource;
use serde_json::{Value, json};

use super::read::ScopeQuery;
use crate::AppState;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery, RequestPriority};
use crate::scoped::ScopedRequest;

pub async fn register(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<GitSourceRequest>,
) -> ApiResult<(StatusCode, Json<IndexerSource>)> {
    let source = service::register(&s.kb, &req, s.clock.now_ms()).await?;
    Ok((StatusCode::CREATED, Json(source)))
}

pub async fn list(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ScopeQuery>,
) -> ApiResult<Json<Value>> {
    let sources = service::list(&s.kb, &q.visibility()?).await?;
    Ok(Json(json!({ "sources": sources })))
}

pub async fn get(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeQuery>,
) -> ApiResult<Json<IndexerSource>> {
    Ok(Json(service::get(&s.kb, &q.visibility()?, &id).await?))
}

pub async fn unregister(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeQuery>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let task =
        service::unregister(&s.kb, &s.tasks, &q.visibility()?, &id, s.clock.now_ms()).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "taskId": task.task_id })),
    ))
}

pub async fn push_structure(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<StructurePush>,
) -> ApiResult<Json<PushOutcome>> {
    Ok(Json(service::push_structure(&s.kb, req, p).await?))
}

pub async fn push_commits(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<CommitsPush>,
) -> ApiResult<Json<PushOutcome>> {
    Ok(Json(service::push_commits(&s.kb, req, p).await?))
}

pub async fn push_cpg(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<CpgPush>,
) -> ApiResult<Json<CpgOutcome>> {
    Ok(Json(service::push_cpg(&s.kb, req, p).await?))
}
