//! Hybrid retrieval with graph expansion, returning an evidence pack.
//!
//! Channels, fused over chunk ids ([`fusion`]: score-aware for BM25 and vector — half rank
//! (k = 60), half the score over the channel's best — plain reciprocal-rank for the others),
//! so a chunk found by several channels appears once with the sum of its contributions:
//! - `bm25` (0.30) and `vector` (0.30): the RAG channels;
//! - `graph` (0.30): evidence chunks of edges reached by expanding, 1..maxDepth hops in any
//!   direction, from the refs of the top RAG hits and the query's entities — nearer edges
//!   rank first;
//! - `entity` (0.05): chunks evidencing nodes the query names ([`linking`]: exact links by
//!   pattern — explicit `ns:value`, issue keys, e-mail addresses, file names, CamelCase
//!   identifiers — and the entity index's matches of names in plain words, scored; the pack
//!   reports them as `entities`);
//! - `phrase`: quoted phrases and long verbatim queries verified word by word in the BM25
//!   candidates ([`phrase`]); a verified match adds more than any fusion score, so exact
//!   matches rank first.
//!
//! With `rerank`, a feature-based reranker ([`rerank`]: query terms in the title, path,
//! symbol or heading, coverage, adjacent pairs, BM25 decisiveness, graph evidence) rescales
//! the fetched candidates. Then current state first ([`history`]: history chunks demoted unless the query asks
//! about change, redundant diff hunks dropped, history items given their commit) and a
//! per-source diversity penalty (×0.55 for each better-scored item of the same source).
//! Every item's `graphRefs` and `graphEdges` are its evidence back-links ([`links`]): the
//! nodes and edges it evidences, read from the graph (an agent's edge citing it included),
//! and expansion starts from those of the top passages too.
//! Everything read goes through the reader's visibility; retrieved text is marked untrusted.
//!
//! The steps, each testable alone: [`candidates`] (BM25 ∥ vector, and the phrase pool;
//! with [`Tuning::feedback`], the BM25 list asked again with RM3 [`feedback`]),
//! [`phrase`] verification, [`entities`], [`expansion`] (edges ranked by relevance to the
//! query), [`fusion`], [`history`], [`pack`];
//! [`Kb::retrieve`] runs them in that order.

mod candidates;
mod entities;
mod expansion;
pub mod feedback;
mod fusion;
pub mod history;
mod linking;
mod links;
mod pack;
pub mod phrase;
pub mod rerank;

use std::time::Instant;

use evident_core::refs::NodeKey;
use evident_core::{Edge, Locator, Node, Visibility, validate};
use evident_store::ChunkFilter;
use serde::{Deserialize, Serialize};

pub use candidates::{Candidates, channel_depths};
pub use entities::{QueryEntities, entity_hits, query_entities};
pub use expansion::{EdgeRelevance, Expansion, expansion_seeds, graph_hits, rank_edges};
pub use feedback::FeedbackParams;
pub use fusion::{Fusion, FusionParams};
pub use history::{PackCommit, asks_about_change};
pub use linking::{LinkedEntity, link_score, merge_links, type_prior};
pub use links::{EdgeRef, Links, attach_links};
pub use pack::{Channels, evidence_items, summary};
pub use phrase::{Phrases, phrase_hits, phrases};
pub use rerank::RerankWeights;

use crate::{Kb, KbError, Result, Stage, Watch};

const RRF_K: f32 = 60.0;
/// The default graph and entity weights (what the pack reports per channel).
const W_GRAPH: f32 = 0.30;
const W_ENTITY: f32 = 0.05;
/// Multiplies an item's score once per better-scored item of the same source in the pack
/// ([`pack::evidence_items`]); chosen on the even half of the quality benchmark's questions
/// (`docs/benchmarks.md`; 0.85, in fetch order, before).
pub const DIVERSITY: f32 = 0.55;
/// Top fused hits whose refs seed graph expansion.
const EXPANSION_SEEDS: usize = 5;
const MAX_EXPANDED_NODES: usize = 50;
const MAX_GRAPH_CHUNKS: usize = 50;
const MAX_ENTITY_CHUNKS: usize = 20;

/// What [`Kb::retrieve`] answers: a question, the reader's scope (its visibility) and how
/// much to return. A domain type: the HTTP API's body converts into it.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrieveQuery {
    pub query: String,
    pub client_id: Option<String>,
    pub project_id: Option<String>,
    pub group_id: Option<String>,
    /// Only chunks of these kinds (all when empty).
    pub kinds: Vec<String>,
    /// Only chunks whose typed-knowledge labels match (every chunk when empty); see
    /// [`crate::typed::typed_filter`].
    pub typed: evident_core::TypedFilter,
    pub max_results: usize,
    pub expand_graph: bool,
    pub max_depth: usize,
    pub min_score: Option<f32>,
    /// Run the feature-based reranker over the fused candidates ([`rerank`]).
    pub rerank: bool,
    /// Fusion and reranking weights: the defaults everywhere but in the quality benchmark,
    /// which chooses them on one half of its questions.
    pub tuning: Tuning,
}

