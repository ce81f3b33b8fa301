//! Continuously polled sources of every kind other than git (whose request has its own
//! shape): mailboxes, trackers, wikis, meeting folders, document folders, crawled sites.
//! The body is flat: the common fields (`clientId`, `id`, `intervalSecs`, `enabled`) beside
//! the kind's settings, which the kind checks (unknown keys refused).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use evident_sources::{self as sources, SourceRequest};
use evident_store::indexers::IndexerSource;
use serde_json::{Value, json};

use super::read::ScopeQuery;
use crate::AppState;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::scoped::ScopedRequest;

/// A kind in a path must be one the service knows (404 naming the known ones otherwise).
fn known(kind: &str) -> ApiResult<()> {
    if sources::kind_info(kind).is_some() {
        Ok(())
    } else {
        Err(evident_kb::KbError::NotFound {
            what: format!(
                "source kind `{kind}` (known: {})",
                sources::KINDS
                    .iter()
                    .map(|k| k.kind)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
        .into())
    }
}

pub async fn register(
    State(s): State<AppState>,
    ApiPath(kind): ApiPath<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<IndexerSource>)> {
    known(&kind)?;
    let req = SourceRequest::from_json(body)?;
    let source = sources::register(&s.kb, &kind, &req, s.clock.now_ms()).await?;
    Ok((StatusCode::CREATED, Json(source)))
}

pub async fn list(
    State(s): State<AppState>,
    ApiPath(kind): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeQuery>,
) -> ApiResult<Json<Value>> {
    known(&kind)?;
    let list = sources::list(&s.kb, &q.visibility()?, Some(&kind)).await?;
    Ok(Json(json!({ "sources": list })))
}

/// Every registered source the reader may see, of every kind, with its polling status.
pub async fn list_all(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ScopeQuery>,
) -> ApiResult<Json<Value>> {
    let list = sources::list(&s.kb, &q.visibility()?, None).await?;
    Ok(Json(json!({ "sources": list })))
}

pub async fn get(
    State(s): State<AppState>,
    ApiPath((kind, id)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<ScopeQuery>,
) -> ApiResult<Json<IndexerSource>> {
    known(&kind)?;
    Ok(Json(
        sources::get(&s.kb, &q.visibility()?, Some(&kind), &id).await?,
    ))
}

pub async fn unregister(
    State(s): State<AppState>,
    ApiPath((kind, id)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<ScopeQuery>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    known(&kind)?;
    let task = sources::unregister(
        &s.kb,
        &s.tasks,
        &q.visibility()?,
        Some(&kind),
        &id,
        s.clock.now_ms(),
    )
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "taskId": task.task_id })),
    ))
}
