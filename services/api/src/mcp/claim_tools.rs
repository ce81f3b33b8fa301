//! The claim tools (README *Claims*, seed 002): `learn`, `recall`, `verify`, `dispute`,
//! `supersede`, `claim_history`. Each checks the caller's grant for its scope and role as its
//! REST route does and calls `evident_kb::claims`; writes are audited.

use evident_core::access::Role;
use evident_core::claims::{Actor, ClaimStatus, EvidenceRef, Subject};
use evident_kb::claims::{Caller as ClaimCaller, ChangeRequest, NewClaim, Recall};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::EvidentMcp;
use super::access::{Caller, kb_error, mcp_error};
use super::params::ScopeArgs;
use super::render;
use crate::claim_bodies::actor_or;
use crate::error::ApiError;

type ToolResult = Result<CallToolResult, ErrorData>;

/// One piece of evidence.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceArg {
    /// file, url, tool_result, message, artifact, model_inference, human_assertion,
    /// user_statement, or chunk (then `ref` is an Evident chunk id, e.g. from `search`).
    pub kind: String,
    /// What the evidence is: a path, a URL, a tool call id, a message id, a chunk id.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Optional locator (as Evident's chunk locators read).
    #[serde(default)]
    pub locator: Option<Value>,
    #[serde(default)]
    pub note: Option<String>,
}

/// Who acts: `{type: agent|user|system|tool, id}`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ActorArg {
    #[serde(rename = "type")]
    pub actor_type: String,
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LearnArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The fact, in one or a few sentences.
    pub text: String,
    /// At least one piece of evidence. With none, it is a hypothesis: use `model_inference`.
    #[serde(default)]
    pub evidence: Vec<EvidenceArg>,
    /// hypothesis, inferred or observed (default).
    #[serde(default)]
    pub status: Option<String>,
    /// 0..=1, default 1.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// `{scopeType: project|repo|agent|run, scopeId}`.
    #[serde(default)]
    pub subject: Option<Value>,
    #[serde(default)]
    pub actor: Option<ActorArg>,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub domain: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Graph refs the claim is about (`service:payments`).
    #[serde(default)]
    pub about: Vec<String>,
    /// The claim this one proposes to replace.
    #[serde(default)]
    pub supersedes: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecallArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    pub question: String,
    /// Statuses to include; active ones (not disputed or superseded) when empty.
    #[serde(default)]
    pub status: Vec<String>,
    #[serde(default)]
    pub domain: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub subject_type: Option<String>,
    #[serde(default)]
    pub subject_id: Option<String>,
    /// An actor id.
    #[serde(default)]
    pub actor: Option<String>,
    /// 1..=100, default 10.
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The claim id (`clm_…`).
    pub id: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub evidence: Vec<EvidenceArg>,
    #[serde(default)]
    pub actor: Option<ActorArg>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupersedeArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The claim replaced.
    pub id: String,
    /// The claim that replaces it.
    pub by: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub actor: Option<ActorArg>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttentionArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Lenses: only claims of this actor id, session, or subject (`{scopeType, scopeId}`).
    #[serde(default)]
    pub actor: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub subject_type: Option<String>,
    #[serde(default)]
    pub subject_id: Option<String>,
    #[serde(default = "default_attention_limit")]
    pub limit: usize,
}

fn default_attention_limit() -> usize {
    20
}

fn invalid(field: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request("invalid_field", format!("`{field}`: {e}"))
}

fn evidence(args: Vec<EvidenceArg>) -> Result<Vec<EvidenceRef>, ApiError> {
    args.into_iter()
        .map(|a| {
            let mut v = json!({"kind": a.kind, "ref": a.reference});
            if let Some(l) = a.locator {
                v["locator"] = l;
            }
            if let Some(n) = a.note {
                v["note"] = n.into();
            }
            serde_json::from_value(v).map_err(|e| invalid("evidence", e))
        })
        .collect()
}

fn actor(a: Option<ActorArg>) -> Result<Option<Actor>, ApiError> {
    a.map(|a| {
        serde_json::from_value(json!({"type": a.actor_type, "id": a.id}))
            .map_err(|e| invalid("actor", e))
    })
    .transpose()
}

fn status(raw: &str) -> Result<ClaimStatus, ApiError> {
    ClaimStatus::parse(raw)
        .ok_or_else(|| invalid("status", format!("`{raw}` is not a claim status")))
}

impl EvidentMcp {
    /// `verify` and `dispute`: the move to `to` with the evidence the arguments give.
    async fn change_with_evidence(
        &self,
        caller: &Caller,
        tool: &str,
        a: ChangeArgs,
        to: ClaimStatus,
    ) -> ToolResult {
        let req = evidence(a.evidence).map(|evidence| ChangeRequest {
            to,
            reason: a.reason,
            evidence,
            by: None,
        });
        self.change(caller, tool, &a.scope, a.id, req, a.actor)
            .await
    }

    async fn change(
        &self,
        caller: &Caller,
        tool: &str,
        scope: &ScopeArgs,
        id: String,
        req: Result<ChangeRequest, ApiError>,
        actor_arg: Option<ActorArg>,
    ) -> ToolResult {
        self.write_tool(caller, tool, scope, async |scope| {
            let p = &caller.principal;
            let who = ClaimCaller {
                actor: actor_or(actor(actor_arg)?, &p.id),
                credential: Some(p.id.clone()),
                admin: p.grant.role >= Role::Admin,
            };
            let s = &self.state;
            Ok(s.kb
                .transition(&scope, &id, req?, &who, s.clock.now_ms())
                .await?)
        })
        .await
    }
}

