//! Code questions for agents — `code_callers`, `code_callees`, `code_implementations`,
//! `code_uses` — over the semantic edges the git indexer writes; what
//! `GET /api/v1/graph/code/{relation}` and `evident graph callers|callees|implementations|uses`
//! answer, under the same read grant.

use evident_kb::code_graph::{CodeQuery, CodeRelation};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::json;

use super::EvidentMcp;
use super::access::{Caller, mcp_error};
use super::call::Call;
use super::params::CodeArgs;
use super::render;

type ToolResult = Result<CallToolResult, ErrorData>;

impl EvidentMcp {
    async fn code(
        &self,
        relation: CodeRelation,
        a: CodeArgs,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let vis = Caller::of(&ctx)?.visibility(&a.scope)?;
        let q = CodeQuery::with_limits(a.symbol, relation, a.depth, a.max_nodes);
        let answer = Call::of(&ctx)
            .read(|_| async { Ok(self.state.kb.code_query(&vis, &q).await?) })
            .await
            .map_err(mcp_error)?;
        Ok(render::json_result(json!(answer)))
    }
}

#[tool_router(router = code_router, vis = "pub(super)")]
impl EvidentMcp {
    /// Who calls a function or method: the callers found in indexed git repositories
    /// (`calls` edges, each with the chunk of the call as evidence), `depth` hops back.
    /// `symbol` is a key (`symbol:shop/shop.Cart.price()`) or a name (`price`, `Cart.price`);
    /// an ambiguous name answers for every match and says so.
    #[tool(annotations(
        title = "Callers of a symbol",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn code_callers(
        &self,
        Parameters(a): Parameters<CodeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        self.code(CodeRelation::Callers, a, ctx).await
    }

    /// What a function or method calls, in indexed git repositories (`calls` edges), `depth`
    /// hops on. Calls to code outside the repository are not edges (see the caller's
    /// `callsUnresolved` property).
    #[tool(annotations(
        title = "Callees of a symbol",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn code_callees(
        &self,
        Parameters(a): Parameters<CodeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        self.code(CodeRelation::Callees, a, ctx).await
    }

    /// The classes and types that implement or extend a class, interface or trait
    /// (`implements` and `extends` edges); `depth` > 1 follows subclasses of subclasses.
    #[tool(annotations(
        title = "Implementations of a type",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn code_implementations(
        &self,
        Parameters(a): Parameters<CodeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        self.code(CodeRelation::Implementations, a, ctx).await
    }

    /// Where a type is used: the symbols whose signatures, fields or annotations name it
    /// (`uses_type` edges).
    #[tool(annotations(
        title = "Uses of a type",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn code_uses(
        &self,
        Parameters(a): Parameters<CodeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        self.code(CodeRelation::Uses, a, ctx).await
    }
}
