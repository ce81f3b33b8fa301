//! The session log: `POST /api/v1/session-memory` appends, `GET /api/v1/session-memory` reads
//! the newest entries of one (client, project).

use axum::Json;
use axum::extract::State;
use evident_kb::session_log::{MAX_ENTRIES, NewSessionEntry};
use evident_store::memory::SessionEntry;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppendEntry {
    client_id: String,
    #[serde(default)]
    project_id: Option<String>,
    source: String,
    summary: String,
    #[serde(default)]
    details: Option<Value>,
    #[serde(default)]
    task_id: Option<String>,
    /// Milliseconds since the epoch; now when absent.
    #[serde(default)]
    timestamp: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecentQuery {
    client_id: String,
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default)]
    recent: Option<usize>,
}

pub async fn append(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<AppendEntry>,
) -> ApiResult<Json<SessionEntry>> {
    let entry = NewSessionEntry {
        source: req.source,
        summary: req.summary,
        details: req.details,
        task_id: req.task_id,
        timestamp: req.timestamp,
    };
    Ok(Json(
        s.kb.session_append(
            &req.client_id,
            req.project_id.as_deref(),
            entry,
            s.clock.now_ms(),
        )
        .await?,
    ))
}

pub async fn recent(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<RecentQuery>,
) -> ApiResult<Json<Value>> {
    let entries =
        s.kb.session_recent(
            &q.client_id,
            q.project_id.as_deref(),
            q.recent.unwrap_or(MAX_ENTRIES),
            s.clock.now_ms(),
        )
        .await?;
    Ok(Json(json!({ "entries": entries })))
}
