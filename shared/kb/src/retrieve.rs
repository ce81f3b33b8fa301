//! Hybrid retrieval with graph expansion, returning an evidence pack.
//!
//! Channels, fused by weighted reciprocal-rank fusion over chunk ids (k = 60), so a chunk
//! found by several channels appears once with the sum of its contributions:
//! - `bm25` (0.30) and `vector` (0.30): the RAG channels;
//! - `graph` (0.30): evidence chunks of edges reached by expanding, 1..maxDepth hops in any
//!   direction, from the refs of the top RAG hits and the query's entities — nearer edges
//!   rank first;
//! - `entity` (0.10): chunks evidencing nodes the query names (explicit `ns:value`, issue
//!   keys, e-mail addresses, file names, CamelCase identifiers).
//!
//! Then a per-source diversity penalty (×0.85 for each earlier item of the same source).
//! Everything read goes through the reader's visibility; retrieved text is marked untrusted.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::LazyLock;
use std::time::Instant;

use evident_ai::Priority;
use evident_core::refs::{self, NodeKey};
use evident_core::{Edge, Locator, Node, validate};
use evident_store::{ChunkFilter, ScoredId, TraverseOptions};
use serde::{Deserialize, Serialize};

use crate::{Kb, KbError, Result};

const RRF_K: f32 = 60.0;
const W_BM25: f32 = 0.30;
const W_VECTOR: f32 = 0.30;
const W_GRAPH: f32 = 0.30;
const W_ENTITY: f32 = 0.10;
const DIVERSITY: f32 = 0.85;
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
    pub max_results: usize,
    pub expand_graph: bool,
    pub max_depth: usize,
    pub min_score: Option<f32>,
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
            max_results: 10,
            expand_graph: true,
            max_depth: 2,
            min_score: None,
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
    pub graph_refs: Vec<NodeKey>,
    pub scores: ChannelScores,
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
    pub graph: PackGraph,
    pub summary: String,
    /// Pack-level marker: every `content` in `items` is untrusted source text.
    pub content_trust: String,
    pub took_ms: f64,
}

/// Raw BM25 / vector candidates per channel: enough depth for fusion to matter.
/// Candidates taken from (BM25, vector) for fusion. BM25 is cheap per candidate; a filtered
/// HNSW search pays for every extra neighbour, and fusion of a top-10 rarely reaches past the
/// thirtieth vector candidate.
pub fn channel_depths(max_results: usize) -> (usize, usize) {
    (
        (max_results * 5).clamp(50, 200),
        (max_results * 3).clamp(30, 150),
    )
}

static ISSUE_KEY: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"\b([A-Z][A-Z0-9]{1,9})-(\d{1,7})\b").expect("static regex")
});
static EMAIL: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b").expect("static regex")
});
static FILE_NAME: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"\b[\w./-]*\w\.(rs|py|kt|java|ts|tsx|js|jsx|go|md|toml|yaml|yml|json|c|h|cpp|rb|sh)\b",
    )
    .expect("static regex")
});
static CAMEL: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b").expect("static regex")
});
static MENTION: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"(?:^|\s)@([A-Za-z0-9_.-]{2,64})").expect("static regex"));

/// What the query names: exact keys to look up, and bare values to search node keys for.
#[derive(Debug, Default, PartialEq)]
pub struct QueryEntities {
    pub keys: Vec<NodeKey>,
    pub values: Vec<String>,
}

/// Finds entity mentions in a query (reference-behaviour §6).
pub fn query_entities(query: &str) -> QueryEntities {
    let mut out = QueryEntities::default();
    let push_key = |k: Option<NodeKey>, out: &mut QueryEntities| {
        if let Some(k) = k
            && !out.keys.contains(&k)
        {
            out.keys.push(k);
        }
    };
    for r in refs::extract_query_refs(query) {
        push_key(Some(r.key), &mut out);
    }
    for m in ISSUE_KEY.find_iter(query).filter(|m| {
        !evident_core::commits::NOT_ISSUE_PREFIXES
            .contains(&m.as_str().split('-').next().unwrap_or(""))
    }) {
        push_key(
            refs::normalize_ref(&format!("jira:{}", m.as_str())),
            &mut out,
        );
    }
    for m in EMAIL.find_iter(query) {
        push_key(
            refs::normalize_ref(&format!("user:{}", m.as_str())),
            &mut out,
        );
    }
    for c in MENTION.captures_iter(query) {
        push_key(refs::normalize_ref(&format!("user:{}", &c[1])), &mut out);
    }
    for m in FILE_NAME.find_iter(query).chain(CAMEL.find_iter(query)) {
        if let Some(k) = refs::normalize_ref(m.as_str()) {
            let v = k.value().to_string();
            if !v.is_empty() && !out.values.contains(&v) {
                out.values.push(v);
            }
        }
    }
    out
}

