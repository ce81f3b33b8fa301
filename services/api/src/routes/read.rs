use axum::Extension;
use axum::Json;
use axum::extract::State;
use evident_core::Chunk;
use evident_kb::NodeView;
use evident_kb::retrieve::EvidencePack;
use evident_store::AliasStats;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::AppState;
use crate::bodies::{RetrieveRequest, TraverseRequest};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::scoped::ScopedRequest;

scoped_request! {
    /// Scope fields of a query string (node reads).
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ScopeQuery {}
}

scoped_request! {
    /// Scope fields plus a result limit (evidence, sources).
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct LimitedScopeQuery {
        #[serde(default)]
        pub limit: Option<usize>,
    }
}

/// A chunk as returned by read endpoints: with its citation, and marked untrusted.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkView {
    #[serde(flatten)]
    chunk: Chunk,
    citation: String,
    trust: &'static str,
}

impl From<Chunk> for ChunkView {
    fn from(chunk: Chunk) -> Self {
        ChunkView {
            citation: chunk.locator.citation(),
            chunk,
            trust: "untrusted",
        }
    }
}

pub async fn retrieve(
    State(s): State<AppState>,
    Extension(by): Extension<crate::auth::Principal>,
    ApiJson(req): ApiJson<RetrieveRequest>,
) -> ApiResult<Json<Value>> {
    let record_gap = req.record_gap;
    let query = req.query.clone();
    let q: evident_kb::RetrieveQuery = req.try_into()?;
    let pack: EvidencePack = s.kb.retrieve(&q).await?;
    let mut out = serde_json::to_value(&pack)
        .map_err(|e| ApiError::bad_request("invalid_request", e.to_string()))?;
    if record_gap && evident_kb::gaps::nothing_relevant(&pack) {
        let scope = (&q.client_id, &q.project_id, &q.group_id);
        let gap = super::gaps::record_query_gap(&s, &by, scope, &query).await?;
        out["recordedGap"] = serde_json::json!(gap);
    }
    Ok(Json(out))
}

pub async fn traverse(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<TraverseRequest>,
) -> ApiResult<Json<Value>> {
    let vis = req.visibility()?;
    let view = s.kb.traverse(&vis, &req.into()).await?;
    Ok(Json(serde_json::to_value(view).map_err(|e| {
        ApiError::bad_request("invalid_request", e.to_string())
    })?))
}

pub async fn node(
    State(s): State<AppState>,
    ApiPath(key): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeQuery>,
) -> ApiResult<Json<NodeView>> {
    Ok(Json(s.kb.node(&q.visibility()?, &key).await?))
}

pub async fn node_evidence(
    State(s): State<AppState>,
    ApiPath(key): ApiPath<String>,
    ApiQuery(q): ApiQuery<LimitedScopeQuery>,
) -> ApiResult<Json<Value>> {
    let chunks =
        s.kb.node_evidence(
            &q.visibility()?,
            &key,
            q.limit.unwrap_or(100).clamp(1, 1000),
        )
        .await?;
    let chunks: Vec<ChunkView> = chunks.into_iter().map(ChunkView::from).collect();
    Ok(Json(json!({ "key": key, "chunks": chunks })))
}

scoped_request! {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct SearchQuery {
        pub q: String,
        #[serde(default, rename = "type")]
        pub node_type: Option<String>,
        #[serde(default)]
        pub limit: Option<usize>,
    }
}

pub async fn search_nodes(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<SearchQuery>,
) -> ApiResult<Json<Value>> {
    let vis = q.visibility()?;
    let nodes =
        s.kb.search_nodes(&vis, &q.q, q.node_type.as_deref(), q.limit.unwrap_or(20))
            .await?;
    Ok(Json(json!({ "nodes": nodes })))
}

scoped_request! {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ListNodesQuery {
        #[serde(default, rename = "type")]
        pub node_type: Option<String>,
        #[serde(default)]
        pub after: Option<String>,
        #[serde(default)]
        pub limit: Option<usize>,
    }
}

/// A query parameter's value unless it is empty.
fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|v| !v.is_empty())
}

/// One page of the nodes of a type, in key order; `nextAfter` continues it. An empty
/// `type` or `after` (`?type=&after=`) is the same as none.
pub async fn list_nodes(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ListNodesQuery>,
) -> ApiResult<Json<Value>> {
    let vis = q.visibility()?;
    let page =
        s.kb.list_nodes(
            &vis,
            given(&q.node_type),
            given(&q.after),
            q.limit.unwrap_or(100),
        )
        .await?;
    Ok(Json(
        json!({ "nodes": page.nodes, "nextAfter": page.next_after }),
    ))
}

scoped_request! {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ByKindRequest {
        pub kinds: Vec<String>,
        #[serde(default = "hundred")]
        pub limit: usize,
        /// Typed-knowledge filters, as on retrieve.
        #[serde(default)]
        pub knowledge_types: Vec<evident_core::KnowledgeType>,
        #[serde(default)]
        pub info_types: Vec<String>,
        #[serde(default)]
        pub tags: Vec<String>,
        #[serde(default)]
        pub entity: Option<String>,
    }
}

fn hundred() -> usize {
    100
}

pub async fn by_kind(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<ByKindRequest>,
) -> ApiResult<Json<Value>> {
    let vis = req.visibility()?;
    let typed = evident_kb::typed::typed_filter(
        &req.knowledge_types,
        &req.info_types,
        &req.tags,
        req.entity.as_slice(),
    )?;
    let chunks =
        s.kb.chunks_by_kind_typed(&vis, req.kinds, typed, req.limit)
            .await?;
    let chunks: Vec<ChunkView> = chunks.into_iter().map(ChunkView::from).collect();
    Ok(Json(json!({ "chunks": chunks })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolveQuery {
    client_id: String,
    alias: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientQuery {
    client_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatsQuery {
    client_id: String,
    #[serde(default)]
    top: Option<usize>,
}

pub async fn alias_resolve(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ResolveQuery>,
) -> ApiResult<Json<Value>> {
    let (alias, canonical) = s.kb.alias_resolve(&q.client_id, &q.alias).await?;
    Ok(Json(json!({ "alias": alias, "canonical": canonical })))
}

pub async fn alias_list(
    State(s): State<AppState>,
    ApiPath(canonical): ApiPath<String>,
    ApiQuery(q): ApiQuery<ClientQuery>,
) -> ApiResult<Json<Value>> {
    let aliases = s.kb.alias_list(&q.client_id, &canonical).await?;
    Ok(Json(json!({ "canonical": canonical, "aliases": aliases })))
}

pub async fn alias_stats(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<StatsQuery>,
) -> ApiResult<Json<AliasStats>> {
    Ok(Json(
        s.kb.alias_stats(&q.client_id, q.top.unwrap_or(10)).await?,
    ))
}

pub async fn sources(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<LimitedScopeQuery>,
) -> ApiResult<Json<Value>> {
    let list = s.kb.sources(&q.visibility()?, q.limit).await?;
    Ok(Json(json!({ "sources": list })))
}
