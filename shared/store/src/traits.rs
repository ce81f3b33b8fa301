use async_trait::async_trait;
use evident_core::{Chunk, EdgeWrite, Node, NodeKey, NodeWrite, Visibility};

use crate::Result;
use crate::types::*;

/// The per-client knowledge graph.
///
/// Contract:
/// - Nodes are identified by (partition, key); edges by (partition, from, edge type, to).
///   Partition `""` holds global data.
/// - `upsert` merges: node props are merged key by key (new values win), evidence sets are
///   unioned. Upserting the same write twice leaves the same state as once.
/// - Every edge has at least one evidence chunk; every node has at least one (a chunk that
///   mentions it). `remove_evidence` deletes evidence rows for the given chunk ids and then
///   deletes every edge and node left without evidence, returning how many.
/// - Reads see a node or edge only when one of its evidence chunks is admitted by the
///   reader's visibility, and return only the admitted evidence ids. Reads span the global
///   partition and the reader's client partition; the same key in both is one node.
#[async_trait]
pub trait GraphStore: Send + Sync {
    async fn upsert(
        &self,
        partition: &str,
        nodes: Vec<NodeWrite>,
        edges: Vec<EdgeWrite>,
    ) -> Result<()>;
    async fn remove_evidence(&self, partition: &str, chunk_ids: &[String])
    -> Result<RemovedCounts>;
    /// Deletes these edges `(from, edge type, to)` whatever their evidence (a fact that no
    /// longer holds, e.g. a commit rewritten out of a branch). Their endpoints stay while
    /// something still evidences them. Returns how many existed. Idempotent.
    async fn remove_edges(&self, partition: &str, edges: &[EdgeKey]) -> Result<usize>;
    /// Folds node `from` into node `into` (an identity found to be another's alias): `into`
    /// takes `from`'s evidence and edges, merged with its own (`into`'s props win where both
    /// set one; an edge that would join `into` to itself is dropped), and `from` is deleted.
    /// `into` is created from `from` when missing. Returns whether `from` existed. Idempotent.
    async fn fold_node(&self, partition: &str, from: &NodeKey, into: &NodeKey) -> Result<bool>;
    /// Visible nodes among `keys`, in the order of `keys`, missing ones skipped.
    async fn get_nodes(&self, vis: &Visibility, keys: &[NodeKey]) -> Result<Vec<Node>>;
    /// Breadth-first traversal from `start` (which count as depth 0 when visible).
    /// Each edge walked is returned once; nodes with their smallest depth.
    async fn traverse(
        &self,
        vis: &Visibility,
        start: &[NodeKey],
        opts: &TraverseOptions,
    ) -> Result<Subgraph>;
    /// Nodes whose key or label contains `query` (case-insensitive), optionally of one type.
    async fn search_nodes(
        &self,
        vis: &Visibility,
        query: &str,
        node_type: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>>;
    /// Lists the visible nodes of type `node_type` (every type when `None`), in ascending
    /// key order, starting strictly after `after`, at most `limit` (≥ 1) per page.
    ///
    /// Contract:
    /// - The type is the node's type as read (the reader's client record wins over the
    ///   global one, as in [`GraphStore::get_nodes`]), matched exactly: no alias folding.
    /// - Visibility as for every read: a node is listed iff one of its evidence chunks is
    ///   admitted, with only the admitted evidence ids; a key in both partitions is one node.
    /// - Keyset paging: `next_after` is `Some` exactly when more keys may follow (it is the
    ///   last key this page covered, which the page may not list when its node's merged type
    ///   differs); listing from it continues without overlap, so following `next_after` from
    ///   `None` until it is `None` lists every node that stayed visible throughout once.
    /// - Key order is the backend's string order (byte order on the embedded store, the
    ///   server's collation on ArangoDB); within one backend it never changes between pages.
    async fn list_nodes(
        &self,
        vis: &Visibility,
        node_type: Option<&str>,
        after: Option<&NodeKey>,
        limit: usize,
    ) -> Result<NodePage>;
    /// How many nodes and edges `vis` sees, exactly.
    ///
    /// Contract: the same visibility as every read — a node or edge counts iff one of its
    /// evidence chunks is admitted; a key (an edge's `(from, edge type, to)`) in both of the
    /// reader's partitions counts once. Counted by the store (an indexed count), never by
    /// reading the nodes or edges out.
    async fn count(&self, vis: &Visibility) -> Result<GraphCounts>;
    /// Evidence back-links: for each of `chunk_ids`, the nodes and edges it evidences.
    ///
    /// Contract:
    /// - One entry per chunk id that evidences something the reader sees, in the order of
    ///   `chunk_ids` (each id once); chunks evidencing nothing visible are left out.
    /// - A node or edge is listed for a chunk iff its evidence row for that chunk is
    ///   admitted by `vis` (the visibility of every read), across the reader's partitions, a
    ///   key in both once; ascending, at most [`MAX_EVIDENCED_PER_CHUNK`] of each.
    /// - Kept in step with every write: an agent's edge citing an existing chunk is listed
    ///   for that chunk from the moment the write returns; evidence removed (a purge, a
    ///   changed text) is never listed.
    /// - Served by an index on evidence chunk ids (never a scan of the graph).
    async fn evidenced_by(&self, vis: &Visibility, chunk_ids: &[String]) -> Result<Vec<Evidenced>>;
    /// Entity index: the visible nodes whose names the words of `query` match, best
    /// coverage first, at most `limit`.
    ///
    /// Contract (the embedded store): a node's names are its label, the names in its props
    /// (`name`, `title`, `displayName`, `login`), the last segment of its key's value (a
    /// file's name, a symbol's name, split as identifiers are) and the aliases the registry
    /// maps to it; they are analysed by `evident_analysis` as chunks are and kept in step
    /// with graph writes, folds and purges; a match is kept when the query covers about half
    /// of one name or more (IDF-weighted); visibility as for every read.
    ///
    /// The default answers no match: a backend without an entity index links entities by
    /// the query's patterns only (explicit keys, issue keys, e-mail addresses, file names).
    async fn match_entities(
        &self,
        vis: &Visibility,
        query: &str,
        limit: usize,
    ) -> Result<Vec<EntityMatch>> {
        let _ = (vis, query, limit);
        Ok(Vec::new())
    }
}

/// Searchable chunks with their vectors.
///
/// Contract:
/// - Chunk ids are unique per partition; `upsert` of an existing id replaces it.
/// - A chunk is findable by every search as soon as `upsert` (or the writer) returns.
/// - Every read applies the visibility rule to the chunk's scope, and kind filters exactly.
/// - Vectors belong to one [`VectorSpace`]; `bind_vector_space` fails with
///   `ErrorKind::Incompatible` when the store already holds vectors of another space.
#[async_trait]
pub trait ChunkStore: Send + Sync {
    async fn bind_vector_space(&self, space: &VectorSpace) -> Result<()>;
    async fn upsert(&self, chunks: Vec<(Chunk, Vec<f32>)>) -> Result<()>;
    /// Updates everything but text and vector of existing chunks (matched by id).
    async fn relocate(&self, chunks: Vec<Chunk>) -> Result<()>;
    async fn delete(&self, partition: &str, ids: &[String]) -> Result<usize>;
    /// (chunk id, chunk content hash) of every chunk of a source, in ordinal order.
    async fn source_chunks(
        &self,
        partition: &str,
        source_urn: &str,
    ) -> Result<Vec<(String, String)>>;
    /// Visible chunks among `ids`, in the order of `ids`.
    async fn get(&self, vis: &Visibility, ids: &[String]) -> Result<Vec<Chunk>>;
    /// BM25 full-text candidates, best first.
    async fn search_text(
        &self,
        vis: &Visibility,
        query: &str,
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<ScoredId>>;
    /// BM25 over terms already analysed (`evident_analysis`: stems, `=exact` forms, whole
    /// identifiers), each contribution multiplied by its weight: a query the retriever
    /// expanded (pseudo-relevance feedback). A backend that cannot weigh terms searches the
    /// stems as one text (exact forms and weights dropped).
    async fn search_terms(
        &self,
        vis: &Visibility,
        terms: &[(String, f32)],
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        let text: Vec<&str> = terms
            .iter()
            .map(|(t, _)| t.as_str())
            .filter(|t| !t.starts_with('='))
            .collect();
        self.search_text(vis, &text.join(" "), filter, limit).await
    }
    /// Nearest neighbours by cosine similarity, best first.
    async fn search_vector(
        &self,
        vis: &Visibility,
        vector: &[f32],
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<ScoredId>>;
    /// Newest-first listing of visible chunks of the given kinds (no embedding work).
    async fn by_kind(
        &self,
        vis: &Visibility,
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<Chunk>>;
}

/// The check of [`AliasRegistry::merge`], for every backend: a key is never merged into itself.
pub fn check_merge(source: &NodeKey, target: &NodeKey) -> Result<()> {
    if source == target {
        return Err(crate::StoreError::invalid("cannot merge a key into itself"));
    }
    Ok(())
}

/// Per-client alias registry (reference-behaviour §2).
///
/// Contract: unique on (client, alias). `resolve` is a read: it never writes synchronously
/// (seen counts are accumulated and flushed). Unknown aliases resolve to themselves.
/// `merge(source, target)` re-points every alias of `source` (and `source` itself) to `target`.
#[async_trait]
pub trait AliasRegistry: Send + Sync {
    async fn resolve(&self, client: &str, aliases: &[NodeKey]) -> Result<Vec<NodeKey>>;
    async fn register(
        &self,
        client: &str,
        alias: &NodeKey,
        canonical: &NodeKey,
    ) -> Result<AliasEntry>;
    /// [`AliasRegistry::register`] for each `(alias, canonical)` pair in order, as one
    /// write where the backend can (an ingest registers the folded spellings of all its
    /// keys at once).
    async fn register_many(&self, client: &str, pairs: &[(NodeKey, NodeKey)]) -> Result<()> {
        for (alias, canonical) in pairs {
            self.register(client, alias, canonical).await?;
        }
        Ok(())
    }
    async fn merge(&self, client: &str, source: &NodeKey, target: &NodeKey) -> Result<u64>;
    async fn list(&self, client: &str, canonical: &NodeKey) -> Result<Vec<AliasEntry>>;
    async fn stats(&self, client: &str, top: usize) -> Result<AliasStats>;
    /// Persist accumulated seen counts.
    async fn flush(&self) -> Result<()>;
}

/// sourceUrn → content hash, status and counts.
#[async_trait]
pub trait SourceRegistry: Send + Sync {
    async fn get(&self, partition: &str, source_urn: &str) -> Result<Option<SourceRecord>>;
    async fn list(&self, vis: &Visibility, limit: usize) -> Result<Vec<SourceRecord>>;
    /// Sources of one partition whose URN starts with `prefix`, in URN order, after `after`
    /// (exclusive) — how an indexer finds everything it wrote under a repository or branch.
    async fn list_prefix(
        &self,
        partition: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SourceRecord>>;
}

/// Applies a [`SourceWrite`] — chunks, graph and registry record of one source — as a unit.
///
/// Contract: after `apply` returns Ok, all of it is durable and visible; after an error or a
/// crash, either none of it is visible (transactional backends) or re-applying the same
/// write converges to the same state (sequenced backends). Returns what was removed.
#[async_trait]
pub trait SourceWriter: Send + Sync {
    async fn apply(&self, write: SourceWrite) -> Result<RemovedCounts>;

    /// Moves a source to another scope of the same partition (an admin's explicit move; a
    /// source's owner never changes otherwise): its registry record, its chunks and the
    /// evidence they give keep their ids, text and vectors and take the scope `to`. Returns
    /// how many chunks moved, or `None` when the partition holds no such source. Atomic on
    /// transactional backends.
    ///
    /// Default: refused (`Invalid`) — a backend that cannot move a source says so instead of
    /// moving half of it.
    async fn move_source(
        &self,
        partition: &str,
        source_urn: &str,
        to: &evident_core::Scope,
    ) -> Result<Option<usize>> {
        let _ = (partition, source_urn, to);
        Err(crate::StoreError::invalid(
            "this storage backend cannot move a source between scopes",
        ))
    }
}

/// Readiness of one backend.
#[async_trait]
pub trait Health: Send + Sync {
    async fn check(&self) -> HealthReport;
}

/// The roles served together by the queue-side store (`[store] queue`: embedded or MongoDB),
/// as health reports name them.
pub const QUEUE_SIDE_ROLES: [&str; 8] = [
    "queue",
    "sources",
    "indexers",
    "memory",
    "access",
    "claims",
    "procedures",
    "gaps",
];

/// A backend's health reported for the roles a deployment gives it (a store that can serve
/// every role reports only those it serves here: the embedded store beside ArangoDB serves
/// chunks and the queue, not the graph).
pub struct ServingRoles {
    pub backend: std::sync::Arc<dyn Health>,
    pub roles: Vec<String>,
}

#[async_trait]
impl Health for ServingRoles {
    async fn check(&self) -> HealthReport {
        let mut report = self.backend.check().await;
        report.roles = self.roles.clone();
        report
    }
}

#[cfg(test)]
mod serving_roles_tests {
    use super::*;

    struct Everything;

    #[async_trait]
    impl Health for Everything {
        async fn check(&self) -> HealthReport {
            HealthReport {
                backend: "embedded".into(),
                roles: vec!["graph".into(), "chunks".into(), "queue".into()],
                ready: true,
                detail: None,
            }
        }
    }

    #[tokio::test]
    async fn a_backend_reports_only_the_roles_it_serves() {
        let h = ServingRoles {
            backend: std::sync::Arc::new(Everything),
            roles: vec!["chunks".into()],
        };
        let r = h.check().await;
        assert_eq!(
            (r.backend.as_str(), r.roles, r.ready),
            ("embedded", vec!["chunks".to_string()], true)
        );
    }
}
