//! The agent-memory tools (README *Agent memory*): each checks the caller's grant for its
//! scope and role as its REST route does, calls `evident-kb`, and renders the answer.

use evident_core::access::{Intent, Role};
use evident_kb::user_knowledge::DEFAULT_CONTEXT_BYTES;
use evident_kb::{KnowledgeCategory, KnowledgeItem};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::json;

use super::EvidentMcp;
use super::access::{Caller, kb_error, mcp_error};
use super::params::*;
use super::render;
use crate::error::ApiError;

type ToolResult = Result<CallToolResult, ErrorData>;

/// The user-knowledge item of a `store_knowledge` call that names a `category`.
pub(super) fn knowledge_item(
    category: &str,
    a: &StoreKnowledgeArgs,
) -> Result<KnowledgeItem, ApiError> {
    let category = KnowledgeCategory::parse(category)?;
    if a.kind.is_some()
        || a.source_urn.is_some()
        || a.main_node_key.is_some()
        || !a.relationships.is_empty()
    {
        return Err(ApiError::bad_request(
            "invalid_request",
            "with `category`, leave out `kind`, `sourceUrn`, `mainNodeKey` and `relationships`: \
             the category decides the kind and the subject the source",
        ));
    }
    let subject = a
        .subject
        .clone()
        .or_else(|| a.title.clone())
        .ok_or_else(|| {
            ApiError::bad_request(
                "missing_field",
                "give `subject` with `category`: it names what is known",
            )
        })?;
    Ok(KnowledgeItem {
        subject,
        content: a.content.clone(),
        category,
    })
}

#[tool_router(router = memory_router, vis = "pub(super)")]
impl EvidentMcp {
    /// What was learned about the user in earlier conversations (stored with
    /// `store_knowledge` and a `category`): Markdown with one header per category, newest
    /// first, within `maxBytes`. Read it at the start of a task; do not store again what it
    /// already says.
    #[tool(annotations(title = "User context", read_only_hint = true, open_world_hint = false))]
    async fn get_user_context(
        &self,
        Parameters(a): Parameters<UserContextArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let scope = caller
            .scope(&a.scope, Role::Read, Intent::Read)
            .map_err(mcp_error)?;
        let vis = evident_core::Visibility::of(scope);
        let context = self
            .state
            .kb
            .user_context(&vis, a.max_bytes.unwrap_or(DEFAULT_CONTEXT_BYTES))
            .await
            .map_err(kb_error)?;
        Ok(render::json_result(json!(context)))
    }
}
