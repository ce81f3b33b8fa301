//! The knowledge-gap tools (README *Knowledge gaps*; seed 004's loop): `report_gaps`,
//! `claim_gap`, `submit_findings`, `fail_gap`, `gap_status`, and the graph-construction tools
//! `query_graph`, `add_graph_node`, `add_graph_edge`. Each checks the caller's grant for its
//! scope and role as its REST route does, calls `evident-kb`, and audits writes.

use evident_kb::agent_graph::{EdgeAssertion, EvidenceInput, NodeAssertion};
use evident_kb::gaps::{DEFAULT_LEASE_MS, GapReport};
use evident_store::gaps::{Acquirer, GapPhase};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::EvidentMcp;
use super::access::{Caller, kb_error, mcp_error};
use super::params::ScopeArgs;
use super::render;
use crate::routes::gaps::provenance;

type ToolResult = Result<CallToolResult, ErrorData>;

/// Evidence for a graph write: chunk ids you can see (from `search` results or a gap's
/// findings), or a short text stating what supports it. At least one is required.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceArgs {
    #[serde(default)]
    pub chunk_ids: Vec<String>,
    #[serde(default)]
    pub text: Option<String>,
}

impl From<EvidenceArgs> for EvidenceInput {
    fn from(e: EvidenceArgs) -> EvidenceInput {
        EvidenceInput {
            chunk_ids: e.chunk_ids,
            text: e.text,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportGapsArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The questions that could not be answered, one per gap.
    pub gaps: Vec<String>,
    #[serde(default)]
    pub context: Option<String>,
    /// 0 (most urgent) ..= 9; default 4.
    #[serde(default)]
    pub priority: Option<u8>,
    /// `builtin`: let Evident's built-in acquirer answer from the client's sources; default
    /// `agent` (claimed with `claim_gap`).
    #[serde(default)]
    pub acquirer: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimGapArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// How long the claim lasts without findings (10..=3600 s; default 600).
    #[serde(default)]
    pub lease_secs: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmitFindingsArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    pub gap_id: String,
    /// What the research found, as Markdown.
    pub markdown: String,
    /// Where it came from (URLs, citations).
    #[serde(default)]
    pub sources: Vec<String>,
    /// The epoch `claim_gap` answered.
    #[serde(default)]
    pub epoch: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoveEdgeArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    pub from: String,
    pub edge_type: String,
    pub to: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailGapArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    pub gap_id: String,
    pub reason: String,
    /// Give the gap back (open again after a backoff) instead of failing it.
    #[serde(default)]
    pub retry: bool,
    #[serde(default)]
    pub epoch: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GapStatusArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// One gap; without it, the gaps of the client in claim order.
    #[serde(default)]
    pub gap_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryGraphArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Nodes whose key or label contains this text.
    #[serde(default)]
    pub query: Option<String>,
    /// Or: the neighbourhood of this node key (1..=3 hops, `depth`).
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub depth: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddNodeArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// `namespace:value`, e.g. `concept:retry_budget`.
    pub key: String,
    #[serde(rename = "type")]
    pub node_type: String,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub props: serde_json::Map<String, serde_json::Value>,
    pub evidence: EvidenceArgs,
    /// The gap this construction is for.
    #[serde(default)]
    pub gap_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddEdgeArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    pub from: String,
    /// e.g. `depends_on`, `uses`, `part_of`.
    pub edge_type: String,
    pub to: String,
    #[serde(default)]
    pub props: serde_json::Map<String, serde_json::Value>,
    pub evidence: EvidenceArgs,
    #[serde(default)]
    pub gap_id: Option<String>,
}

impl EvidentMcp {
    /// An agent's graph write (the node and edge tools): the grant checked for writing in
    /// the scope, provenance recorded (a gap's when `gap_id`), audited under `tool`.
    async fn write_graph(
        &self,
        caller: &Caller,
        tool: &str,
        scope: &ScopeArgs,
        gap_id: Option<String>,
        nodes: Vec<NodeAssertion>,
        edges: Vec<EdgeAssertion>,
    ) -> ToolResult {
        self.write_tool(caller, tool, scope, async |scope| {
            let s = &self.state;
            let now = s.clock.now_ms();
            let prov = provenance(&caller.principal, gap_id, now);
            Ok(s.kb
                .write_gap_graph(&scope, &prov, &nodes, &edges, now)
                .await?)
        })
        .await
    }
}

#[tool_router(router = gap_router, vis = "pub(super)")]
impl EvidentMcp {
    /// Report knowledge gaps: questions the task needs answered that Evident could not
    /// answer. Each becomes a queued gap (a question already open is not added twice).
    #[tool(annotations(
        title = "Report knowledge gaps",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn report_gaps(
        &self,
        Parameters(a): Parameters<ReportGapsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        self.write_tool(&caller, "report_gaps", &a.scope, async |scope| {
            let acquirer = match a.acquirer.as_deref() {
                None => None,
                Some(x) => Some(Acquirer::parse(x).ok_or_else(|| {
                    crate::error::ApiError::bad_request(
                        "invalid_field",
                        "acquirer is `agent` or `builtin`",
                    )
                })?),
            };
            let reports: Vec<GapReport> = a
                .gaps
                .into_iter()
                .map(|question| GapReport {
                    question,
                    context: a.context.clone(),
                    priority: a.priority,
                    about: Vec::new(),
                    acquirer,
                })
                .collect();
            let s = &self.state;
            Ok(json!({"gaps": s.kb.report_gaps(
                &scope,
                &caller.principal.id,
                GapPhase::Detection,
                &reports,
                Some(&s.tasks),
                s.clock.now_ms(),
            )
            .await?}))
        })
        .await
    }

    /// Claim the next open knowledge gap of the client to research it: answers `{gap,
    /// epoch, leaseExpiresAt}` or `{gap: null}`. Research the question, then
    /// `submit_findings` before the lease expires (else the gap goes to another agent).
    #[tool(annotations(
        title = "Claim a knowledge gap",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn claim_gap(
        &self,
        Parameters(a): Parameters<ClaimGapArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        self.write_tool(&caller, "claim_gap", &a.scope, async |scope| {
            let lease = a
                .lease_secs
                .map(|x| x.saturating_mul(1000))
                .unwrap_or(DEFAULT_LEASE_MS);
            let s = &self.state;
            let claim =
                s.kb.claim_next_gap(&scope, &caller.principal.id, lease, s.clock.now_ms())
                    .await?;
            Ok(match claim {
                Some(c) => json!(c),
                None => json!({"gap": null}),
            })
        })
        .await
    }

    /// Submit the findings of a claimed gap as Markdown with its sources: stored as a cited
    /// document linked to the gap, which becomes `acquired`. Then build them into the graph
    /// with `add_graph_node` / `add_graph_edge` (pass `gapId`, cite the findings' chunk ids).
    #[tool(annotations(
        title = "Submit findings",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn submit_findings(
        &self,
        Parameters(a): Parameters<SubmitFindingsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        self.write_tool(&caller, "submit_findings", &a.scope, async |scope| {
            let s = &self.state;
            Ok(s.kb
                .submit_findings(
                    &scope,
                    &a.gap_id,
                    &caller.principal.id,
                    a.epoch,
                    &a.markdown,
                    &a.sources,
                    s.clock.now_ms(),
                )
                .await?)
        })
        .await
    }

    /// Remove an edge agents wrote (`add_graph_edge`); edges indexed from sources stay, as
    /// their sources evidence them.
    #[tool(annotations(
        title = "Remove an agent's graph edge",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn remove_graph_edge(
        &self,
        Parameters(a): Parameters<RemoveEdgeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        self.write_tool(&caller, "remove_graph_edge", &a.scope, async |scope| {
            let edge = EdgeAssertion {
                from: a.from,
                edge_type: a.edge_type,
                to: a.to,
                ..Default::default()
            };
            let removed = self.state.kb.retract_edge(&scope, &edge).await?;
            Ok(json!({ "removed": removed }))
        })
        .await
    }

    /// End your acquisition of a claimed gap: `failed` with its reason, or with `retry`
    /// give it back (open again after a backoff) so another agent can take it.
    #[tool(annotations(
        title = "Fail or give back a gap",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn fail_gap(
        &self,
        Parameters(a): Parameters<FailGapArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        self.write_tool(&caller, "fail_gap", &a.scope, async |scope| {
            let s = &self.state;
            Ok(s.kb
                .fail_gap(
                    &scope,
                    &a.gap_id,
                    &caller.principal.id,
                    a.epoch,
                    &a.reason,
                    a.retry,
                    s.clock.now_ms(),
                )
                .await?)
        })
        .await
    }

    /// A gap's state, findings, graph changes and history; without `gapId`, the client's
    /// gaps in claim order.
    #[tool(annotations(title = "Gap status", read_only_hint = true, open_world_hint = false))]
    async fn gap_status(
        &self,
        Parameters(a): Parameters<GapStatusArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let scope = caller.read_scope(&a.scope)?;
        let kb = &self.state.kb;
        let out = match &a.gap_id {
            Some(id) => json!(kb.gap_view(&scope, id).await.map_err(kb_error)?),
            None => json!({"gaps": kb.list_gaps(&scope, None, 100).await.map_err(kb_error)?}),
        };
        Ok(render::json_result(out))
    }

    /// Query the knowledge graph: nodes whose key or label contains `query`, or the
    /// neighbourhood of the node `key` (its edges with their evidence chunk ids).
    #[tool(annotations(
        title = "Query the graph",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn query_graph(
        &self,
        Parameters(a): Parameters<QueryGraphArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let vis = Caller::of(&ctx)?.visibility(&a.scope)?;
        let kb = &self.state.kb;
        let out = match (&a.key, &a.query) {
            (Some(key), _) => {
                let mut q = evident_kb::TraverseQuery::new(key.clone());
                q.max_depth = a.depth.unwrap_or(1);
                json!(kb.traverse(&vis, &q).await.map_err(kb_error)?)
            }
            (None, Some(query)) => {
                json!({"nodes": kb.search_nodes(&vis, query, None, 50).await.map_err(kb_error)?})
            }
            (None, None) => {
                return Err(mcp_error(crate::error::ApiError::bad_request(
                    "missing_field",
                    "give `query` (text in keys and labels) or `key` (a node to expand)",
                )));
            }
        };
        Ok(render::json_result(out))
    }

    /// Add a typed node to the knowledge graph. Evidence is required: chunk ids you can see,
    /// or a short supporting text. Pass `gapId` when building a gap's findings.
    #[tool(annotations(
        title = "Add a graph node",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn add_graph_node(
        &self,
        Parameters(a): Parameters<AddNodeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let node = NodeAssertion {
            key: a.key,
            node_type: a.node_type,
            label: a.label,
            props: a.props,
            evidence: Some(a.evidence.into()),
        };
        let caller = Caller::of(&ctx)?;
        self.write_graph(
            &caller,
            "add_graph_node",
            &a.scope,
            a.gap_id,
            vec![node],
            vec![],
        )
        .await
    }

    /// Add a typed edge between two nodes (created when missing). Evidence is required, as
    /// for nodes; it also evidences both endpoints.
    #[tool(annotations(
        title = "Add a graph edge",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn add_graph_edge(
        &self,
        Parameters(a): Parameters<AddEdgeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let edge = EdgeAssertion {
            from: a.from,
            edge_type: a.edge_type,
            to: a.to,
            props: a.props,
            evidence: Some(a.evidence.into()),
        };
        let caller = Caller::of(&ctx)?;
        self.write_graph(
            &caller,
            "add_graph_edge",
            &a.scope,
            a.gap_id,
            vec![],
            vec![edge],
        )
        .await
    }
}
