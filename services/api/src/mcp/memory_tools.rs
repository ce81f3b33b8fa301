//! The agent-memory tools (README *Agent memory*): each checks the caller's grant for its
//! scope and role as its REST route does, calls `evident-kb`, and renders the answer.

use evident_core::access::{Intent, Role};
use evident_kb::outcomes::{TaskCategory, TaskOutcome, record_outcome};
use evident_kb::session_log::{MAX_ENTRIES, NewSessionEntry};
use evident_kb::user_knowledge::DEFAULT_CONTEXT_BYTES;
use evident_kb::{KnowledgeCategory, KnowledgeItem};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::json;

use super::EvidentMcp;
use super::access::{Caller, kb_error, mcp_error, required_client};
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
        let vis = Caller::of(&ctx)?.visibility(&a.scope)?;
        let context = self
            .state
            .kb
            .user_context(&vis, a.max_bytes.unwrap_or(DEFAULT_CONTEXT_BYTES))
            .await
            .map_err(kb_error)?;
        Ok(render::json_result(json!(context)))
    }

    /// Record what was learned from a finished task (summary, key decisions, patterns,
    /// artifacts, lessons, topics) as long-term knowledge. The seed's significance filter
    /// decides: simple Q&A, failed tasks and empty results are not kept
    /// (`{ingested: false, reason}`). A kept outcome is written in the background as
    /// `task-outcome:{taskId}`; recording the same task again replaces it.
    #[tool(annotations(
        title = "Record a task outcome",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn record_outcome(
        &self,
        Parameters(a): Parameters<RecordOutcomeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        self.write_tool(&caller, "record_outcome", &a.scope, async |scope| {
            let outcome = TaskOutcome {
                category: Some(TaskCategory::parse(&a.category)?),
                task_id: a.task_id,
                action: a.action,
                step_results: if a.step_results.is_empty() {
                    a.step_count
                } else {
                    a.step_results.len()
                },
                error: a.error,
                final_result: a.final_result,
                summary: a.summary,
                key_decisions: a.key_decisions,
                patterns_used: a.patterns_used,
                artifacts: a.artifacts,
                lessons_learned: a.lessons_learned,
                topics: a.topics,
            };
            let s = &self.state;
            Ok(record_outcome(&s.kb, &s.tasks, scope, outcome, s.clock.now_ms()).await?)
        })
        .await
    }

    /// Append to the session log of a client and project: a short note (≤ 200 characters)
    /// of what was decided or happened, for the next orchestration to read with
    /// `session_recent`. Keeps the 50 newest entries, each for 7 days.
    #[tool(annotations(
        title = "Append to the session log",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn session_append(
        &self,
        Parameters(a): Parameters<SessionAppendArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        self.write_tool(
            &caller,
            "session_append",
            &a.scope.scope_args(),
            async |scope| {
                let client = required_client(&scope)?;
                let entry = NewSessionEntry {
                    source: a.source,
                    summary: a.summary,
                    details: a.details,
                    task_id: a.task_id,
                    timestamp: None,
                };
                Ok(self
                    .state
                    .kb
                    .session_append(
                        client,
                        scope.project_id.as_deref(),
                        entry,
                        self.state.clock.now_ms(),
                    )
                    .await?)
            },
        )
        .await
    }

    /// The newest entries of the session log of a client and project (newest first): what
    /// happened in recent orchestrations. Read it at the start of a task.
    #[tool(annotations(
        title = "Recent session log",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn session_recent(
        &self,
        Parameters(a): Parameters<SessionRecentArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let scope = caller
            .scope(&a.scope.scope_args(), Role::Read, Intent::Read)
            .map_err(mcp_error)?;
        let client = required_client(&scope).map_err(mcp_error)?;
        let entries = self
            .state
            .kb
            .session_recent(
                client,
                scope.project_id.as_deref(),
                a.recent.unwrap_or(MAX_ENTRIES),
                self.state.clock.now_ms(),
            )
            .await
            .map_err(kb_error)?;
        Ok(render::json_result(json!({ "entries": entries })))
    }
}
