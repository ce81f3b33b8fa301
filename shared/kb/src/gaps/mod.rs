//! Knowledge gaps (seed 004): classification reports what it could not answer, acquisition
//! researches one gap and returns Markdown, construction builds it into the graph. Evident
//! keeps the loop durable: gaps are queued work with leases ([`evident_store::gaps`]), the
//! findings a cited document linked to the gap, every graph write for it evidenced.
//!
//! - [`Kb::report_gaps`]: record questions (an open one is asked once). A gap with
//!   `acquirer: builtin` queues an `acquire-gap` task at once.
//! - [`Kb::claim_next_gap`]: an agent leases the next open gap of its client (one acquisition
//!   per client at a time; a dead agent's lease expires and the gap is claimed again).
//! - [`Kb::submit_findings`]: the findings become the document `gap-findings:{gapId}` (kind
//!   `gap_findings`) with an `answers` edge from `findings:{gapId}` to `gap:{gapId}` →
//!   `acquired`. Only the current claim's holder may submit (its epoch, or its actor).
//! - [`Kb::write_gap_graph`]: agent graph writes carrying `gapId`, recorded in the gap's
//!   history; the first after the findings moves it to `constructed`.
//! - [`Kb::fail_gap`]: `failed` with its reason, or back to `open` after a backoff (`retry`).
//! - [`acquire`]: the built-in acquirer (the `acquire-gap` task kind).
//! - [`nothing_relevant`]: when `retrieve` with `recordGap` opens a gap.

pub mod acquire;

use evident_core::{Scope, Visibility, validate};
use evident_store::gaps::{
    Acquirer, GapClaim, GapEvent, GapMove, GapPhase, GapRecord, GapState, NewGap, gap_backoff,
};
use evident_store::queue::Millis;
use serde::{Deserialize, Serialize};

use crate::agent_graph::{EdgeAssertion, GraphWriteOutcome, NodeAssertion, Provenance};
use crate::retrieve::EvidencePack;
use crate::{Document, Kb, KbError, Result, TaskSubmitter};

/// The lease an agent gets by default (`leaseSecs` overrides, 10 s ..= 1 h).
pub const DEFAULT_LEASE_MS: i64 = 10 * 60_000;
pub const MAX_QUESTION_BYTES: usize = 2 * 1024;
pub const MAX_CONTEXT_BYTES: usize = 16 * 1024;
pub const MAX_FINDINGS_BYTES: usize = 512 * 1024;
/// Most gaps one report may carry.
pub const MAX_GAPS: usize = 100;
/// The kind of findings documents.
pub const FINDINGS_KIND: &str = "gap_findings";
/// The default priority of a reported gap.
pub const DEFAULT_PRIORITY: u8 = 4;

/// One gap as reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GapReport {
    pub question: String,
    #[serde(default)]
    pub context: Option<String>,
    #[serde(default)]
    pub priority: Option<u8>,
    #[serde(default)]
    pub about: Vec<String>,
    /// `agent` (default: an agent claims it) or `builtin` (the built-in acquirer).
    #[serde(default)]
    pub acquirer: Option<Acquirer>,
}

/// A gap with everything known about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GapView {
    #[serde(flatten)]
    pub gap: GapRecord,
    /// The findings document and its chunks, once submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<Findings>,
    /// The graph writes made for the gap (from its history).
    pub graph_changes: Vec<serde_json::Value>,
    /// Every event, in order: the interaction record of each phase.
    pub history: Vec<GapEvent>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Findings {
    pub source_urn: String,
    pub chunk_ids: Vec<String>,
}

/// `gap-findings:{gapId}`.
pub fn findings_urn(gap_id: &str) -> String {
    format!("gap-findings:{gap_id}")
}

/// RFC 3339 (milliseconds) of a clock reading.
pub fn rfc3339(ms: Millis) -> String {
    humantime::format_rfc3339_millis(
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64),
    )
    .to_string()
}

fn text_field(field: &'static str, v: &str, max: usize) -> Result<()> {
    validate::bounded_text(field, v, max).or_else(|e| match e {
        validate::FieldError::ControlChar { .. } => validate::content(field, v),
        other => Err(other),
    })?;
    Ok(())
}

fn conflict(message: String) -> KbError {
    KbError::Conflict {
        code: "gap_conflict",
        message,
    }
}

/// Maps the store's refusal of a move to `gap_conflict`.
fn moved(r: evident_store::Result<Option<GapRecord>>, gap_id: &str) -> Result<GapRecord> {
    match r {
        Ok(Some(g)) => Ok(g),
        Ok(None) => Err(KbError::NotFound {
            what: format!("gap {gap_id}"),
        }),
        Err(e) if e.kind == evident_store::ErrorKind::Conflict => Err(conflict(e.message)),
        Err(e) => Err(e.into()),
    }
}

