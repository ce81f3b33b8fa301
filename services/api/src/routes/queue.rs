//! The qualification queue over HTTP: enqueue, inspect, reorder, prioritize, retry.

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use evident_store::queue::{TaskFilter, TaskRecord, TaskState};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::auth::Principal;
use crate::bodies::IngestRequest;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery, RequestPriority};

fn store_err(e: evident_store::StoreError) -> ApiError {
    evident_kb::KbError::from(e).into()
}

fn not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("task `{id}` not found"),
    )
}

/// `POST /api/v1/ingest-queue`: validated now, processed by a worker → 202 with the task id.
pub async fn enqueue_ingest(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<IngestRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    // A source owned by another scope is refused now (409), not as a failed task later.
    let scope = if req.global {
        evident_core::Scope::global()
    } else {
        evident_kb::scope(
            req.client_id.as_deref(),
            req.project_id.as_deref(),
            req.group_id.as_deref(),
        )?
    };
    s.kb.check_source_owner(&scope, &req.source_urn).await?;
    let rec = s.tasks.enqueue_ingest(req, p, s.clock.now_ms()).await?;
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
) -> ApiResult<Json<Value>> {
    let state = match q.state.as_deref() {
        None => None,
        Some(raw) => Some(TaskState::parse(raw).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_query",
                "state must be one of queued, processing, retry_wait, done, error",
            )
        })?),
    };
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > 1000 {
        return Err(ApiError::bad_request(
            "invalid_query",
            "limit must be 1..=1000",
        ));
    }
    let filter = TaskFilter {
        state,
        client_id: q.client_id.clone(),
        source_urn: q.source_urn,
        after: q.after,
        limit,
    };
    let mut tasks: Vec<TaskRecord> = s.tasks.queue().list(&filter).await.map_err(store_err)?;
    let next = (tasks.len() == limit)
        .then(|| tasks.last().map(|t| t.task_id.clone()))
        .flatten();
    // A grant narrowed to projects or groups lists only the tasks it could read.
    tasks.retain(|t| principal.grant.sees(&t.scope));
    let counts = s
        .tasks
        .queue()
        .counts(filter.client_id.as_deref())
        .await
        .map_err(store_err)?;
    let by_state: serde_json::Map<String, Value> = TaskState::ALL
        .iter()
        .map(|st| (st.as_str().to_string(), json!(counts.state(*st))))
        .collect();
    Ok(Json(
        json!({ "tasks": tasks, "next": next, "counts": by_state }),
    ))
}

pub async fn get_task(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TaskRecord>> {
    s.tasks
        .queue()
        .get(&id)
        .await
        .map_err(store_err)?
        .map(Json)
        .ok_or_else(|| not_found(&id))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReorderRequest {
    position: i64,
}

pub async fn reorder(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<ReorderRequest>,
) -> ApiResult<Json<TaskRecord>> {
    if req.position < 1 {
        return Err(ApiError::bad_request(
            "invalid_field",
            "field `position` must be ≥ 1",
        ));
    }
    let r = s
        .tasks
        .queue()
        .reorder(&id, req.position, s.clock.now_ms())
        .await;
    steered(&s, &id, r)
}

pub async fn prioritize(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TaskRecord>> {
    let r = s.tasks.queue().reorder(&id, 1, s.clock.now_ms()).await;
    steered(&s, &id, r)
}

/// Moves an `error` task back to `queued` (after its cause was fixed).
pub async fn retry(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TaskRecord>> {
    let r = s.tasks.queue().retry(&id, s.clock.now_ms()).await;
    steered(&s, &id, r)
}

/// The answer of a steering call: the task as it is now (404 if unknown); idle workers are
/// woken, since the queue's order changed.
fn steered(
    s: &AppState,
    id: &str,
    result: evident_store::Result<Option<TaskRecord>>,
) -> ApiResult<Json<TaskRecord>> {
    let rec = result.map_err(store_err)?.ok_or_else(|| not_found(id))?;
    s.tasks.notify();
    Ok(Json(rec))
}
