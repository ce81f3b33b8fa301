//! Session memory: what an agent keeps between the turns of one session, by key, expiring on
//! its own.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use evident_store::memory::MemoryEntry;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PutMemory {
    client_id: String,
    value: Value,
    #[serde(default)]
    ttl_secs: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientQuery {
    client_id: String,
}

pub async fn put(
    State(s): State<AppState>,
    ApiPath((session, key)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<PutMemory>,
) -> ApiResult<Json<MemoryEntry>> {
    Ok(Json(
        s.kb.memory_put(
            &req.client_id,
            &session,
            &key,
            req.value,
            req.ttl_secs,
            s.clock.now_ms(),
        )
        .await?,
    ))
}

pub async fn get(
    State(s): State<AppState>,
    ApiPath((session, key)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<ClientQuery>,
) -> ApiResult<Json<MemoryEntry>> {
    Ok(Json(
        s.kb.memory_get(&q.client_id, &session, &key, s.clock.now_ms())
            .await?,
    ))
}

pub async fn list(
    State(s): State<AppState>,
    ApiPath(session): ApiPath<String>,
    ApiQuery(q): ApiQuery<ClientQuery>,
) -> ApiResult<Json<Value>> {
    let entries =
        s.kb.memory_list(&q.client_id, &session, s.clock.now_ms())
            .await?;
    Ok(Json(json!({ "entries": entries })))
}

pub async fn delete(
    State(s): State<AppState>,
    ApiPath((session, key)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<ClientQuery>,
) -> ApiResult<StatusCode> {
    s.kb.memory_delete(&q.client_id, &session, &key).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn clear(
    State(s): State<AppState>,
    ApiPath(session): ApiPath<String>,
    ApiQuery(q): ApiQuery<ClientQuery>,
) -> ApiResult<Json<Value>> {
    let deleted = s.kb.memory_clear(&q.client_id, &session).await?;
    Ok(Json(json!({ "deleted": deleted })))
}
