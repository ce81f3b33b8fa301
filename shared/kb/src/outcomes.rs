//! Task outcomes: what an orchestrator learned from a finished task, kept as long-term,
//! cited knowledge (seed 003, *Task Outcome Ingestion*).
//!
//! - [`significance`]: the seed's deterministic filter (no model call), row by row.
//! - A significant outcome becomes one Markdown document with the seed's sections (Summary,
//!   Key Decisions, Patterns, Artifacts, Lessons), one chunk per section, under the stable
//!   URN `task-outcome:{taskId}` with kind `task_outcome`: a re-run of the task replaces the
//!   previous outcome, and chunk ids from text hashes mean only changed sections are embedded.
//! - Graph: the outcome node links to its artifacts (`touched`; files, symbols and issues, keys
//!   resolved through the alias registry by the write path), topics (`about`), decisions
//!   (`decided`) and patterns (`used_pattern`), each edge evidenced by the section's chunk
//!   that names its target.
//! - Written through the queue at priority 4 (background): the caller never waits for
//!   embedding. Everything is validated (and scanned for credentials) before it is queued.

use std::collections::BTreeSet;

use evident_ai::Priority;
use evident_core::hashing::content_hash;
use evident_core::refs::{NodeKey, normalize_ref};
use evident_core::{
    EvidenceSpec, Locator, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource, Scope, keys,
    validate,
};
use serde::{Deserialize, Serialize};
use serde_json::Map;

use crate::tasks::TaskSubmitter;
use crate::{Kb, KbError, Result};

/// The kind of every outcome chunk.
pub const OUTCOME_KIND: &str = "task_outcome";
/// Limits on what an outcome may carry.
pub const MAX_SUMMARY_BYTES: usize = 4 * 1024;
pub const MAX_ITEMS: usize = 50;
pub const MAX_ITEM_BYTES: usize = 1024;
/// The priority outcomes are queued at: background, non-urgent embedding.
pub const OUTCOME_PRIORITY: Priority = Priority::DEFAULT;

/// The orchestrator's task categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskCategory {
    SingleTask,
    Epic,
    Generative,
    Advice,
}

impl TaskCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskCategory::SingleTask => "single_task",
            TaskCategory::Epic => "epic",
            TaskCategory::Generative => "generative",
            TaskCategory::Advice => "advice",
        }
    }

    pub fn parse(raw: &str) -> Result<TaskCategory> {
        [
            TaskCategory::SingleTask,
            TaskCategory::Epic,
            TaskCategory::Generative,
            TaskCategory::Advice,
        ]
        .into_iter()
        .find(|c| c.as_str() == raw)
        .ok_or_else(|| {
            KbError::Field(validate::FieldError::Invalid {
                field: "category",
                reason: format!("`{raw}` is not one of single_task, epic, generative, advice"),
            })
        })
    }
}

/// A finished task and what was extracted from it (the seed's task fields and extraction
/// schema).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskOutcome {
    pub task_id: String,
    pub category: Option<TaskCategory>,
    pub action: String,
    /// How many step results the task had (the filter asks only whether there were any).
    pub step_results: usize,
    pub error: Option<String>,
    pub final_result: String,
    pub summary: String,
    pub key_decisions: Vec<String>,
    pub patterns_used: Vec<String>,
    pub artifacts: Vec<String>,
    pub lessons_learned: Vec<String>,
    pub topics: Vec<String>,
}

/// Why an outcome is not ingested (stable codes, returned as `reason`).
pub mod reason {
    pub const ERROR_PRESENT: &str = "error_present";
    pub const EMPTY_FINAL_RESULT: &str = "empty_final_result";
    pub const ADVICE: &str = "advice";
    pub const RESPOND_WITHOUT_STEPS: &str = "respond_without_steps";
    pub const ACTION_NOT_SIGNIFICANT: &str = "action_not_significant";
}

