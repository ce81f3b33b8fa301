//! Ingest and purge.
//!
//! - `check`: a document or prepared source validated, a document cut into a prepared
//!   source, the ownership rule of a `sourceUrn`.
//! - `graph`: the graph writes of a prepared source (nodes for refs and edge endpoints).
//! - `purge`: purge, purge by prefix, moving a source between scopes of a client.
//!
//! Freshness: a source's `contentHash` covers everything that shapes what is stored (content,
//! title, kind, scope, metadata, main node, relationships, locator, observedAt). The same
//! hash again → `skipped_unchanged`, with no work. Otherwise chunk ids — derived from
//! (client, sourceUrn, chunk text hash, occurrence) — tell which chunks are new (embedded),
//! gone (deleted, with graph items left without evidence) or kept (never re-embedded; their
//! position and locator are updated in place).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use evident_ai::Priority;
use evident_core::chunking::{ChunkingConfig, chunk_text};
use evident_core::hashing::{chunk_id, content_hash};
use evident_core::refs::{self, NodeKey, Relationship};
use evident_core::{
    Chunk, EdgeWrite, Evidence, EvidenceSpec, KnowledgeType, Locator, NodeWrite, PreparedChunk,
    PreparedEdge, PreparedNode, PreparedSource, Scope, Typed, validate,
};
use evident_store::{RecordUpdate, SourceRecord, SourceStatus, SourceWrite};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Kb, KbError, Result, Stage, Watch};

/// Largest serialised `metadata` object accepted.
const MAX_METADATA_BYTES: usize = 64 * 1024;
/// Longest single relationship string accepted.
const MAX_RELATIONSHIP_LEN: usize = 4096;

