//! Prompt-ready context (seed 000): typed knowledge from the three layers routed into prompt
//! sections by `infoType`, formatted deterministically, each section within its token budget,
//! every line carrying a citation marker that maps to `items`.
//!
//! The steps, each a module:
//! - [`gather`]: the layers as ranked candidates — entity metadata (the active entity's
//!   profile and the global profile), pieces (query search filtered by knowledge type / tags,
//!   and the pieces evidencing the active entity), the graph (BFS from the active entity:
//!   relationships and the pieces that evidence them, scored `1/(depth+1)`), and agent memory
//!   (session log, task outcomes, user knowledge); [`claims`]: the claims about the active
//!   entity and those the query recalls.
//! - [`route`]: each candidate to an info type (the seed's provider table), info types to the
//!   requested sections; merged and de-duplicated (a chunk once, at its best score).
//! - [`format`]: one line per candidate from its template, `[n]` citation markers, sections
//!   cut to their budgets by rank — whole lines only.
//! - [`tokens`]: the tokenizer budgets are counted in (the built-in embedder's WordPiece).
//!
//! Same store state and request → byte-identical output: candidates are ordered by
//! `(score desc, order key)` with scores that depend only on what is stored, and every map in
//! the answer is a `BTreeMap`.

mod claims;
mod format;
mod gather;
mod route;
pub mod tokens;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use evident_core::{KnowledgeType, Visibility, validate};
use serde::{Deserialize, Serialize};

use crate::{Kb, KbError, Result};

pub use format::ContextItem;
pub use gather::{GLOBAL_PROFILE_KEY, profile_urn};
pub use route::{DEFAULT_BUDGET_TOKENS, DEFAULT_SECTIONS};

/// Most sections one request may ask for.
pub const MAX_SECTIONS: usize = 32;
/// Largest budget of one section (tokens).
pub const MAX_BUDGET_TOKENS: usize = 32_768;
/// Deepest graph walk from the active entity.
pub const MAX_DEPTH: usize = 3;
/// Default graph walk depth (the seed's `graph_traversal_depth`).
pub const DEFAULT_DEPTH: usize = 2;

/// One layer a context may draw from (`include`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Layer {
    /// Typed pieces found by the query, and the pieces about the active entity.
    Pieces,
    /// Relationships reached from the active entity, and the pieces evidencing them.
    Graph,
    /// The active entity's profile and the global profile.
    Metadata,
    /// The session log of the client (and project).
    Memory,
    /// Task outcomes (`task_outcome` chunks).
    Outcomes,
    /// What agents learned about the user (`user_knowledge_*` chunks).
    UserKnowledge,
    /// Claims (seed 002): active claims about the active entity or recalled by the query.
    Claims,
}

impl Layer {
    /// What a request without `include` draws from: every layer.
    pub const DEFAULT: [Layer; 7] = [
        Layer::Pieces,
        Layer::Graph,
        Layer::Metadata,
        Layer::Memory,
        Layer::Outcomes,
        Layer::UserKnowledge,
        Layer::Claims,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Pieces => "pieces",
            Layer::Graph => "graph",
            Layer::Metadata => "metadata",
            Layer::Memory => "memory",
            Layer::Outcomes => "outcomes",
            Layer::UserKnowledge => "userKnowledge",
            Layer::Claims => "claims",
        }
    }
}

/// One requested section: the info types routed into it (default: its own name) and its
/// budget in tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SectionSpec {
    #[serde(default)]
    pub info_types: Option<Vec<String>>,
    pub budget_tokens: usize,
}

/// What [`Kb::context`] answers. A domain type: the HTTP body converts into it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextQuery {
    pub query: Option<String>,
    pub active_entity: Option<String>,
    pub client_id: Option<String>,
    pub project_id: Option<String>,
    pub group_id: Option<String>,
    /// `None`: [`DEFAULT_SECTIONS`] plus a section per other info type found, each with
    /// [`DEFAULT_BUDGET_TOKENS`].
    pub sections: Option<BTreeMap<String, SectionSpec>>,
    /// `None`: [`Layer::DEFAULT`].
    pub include: Option<Vec<Layer>>,
    /// Graph walk depth from the active entity (`0..=3`, default 2).
    pub max_depth: Option<usize>,
    /// Narrow the query's piece search to these knowledge types / tags.
    pub knowledge_types: Vec<KnowledgeType>,
    pub tags: Vec<String>,
    /// The clock (ms since the epoch) the session log's expiry is read at: injected so the
    /// same state gives the same answer.
    pub now_ms: i64,
}