impl Kb {
    /// Applies `change` to `gap` (append-only history), as a `conflict` when refused.
    async fn advance(&self, gap: &GapRecord, change: GapMove, now: Millis) -> Result<GapRecord> {
        let r = self
            .stores
            .gaps
            .advance_gap(gap.scope.partition(), &gap.gap_id, change, now)
            .await;
        moved(r, &gap.gap_id)
    }
}

/// Whether an evidence pack answers nothing: no item matched the query's words (BM25), an
/// entity it names or one of its phrases. The vector channel alone always returns the nearest
/// chunks, so it is not taken as an answer.
pub fn nothing_relevant(pack: &EvidencePack) -> bool {
    !pack
        .items
        .iter()
        .any(|i| i.scores.bm25.is_some() || i.scores.entity.is_some() || i.scores.phrase.is_some())
}

fn client_of(scope: &Scope) -> Result<&str> {
    scope
        .client_id
        .as_deref()
        .ok_or(validate::FieldError::Missing { field: "clientId" }.into())
}

impl Kb {
    /// Records gaps (see the module docs); queues the built-in acquirer for `builtin` ones.
    pub async fn report_gaps(
        &self,
        scope: &Scope,
        actor: &str,
        phase: GapPhase,
        reports: &[GapReport],
        tasks: Option<&TaskSubmitter>,
        now: Millis,
    ) -> Result<Vec<GapRecord>> {
        client_of(scope)?;
        if reports.is_empty() {
            return Err(validate::FieldError::Empty { field: "gaps" }.into());
        }
        if reports.len() > MAX_GAPS {
            return Err(validate::FieldError::TooLong {
                field: "gaps",
                len: reports.len(),
                max: MAX_GAPS,
            }
            .into());
        }
        let mut scan = crate::credentials::Scan::default();
        let mut new = Vec::with_capacity(reports.len());
        for r in reports {
            text_field("question", &r.question, MAX_QUESTION_BYTES)?;
            scan.text("question", &r.question)?;
            if let Some(c) = &r.context {
                text_field("context", c, MAX_CONTEXT_BYTES)?;
                scan.text("context", c)?;
            }
            let priority = r.priority.unwrap_or(DEFAULT_PRIORITY);
            if priority > 9 {
                return Err(KbError::Invalid("priority must be 0..=9".into()));
            }
            let mut about = Vec::new();
            for a in &r.about {
                validate::identifier("about", a)?;
                scan.text("about", a)?;
                if let Some(k) = evident_core::refs::normalize_ref(a) {
                    about.push(k.as_str().to_string());
                }
            }
            new.push(NewGap {
                scope: scope.clone(),
                question: r.question.trim().to_string(),
                context: r.context.clone(),
                priority,
                about,
                acquirer: r.acquirer.unwrap_or_default(),
                actor: actor.to_string(),
                phase,
            });
        }
        let made = self.stores.gaps.create_gaps(new, now).await?;
        if let Some(tasks) = tasks {
            for g in made.iter().filter(|g| {
                g.acquirer == Acquirer::Builtin && g.state == GapState::Open && g.attempts == 0
            }) {
                acquire::enqueue(tasks, g, now).await?;
            }
        }
        metrics::counter!("evident_gaps_reported_total").increment(made.len() as u64);
        Ok(made)
    }

    /// Leases the next open agent gap of the scope's client to `actor`.
    pub async fn claim_next_gap(
        &self,
        scope: &Scope,
        actor: &str,
        lease_ms: i64,
        now: Millis,
    ) -> Result<Option<GapClaim>> {
        let client = client_of(scope)?;
        if !(10_000..=3_600_000).contains(&lease_ms) {
            return Err(KbError::Invalid("leaseSecs must be 10..=3600".into()));
        }
        let vis = Visibility::of(scope.clone());
        Ok(self
            .stores
            .gaps
            .claim_gap(client, &vis, Acquirer::Agent, actor, lease_ms, now)
            .await?)
    }

    /// The gap if the scope's reader may see it.
    pub async fn gap(&self, scope: &Scope, gap_id: &str) -> Result<GapRecord> {
        let client = client_of(scope)?;
        validate::identifier("gapId", gap_id)?;
        match self.stores.gaps.get_gap(client, gap_id).await? {
            Some(g) if Visibility::of(scope.clone()).admits(&g.scope) => Ok(g),
            _ => Err(KbError::NotFound {
                what: format!("gap {gap_id}"),
            }),
        }
    }

