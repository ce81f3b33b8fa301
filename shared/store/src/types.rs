use evident_core::{Chunk, EdgeWrite, NodeKey, NodeWrite, Scope};
use serde::{Deserialize, Serialize};

/// Direction of a traversal step relative to the node being expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Out,
    In,
    #[default]
    Any,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraverseOptions {
    /// Hops from the start nodes, at least 1.
    pub max_depth: usize,
    pub direction: Direction,
    /// Only follow these edge types; empty = all.
    pub edge_types: Vec<String>,
    /// Stop expanding once this many nodes have been reached (the start nodes count).
    pub max_nodes: usize,
}

impl Default for TraverseOptions {
    fn default() -> Self {
        TraverseOptions {
            max_depth: 2,
            direction: Direction::Any,
            edge_types: Vec::new(),
            max_nodes: 200,
        }
    }
}

/// The result of a traversal: reached nodes with their hop distance, and the edges walked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Subgraph {
    pub nodes: Vec<(evident_core::Node, usize)>,
    pub edges: Vec<evident_core::Edge>,
}

/// One page of a node listing ([`GraphStore::list_nodes`](crate::GraphStore::list_nodes)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodePage {
    /// Visible nodes in ascending key order.
    pub nodes: Vec<evident_core::Node>,
    /// The key to pass as `after` for the next page; `None` when the listing is complete.
    pub next_after: Option<NodeKey>,
}

/// Identity of an edge: `(from, edge type, to)` within a partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EdgeKey {
    pub from: NodeKey,
    pub edge_type: String,
    pub to: NodeKey,
}

/// What one chunk evidences ([`GraphStore::evidenced_by`](crate::GraphStore::evidenced_by)):
/// the evidence back-links from a passage to the facts it supports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidenced {
    pub chunk_id: String,
    /// Ascending, each once.
    pub nodes: Vec<NodeKey>,
    /// Ascending by `(from, edge type, to)`, each once.
    pub edges: Vec<EdgeKey>,
}

/// Most nodes and most edges [`GraphStore::evidenced_by`](crate::GraphStore::evidenced_by)
/// lists per chunk (a commit's message chunk evidences every file it touched): the first in
/// ascending order.
pub const MAX_EVIDENCED_PER_CHUNK: usize = 200;

/// A node whose names a query's words match ([`GraphStore::match_entities`](crate::GraphStore::match_entities)).
#[derive(Debug, Clone, PartialEq)]
pub struct EntityMatch {
    /// The node as [`GraphStore::get_nodes`](crate::GraphStore::get_nodes) reads it (visible
    /// evidence only).
    pub node: evident_core::Node,
    /// The analysed query terms found in the node's best-matched name, in query order.
    pub matched: Vec<String>,
    /// How much of that name the query covers, 0..=1: the IDF mass of its terms the query
    /// holds over the mass of all its terms (1 = every word of the name is in the query).
    pub coverage: f32,
}

/// A scored candidate from one retrieval channel.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredId {
    pub chunk_id: String,
    /// Higher is better. BM25: the positive bm25 score; vector: cosine similarity.
    pub score: f32,
}

/// Filters common to chunk searches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunkFilter {
    /// Only these kinds; empty = all kinds.
    pub kinds: Vec<String>,
    /// Only chunks whose typed-knowledge labels (`evident_core::typed`, stored in the chunk's
    /// metadata) match; empty = every chunk, typed or not.
    pub typed: evident_core::TypedFilter,
}

/// Identity of the vectors stored: never mix vectors from two embedders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorSpace {
    pub embedder: String,
    pub dim: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceStatus {
    Indexed,
    Error,
}

/// What the registry knows about one source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceRecord {
    pub scope: Scope,
    pub source_urn: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub content_hash: String,
    pub status: SourceStatus,
    pub chunk_count: usize,
    pub last_indexed_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Everything one ingest or purge changes, applied as one unit by a [`crate::SourceWriter`].
#[derive(Debug, Clone, Default)]
pub struct SourceWrite {
    /// Client partition the source lives in ("" = global).
    pub partition: String,
    pub source_urn: String,
    /// Chunks to insert (new ids) with their vectors.
    pub upsert_chunks: Vec<(Chunk, Vec<f32>)>,
    /// Chunks whose text (and so id and vector) is unchanged but whose position, locator,
    /// title, refs, metadata or scope changed: updated in place, never re-embedded. Their graph
    /// evidence is replaced by this write's nodes and edges (refs may have changed since).
    pub relocate_chunks: Vec<Chunk>,
    /// Chunk ids of this source to delete; their graph evidence goes with them.
    pub delete_chunk_ids: Vec<String>,
    pub nodes: Vec<NodeWrite>,
    pub edges: Vec<EdgeWrite>,
    /// What happens to the source's registry record.
    pub record: RecordUpdate,
    /// Alias registrations (`alias → canonical`, as [`crate::AliasRegistry::register_many`]
    /// would make them) that belong to this source: applied with the write, so a stored
    /// source always has its aliases (a crash cannot keep the one without the other, and the
    /// fingerprint skip would never repair a source stored without them). The write's
    /// chunks and graph already use canonical keys; these only make the spellings resolve.
    pub register_aliases: Vec<(NodeKey, NodeKey)>,
}

/// The registry side of a [`SourceWrite`].
#[derive(Debug, Clone, Default, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per source write, moved once into the writer: boxing would only add an allocation"
)]
pub enum RecordUpdate {
    /// Leave the registry as it is (chunk-only writes).
    #[default]
    Keep,
    /// Write this record (ingest).
    Put(SourceRecord),
    /// Remove the source from the registry (purge).
    Remove,
}

/// Counts of what a write removed from the graph because no evidence was left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemovedCounts {
    pub chunks: usize,
    pub nodes: usize,
    pub edges: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AliasEntry {
    pub alias: NodeKey,
    pub canonical: NodeKey,
    pub seen_count: u64,
    pub first_seen_at: String,
    pub last_seen_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AliasStats {
    pub total_aliases: u64,
    pub unique_canonicals: u64,
    pub top_aliases: Vec<AliasEntry>,
}

/// Readiness of one backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthReport {
    pub backend: String,
    pub roles: Vec<String>,
    pub ready: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// How many nodes and edges a reader sees ([`crate::GraphStore::count`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphCounts {
    pub nodes: u64,
    pub edges: u64,
}
