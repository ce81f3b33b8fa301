//! Knowledge gaps and graph writes by agents (README *Knowledge gaps*):
//! `POST /api/v1/graph/nodes|edges|batch`, `DELETE /api/v1/graph/edges`, and
//! `/api/v1/gaps…` (report, list, claim, status, findings, fail, reorder). Handlers turn the
//! bodies into `evident-kb` calls; the actor of every write is the caller's token id.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use evident_kb::agent_graph::{EdgeAssertion, EvidenceInput, NodeAssertion, Provenance};
use evident_kb::gaps::{DEFAULT_LEASE_MS, GapReport};
use evident_store::gaps::{GapPhase, GapState};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::AppState;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::scoped::ScopedRequest;

scoped_request! {
    /// Scope fields every body and query here carries.
    #[derive(Debug, Default, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ScopeOf {}
}

/// The scope of a body's or query's scope fields (a client required).
pub fn scope_of(
    client_id: &Option<String>,
    project_id: &Option<String>,
    group_id: &Option<String>,
) -> evident_kb::Result<evident_core::Scope> {
    evident_kb::write_scope(
        client_id.as_deref(),
        project_id.as_deref(),
        group_id.as_deref(),
        false,
    )
}

/// The provenance of a write by `by` (construction phase), for `gap_id` when named.
pub fn provenance(by: &Principal, gap_id: Option<String>, now: i64) -> Provenance {
    Provenance {
        actor: by.id.clone(),
        gap_id,
        phase: GapPhase::Construction,
        at: evident_kb::gaps::rfc3339(now),
    }
}

scoped_request! {
    /// `POST /api/v1/graph/nodes`: one node.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct AddNode {
        #[serde(default)]
        pub gap_id: Option<String>,
        pub key: String,
        #[serde(rename = "type")]
        pub node_type: String,
        #[serde(default)]
        pub label: Option<String>,
        #[serde(default)]
        pub props: Map<String, Value>,
        #[serde(default)]
        pub evidence: Option<EvidenceInput>,
    }
}

scoped_request! {
    /// `POST /api/v1/graph/edges`: one edge.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct AddEdge {
        #[serde(default)]
        pub gap_id: Option<String>,
        pub from: String,
        pub edge_type: String,
        pub to: String,
        #[serde(default)]
        pub props: Map<String, Value>,
        #[serde(default)]
        pub evidence: Option<EvidenceInput>,
    }
}

scoped_request! {
    /// `POST /api/v1/graph/batch`: nodes and edges in one write.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct AddBatch {
        #[serde(default)]
        pub gap_id: Option<String>,
        #[serde(default)]
        pub nodes: Vec<NodeAssertion>,
        #[serde(default)]
        pub edges: Vec<EdgeAssertion>,
    }
}

async fn write_graph(
    s: &AppState,
    by: &Principal,
    scope: evident_core::Scope,
    gap_id: Option<String>,
    nodes: &[NodeAssertion],
    edges: &[EdgeAssertion],
) -> ApiResult<(StatusCode, Json<Value>)> {
    let now = s.clock.now_ms();
    let prov = provenance(by, gap_id, now);
    let out =
        s.kb.write_gap_graph(&scope, &prov, nodes, edges, now)
            .await?;
    Ok((StatusCode::OK, Json(json!(out))))
}

pub async fn add_node(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiJson(b): ApiJson<AddNode>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let scope = b.write_scope()?;
    let node = NodeAssertion {
        key: b.key,
        node_type: b.node_type,
        label: b.label,
        props: b.props,
        evidence: b.evidence,
    };
    write_graph(&s, &by, scope, b.gap_id, &[node], &[]).await
}

pub async fn add_edge(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiJson(b): ApiJson<AddEdge>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let scope = b.write_scope()?;
    let edge = EdgeAssertion {
        from: b.from,
        edge_type: b.edge_type,
        to: b.to,
        props: b.props,
        evidence: b.evidence,
    };
    write_graph(&s, &by, scope, b.gap_id, &[], &[edge]).await
}

pub async fn add_batch(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiJson(b): ApiJson<AddBatch>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    write_graph(&s, &by, b.write_scope()?, b.gap_id, &b.nodes, &b.edges).await
}

scoped_request! {
    /// `DELETE /api/v1/graph/edges?from&edgeType&to&clientId`.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct EdgeQuery {
        pub from: String,
        pub edge_type: String,
        pub to: String,
    }
}

pub async fn delete_edge(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<EdgeQuery>,
) -> ApiResult<Json<Value>> {
    let scope = q.write_scope()?;
    let edge = EdgeAssertion {
        from: q.from,
        edge_type: q.edge_type,
        to: q.to,
        ..Default::default()
    };
    let removed = s.kb.retract_edge(&scope, &edge).await?;
    Ok(Json(json!({"removed": removed})))
}

scoped_request! {
    /// `POST /api/v1/gaps`: one gap (its fields at the top level) or many (`gaps`).
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ReportGaps {
        #[serde(default)]
        pub question: Option<String>,
        #[serde(default)]
        pub context: Option<String>,
        #[serde(default)]
        pub priority: Option<u8>,
        #[serde(default)]
        pub about: Vec<String>,
        #[serde(default)]
        pub acquirer: Option<String>,
        #[serde(default)]
        pub gaps: Vec<GapReport>,
    }
}