/// The seed's significance filter. The "any" rows (an error, an empty final result) refuse
/// before the category rows; a `single_task` action the table does not list is refused too
/// (the table admits only `code`, `tracker_ops`, `mixed`, and `respond` with steps).
pub fn significance(
    category: TaskCategory,
    action: &str,
    step_results: usize,
    error: Option<&str>,
    final_result: &str,
) -> std::result::Result<(), &'static str> {
    if error.is_some_and(|e| !e.trim().is_empty()) {
        return Err(reason::ERROR_PRESENT);
    }
    if final_result.trim().is_empty() {
        return Err(reason::EMPTY_FINAL_RESULT);
    }
    match category {
        TaskCategory::Epic | TaskCategory::Generative => Ok(()),
        TaskCategory::Advice => Err(reason::ADVICE),
        TaskCategory::SingleTask => match action {
            "code" | "tracker_ops" | "mixed" => Ok(()),
            "respond" if step_results > 0 => Ok(()),
            "respond" => Err(reason::RESPOND_WITHOUT_STEPS),
            _ => Err(reason::ACTION_NOT_SIGNIFICANT),
        },
    }
}

/// The answer to a recorded outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeAnswer {
    pub ingested: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_urn: Option<String>,
    /// The queue task that writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_task_id: Option<String>,
}

/// `task-outcome:{taskId}`.
pub fn outcome_urn(task_id: &str) -> String {
    format!("task-outcome:{task_id}")
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Validated, whitespace-normalised list items.
fn items(field: &'static str, list: &[String]) -> Result<Vec<String>> {
    if list.len() > MAX_ITEMS {
        return Err(validate::FieldError::TooLong {
            field,
            len: list.len(),
            max: MAX_ITEMS,
        }
        .into());
    }
    list.iter()
        .map(|i| {
            validate::bounded_text(field, i, MAX_ITEM_BYTES)?;
            Ok(one_line(i))
        })
        .collect()
}

/// The graph key of an artifact and its node type: an explicit key (`jira:PAY-7`,
/// `file:shop/src/Cart.java`) as a ref; a Jira-style issue key; a path (a `/` or a file
/// extension) as a file; anything else as a symbol. Exact code keys are written in their
/// folded spelling, which the write path resolves through the alias registry to the indexed
/// node when there is one (`file:shop/src/Cart.java` → the git file node).
pub fn artifact_key(raw: &str) -> Option<(NodeKey, &'static str)> {
    let raw = raw.trim();
    if !raw.chars().any(char::is_alphanumeric) {
        return None;
    }
    let is_jira = raw.split_once('-').is_some_and(|(p, n)| {
        p.len() >= 2
            && p.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && p.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            && !n.is_empty()
            && n.chars().all(|c| c.is_ascii_digit())
    });
    if is_jira {
        return Some((keys::jira_issue(raw), "issue"));
    }
    let namespace = raw
        .split_once(':')
        .map(|(ns, _)| ns)
        .filter(|ns| !ns.is_empty() && ns.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    if let Some(ns) = namespace {
        let node_type = match ns {
            "file" => "file",
            "symbol" => "symbol",
            "jira" | "github" | "gitlab" | "issue" => "issue",
            _ => "artifact",
        };
        return normalize_ref(raw).map(|k| (k, node_type));
    }
    let file_like = raw.contains('/')
        || raw.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=6).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_lowercase())
        });
    if file_like {
        normalize_ref(&format!("file:{raw}")).map(|k| (k, "file"))
    } else {
        normalize_ref(&format!("symbol:{raw}")).map(|k| (k, "symbol"))
    }
}

/// One section of the Markdown: its heading and body.
struct Section {
    heading: &'static str,
    body: String,
}