/// A document to ingest: what [`Kb::ingest`] takes and what a queued ingest stores (the
/// `document` of an `ingest` task, `v: 2`). A domain type: the HTTP API's body converts into
/// it, so a change to the API's body does not change what is stored in the queue. Its serialised form is the one `v: 1` tasks stored as `request`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Document {
    /// Required unless `global` is true.
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub group_id: Option<String>,
    /// Global data (visible to every reader). Excludes `client_id`.
    #[serde(default)]
    pub global: bool,
    pub source_urn: String,
    pub kind: String,
    pub content: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// RFC 3339 time the content was observed at the source.
    #[serde(default)]
    pub observed_at: Option<String>,
    /// The node this source is about; bare ids in relationships that equal its value expand
    /// to it.
    #[serde(default)]
    pub main_node_key: Option<String>,
    /// Explicit relationships in pipe, arrow or bracket format.
    #[serde(default)]
    pub relationships: Option<Vec<String>>,
    /// Base locator of the source; chunk locators derive from it.
    #[serde(default)]
    pub locator: Option<Locator>,
    /// What the knowledge is (seed 000's `knowledge_type`): stored on every chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knowledge_type: Option<KnowledgeType>,
    /// Where it goes in an agent's prompt (`user_profile`, `instructions`, `context`,
    /// `skills` or any other string): the section `POST /context` routes it to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info_type: Option<String>,
    /// Tags (lowercased, unique), filterable on retrieve and by-kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The entity (a node key) the piece is about: its node is evidenced by the piece.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    /// Text embedded instead of the content; the document is then kept whole as one chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_text: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IngestStatus {
    Ingested,
    Updated,
    SkippedUnchanged,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkCounts {
    pub total: usize,
    /// New chunks (each embedded once).
    pub added: usize,
    pub removed: usize,
    /// Chunks kept from the previous version without re-embedding.
    pub unchanged: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestOutcome {
    pub status: IngestStatus,
    pub source_urn: String,
    pub content_hash: String,
    pub chunks: ChunkCounts,
    pub nodes: Vec<NodeKey>,
    pub edges: usize,
    /// Graph items removed because their last evidence went away.
    pub removed_nodes: usize,
    pub removed_edges: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PurgeOutcome {
    pub source_urn: String,
    pub found: bool,
    pub chunks: usize,
    pub nodes: usize,
    pub edges: usize,
}

mod check;
mod graph;
mod purge;
#[cfg(test)]
mod tests;

pub(crate) use check::*;
pub(crate) use graph::plain_label;
use graph::*;

/// New chunks embedded per call when a watcher follows an ingest's progress: fine enough
/// to report a large document's progress, coarse enough to keep an embedder's batching.
const EMBED_BATCH: usize = 64;

/// A chunk with its id, before the store sees it.
struct Draft {
    pub(super) id: String,
    pub(super) hash: String,
}

/// Every key a source uses mapped to its canonical key, and the folded spellings (alias,
/// key) not registered yet.
type ResolvedKeys = (HashMap<NodeKey, NodeKey>, Vec<(NodeKey, NodeKey)>);

impl Kb {
    /// Ingests one document synchronously: when this returns Ok, the data is durable and
    /// searchable.
    pub async fn ingest(
        &self,
        doc: impl Into<Document>,
        priority: Priority,
    ) -> Result<IngestOutcome> {
        self.ingest_document(doc.into(), priority, &Watch::default())
            .await
    }

    /// [`Kb::ingest`] reporting its stages to `watch` and stopping at the first stage
    /// boundary after `watch` is cancelled (`KbError::Cancelled`, nothing written). Once
    /// [`Stage::Writing`] is reported the write runs to its end: whole, never half.
    pub async fn ingest_watched(
        &self,
        doc: impl Into<Document>,
        priority: Priority,
        watch: &Watch,
    ) -> Result<IngestOutcome> {
        self.ingest_document(doc.into(), priority, watch).await
    }

    #[tracing::instrument(skip_all, fields(source_urn = %req.source_urn, kind = %req.kind))]
    async fn ingest_document(
        &self,
        req: Document,
        priority: Priority,
        watch: &Watch,
    ) -> Result<IngestOutcome> {
        let checked = check(&req)?;
        let _permit = watch
            .unless_cancelled(async { Ok(self.pools.acquire(priority).await) })
            .await?;
        let previous = self
            .stores
            .sources
            .get(checked.scope.partition(), &req.source_urn)
            .await?;
        ensure_owner(previous.as_ref(), &checked.scope, &req.source_urn)?;
        if let Some(skipped) = unchanged(previous.as_ref(), &req.source_urn, &checked.source_hash) {
            return Ok(skipped);
        }
        watch.checkpoint()?;
        let prepared = prepare_document(&req, &checked, &self.chunking)?;
        self.write_prepared(prepared, previous, priority, watch)
            .await
    }

    /// Ingests a source a producer has already cut into chunks, with its typed graph (git,
    /// mail, trackers, transcripts…). Same guarantees as [`Kb::ingest`]: freshness by
    /// fingerprint, only new chunks embedded, one atomic write, searchable on return.
    #[tracing::instrument(skip_all, fields(source_urn = %src.source_urn, kind = %src.kind))]
    pub async fn ingest_prepared(
        &self,
        src: PreparedSource,
        priority: Priority,
    ) -> Result<IngestOutcome> {
        self.ingest_prepared_when(src, priority, true).await
    }

    /// [`Kb::ingest_prepared`] without the freshness skip: the write is applied even when the
    /// fingerprint is the stored one. For sources whose graph may have been changed since by
    /// other means (an agent's assertion after its edge was deleted): re-applying the same
    /// source is idempotent (the graph upsert unions identical evidence and props).
    pub(crate) async fn ingest_prepared_again(
        &self,
        src: PreparedSource,
        priority: Priority,
    ) -> Result<IngestOutcome> {
        self.ingest_prepared_when(src, priority, false).await
    }

    /// Checks, owns and writes a prepared source; with `skip_unchanged`, a source whose
    /// fingerprint is the stored one is skipped unwritten.
    async fn ingest_prepared_when(
        &self,
        src: PreparedSource,
        priority: Priority,
        skip_unchanged: bool,
    ) -> Result<IngestOutcome> {
        check_prepared(&src)?;
        let _permit = self.pools.acquire(priority).await;
        let previous = self
            .stores
            .sources
            .get(src.scope.partition(), &src.source_urn)
            .await?;
        ensure_owner(previous.as_ref(), &src.scope, &src.source_urn)?;
        if skip_unchanged
            && let Some(skipped) = unchanged(previous.as_ref(), &src.source_urn, &src.fingerprint)
        {
            return Ok(skipped);
        }
        self.write_prepared(src, previous, priority, &Watch::default())
            .await
    }

    /// Registers the source's identities (when unknown) and returns the canonical key of
    /// every key the source uses, resolved in one round trip, with the folded spellings still
    /// to register — those ride in the source's own write (`SourceWrite::register_aliases`).
    async fn resolve_keys(&self, src: &PreparedSource) -> Result<ResolvedKeys> {
        let client = src.scope.partition();
        if !src.aliases.is_empty() {
            let aliases: Vec<NodeKey> = src.aliases.iter().map(|(a, _)| a.clone()).collect();
            let current = self.stores.aliases.resolve(client, &aliases).await?;
            for ((alias, canonical), now) in src.aliases.iter().zip(current) {
                if now == *alias && alias != canonical {
                    self.stores
                        .aliases
                        .register(client, alias, canonical)
                        .await?;
                    // A node written under the alias before the identity was known (a speaker
                    // seen before their e-mail) becomes part of the canonical node.
                    self.stores
                        .graph
                        .fold_node(client, alias, canonical)
                        .await?;
                }
            }
        }
        let mut all_keys: Vec<NodeKey> = Vec::new();
        let mut seen = HashSet::new();
        let mut want = |k: &NodeKey| {
            if seen.insert(k.clone()) {
                all_keys.push(k.clone());
            }
        };
        src.nodes.iter().for_each(|n| want(&n.key));
        src.chunks
            .iter()
            .flat_map(|c| c.refs.iter())
            .for_each(&mut want);
        for e in &src.edges {
            want(&e.from);
            want(&e.to);
        }
        // Exact structural keys name themselves: a folded spelling registered for another key
        // (`import:foo_bar` for `import:foo/bar`) must not redirect a key written exactly so.
        let (exact, all_keys): (Vec<NodeKey>, Vec<NodeKey>) =
            all_keys.into_iter().partition(evident_core::keys::is_exact);
        let resolved_list = self.stores.aliases.resolve(client, &all_keys).await?;
        let resolved: HashMap<NodeKey, NodeKey> = all_keys
            .into_iter()
            .zip(resolved_list)
            .chain(exact.into_iter().map(|k| (k.clone(), k)))
            .collect();
        // Unicode keys also answer to their ASCII-folded spelling, and exact structural keys
        // (`file:shop/src/Cart.java`) to their normalised one (`file:shop_src_cart_java`),
        // registered when unknown. One candidate per folded spelling (two keys may fold
        // alike; the first one seen claims it, as a later ingest would find it registered).
        let mut by_fold: BTreeMap<NodeKey, &NodeKey> = BTreeMap::new();
        for key in resolved.values() {
            let structural = evident_core::keys::folded(key);
            let ascii = structural.as_ref().unwrap_or(key);
            let ascii = refs::ascii_fold_key(ascii).filter(|f| f != key);
            for f in structural.into_iter().chain(ascii) {
                by_fold.entry(f).or_insert(key);
            }
        }
        let (folded, keys): (Vec<NodeKey>, Vec<&NodeKey>) = by_fold.into_iter().unzip();
        let mut register = Vec::new();
        if !folded.is_empty() {
            let current = self.stores.aliases.resolve(client, &folded).await?;
            register = folded
                .iter()
                .zip(keys)
                .zip(current)
                .filter(|((alias, _), now)| now == *alias)
                .map(|((alias, key), _)| (alias.clone(), key.clone()))
                .collect();
        }
        Ok((resolved, register))
    }

    /// The shared write path: ids, new/kept/gone chunks, embedding of new chunks only
    /// (the last point where `watch` can stop the call: nothing is written before it), then
    /// alias resolution, graph with evidence and one atomic write.
    async fn write_prepared(
        &self,
        src: PreparedSource,
        previous: Option<SourceRecord>,
        priority: Priority,
        watch: &Watch,
    ) -> Result<IngestOutcome> {
        let partition = src.scope.partition().to_string();

        // Ids from content hashes (occurrence disambiguates repeated text).
        let mut occurrences: HashMap<String, usize> = HashMap::new();
        let drafts: Vec<Draft> = src
            .chunks
            .iter()
            .map(|c| {
                let hash = content_hash(&c.text);
                // Text embedded instead of the content is part of what the vector depends on.
                let id_hash = match &c.embed_text {
                    None => hash.clone(),
                    Some(e) => content_hash(&format!("{}\u{0}embed:{e}", c.text)),
                };
                let occ = occurrences.entry(id_hash.clone()).or_insert(0);
                let id = chunk_id(&partition, &src.source_urn, &id_hash, *occ);
                *occ += 1;
                Draft { id, hash }
            })
            .collect();

        // Which chunks are new, kept or gone.
        let existing: Vec<(String, String)> = self
            .stores
            .chunks
            .source_chunks(&partition, &src.source_urn)
            .await?;
        let existing_ids: HashSet<&str> = existing.iter().map(|(id, _)| id.as_str()).collect();
        let new_ids: HashSet<&str> = drafts.iter().map(|d| d.id.as_str()).collect();
        let delete_chunk_ids: Vec<String> = existing
            .iter()
            .filter(|(id, _)| !new_ids.contains(id.as_str()))
            .map(|(id, _)| id.clone())
            .collect();

        let to_embed: Vec<String> = src
            .chunks
            .iter()
            .zip(&drafts)
            .filter(|(_, d)| !existing_ids.contains(d.id.as_str()))
            .map(|(c, _)| match &c.embed_text {
                Some(e) => e.clone(),
                None => {
                    let title = c.title.as_deref().or(src.title.as_deref());
                    embedding_text(title, c.context.as_deref(), &c.text)
                }
            })
            .collect();
        watch.reached(Stage::Chunked {
            chunks: drafts.len(),
            new: to_embed.len(),
        });
        let vectors = self.embed_new(&to_embed, priority, watch).await?;
        if vectors.len() != to_embed.len() {
            return Err(KbError::Invalid(format!(
                "embedder returned {} vectors for {} chunks",
                vectors.len(),
                to_embed.len()
            )));
        }
        // The last stage boundary: from here on the call writes, and writes whole.
        watch.checkpoint()?;
        watch.reached(Stage::Writing {
            chunks: drafts.len(),
        });

        self.merge_identities(&partition, &src.merges).await?;
        let (resolved, register_aliases) = self.resolve_keys(&src).await?;
        let canon = |k: &NodeKey| resolved.get(k).cloned().unwrap_or_else(|| k.clone());
        let merged: Vec<NodeKey> = src
            .merges
            .iter()
            .flatten()
            .map(canon)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let chunk_refs: Vec<Vec<NodeKey>> = src
            .chunks
            .iter()
            .map(|c| {
                let mut seen = HashSet::new();
                c.refs
                    .iter()
                    .map(canon)
                    .filter(|k| seen.insert(k.clone()))
                    .collect()
            })
            .collect();

        let (mut upsert_chunks, mut relocate_chunks) = (Vec::new(), Vec::new());
        for (ordinal, ((c, d), refs)) in src.chunks.iter().zip(&drafts).zip(&chunk_refs).enumerate()
        {
            let chunk = Chunk {
                id: d.id.clone(),
                scope: src.scope.clone(),
                source_urn: src.source_urn.clone(),
                kind: c.kind.clone().unwrap_or_else(|| src.kind.clone()),
                title: c.title.clone().or_else(|| src.title.clone()),
                content: c.text.clone(),
                content_hash: d.hash.clone(),
                locator: c.locator.clone(),
                graph_refs: refs.clone(),
                metadata: c.metadata.clone(),
                observed_at: src.observed_at.clone(),
                ordinal,
            };
            if existing_ids.contains(d.id.as_str()) {
                relocate_chunks.push(chunk);
            } else {
                upsert_chunks.push(chunk);
            }
        }

        let (nodes, edges) = graph_writes(&src, &drafts, &chunk_refs, &canon);
        let node_keys: Vec<NodeKey> = nodes.iter().map(|n| n.key.clone()).collect();
        let edge_count = edges.len();
        let counts = ChunkCounts {
            total: drafts.len(),
            added: upsert_chunks.len(),
            removed: delete_chunk_ids.len(),
            unchanged: relocate_chunks.len(),
        };
        let record = SourceRecord {
            scope: src.scope.clone(),
            source_urn: src.source_urn.clone(),
            kind: src.kind.clone(),
            title: src.title.clone(),
            content_hash: src.fingerprint.clone(),
            status: SourceStatus::Indexed,
            chunk_count: drafts.len(),
            last_indexed_at: humantime::format_rfc3339_millis(std::time::SystemTime::now())
                .to_string(),
            last_error: None,
        };
        let removed = self
            .stores
            .writer
            .apply(SourceWrite {
                partition: partition.clone(),
                source_urn: src.source_urn.clone(),
                upsert_chunks: upsert_chunks.into_iter().zip(vectors).collect(),
                relocate_chunks,
                delete_chunk_ids: delete_chunk_ids.clone(),
                nodes,
                edges,
                record: RecordUpdate::Put(record),
                register_aliases,
            })
            .await?;
        // Claims these chunks evidenced now cite text that changed (see `claims`).
        self.claims_evidence_gone(&partition, &delete_chunk_ids)
            .await?;
        self.settle_merged(src.scope.partition(), &merged).await?;
        let status = if previous.is_some() {
            IngestStatus::Updated
        } else {
            IngestStatus::Ingested
        };
        metrics::counter!("evident_ingest_total", "status" => if previous.is_some() { "updated" } else { "ingested" }).increment(1);
        metrics::counter!("evident_chunks_embedded_total").increment(counts.added as u64);
        tracing::debug!(
            chunks = counts.total,
            added = counts.added,
            removed = counts.removed,
            edges = edge_count,
            "ingested"
        );
        Ok(IngestOutcome {
            status,
            source_urn: src.source_urn,
            content_hash: src.fingerprint,
            chunks: counts,
            nodes: node_keys,
            edges: edge_count,
            removed_nodes: removed.nodes,
            removed_edges: removed.edges,
        })
    }

    /// Embeds the new chunks' texts: in one call, or, when someone watches the progress,
    /// in batches of [`EMBED_BATCH`] with a [`Stage::Embedded`] after each. Dropped when
    /// the watch is cancelled (embedding writes nothing).
    async fn embed_new(
        &self,
        texts: &[String],
        priority: Priority,
        watch: &Watch,
    ) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let batch = if watch.reports() {
            EMBED_BATCH
        } else {
            texts.len()
        };
        let mut vectors = Vec::with_capacity(texts.len());
        for part in texts.chunks(batch) {
            let embedded = watch
                .unless_cancelled(async { Ok(self.embedder.embed(part, priority).await?) })
                .await?;
            vectors.extend(embedded);
            watch.reached(Stage::Embedded {
                done: vectors.len(),
                total: texts.len(),
            });
        }
        Ok(vectors)
    }
}