    /// The gap with its findings, graph changes and history.
    pub async fn gap_view(&self, scope: &Scope, gap_id: &str) -> Result<GapView> {
        let gap = self.gap(scope, gap_id).await?;
        let history = self
            .stores
            .gaps
            .gap_history(gap.scope.partition(), gap_id)
            .await?;
        let findings = match &gap.findings_urn {
            Some(urn) => Some(Findings {
                source_urn: urn.clone(),
                chunk_ids: self
                    .stores
                    .chunks
                    .source_chunks(gap.scope.partition(), urn)
                    .await?
                    .into_iter()
                    .map(|(id, _)| id)
                    .collect(),
            }),
            None => None,
        };
        let graph_changes = history
            .iter()
            .filter(|e| e.kind == "graph_write")
            .map(|e| e.detail.clone())
            .collect();
        Ok(GapView {
            gap,
            findings,
            graph_changes,
            history,
        })
    }

    pub async fn list_gaps(
        &self,
        scope: &Scope,
        state: Option<GapState>,
        limit: usize,
    ) -> Result<Vec<GapRecord>> {
        let client = client_of(scope)?;
        if limit == 0 || limit > 1_000 {
            return Err(KbError::Invalid("limit must be 1..=1000".into()));
        }
        Ok(self
            .stores
            .gaps
            .list_gaps(client, &Visibility::of(scope.clone()), state, limit)
            .await?)
    }

    /// The gaps of the reader's client about `key` (reported with it in `about`), in claim
    /// order: what is known to be missing about a node. Reads at most 1,000 gaps.
    pub async fn gaps_about(&self, scope: &Scope, key: &str) -> Result<Vec<GapRecord>> {
        let gaps = self.list_gaps(scope, None, 1_000).await?;
        Ok(gaps
            .into_iter()
            .filter(|g| g.about.iter().any(|a| a == key))
            .collect())
    }

    pub async fn reorder_gap(
        &self,
        scope: &Scope,
        gap_id: &str,
        priority: u8,
        position: Option<i64>,
        actor: &str,
        now: Millis,
    ) -> Result<GapRecord> {
        let gap = self.gap(scope, gap_id).await?;
        if priority > 9 {
            return Err(KbError::Invalid("priority must be 0..=9".into()));
        }
        moved(
            self.stores
                .gaps
                .reorder_gap(
                    gap.scope.partition(),
                    gap_id,
                    priority,
                    position,
                    actor,
                    now,
                )
                .await,
            gap_id,
        )
    }

    /// Checks that `actor` (or the holder of `epoch`) holds the gap's current claim.
    fn holder_epoch(gap: &GapRecord, actor: &str, epoch: Option<i64>) -> Result<i64> {
        if gap.state != GapState::Acquiring {
            return Err(conflict(format!(
                "gap {} is {}, not acquiring: claim it first",
                gap.gap_id,
                gap.state.as_str()
            )));
        }
        match epoch {
            Some(e) if e == gap.epoch => Ok(e),
            Some(e) => Err(conflict(format!(
                "gap {} was claimed again (epoch {e} is not the current {}): your claim expired",
                gap.gap_id, gap.epoch
            ))),
            None if gap.lease_owner.as_deref() == Some(actor) => Ok(gap.epoch),
            None => Err(conflict(format!(
                "gap {} is claimed by someone else (pass the epoch of your claim)",
                gap.gap_id
            ))),
        }
    }

    /// Ingests the findings as a cited document linked to the gap and moves it to `acquired`.
    #[allow(clippy::too_many_arguments)]
    pub async fn submit_findings(
        &self,
        scope: &Scope,
        gap_id: &str,
        actor: &str,
        epoch: Option<i64>,
        markdown: &str,
        sources: &[String],
        now: Millis,
    ) -> Result<GapView> {
        let gap = self.gap(scope, gap_id).await?;
        let epoch = Self::holder_epoch(&gap, actor, epoch)?;
        let doc = findings_document(&gap, actor, markdown, sources, now)?;
        let urn = doc.source_urn.clone();
        let written = self.ingest(doc, evident_ai::Priority::INTERACTIVE).await?;
        let change = GapMove {
            to: GapState::Acquired,
            epoch: Some(epoch),
            actor: actor.to_string(),
            kind: "findings".into(),
            phase: Some(GapPhase::Acquisition),
            detail: serde_json::json!({
                "sourceUrn": urn,
                "chunks": written.chunks.total,
                "sources": sources,
                "status": written.status,
            }),
            failure: None,
            findings_urn: Some(urn.clone()),
            not_before: None,
        };
        self.advance(&gap, change, now).await?;
        self.gap_view(scope, gap_id).await
    }