fn bullets(list: &[String]) -> String {
    list.iter()
        .map(|i| format!("- {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A validated outcome, ready to become a document.
struct Checked {
    summary: String,
    decisions: Vec<String>,
    patterns: Vec<String>,
    artifacts: Vec<String>,
    lessons: Vec<String>,
    topics: Vec<String>,
}

fn check(o: &TaskOutcome) -> Result<Checked> {
    validate::bounded_text("summary", &o.summary, MAX_SUMMARY_BYTES).or_else(|e| match e {
        // A multi-line summary is ordinary text; only NUL-like characters are refused.
        validate::FieldError::ControlChar { .. } => validate::content("summary", &o.summary),
        other => Err(other),
    })?;
    Ok(Checked {
        summary: o.summary.trim().to_string(),
        decisions: items("keyDecisions", &o.key_decisions)?,
        patterns: items("patternsUsed", &o.patterns_used)?,
        artifacts: items("artifacts", &o.artifacts)?,
        lessons: items("lessonsLearned", &o.lessons_learned)?,
        topics: items("topics", &o.topics)?,
    })
}

/// The sections of the document, in the seed's order; empty ones are left out (Summary is
/// always there). Topics are listed under the summary so their edges have evidence.
fn sections(c: &Checked) -> Vec<Section> {
    let mut summary = c.summary.clone();
    if !c.topics.is_empty() {
        summary.push_str(&format!("\n\nTopics: {}", c.topics.join(", ")));
    }
    let mut out = vec![Section {
        heading: "Summary",
        body: summary,
    }];
    for (heading, list) in [
        ("Key Decisions", &c.decisions),
        ("Patterns", &c.patterns),
        ("Artifacts", &c.artifacts),
        ("Lessons", &c.lessons),
    ] {
        if !list.is_empty() {
            out.push(Section {
                heading,
                body: bullets(list),
            });
        }
    }
    out
}

/// The prepared source of an outcome: one chunk per section (with its exact span in the
/// Markdown), the outcome node and its typed links.
fn prepare(scope: Scope, o: &TaskOutcome, c: &Checked) -> Result<PreparedSource> {
    let urn = outcome_urn(&o.task_id);
    let category = o.category.map(TaskCategory::as_str).unwrap_or_default();
    let title = format!("Task outcome: {}", one_line(&o.task_id));
    let doc = section_chunks(o, c, &urn, &title, category);
    let outcome_key = normalize_ref(&format!("task_outcome:{}", o.task_id)).ok_or_else(|| {
        KbError::Field(validate::FieldError::Invalid {
            field: "taskId",
            reason: "has no letters or digits".into(),
        })
    })?;
    let mut links = Links {
        nodes: vec![PreparedNode {
            key: outcome_key.clone(),
            node_type: OUTCOME_KIND.into(),
            label: title.clone(),
            props: evident_core::prepared::props([
                ("taskId", o.task_id.clone().into()),
                ("category", category.into()),
                ("action", o.action.clone().into()),
            ]),
            evidence: EvidenceSpec::AllChunks,
        }],
        edges: Vec::new(),
        outcome_key,
        section_index: doc.section_index,
        chunks: doc.chunks,
    };
    let artifacts = c
        .artifacts
        .iter()
        .filter_map(|a| artifact_key(a).map(|(k, t)| (k, t, a.clone())))
        .collect();
    links.link("Artifacts", artifacts, "touched");
    links.link("Summary", keyed("topic", &c.topics, "topic"), "about");
    links.link(
        "Patterns",
        keyed("pattern", &c.patterns, "pattern"),
        "used_pattern",
    );
    links.link("Key Decisions", decisions(o, c), "decided");
    let markdown = doc.markdown;
    let fingerprint = content_hash(&format!(
        "task-outcome/v1\n{}\n{category}\n{}\n{markdown}",
        serde_json::to_string(&scope).unwrap_or_default(),
        o.action
    ));
    Ok(PreparedSource {
        scope,
        source_urn: urn,
        kind: OUTCOME_KIND.into(),
        title: Some(title),
        fingerprint,
        observed_at: None,
        chunks: links.chunks,
        nodes: links.nodes,
        edges: links.edges,
        aliases: Vec::new(),
        merges: Vec::new(),
    })
}

/// An outcome as Markdown, its chunks (one per section) and which chunk holds each section.
struct SectionChunks {
    markdown: String,
    chunks: Vec<PreparedChunk>,
    section_index: std::collections::HashMap<&'static str, usize>,
}

/// Writes the outcome's Markdown (title, then each section) with one chunk per section,
/// located by its exact character span and carrying the task's id, category and action.
fn section_chunks(
    o: &TaskOutcome,
    c: &Checked,
    urn: &str,
    title: &str,
    category: &str,
) -> SectionChunks {
    let mut markdown = format!("# {title}\n\n");
    let mut chunks = Vec::new();
    let mut metadata = Map::new();
    metadata.insert("taskId".into(), o.task_id.clone().into());
    metadata.insert("category".into(), category.into());
    metadata.insert("action".into(), o.action.clone().into());
    let mut section_index = std::collections::HashMap::new();
    for s in sections(c) {
        let text = format!("## {}\n\n{}", s.heading, s.body);
        let char_start = markdown.chars().count();
        markdown.push_str(&text);
        let char_end = markdown.chars().count();
        markdown.push_str("\n\n");
        let mut chunk = PreparedChunk::new(
            text,
            Locator::Document {
                uri: urn.to_string(),
                char_start,
                char_end,
                page: None,
                section: Some(s.heading.to_string()),
            },
        );
        chunk.metadata = metadata.clone();
        section_index.insert(s.heading, chunks.len());
        chunks.push(chunk);
    }
    SectionChunks {
        markdown,
        chunks,
        section_index,
    }
}

/// The outcome's nodes and edges as they are linked, and the chunks that evidence them.
struct Links {
    nodes: Vec<PreparedNode>,
    edges: Vec<PreparedEdge>,
    outcome_key: NodeKey,
    section_index: std::collections::HashMap<&'static str, usize>,
    chunks: Vec<PreparedChunk>,
}

impl Links {
    /// Links the outcome to each target (once) by `edge_type`, evidenced by the chunk of
    /// `section`, which refers to the target; nothing when the outcome has no such section.
    fn link(
        &mut self,
        section: &str,
        targets: Vec<(NodeKey, &'static str, String)>,
        edge_type: &str,
    ) {
        let Some(&i) = self.section_index.get(section) else {
            return;
        };
        let mut seen = BTreeSet::new();
        for (key, node_type, label) in targets {
            if !seen.insert(key.clone()) {
                continue;
            }
            self.chunks[i].refs.push(key.clone());
            self.nodes.push(PreparedNode {
                key: key.clone(),
                node_type: node_type.into(),
                label,
                props: Map::new(),
                evidence: EvidenceSpec::chunk(i),
            });
            self.edges.push(PreparedEdge {
                from: self.outcome_key.clone(),
                to: key,
                edge_type: edge_type.into(),
                props: Map::new(),
                evidence: EvidenceSpec::chunk(i),
            });
        }
    }
}

/// Link targets named in namespace `ns` (`topic:…`, `pattern:…`) that make keys.
fn keyed(
    ns: &str,
    list: &[String],
    node_type: &'static str,
) -> Vec<(NodeKey, &'static str, String)> {
    list.iter()
        .filter_map(|i| normalize_ref(&format!("{ns}:{i}")).map(|k| (k, node_type, i.clone())))
        .collect::<Vec<_>>()
}

/// The outcome's decisions as link targets. A decision is identified by its task and its
/// text (reordering keeps its node).
fn decisions(o: &TaskOutcome, c: &Checked) -> Vec<(NodeKey, &'static str, String)> {
    c.decisions
        .iter()
        .filter_map(|d| {
            let hash = content_hash(d);
            let hex = hash.rsplit(':').next().unwrap_or(&hash);
            let id: String = hex.chars().take(12).collect();
            normalize_ref(&format!("decision:{}_{id}", o.task_id)).map(|k| {
                let label: String = d.chars().take(160).collect();
                (k, "decision", label)
            })
        })
        .collect()
}

/// Resolves the artifact keys through the alias registry now: code keys (`file:`, `symbol:`)
/// are exact and the write path never resolves them, so an artifact named by its folded
/// spelling (`file:shop_src_cart_java`) would otherwise stay beside the indexed node. A
/// resolved artifact is left to the node it resolves to (its type and label are the
/// indexer's, not ours).
async fn resolve_artifacts(kb: &Kb, src: &mut PreparedSource) -> Result<()> {
    let touched: Vec<NodeKey> = src
        .edges
        .iter()
        .filter(|e| e.edge_type == "touched")
        .map(|e| e.to.clone())
        .collect();
    if touched.is_empty() {
        return Ok(());
    }
    let canonical = kb
        .stores
        .aliases
        .resolve(src.scope.partition(), &touched)
        .await?;
    let moved: std::collections::HashMap<NodeKey, NodeKey> = touched
        .into_iter()
        .zip(canonical)
        .filter(|(a, c)| a != c)
        .collect();
    if moved.is_empty() {
        return Ok(());
    }
    src.nodes.retain(|n| !moved.contains_key(&n.key));
    for e in &mut src.edges {
        if let Some(c) = moved.get(&e.to) {
            e.to = c.clone();
        }
    }
    for c in &mut src.chunks {
        for r in &mut c.refs {
            if let Some(to) = moved.get(r) {
                *r = to.clone();
            }
        }
    }
    Ok(())
}

/// Applies the filter and, for a significant outcome, validates it, refuses a credential
/// anywhere in it, and queues its write at priority 4 under `task-outcome:{taskId}`.
pub async fn record_outcome(
    kb: &Kb,
    tasks: &TaskSubmitter,
    scope: Scope,
    outcome: TaskOutcome,
    now: i64,
) -> Result<OutcomeAnswer> {
    if scope.client_id.is_none() {
        return Err(validate::FieldError::Missing { field: "clientId" }.into());
    }
    validate::identifier("taskId", &outcome.task_id)?;
    let category = outcome
        .category
        .ok_or(validate::FieldError::Missing { field: "category" })?;
    if let Err(why) = significance(
        category,
        &outcome.action,
        outcome.step_results,
        outcome.error.as_deref(),
        &outcome.final_result,
    ) {
        tracing::debug!(task_id = %outcome.task_id, reason = why, "outcome not significant");
        return Ok(OutcomeAnswer {
            ingested: false,
            reason: Some(why.to_string()),
            source_urn: None,
            queue_task_id: None,
        });
    }
    let checked = check(&outcome)?;
    let mut src = prepare(scope.clone(), &outcome, &checked)?;
    resolve_artifacts(kb, &mut src).await?;
    crate::ingest::check_prepared(&src)?;
    kb.check_source_owner(&scope, &src.source_urn).await?;
    let urn = src.source_urn.clone();
    let rec = tasks
        .enqueue_prepared(src, &urn, OUTCOME_PRIORITY, now)
        .await?;
    Ok(OutcomeAnswer {
        ingested: true,
        reason: None,
        source_urn: Some(urn),
        queue_task_id: Some(rec.task_id),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskCategory::*;

    /// The seed's table, row by row (`respond` rows with and without step results; "any"
    /// rows tried with every category).
    #[test]
    fn significance_follows_the_seed_table_row_by_row() {
        let ok = |c, a, steps, err: Option<&str>, fin| significance(c, a, steps, err, fin);
        // single_task | code, tracker_ops, mixed | yes
        for action in ["code", "tracker_ops", "mixed"] {
            assert_eq!(ok(SingleTask, action, 0, None, "done"), Ok(()), "{action}");
        }
        // single_task | respond (with step_results) | yes
        assert_eq!(ok(SingleTask, "respond", 2, None, "answered"), Ok(()));
        // single_task | respond (no steps) | no
        assert_eq!(
            ok(SingleTask, "respond", 0, None, "answered"),
            Err(reason::RESPOND_WITHOUT_STEPS)
        );
        // epic | any | yes ; generative | any | yes
        for c in [Epic, Generative] {
            for action in ["", "code", "respond", "plan"] {
                assert_eq!(ok(c, action, 0, None, "done"), Ok(()), "{c:?} {action}");
            }
        }
        // advice | any | no
        for action in ["", "respond", "code"] {
            assert_eq!(
                ok(Advice, action, 3, None, "an answer"),
                Err(reason::ADVICE)
            );
        }
        // any | error present | no ; any | empty final_result | no
        for c in [SingleTask, Epic, Generative, Advice] {
            assert_eq!(
                ok(c, "code", 1, Some("timeout"), "partial"),
                Err(reason::ERROR_PRESENT),
                "{c:?}"
            );
            assert_eq!(
                ok(c, "code", 1, None, "  "),
                Err(reason::EMPTY_FINAL_RESULT),
                "{c:?}"
            );
        }
        // A blank error is no error; an unlisted single_task action is not significant.
        assert_eq!(ok(SingleTask, "code", 0, Some(" "), "done"), Ok(()));
        assert_eq!(
            ok(SingleTask, "chat", 0, None, "done"),
            Err(reason::ACTION_NOT_SIGNIFICANT)
        );
    }

    #[test]
    fn artifacts_become_file_symbol_and_issue_keys() {
        let k = |raw: &str| artifact_key(raw).map(|(k, t)| (k.as_str().to_string(), t));
        assert_eq!(k("PAY-12"), Some(("jira:pay-12".into(), "issue")));
        assert_eq!(k("BackgroundEngine.kt").map(|x| x.1), Some("file"));
        assert_eq!(k("shop/src/Cart.java").map(|x| x.1), Some("file"));
        assert_eq!(k("OrchestratorCircuitBreaker").map(|x| x.1), Some("symbol"));
        assert_eq!(k("jira:PAY-7").map(|x| x.1), Some("issue"));
        assert_eq!(k("file:shop/src/Cart.java").map(|x| x.1), Some("file"));
        assert_eq!(k("   "), None);
    }

    #[test]
    fn the_document_has_the_seed_sections_with_exact_spans() {
        let o = TaskOutcome {
            task_id: "T-1".into(),
            category: Some(SingleTask),
            action: "code".into(),
            final_result: "done".into(),
            summary: "Added retries to the engine.".into(),
            key_decisions: vec!["backoff over fixed delay".into()],
            patterns_used: vec!["exponential backoff".into()],
            artifacts: vec!["BackgroundEngine.kt".into()],
            lessons_learned: vec!["non-retryable errors get no backoff".into()],
            topics: vec!["retry".into()],
            ..Default::default()
        };
        let c = check(&o).expect("valid");
        let src = prepare(Scope::client("acme"), &o, &c).expect("prepared");
        let headings: Vec<&str> = src
            .chunks
            .iter()
            .map(|c| c.text.lines().next().unwrap_or(""))
            .collect();
        assert_eq!(
            headings,
            [
                "## Summary",
                "## Key Decisions",
                "## Patterns",
                "## Artifacts",
                "## Lessons"
            ]
        );
        assert_eq!(src.source_urn, "task-outcome:T-1");
        assert_eq!(src.kind, "task_outcome");
        let mut edge_types: Vec<&str> = src.edges.iter().map(|e| e.edge_type.as_str()).collect();
        edge_types.sort_unstable();
        assert_eq!(edge_types, ["about", "decided", "touched", "used_pattern"]);
        // Each edge is evidenced by the chunk that names its target.
        for e in &src.edges {
            let EvidenceSpec::Chunks(ix) = &e.evidence else {
                panic!("{e:?}")
            };
            assert!(src.chunks[ix[0]].refs.contains(&e.to), "{e:?}");
        }
        crate::ingest::check_prepared(&src).expect("a valid prepared source");
    }
}
