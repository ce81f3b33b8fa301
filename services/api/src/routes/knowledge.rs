//! User knowledge and its prefetch: `POST /api/v1/knowledge`, `GET /api/v1/user-context`.

use axum::Json;
use axum::extract::State;
use evident_kb::user_knowledge::DEFAULT_CONTEXT_BYTES;
use evident_kb::{IngestOutcome, KnowledgeCategory, KnowledgeItem, UserContext};
use serde::Deserialize;

use crate::AppState;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery, RequestPriority};
use crate::scoped::ScopedRequest;

scoped_request! {
    required:
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct StoreKnowledge {
        subject: String,
        content: String,
        category: String,
    }
}

scoped_request! {
    required:
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ContextQuery {
        #[serde(default)]
        max_bytes: Option<usize>,
    }
}

pub async fn store(
    State(s): State<AppState>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<StoreKnowledge>,
) -> ApiResult<Json<IngestOutcome>> {
    let scope = req.write_scope()?;
    let item = KnowledgeItem {
        category: KnowledgeCategory::parse(&req.category)?,
        subject: req.subject,
        content: req.content,
    };
    Ok(Json(s.kb.store_user_knowledge(scope, item, p).await?))
}

pub async fn user_context(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ContextQuery>,
) -> ApiResult<Json<UserContext>> {
    let vis = q.visibility()?;
    Ok(Json(
        s.kb.user_context(&vis, q.max_bytes.unwrap_or(DEFAULT_CONTEXT_BYTES))
            .await?,
    ))
}
