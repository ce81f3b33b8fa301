//! The procedural-memory tools (README *Agent memory*): `match_procedure`,
//! `record_procedure_outcome`, `save_procedure`, `list_procedures`, `delete_procedure`. Each
//! checks the caller's grant for its scope and role as its REST route does, calls
//! `evident-kb`, and renders the answer; writes end in one `audited()`.

use evident_core::Scope;
use evident_core::access::{Intent, Role};
use evident_kb::procedures::{DEFAULT_LIST_LIMIT, DEFAULT_MATCH_LIMIT, NewProcedure};
use evident_store::procedures::ProcedureStep;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::EvidentMcp;
use super::access::{Caller, kb_error, mcp_error, required_client};
use super::params::ScopeArgs;
use super::render;
use crate::error::ApiError;

type ToolResult = Result<CallToolResult, ErrorData>;

/// Whose procedures: a client's own, and with a project also that project's.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcedureScopeArgs {
    /// The client (tenant). Omit it when the token covers one client.
    #[serde(default)]
    pub client_id: Option<String>,
    /// The project: reads see its procedures besides the client's; writes go into it.
    #[serde(default)]
    pub project_id: Option<String>,
}

impl ProcedureScopeArgs {
    fn scope_args(&self) -> ScopeArgs {
        ScopeArgs::client_project(&self.client_id, &self.project_id)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchProcedureArgs {
    /// The task to find a known workflow for, in natural language.
    pub task: String,
    /// At most this many procedures (1..=50, default 5).
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(flatten)]
    pub scope: ProcedureScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcedureOutcomeArgs {
    /// The procedure's `id` (from `match_procedure`).
    pub id: String,
    /// Whether following it succeeded.
    pub success: bool,
    #[serde(flatten)]
    pub scope: ProcedureScopeArgs,
}

/// One step of a procedure.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepArgs {
    /// The agent that performs it (`CodeReviewAgent`).
    pub agent: String,
    /// What it does (`review`).
    pub action: String,
    /// Optional parameters (a JSON object).
    #[serde(default)]
    pub params: Option<Map<String, Value>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SaveProcedureArgs {
    /// What kind of task it is for (`bug_report`, `email with a deadline question`).
    pub trigger_pattern: String,
    /// The steps in order.
    pub steps: Vec<StepArgs>,
    /// `learned` (saved after a successful run) or `user_defined` (told by the user: always
    /// preferred when it matches).
    pub source: String,
    /// Replace the definition of this procedure (statistics kept); omitted: a new one.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(flatten)]
    pub scope: ProcedureScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListProceduresArgs {
    /// Procedures with an id after this one (paging).
    #[serde(default)]
    pub after: Option<String>,
    /// At most this many (1..=1000, default 100).
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(flatten)]
    pub scope: ProcedureScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteProcedureArgs {
    /// The procedure's `id`.
    pub id: String,
    #[serde(flatten)]
    pub scope: ProcedureScopeArgs,
}

impl From<SaveProcedureArgs> for NewProcedure {
    fn from(a: SaveProcedureArgs) -> NewProcedure {
        NewProcedure {
            trigger_pattern: a.trigger_pattern,
            steps: a
                .steps
                .into_iter()
                .map(|s| ProcedureStep {
                    agent: s.agent,
                    action: s.action,
                    params: s.params.map(Value::Object),
                })
                .collect(),
            source: a.source,
        }
    }
}

impl EvidentMcp {
    /// The checked scope of a read and its client.
    fn read_scope(&self, caller: &Caller, a: &ProcedureScopeArgs) -> Result<Scope, ErrorData> {
        let scope = caller
            .scope(&a.scope_args(), Role::Read, Intent::Read)
            .map_err(mcp_error)?;
        required_client(&scope).map_err(mcp_error)?;
        Ok(scope)
    }
}

impl EvidentMcp {
    /// A procedure write: checked for the caller and audited as `tool` by
    /// [`EvidentMcp::write_tool`], `op` given the scope's client and project.
    async fn procedure_write<T: serde::Serialize>(
        &self,
        ctx: &RequestContext<RoleServer>,
        tool: &str,
        scope: &ProcedureScopeArgs,
        op: impl AsyncFnOnce(&str, Option<&str>) -> Result<T, ApiError>,
    ) -> ToolResult {
        let caller = Caller::of(ctx)?;
        self.write_tool(&caller, tool, &scope.scope_args(), async |scope| {
            op(required_client(&scope)?, scope.project_id.as_deref()).await
        })
        .await
    }
}

#[tool_router(router = procedure_router, vis = "pub(super)")]
impl EvidentMcp {
    /// Find known workflows (procedures) for a task before planning it. User-defined
    /// procedures that match come first, then learned ones by similarity × success rate ×
    /// recency. An empty `procedures` means none matched: `closest` shows the nearest ones
    /// and how similar they were — ask the user, then `save_procedure` the answer.
    #[tool(annotations(
        title = "Match a procedure",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn match_procedure(
        &self,
        Parameters(a): Parameters<MatchProcedureArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let scope = self.read_scope(&caller, &a.scope)?;
        let matches = self
            .state
            .kb
            .match_procedures(
                scope.client_id.as_deref().unwrap_or_default(),
                scope.project_id.as_deref(),
                &a.task,
                a.limit.unwrap_or(DEFAULT_MATCH_LIMIT),
                self.state.clock.now_ms(),
            )
            .await
            .map_err(kb_error)?;
        Ok(render::json_result(json!(matches)))
    }

    /// Record whether following a procedure succeeded: its success rate, usage count and
    /// last use are updated atomically, and shape how it ranks in later matches.
    #[tool(annotations(
        title = "Record a procedure's outcome",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn record_procedure_outcome(
        &self,
        Parameters(a): Parameters<ProcedureOutcomeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let (kb, clock) = (&self.state.kb, &self.state.clock);
        self.procedure_write(&ctx, "record_procedure_outcome", &a.scope, async |c, p| {
            let now = clock.now_ms();
            Ok(kb
                .record_procedure_outcome(c, p, &a.id, a.success, now)
                .await?)
        })
        .await
    }

    /// Save a procedure: a trigger pattern and its steps (`[{agent, action, params?}]`),
    /// `learned` after a successful run or `user_defined` when the user told it. With the
    /// `id` of an existing one, its definition is replaced and its statistics kept.
    #[tool(annotations(
        title = "Save a procedure",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn save_procedure(
        &self,
        Parameters(a): Parameters<SaveProcedureArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let (kb, clock) = (&self.state.kb, &self.state.clock);
        let scope = a.scope.clone();
        self.procedure_write(&ctx, "save_procedure", &scope, async |c, p| {
            let id = a.id.clone();
            Ok(kb
                .save_procedure(c, p, id, a.into(), clock.now_ms())
                .await?)
        })
        .await
    }

    /// The procedures of a client (and project), by id.
    #[tool(annotations(
        title = "List procedures",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn list_procedures(
        &self,
        Parameters(a): Parameters<ListProceduresArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let scope = self.read_scope(&caller, &a.scope)?;
        let procedures = self
            .state
            .kb
            .procedures(
                scope.client_id.as_deref().unwrap_or_default(),
                scope.project_id.as_deref(),
                a.after.as_deref(),
                a.limit.unwrap_or(DEFAULT_LIST_LIMIT),
            )
            .await
            .map_err(kb_error)?;
        Ok(render::json_result(json!({ "procedures": procedures })))
    }

    /// Delete a procedure of exactly this client (and project).
    #[tool(annotations(
        title = "Delete a procedure",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn delete_procedure(
        &self,
        Parameters(a): Parameters<DeleteProcedureArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let kb = &self.state.kb;
        self.procedure_write(&ctx, "delete_procedure", &a.scope, async |c, p| {
            kb.delete_procedure(c, p, &a.id).await?;
            Ok(json!({ "deleted": true, "id": a.id }))
        })
        .await
    }
}