fn rrf(list: &[ScoredId], weight: f32, into: &mut HashMap<String, f32>) {
    for (rank, hit) in list.iter().enumerate() {
        *into.entry(hit.chunk_id.clone()).or_insert(0.0) += weight / (RRF_K + rank as f32 + 1.0);
    }
}

impl Kb {
    #[tracing::instrument(skip_all, fields(max_results = req.max_results))]
    pub async fn retrieve(&self, req: &RetrieveQuery) -> Result<EvidencePack> {
        let started = Instant::now();
        validate::bounded_text("query", &req.query, 8 * 1024)?;
        if req.max_results == 0 || req.max_results > 100 {
            return Err(KbError::Invalid("maxResults must be 1..=100".into()));
        }
        if req.max_depth > 3 {
            return Err(KbError::Invalid("maxDepth must be 0..=3".into()));
        }
        for k in &req.kinds {
            validate::kind("kinds", k)?;
        }
        let vis = crate::visibility(
            req.client_id.as_deref(),
            req.project_id.as_deref(),
            req.group_id.as_deref(),
        )?;
        let filter = ChunkFilter {
            kinds: req.kinds.clone(),
        };
        let (text_depth, vector_depth) = channel_depths(req.max_results);

        // RAG channels, concurrently.
        let bm25 = self
            .stores
            .chunks
            .search_text(&vis, &req.query, &filter, text_depth);
        let vector = async {
            let v = self
                .embedder
                .embed(std::slice::from_ref(&req.query), Priority::INTERACTIVE)
                .await?;
            let v = v
                .into_iter()
                .next()
                .ok_or_else(|| KbError::Invalid("embedder returned no vector".into()))?;
            if v.iter().all(|x| *x == 0.0) {
                return Ok::<_, KbError>(Vec::new()); // nothing the embedder knows: no vector signal
            }
            Ok(self
                .stores
                .chunks
                .search_vector(&vis, &v, &filter, vector_depth)
                .await?)
        };
        let (bm25, vector) = tokio::join!(bm25, vector);
        let (bm25, vector) = (bm25?, vector?);

        let mut fused: HashMap<String, f32> = HashMap::new();
        rrf(&bm25, W_BM25, &mut fused);
        rrf(&vector, W_VECTOR, &mut fused);

        // Entities the query names.
        let client = vis.reader().partition().to_string();
        let entities = query_entities(&req.query);
        let mut entity_nodes: Vec<Node> = Vec::new();
        if !entities.keys.is_empty() {
            let keys = self.stores.aliases.resolve(&client, &entities.keys).await?;
            entity_nodes.extend(self.stores.graph.get_nodes(&vis, &keys).await?);
        }
        for v in &entities.values {
            for n in self.stores.graph.search_nodes(&vis, v, None, 3).await? {
                let value = n.key.value();
                if (value == v
                    || value.ends_with(&format!("_{v}"))
                    || value.ends_with(&format!("/{v}")))
                    && !entity_nodes.iter().any(|x| x.key == n.key)
                {
                    entity_nodes.push(n);
                }
            }
        }
        let mut entity_hits: Vec<ScoredId> = Vec::new();
        for n in &entity_nodes {
            for id in n.evidence_chunk_ids.iter().take(MAX_ENTITY_CHUNKS) {
                if !entity_hits.iter().any(|h| &h.chunk_id == id) {
                    entity_hits.push(ScoredId {
                        chunk_id: id.clone(),
                        score: 1.0,
                    });
                }
            }
        }
        rrf(&entity_hits, W_ENTITY, &mut fused);

        // Graph expansion from the refs of the top hits and the named entities.
        let mut graph = PackGraph::default();
        let mut graph_hits: Vec<ScoredId> = Vec::new();
        if req.expand_graph && req.max_depth > 0 {
            let mut ranked: Vec<(&String, &f32)> = fused.iter().collect();
            ranked.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
            let top_ids: Vec<String> = ranked
                .iter()
                .take(EXPANSION_SEEDS)
                .map(|(id, _)| (*id).clone())
                .collect();
            let mut seeds: Vec<NodeKey> = entity_nodes.iter().map(|n| n.key.clone()).collect();
            for chunk in self.stores.chunks.get(&vis, &top_ids).await? {
                for r in chunk.graph_refs {
                    if !seeds.contains(&r) {
                        seeds.push(r);
                    }
                }
            }
            if !seeds.is_empty() {
                let opts = TraverseOptions {
                    max_depth: req.max_depth,
                    max_nodes: MAX_EXPANDED_NODES,
                    ..Default::default()
                };
                let sub = self.stores.graph.traverse(&vis, &seeds, &opts).await?;
                let depth_of: HashMap<&NodeKey, usize> =
                    sub.nodes.iter().map(|(n, d)| (&n.key, *d)).collect();
                // Nearer edges first: an edge's distance is that of its farther endpoint.
                let mut by_distance: BTreeMap<usize, Vec<&Edge>> = BTreeMap::new();
                for e in &sub.edges {
                    let d = depth_of
                        .get(&e.from)
                        .copied()
                        .unwrap_or(0)
                        .max(depth_of.get(&e.to).copied().unwrap_or(0));
                    by_distance.entry(d).or_default().push(e);
                }
                'collect: for edges in by_distance.values() {
                    for e in edges {
                        for id in &e.evidence_chunk_ids {
                            if !graph_hits.iter().any(|h| &h.chunk_id == id) {
                                graph_hits.push(ScoredId {
                                    chunk_id: id.clone(),
                                    score: 1.0,
                                });
                                if graph_hits.len() >= MAX_GRAPH_CHUNKS {
                                    break 'collect;
                                }
                            }
                        }
                    }
                }
                graph.nodes = sub.nodes.into_iter().map(|(n, _)| n).collect();
                graph.edges = sub.edges;
            }
            rrf(&graph_hits, W_GRAPH, &mut fused);
        }