#[tool_router(router = claim_router, vis = "pub(super)")]
impl EvidentMcp {
    /// Record a durable fact learned while working, with its evidence (at least one piece:
    /// a chunk id from `search` resolves to its exact source span). Returns the claim with
    /// its `id`. Claims move hypothesis/inferred/observed → verified/disputed → superseded.
    #[tool(annotations(
        title = "Learn a claim",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn learn(
        &self,
        Parameters(a): Parameters<LearnArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        self.write_tool(&caller, "learn", &a.scope, async |scope| {
            let p = &caller.principal;
            let subject: Option<Subject> = a
                .subject
                .map(serde_json::from_value)
                .transpose()
                .map_err(|e| invalid("subject", e))?;
            let new = NewClaim {
                text: a.text,
                evidence: evidence(a.evidence)?,
                status: a
                    .status
                    .as_deref()
                    .map(status)
                    .transpose()?
                    .unwrap_or(ClaimStatus::Observed),
                confidence: a.confidence.unwrap_or(1.0),
                subject,
                actor: actor_or(actor(a.actor)?, &p.id),
                session_id: a.session_id,
                domain: a.domain,
                tags: a.tags,
                about: a.about,
                supersedes: a.supersedes,
            };
            let s = &self.state;
            Ok(s.kb
                .learn(
                    scope,
                    new,
                    Some(p.id.clone()),
                    s.clock.now_ms(),
                    Default::default(),
                )
                .await?)
        })
        .await
    }

    /// What is known about a question: hybrid search over the claims this scope sees,
    /// best first, each with its evidence resolved to citations (file and lines, URL…).
    /// Disputed and superseded claims only when `status` names them.
    #[tool(annotations(
        title = "Recall claims",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn recall(
        &self,
        Parameters(a): Parameters<RecallArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let scope = caller.read_scope(&a.scope)?;
        let statuses = a
            .status
            .iter()
            .map(|s| status(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(mcp_error)?;
        let q = Recall {
            question: a.question,
            statuses,
            domain: a.domain,
            tags: a.tags,
            subject: a.subject_type.zip(a.subject_id),
            actor_id: a.actor,
            limit: a.limit.unwrap_or(10),
        };
        let hits = self
            .state
            .kb
            .recall(&evident_core::Visibility::of(scope), q)
            .await
            .map_err(kb_error)?;
        Ok(render::json_result(json!({ "claims": hits })))
    }

    /// Mark a claim verified (observed, inferred or disputed before), with the evidence that
    /// confirms it.
    #[tool(annotations(
        title = "Verify a claim",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn verify(
        &self,
        Parameters(a): Parameters<ChangeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        self.change_with_evidence(&Caller::of(&ctx)?, "verify", a, ClaimStatus::Verified)
            .await
    }

    /// Mark a claim disputed: conflicting evidence arrived. Say why.
    #[tool(annotations(
        title = "Dispute a claim",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn dispute(
        &self,
        Parameters(a): Parameters<ChangeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        self.change_with_evidence(&Caller::of(&ctx)?, "dispute", a, ClaimStatus::Disputed)
            .await
    }

    /// Replace a claim by a newer one (`by`, an existing claim). Only an admin or the token
    /// that learned the claim may.
    #[tool(annotations(
        title = "Supersede a claim",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn supersede(
        &self,
        Parameters(a): Parameters<SupersedeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let req = Ok(ChangeRequest {
            to: ClaimStatus::Superseded,
            reason: a.reason,
            evidence: Vec::new(),
            by: Some(a.by),
        });
        self.change(&caller, "supersede", &a.scope, a.id, req, a.actor)
            .await
    }

    /// A claim's history, oldest first: learned, every transition with its actor, reason and
    /// evidence, and evidence that went stale.
    #[tool(annotations(
        title = "Claim history",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn claim_history(
        &self,
        Parameters(a): Parameters<HistoryArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let scope = caller.read_scope(&a.scope)?;
        let events = self
            .state
            .kb
            .claim_history(&evident_core::Visibility::of(scope), &a.id)
            .await
            .map_err(kb_error)?;
        Ok(render::json_result(
            json!({ "claimId": a.id, "events": events }),
        ))
    }

    /// Claims that need attention, most severe first: disputed ones, ones whose evidence
    /// changed or went away, and low-confidence ones older than a week; optionally only an
    /// actor's, a session's or a subject's.
    #[tool(annotations(
        title = "Claims needing attention",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn claim_attention(
        &self,
        Parameters(a): Parameters<AttentionArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let scope = caller.read_scope(&a.scope)?;
        let q = evident_kb::claims::AttentionQuery {
            actor_id: a.actor,
            session_id: a.session,
            subject: a.subject_type.zip(a.subject_id),
            limit: a.limit,
        };
        let s = &self.state;
        let items =
            s.kb.claim_attention(&evident_core::Visibility::of(scope), q, s.clock.now_ms())
                .await
                .map_err(kb_error)?;
        Ok(render::json_result(json!({ "items": items })))
    }
}