/// The prompt sections, their citations, token counts and whether anything was cut.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAnswer {
    /// Section name → formatted text (lines joined by `\n`, each ending in its `[n]` marker).
    pub sections: BTreeMap<String, String>,
    /// Section name → the citation of each marker, in marker order (`[1]` first).
    pub items: BTreeMap<String, Vec<ContextItem>>,
    /// Section name → tokens of its text ([`tokens::count`]).
    pub tokens: BTreeMap<String, usize>,
    /// Section name → whether candidates were left out to stay within the budget.
    pub truncated: BTreeMap<String, bool>,
    /// The query found nothing relevant (no word, entity or phrase match:
    /// [`crate::gaps::nothing_relevant`]); what `recordGap` acts on. Not part of the answer.
    #[serde(skip)]
    pub query_unanswered: bool,
}

impl ContextQuery {
    /// Checks bounds; returns the reader's visibility, the layers and the walk depth.
    fn validate(&self) -> Result<(Visibility, Vec<Layer>, usize)> {
        if let Some(q) = &self.query {
            validate::bounded_text("query", q, 8 * 1024)?;
        }
        if let Some(e) = &self.active_entity {
            validate::identifier("activeEntity", e)?;
        }
        if let Some(sections) = &self.sections {
            if sections.is_empty() || sections.len() > MAX_SECTIONS {
                return Err(KbError::Invalid(format!(
                    "sections must name 1..={MAX_SECTIONS} sections"
                )));
            }
            for (name, spec) in sections {
                validate::bounded_text("sections", name, evident_core::typed::MAX_LABEL_LEN)?;
                if spec.budget_tokens == 0 || spec.budget_tokens > MAX_BUDGET_TOKENS {
                    return Err(KbError::Invalid(format!(
                        "section `{name}`: budgetTokens must be 1..={MAX_BUDGET_TOKENS}"
                    )));
                }
                for i in spec.info_types.iter().flatten() {
                    validate::bounded_text("infoTypes", i, evident_core::typed::MAX_LABEL_LEN)?;
                }
            }
        }
        let depth = self.max_depth.unwrap_or(DEFAULT_DEPTH);
        if depth > MAX_DEPTH {
            return Err(KbError::Invalid(format!(
                "maxDepth must be 0..={MAX_DEPTH}"
            )));
        }
        let mut layers = self
            .include
            .clone()
            .unwrap_or_else(|| Layer::DEFAULT.to_vec());
        layers.sort();
        layers.dedup();
        let vis = crate::visibility(
            self.client_id.as_deref(),
            self.project_id.as_deref(),
            self.group_id.as_deref(),
        )?;
        Ok((vis, layers, depth))
    }
}

impl Kb {
    /// Prompt sections for an agent: gather the layers, route by info type, format within
    /// budgets (see the module documentation).
    #[tracing::instrument(skip_all, fields(query = q.query.is_some(), entity = q.active_entity.is_some()))]
    pub async fn context(&self, q: &ContextQuery) -> Result<ContextAnswer> {
        let started = std::time::Instant::now();
        let (vis, layers, depth) = q.validate()?;
        let typed = crate::typed::typed_filter(&q.knowledge_types, &[], &q.tags, &[])?;
        let (candidates, answered) = self.gather(&vis, q, &layers, depth, typed).await?;
        let routed = route::route(candidates, q.sections.as_ref());
        let mut answer = format::render(routed);
        answer.query_unanswered = !answered;
        metrics::histogram!("evident_context_seconds").record(started.elapsed().as_secs_f64());
        Ok(answer)
    }
}