impl ReportGaps {
    pub fn reports(self) -> ApiResult<Vec<GapReport>> {
        let acquirer = match self.acquirer.as_deref() {
            None => None,
            Some(a) => Some(evident_store::gaps::Acquirer::parse(a).ok_or_else(|| {
                ApiError::bad_request("invalid_field", "acquirer is `agent` or `builtin`")
            })?),
        };
        match (self.question, self.gaps.is_empty()) {
            (Some(question), true) => Ok(vec![GapReport {
                question,
                context: self.context,
                priority: self.priority,
                about: self.about,
                acquirer,
            }]),
            (None, false) => Ok(self.gaps),
            _ => Err(ApiError::bad_request(
                "invalid_request",
                "give either `question` (one gap) or `gaps` (several)",
            )),
        }
    }
}

pub async fn report(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiJson(b): ApiJson<ReportGaps>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let scope = b.write_scope()?;
    let reports = b.reports()?;
    let made =
        s.kb.report_gaps(
            &scope,
            &by.id,
            GapPhase::Detection,
            &reports,
            Some(&s.tasks),
            s.clock.now_ms(),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(json!({"gaps": made}))))
}

scoped_request! {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ListGaps {
        #[serde(default)]
        pub state: Option<String>,
        #[serde(default)]
        pub limit: Option<usize>,
    }
}

pub async fn list(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ListGaps>,
) -> ApiResult<Json<Value>> {
    let scope = q.write_scope()?;
    let state = match q.state.as_deref() {
        None => None,
        Some(raw) => Some(GapState::parse(raw).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_field",
                "state is one of open, acquiring, acquired, constructed, failed",
            )
        })?),
    };
    let gaps =
        s.kb.list_gaps(&scope, state, q.limit.unwrap_or(100))
            .await?;
    Ok(Json(json!({"gaps": gaps})))
}

scoped_request! {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Claim {
        #[serde(default)]
        pub lease_secs: Option<i64>,
    }
}

/// `200 {gap, epoch, leaseExpiresAt}`, or `204` when no gap is claimable now.
pub async fn claim(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiJson(b): ApiJson<Claim>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let scope = b.write_scope()?;
    let lease = b
        .lease_secs
        .map(|x| x.saturating_mul(1000))
        .unwrap_or(DEFAULT_LEASE_MS);
    match s
        .kb
        .claim_next_gap(&scope, &by.id, lease, s.clock.now_ms())
        .await?
    {
        Some(c) => Ok((StatusCode::OK, Json(json!(c)))),
        None => Ok((StatusCode::OK, Json(json!({"gap": null})))),
    }
}

pub async fn get(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeOf>,
) -> ApiResult<Json<Value>> {
    let view = s.kb.gap_view(&q.write_scope()?, &id).await?;
    Ok(Json(json!(view)))
}

scoped_request! {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct SubmitFindings {
        pub markdown: String,
        #[serde(default)]
        pub sources: Vec<String>,
        #[serde(default)]
        pub epoch: Option<i64>,
    }
}

pub async fn findings(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiJson(b): ApiJson<SubmitFindings>,
) -> ApiResult<Json<Value>> {
    let view =
        s.kb.submit_findings(
            &b.write_scope()?,
            &id,
            &by.id,
            b.epoch,
            &b.markdown,
            &b.sources,
            s.clock.now_ms(),
        )
        .await?;
    Ok(Json(json!(view)))
}

scoped_request! {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Fail {
        pub reason: String,
        #[serde(default)]
        pub retry: bool,
        #[serde(default)]
        pub epoch: Option<i64>,
    }
}

pub async fn fail(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiJson(b): ApiJson<Fail>,
) -> ApiResult<Json<Value>> {
    let gap =
        s.kb.fail_gap(
            &b.write_scope()?,
            &id,
            &by.id,
            b.epoch,
            &b.reason,
            b.retry,
            s.clock.now_ms(),
        )
        .await?;
    Ok(Json(json!(gap)))
}

scoped_request! {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Reorder {
        pub priority: u8,
        #[serde(default)]
        pub position: Option<i64>,
    }
}

pub async fn reorder(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiJson(b): ApiJson<Reorder>,
) -> ApiResult<Json<Value>> {
    let gap =
        s.kb.reorder_gap(
            &b.write_scope()?,
            &id,
            b.priority,
            b.position,
            &by.id,
            s.clock.now_ms(),
        )
        .await?;
    Ok(Json(json!(gap)))
}

/// `retrieve` or `context` with `recordGap: true` found nothing relevant: the query becomes a
/// gap of the reader's scope (`detection` phase), when the caller may write there.
pub async fn record_query_gap(
    s: &AppState,
    by: &Principal,
    scope: (&Option<String>, &Option<String>, &Option<String>),
    query: &str,
) -> ApiResult<evident_store::gaps::GapRecord> {
    let scope = scope_of(scope.0, scope.1, scope.2)?;
    by.grant
        .authorize(
            evident_core::access::Role::Write,
            &scope,
            evident_core::access::Intent::Write,
        )
        .map_err(|d| ApiError::new(StatusCode::FORBIDDEN, d.code(), d.to_string()))?;
    let report = GapReport {
        question: query.to_string(),
        ..Default::default()
    };
    let mut made =
        s.kb.report_gaps(
            &scope,
            &by.id,
            GapPhase::Detection,
            &[report],
            Some(&s.tasks),
            s.clock.now_ms(),
        )
        .await?;
    Ok(made.remove(0))
}
