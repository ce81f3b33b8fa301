//! `get_context`: prompt-ready sections (README *Prompt context*), checked against the
//! caller's grant for its scope as `POST /api/v1/context` is, each section's text wrapped in
//! untrusted-data delimiters.

use std::collections::BTreeMap;
use std::fmt::Write;

use evident_core::KnowledgeType;
use evident_kb::context::{ContextAnswer, ContextQuery, Layer, SectionSpec};
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
use super::render::{self, TAG, UNTRUSTED_NOTE, attr, defuse};
use crate::error::ApiError;

type ToolResult = Result<CallToolResult, ErrorData>;

/// One prompt section to fill.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SectionArgs {
    /// Info types routed into the section (default: the section's name).
    #[serde(default)]
    pub info_types: Option<Vec<String>>,
    /// The section's budget in tokens (WordPiece), 1..=32768.
    pub budget_tokens: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextArgs {
    /// The task or question the prompt is for (searches the pieces).
    #[serde(default)]
    pub query: Option<String>,
    /// The entity the prompt is for (a node key, e.g. `user:alice`): its profile, the pieces
    /// about it and its neighbourhood in the graph.
    #[serde(default)]
    pub active_entity: Option<String>,
    /// Section name → `{infoTypes?, budgetTokens}`. Default: `user_profile`,
    /// `instructions`, `context`, `skills` and any other info type found, 512 tokens each.
    #[serde(default)]
    pub sections: Option<BTreeMap<String, SectionArgs>>,
    /// Layers: `pieces`, `graph`, `metadata`, `memory`, `outcomes`, `userKnowledge`,
    /// `claims` (default: all but `claims`).
    #[serde(default)]
    pub include: Option<Vec<String>>,
    /// Graph hops from the active entity, 0..=3 (default 2).
    #[serde(default)]
    pub max_depth: Option<usize>,
    /// Narrow the query's search to these knowledge types (`fact`, `instruction`,
    /// `preference`, `procedure`, `note`, `episodic`).
    #[serde(default)]
    pub knowledge_types: Vec<String>,
    /// Narrow the query's search to pieces with any of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

fn bad(field: &str, reason: String) -> ApiError {
    ApiError::bad_request(
        "invalid_field",
        format!("field `{field}` is invalid: {reason}"),
    )
}

impl ContextArgs {
    fn into_query(self, scope: evident_core::Scope, now_ms: i64) -> Result<ContextQuery, ApiError> {
        let include = match self.include {
            None => None,
            Some(list) => Some(
                list.iter()
                    .map(|l| {
                        serde_json::from_value::<Layer>(json!(l))
                            .map_err(|_| bad("include", format!("`{l}` is not a layer")))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let knowledge_types = self
            .knowledge_types
            .iter()
            .map(|k| KnowledgeType::parse("knowledgeTypes", k).map_err(evident_kb::KbError::from))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ContextQuery {
            query: self.query,
            active_entity: self.active_entity,
            client_id: scope.client_id,
            project_id: scope.project_id,
            group_id: scope.group_id,
            sections: self.sections.map(|s| {
                s.into_iter()
                    .map(|(name, a)| {
                        let spec = SectionSpec {
                            info_types: a.info_types,
                            budget_tokens: a.budget_tokens,
                        };
                        (name, spec)
                    })
                    .collect()
            }),
            include,
            max_depth: self.max_depth,
            knowledge_types,
            tags: self.tags,
            now_ms,
        })
    }
}

/// Each section: a header with its tokens, its text inside the delimiters, its citations.
fn render_context(answer: &ContextAnswer) -> CallToolResult {
    let mut text = format!("{} section(s). {UNTRUSTED_NOTE}\n", answer.sections.len());
    for (name, body) in &answer.sections {
        let truncated = if answer.truncated.get(name) == Some(&true) {
            ", truncated"
        } else {
            ""
        };
        let tokens = answer.tokens.get(name).copied().unwrap_or(0);
        let _ = write!(
            text,
            "\n## {name} ({tokens} tokens{truncated})\n<{TAG} section=\"{}\">\n{}\n</{TAG}>\n",
            attr(name),
            defuse(body)
        );
        for item in answer.items.get(name).into_iter().flatten() {
            let _ = writeln!(text, "{} {}", item.marker, item.citation);
        }
    }
    render::result(text, json!(answer))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PutProfileArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The entity (node key, e.g. `user:alice`) the profile describes.
    pub key: String,
    #[serde(default)]
    pub node_type: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    /// The profile's properties (they replace the previous profile).
    pub properties: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadStructuredArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The source the file is written as; loading again under it replaces what it wrote.
    pub source_urn: String,
    /// `{entities: [{entityId, entityType, …}], global?: {…}}`: entity profiles.
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    /// Knowledge pieces: `{pieceId, content, knowledgeType?, infoType?, tags?, entityId?,
    /// embeddingText?, kind?}`.
    #[serde(default)]
    pub pieces: Vec<serde_json::Value>,
    /// `{nodes: [...], edges: [...]}`; an edge needs evidence (a piece of this file or an
    /// existing chunk id).
    #[serde(default)]
    pub graph: Option<serde_json::Value>,
}

#[tool_router(router = context_router, vis = "pub(super)")]
impl EvidentMcp {
    /// Load a structured knowledge file (as `POST /api/v1/ingest/structured`): entity
    /// profiles, typed knowledge pieces and graph nodes and edges, written as one source.
    /// Invalid items are skipped, each with its reason in `skipped`; valid ones are written.
    #[tool(annotations(
        title = "Load structured knowledge",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn load_structured(
        &self,
        Parameters(a): Parameters<LoadStructuredArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        self.write_tool(&caller, "load_structured", &a.scope, async |scope| {
            // The file's own schema (unknown fields refused) checks the sections.
            let file = json!({
                "metadata": a.metadata.unwrap_or_else(|| json!({})),
                "pieces": a.pieces,
                "graph": a.graph.unwrap_or_else(|| json!({})),
            });
            let file = serde_json::from_value(file)
                .map_err(|e| ApiError::bad_request("invalid_request", e.to_string()))?;
            Ok(self
                .state
                .kb
                .load_structured(
                    scope,
                    &a.source_urn,
                    file,
                    evident_ai::Priority::INTERACTIVE,
                )
                .await?)
        })
        .await
    }

    /// Write an entity's profile (its properties, shown as `user_profile` lines of the
    /// context): stored as a `profile:{key}` document that evidences the node, replacing the
    /// previous profile.
    #[tool(annotations(
        title = "Write an entity profile",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn put_profile(
        &self,
        Parameters(a): Parameters<PutProfileArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        self.write_tool(&caller, "put_profile", &a.scope, async |scope| {
            let write = evident_kb::profile::ProfileWrite {
                key: a.key,
                node_type: a.node_type,
                label: a.label,
                properties: a.properties,
            };
            Ok(self
                .state
                .kb
                .put_profile(scope, write, evident_ai::Priority::INTERACTIVE)
                .await?)
        })
        .await
    }

    /// Prompt-ready context for a task: what is known (profiles, typed knowledge pieces, the
    /// graph around the active entity, task outcomes, user knowledge, the session log) routed
    /// into prompt sections by info type (`user_profile`, `instructions`, `context`,
    /// `skills`…), each within its token budget, every line ending in a `[n]` marker that
    /// `items` maps to its citation. Deterministic: the same state gives the same text.
    #[tool(annotations(
        title = "Prompt context",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn get_context(
        &self,
        Parameters(a): Parameters<ContextArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let scope = caller.read_scope(&a.scope)?;
        let q = a
            .into_query(scope, self.state.clock.now_ms())
            .map_err(mcp_error)?;
        let answer = self.state.kb.context(&q).await.map_err(kb_error)?;
        Ok(render_context(&answer))
    }
}