        // Rank, fetch, diversify.
        let mut ranked: Vec<(String, f32)> = fused.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(req.max_results * 3);
        let ids: Vec<String> = ranked.iter().map(|(id, _)| id.clone()).collect();
        let chunks = self.stores.chunks.get(&vis, &ids).await?;
        let score_of: HashMap<&str, f32> = ranked.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        let channel =
            |list: &[ScoredId], id: &str| list.iter().find(|h| h.chunk_id == id).map(|h| h.score);
        let mut per_source: HashMap<String, i32> = HashMap::new();
        let mut items: Vec<EvidenceItem> = chunks
            .into_iter()
            .map(|c| {
                let seen = per_source.entry(c.source_urn.clone()).or_insert(0);
                let score =
                    score_of.get(c.id.as_str()).copied().unwrap_or(0.0) * DIVERSITY.powi(*seen);
                *seen += 1;
                EvidenceItem {
                    scores: ChannelScores {
                        bm25: channel(&bm25, &c.id),
                        vector: channel(&vector, &c.id),
                        graph: graph_hits
                            .iter()
                            .position(|h| h.chunk_id == c.id)
                            .map(|r| W_GRAPH / (RRF_K + r as f32 + 1.0)),
                        entity: entity_hits
                            .iter()
                            .any(|h| h.chunk_id == c.id)
                            .then_some(W_ENTITY),
                    },
                    citation: c.locator.citation(),
                    chunk_id: c.id,
                    content: c.content,
                    trust: "untrusted".into(),
                    score,
                    source_urn: c.source_urn,
                    kind: c.kind,
                    title: c.title,
                    locator: c.locator,
                    graph_refs: c.graph_refs,
                }
            })
            .collect();
        items.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.chunk_id.cmp(&b.chunk_id))
        });
        if let Some(min) = req.min_score {
            items.retain(|i| i.score >= min);
        }
        items.truncate(req.max_results);

        let sources: HashSet<&str> = items.iter().map(|i| i.source_urn.as_str()).collect();
        let summary = format!(
            "{} item(s) from {} source(s); candidates: {} bm25, {} vector, {} entity, {} graph; graph: {} node(s), {} edge(s)",
            items.len(),
            sources.len(),
            bm25.len(),
            vector.len(),
            entity_hits.len(),
            graph_hits.len(),
            graph.nodes.len(),
            graph.edges.len()
        );
        let took = started.elapsed();
        metrics::histogram!("evident_retrieve_seconds").record(took.as_secs_f64());
        Ok(EvidencePack {
            items,
            graph,
            summary,
            content_trust: "untrusted".into(),
            took_ms: took.as_secs_f64() * 1000.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_entities_finds_issue_keys_emails_files_and_camel_case() {
        let e = query_entities(
            "Why did ABC-123 break parser.rs for jan.novak@example.com in QualificationQueue? see jira:XY-9",
        );
        let keys: Vec<&str> = e.keys.iter().map(NodeKey::as_str).collect();
        assert!(keys.contains(&"jira:abc-123"), "{keys:?}");
        assert!(keys.contains(&"jira:xy-9"), "{keys:?}");
        assert!(keys.contains(&"user:jan_novak_example_com"), "{keys:?}");
        assert!(e.values.iter().any(|v| v == "parser_rs"), "{:?}", e.values);
        assert!(
            e.values.iter().any(|v| v == "qualificationqueue"),
            "{:?}",
            e.values
        );
        let none = query_entities("what is UTF-8 good for");
        assert!(
            none.keys.iter().all(|k| k.as_str() != "jira:utf-8"),
            "UTF-8 is no issue key: {none:?}"
        );
    }
}