/// The weights of fusion and of the reranker (see [`fusion`] and [`rerank`]), and the
/// pack's per-source diversity factor ([`DIVERSITY`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    pub fusion: FusionParams,
    pub rerank: RerankWeights,
    pub diversity: f32,
    /// Fused candidates the reranker reads at least ([`rerank::RERANK_DEPTH`]).
    pub rerank_depth: usize,
    /// Pseudo-relevance feedback for long natural questions ([`feedback`]); none when
    /// `None`.
    pub feedback: Option<FeedbackParams>,
    /// Link the question's words to nodes through the entity index ([`linking`]); when
    /// false only the patterns link (what a benchmark compares against).
    pub link_entities: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            fusion: FusionParams::default(),
            rerank: RerankWeights::default(),
            diversity: DIVERSITY,
            rerank_depth: rerank::RERANK_DEPTH,
            feedback: None,
            link_entities: true,
        }
    }
}

impl RetrieveQuery {
    /// A query with the defaults: 10 results, the graph expanded 2 hops, every kind.
    pub fn new(query: impl Into<String>, client_id: Option<&str>) -> Self {
        RetrieveQuery {
            query: query.into(),
            client_id: client_id.map(str::to_string),
            project_id: None,
            group_id: None,
            kinds: Vec::new(),
            typed: Default::default(),
            max_results: 10,
            expand_graph: true,
            max_depth: 2,
            min_score: None,
            rerank: false,
            tuning: Tuning::default(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelScores {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity: Option<f32>,
    /// How much of the query's exact phrases the chunk holds (0..=1), when it holds some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phrase: Option<f32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceItem {
    pub chunk_id: String,
    pub content: String,
    /// Always `"untrusted"`: retrieved text is data from sources, never instructions.
    pub trust: String,
    pub score: f32,
    pub source_urn: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub locator: Locator,
    /// Human-readable citation derived from the locator.
    pub citation: String,
    /// The keys the chunk mentions, then the nodes it evidences (back-links, [`links`]).
    pub graph_refs: Vec<NodeKey>,
    /// The edges the chunk evidences (an agent's edge citing it, an extracted relation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub graph_edges: Vec<EdgeRef>,
    pub scores: ChannelScores,
    /// For history items (`git-commit`, `git-diff`): the commit, its author and date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<PackCommit>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackGraph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidencePack {
    pub items: Vec<EvidenceItem>,
    /// The entities the question names ([`linking`]): exact links by pattern first, then
    /// the entity index's matches with their scores (ambiguous ones kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<LinkedEntity>,
    pub graph: PackGraph,
    pub summary: String,
    /// Claims the question found (their text chunks, by any channel), as their own item
    /// type: status, confidence, evidence resolved to citations (see `claims::pack`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<crate::claims::PackClaim>,
    /// Pack-level marker: every `content` in `items` is untrusted source text.
    pub content_trust: String,
    pub took_ms: f64,
}

impl RetrieveQuery {
    /// Checks the query's bounds and returns the reader's visibility.
    fn validate(&self) -> Result<Visibility> {
        validate::bounded_text("query", &self.query, 8 * 1024)?;
        if self.max_results == 0 || self.max_results > 100 {
            return Err(KbError::Invalid("maxResults must be 1..=100".into()));
        }
        if self.max_depth > 3 {
            return Err(KbError::Invalid("maxDepth must be 0..=3".into()));
        }
        for k in &self.kinds {
            validate::kind("kinds", k)?;
        }
        crate::visibility(
            self.client_id.as_deref(),
            self.project_id.as_deref(),
            self.group_id.as_deref(),
        )
    }
}

/// How many fused candidates are fetched for the pack: 3 × `maxResults`, and with the
/// reranker at least its depth (it can only promote what it reads).
fn fetch_window(req: &RetrieveQuery) -> usize {
    let page = req.max_results * 3;
    if req.rerank {
        page.max(req.tuning.rerank_depth)
    } else {
        page
    }
}

impl Kb {
    /// Answers a question with an evidence pack: candidates → entities → expansion →
    /// fusion → history → pack (see the module documentation for the channels and weights).
    pub async fn retrieve(&self, req: &RetrieveQuery) -> Result<EvidencePack> {
        self.retrieve_watched(req, &Watch::default()).await
    }

    /// The graph expansion stage, when the query asks for it: from the matched entities and
    /// the best fused chunks so far, its hits added to `fusion` at the graph weight.
    async fn expand_fused(
        &self,
        vis: &Visibility,
        req: &RetrieveQuery,
        entity_nodes: &[Node],
        fusion: &mut Fusion,
        links: &mut Links,
        watch: &Watch,
    ) -> Result<Expansion> {
        if !(req.expand_graph && req.max_depth > 0) {
            return Ok(Expansion::default());
        }
        let change = history::wants_history(&req.query, &req.kinds);
        let seed_ids: Vec<String> = fusion
            .ranked(EXPANSION_SEEDS)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        self.read_links(vis, &seed_ids, links).await?;
        let rel = EdgeRelevance::new(&req.query, entity_nodes, change)
            .with_evidenced(links.edges_of(&seed_ids).cloned());
        let expansion = self
            .expand(vis, entity_nodes, &seed_ids, links, req.max_depth, &rel)
            .await?;
        fusion.add(&expansion.hits, req.tuning.fusion.graph);
        watch.reached(Stage::Expanded {
            nodes: expansion.graph.nodes.len(),
            edges: expansion.graph.edges.len(),
        });
        Ok(expansion)
    }

    /// [`Kb::retrieve`] reporting its stages (channels searched, entities matched, graph
    /// expanded) to `watch`. A read: the caller may drop it at any point.
    /// Long because it is the pipeline itself, each step a named function (candidates,
    /// fusion, entities, expansion, window, rerank, current-first, pack): splitting it would
    /// hand a dozen intermediate results from one half to the other.
    #[tracing::instrument(skip_all, fields(max_results = req.max_results))]
    pub async fn retrieve_watched(
        &self,
        req: &RetrieveQuery,
        watch: &Watch,
    ) -> Result<EvidencePack> {
        let started = Instant::now();
        let vis = req.validate()?;
        let filter = ChunkFilter {
            kinds: req.kinds.clone(),
            typed: req.typed.clone(),
        };
        let phrases = phrases(&req.query);
        let change = history::wants_history(&req.query, &req.kinds);
        let Candidates {
            mut bm25,
            vector,
            phrase_pool,
        } = self
            .candidates(&vis, &req.query, &filter, req.max_results, &phrases)
            .await?;
        if let Some(fb) = &req.tuning.feedback
            && let Some(expanded) = self.feedback(&vis, &req.query, &filter, &bm25, fb).await?
        {
            bm25 = expanded;
        }
        watch.reached(Stage::Searched {
            text: bm25.len(),
            vector: vector.len(),
        });
        let weights = req.tuning.fusion;
        let mut fusion = Fusion::default();
        fusion.add_scored(&bm25, weights.bm25, weights.lambda);
        fusion.add_scored(&vector, weights.vector, weights.lambda);
        let (phrase, verified) = self.verify_phrases(&vis, &phrases, &phrase_pool).await?;
        fusion.boost(&phrase, phrase::PHRASE_BOOST);

        let (entity_nodes, entities) = self
            .link_entities(&vis, &req.query, req.tuning.link_entities)
            .await?;
        let entity = entity_hits(&entity_nodes);
        fusion.add(&entity, weights.entity);
        watch.reached(Stage::EntitiesMatched {
            nodes: entity_nodes.len(),
        });

        let mut links = Links::default();
        let expansion = self
            .expand_fused(&vis, req, &entity_nodes, &mut fusion, &mut links, watch)
            .await?;

        let mut fused = fusion.ranked(fetch_window(req));
        let ids: Vec<String> = fused.iter().map(|(id, _)| id.clone()).collect();
        let mut chunks = self.chunks_reusing(&vis, &ids, verified).await?;
        if !change {
            self.widen_past_history(&vis, &fusion, &mut fused, &mut chunks)
                .await?;
        }
        if req.rerank {
            let w = &req.tuning.rerank;
            rerank::rerank(&req.query, w, &mut fused, &chunks, &bm25, &expansion.hits);
        }
        history::current_first(change, &mut fused, &mut chunks);
        let channels = Channels {
            bm25: &bm25,
            vector: &vector,
            entity: &entity,
            graph: &expansion.hits,
            phrase: &phrase,
        };
        let mut items = evidence_items(
            chunks,
            &fused,
            channels,
            req.min_score,
            req.max_results,
            req.tuning.diversity,
        );
        let item_ids: Vec<String> = items.iter().map(|i| i.chunk_id.clone()).collect();
        self.read_links(&vis, &item_ids, &mut links).await?;
        attach_links(&mut items, &links);
        self.commits_of(&vis, &mut items).await?;
        let claims = self.pack_claims(&vis, &mut items).await?;
        let summary = summary(&items, channels, &expansion.graph);
        let took = started.elapsed();
        metrics::histogram!("evident_retrieve_seconds").record(took.as_secs_f64());
        Ok(EvidencePack {
            items,
            entities,
            graph: expansion.graph,
            summary,
            claims,
            content_trust: "untrusted".into(),
            took_ms: took.as_secs_f64() * 1000.0,
        })
    }
}