    /// Agent graph writes, for a gap when `prov.gap_id` names one: the gap must be visible and
    /// acquiring, acquired or constructed; the write is recorded in its history, and an
    /// acquired gap becomes `constructed`.
    pub async fn write_gap_graph(
        &self,
        scope: &Scope,
        prov: &Provenance,
        nodes: &[NodeAssertion],
        edges: &[EdgeAssertion],
        now: Millis,
    ) -> Result<GraphWriteOutcome> {
        let Some(gap_id) = prov.gap_id.as_deref() else {
            return self.assert_graph(scope, prov, nodes, edges).await;
        };
        let gap = self.gap(scope, gap_id).await?;
        let to = match gap.state {
            GapState::Acquiring => GapState::Acquiring,
            GapState::Acquired | GapState::Constructed => GapState::Constructed,
            other => {
                return Err(conflict(format!(
                    "gap {gap_id} is {}: graph writes for it follow its acquisition",
                    other.as_str()
                )));
            }
        };
        let out = self.assert_graph(scope, prov, nodes, edges).await?;
        let change = GapMove {
            to,
            epoch: None,
            actor: prov.actor.clone(),
            kind: "graph_write".into(),
            phase: Some(GapPhase::Construction),
            detail: serde_json::to_value(&out).unwrap_or_default(),
            failure: None,
            findings_urn: None,
            not_before: None,
        };
        self.advance(&gap, change, now).await?;
        Ok(out)
    }

    /// Ends the holder's acquisition: `failed` with `reason`, or with `retry` back to `open`
    /// after a backoff. An acquired gap may fail too (its construction could not be done).
    #[allow(clippy::too_many_arguments)]
    pub async fn fail_gap(
        &self,
        scope: &Scope,
        gap_id: &str,
        actor: &str,
        epoch: Option<i64>,
        reason: &str,
        retry: bool,
        now: Millis,
    ) -> Result<GapRecord> {
        validate::bounded_text("reason", reason, 4096)?;
        // The reason is kept in the gap's history: no credential may be stored there.
        crate::credentials::Scan::default().text("reason", reason)?;
        let gap = self.gap(scope, gap_id).await?;
        let epoch = match gap.state {
            GapState::Acquiring => Some(Self::holder_epoch(&gap, actor, epoch)?),
            _ => None,
        };
        let (to, kind, not_before) = if retry && gap.state == GapState::Acquiring {
            (
                GapState::Open,
                "released",
                Some(now + gap_backoff(gap.attempts)),
            )
        } else {
            (GapState::Failed, "failed", None)
        };
        let change = GapMove {
            to,
            epoch,
            actor: actor.to_string(),
            kind: kind.into(),
            phase: Some(GapPhase::Acquisition),
            detail: serde_json::json!({"reason": reason, "retry": retry}),
            failure: Some(reason.to_string()),
            findings_urn: None,
            not_before,
        };
        self.advance(&gap, change, now).await
    }
}

/// The findings of a gap as a document: the Markdown with its sources listed, linked to the
/// gap (`answers`) and to what the gap is about; provenance in its metadata.
fn findings_document(
    gap: &GapRecord,
    actor: &str,
    markdown: &str,
    sources: &[String],
    now: Millis,
) -> Result<Document> {
    text_field("markdown", markdown, MAX_FINDINGS_BYTES)?;
    if sources.len() > 100 {
        return Err(validate::FieldError::TooLong {
            field: "sources",
            len: sources.len(),
            max: 100,
        }
        .into());
    }
    for s in sources {
        validate::bounded_text("sources", s, 2048)?;
    }
    let gap_id = gap.gap_id.as_str();
    let mut content = markdown.trim().to_string();
    if !sources.is_empty() {
        content.push_str("\n\n## Sources\n\n");
        for s in sources {
            content.push_str(&format!("- {s}\n"));
        }
    }
    let mut metadata = serde_json::Map::new();
    metadata.insert("gapId".into(), gap_id.into());
    metadata.insert("actor".into(), actor.into());
    metadata.insert("phase".into(), GapPhase::Acquisition.as_str().into());
    metadata.insert("sources".into(), sources.to_vec().into());
    let mut relationships = vec![format!("findings:{gap_id}|answers|gap:{gap_id}")];
    relationships.extend(gap.about.iter().map(|a| format!("gap:{gap_id}|about|{a}")));
    Ok(Document {
        client_id: gap.scope.client_id.clone(),
        project_id: gap.scope.project_id.clone(),
        group_id: gap.scope.group_id.clone(),
        global: false,
        source_urn: findings_urn(gap_id),
        kind: FINDINGS_KIND.into(),
        content,
        title: Some(format!("Findings: {}", gap.question)),
        metadata: Some(metadata),
        observed_at: Some(rfc3339(now)),
        main_node_key: Some(format!("findings:{gap_id}")),
        relationships: Some(relationships),
        locator: None,
        ..Default::default()
    })
}
