//! Code questions (`GET /api/v1/graph/code/{relation}`): callers, callees, implementations
//! and uses of a symbol over the semantic edges, shared by `evident graph callers|…` and the
//! MCP tools `code_callers`, `code_callees`, `code_implementations`, `code_uses`.

use axum::Json;
use axum::extract::State;
use evident_kb::code_graph::{CodeAnswer, CodeQuery, CodeRelation};
use serde::Deserialize;

use crate::AppState;
use crate::error::ApiResult;
use crate::extract::{ApiPath, ApiQuery};
use crate::scoped::ScopedRequest;

scoped_request! {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct CodeQueryParams {
        /// A symbol's node key or a plain name (`price`, `Cart.price`, `shop.Cart.price`).
        pub symbol: String,
        /// Hops (1..=5, default 1).
        #[serde(default)]
        pub depth: Option<usize>,
        /// Most nodes per matched symbol (1..=1000, default 200).
        #[serde(default)]
        pub max_nodes: Option<usize>,
    }
}

pub async fn query(
    State(s): State<AppState>,
    ApiPath(relation): ApiPath<String>,
    ApiQuery(q): ApiQuery<CodeQueryParams>,
) -> ApiResult<Json<CodeAnswer>> {
    let vis = q.visibility()?;
    let relation = CodeRelation::parse(&relation)?;
    let query = CodeQuery::with_limits(q.symbol, relation, q.depth, q.max_nodes);
    Ok(Json(s.kb.code_query(&vis, &query).await?))
}
