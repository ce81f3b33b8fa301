//! The qualification queue over HTTP: enqueue, inspect, reorder, prioritize, retry.

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use evident_kb::listing::{TaskPage, TaskQuery};
use evident_kb::{Document, KbError};
use evident_store::queue::TaskRecord;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::auth::Principal;
use crate::bodies::{IngestRequest, ReorderRequest};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery, RequestPriority};

/// `POST /api/v1/ingest-queue`: validated now, processed by a worker → 202 with the task id.
pub async fn enqueue_ingest(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<IngestRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    // A source owned by another scope is refused now (409), not as a failed task later.
    let doc = Document::from(req);
    let scope = evident_kb::write_scope(
        doc.client_id.as_deref(),
        doc.project_id.as_deref(),
        doc.group_id.as_deref(),
        doc.global,
    )?;
    s.kb.check_source_owner(&scope, &doc.source_urn).await?;
    let rec = s.tasks.enqueue_ingest(doc, p, s.clock.now_ms()).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "taskId": rec.task_id, "state": rec.state, "priority": rec.priority })),
    ))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    source_urn: Option<String>,
    /// Page after this task id.
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

pub async fn list(
    State(s): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<TaskPage>> {
    let query = TaskQuery {
        state: q.state,
        client_id: q.client_id,
        source_urn: q.source_urn,
        after: q.after,
        limit: q.limit,
    };
    let page = s
        .tasks
        .list(query, |scope| principal.grant.sees(scope))
        .await
        // Its fields come from the query string.
        .map_err(|e| match e {
            KbError::Field(f) => ApiError::bad_request("invalid_query", f.to_string()),
            e => e.into(),
        })?;
    Ok(Json(page))
}

pub async fn get_task(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TaskRecord>> {
    Ok(Json(s.tasks.task(&id).await?))
}

pub async fn reorder(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<ReorderRequest>,
) -> ApiResult<Json<TaskRecord>> {
    let now = s.clock.now_ms();
    Ok(Json(s.tasks.reorder(&id, req.position, now).await?))
}

pub async fn prioritize(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TaskRecord>> {
    Ok(Json(s.tasks.reorder(&id, 1, s.clock.now_ms()).await?))
}

/// Moves an `error` task back to `queued` (after its cause was fixed).
pub async fn retry(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TaskRecord>> {
    Ok(Json(s.tasks.retry(&id, s.clock.now_ms()).await?))
}
