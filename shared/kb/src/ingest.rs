//! Ingest and purge.
//!
//! Freshness: a source's `contentHash` covers everything that shapes what is stored (content,
//! title, kind, scope, metadata, main node, relationships, locator, observedAt). The same
//! hash again → `skipped_unchanged`, with no work. Otherwise chunk ids — derived from
//! (client, sourceUrn, chunk text hash, occurrence) — tell which chunks are new (embedded),
//! gone (deleted, with graph items left without evidence) or kept (never re-embedded; their
//! position and locator are updated in place).

use std::collections::{BTreeMap, HashMap, HashSet};

use evident_ai::Priority;
use evident_core::chunking::{TextChunk, chunk_text};
use evident_core::hashing::{chunk_id, content_hash};
use evident_core::refs::{self, NodeKey, Relationship};
use evident_core::{Chunk, EdgeWrite, Evidence, Locator, NodeWrite, Scope, secrets, validate};
use evident_store::{RecordUpdate, SourceRecord, SourceStatus, SourceWrite};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Kb, KbError, Result};

/// Largest serialised `metadata` object accepted.
const MAX_METADATA_BYTES: usize = 64 * 1024;
/// Longest single relationship string accepted.
const MAX_RELATIONSHIP_LEN: usize = 4096;

/// `POST /api/v1/ingest` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IngestRequest {
    /// Required unless `global` is true.
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub group_id: Option<String>,
    /// Write global data (visible to every reader). Excludes clientId.
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
    /// The node this source is about, e.g. `jira:TASK-123`; bare ids in relationships that
    /// equal its value expand to it.
    #[serde(default)]
    pub main_node_key: Option<String>,
    /// Explicit relationships in pipe, arrow or bracket format.
    #[serde(default)]
    pub relationships: Option<Vec<String>>,
    /// Base locator of the source (e.g. a file and its commit); chunk locators derive from it.
    #[serde(default)]
    pub locator: Option<Locator>,
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

/// A validated request, ready to process.
pub(crate) struct Checked {
    pub(crate) scope: Scope,
    main: Option<NodeKey>,
    source_hash: String,
}

pub(crate) fn check(req: &IngestRequest) -> Result<Checked> {
    if req.global && req.client_id.is_some() {
        return Err(KbError::Invalid(
            "`global: true` writes global data and takes no clientId".into(),
        ));
    }
    if !req.global && req.client_id.is_none() {
        return Err(validate::FieldError::Missing { field: "clientId" }.into());
    }
    let scope = crate::scope(
        req.client_id.as_deref(),
        req.project_id.as_deref(),
        req.group_id.as_deref(),
    )?;
    validate::bounded_text("sourceUrn", &req.source_urn, validate::MAX_URN_LEN)?;
    validate::kind("kind", &req.kind)?;
    validate::content("content", &req.content)?;
    if let Some(t) = &req.title {
        validate::bounded_text("title", t, 1024)?;
    }
    if let Some(m) = &req.metadata {
        let len = serde_json::to_string(m)
            .map(|s| s.len())
            .unwrap_or(usize::MAX);
        if len > MAX_METADATA_BYTES {
            return Err(validate::FieldError::TooLong {
                field: "metadata",
                len,
                max: MAX_METADATA_BYTES,
            }
            .into());
        }
    }
    if let Some(at) = &req.observed_at {
        humantime::parse_rfc3339_weak(at).map_err(|e| validate::FieldError::Invalid {
            field: "observedAt",
            reason: format!("not an RFC 3339 time: {e}"),
        })?;
    }
    let main = match &req.main_node_key {
        None => None,
        Some(raw) => {
            validate::identifier("mainNodeKey", raw)?;
            Some(
                refs::normalize_ref(raw).ok_or(validate::FieldError::Invalid {
                    field: "mainNodeKey",
                    reason: "has no letters or digits".into(),
                })?,
            )
        }
    };
    let rels = req.relationships.as_deref().unwrap_or_default();
    if rels.len() > validate::MAX_RELATIONSHIPS {
        return Err(validate::FieldError::TooLong {
            field: "relationships",
            len: rels.len(),
            max: validate::MAX_RELATIONSHIPS,
        }
        .into());
    }
    for r in rels {
        validate::bounded_text("relationships", r, MAX_RELATIONSHIP_LEN)?;
    }
    for text in std::iter::once(req.content.as_str())
        .chain(req.title.as_deref())
        .chain(rels.iter().map(String::as_str))
    {
        if let Some(f) = secrets::find_secrets(text).first() {
            return Err(KbError::CredentialDetected {
                class: f.class,
                line: f.line,
            });
        }
    }
    // Everything that shapes what is stored; serde_json maps are ordered, so this is canonical.
    let fingerprint = serde_json::to_string(&(
        &scope,
        &req.kind,
        &req.title,
        &req.metadata,
        &req.observed_at,
        &main,
        rels,
        &req.locator,
        &req.content,
    ))
    .map_err(|e| KbError::Invalid(format!("unserialisable request: {e}")))?;
    Ok(Checked {
        scope,
        main,
        source_hash: content_hash(&fingerprint),
    })
}

/// A chunk being built, before the store sees it.
struct Draft {
    piece: TextChunk,
    id: String,
    hash: String,
    refs: Vec<NodeKey>,
}

fn count_newlines(s: &str) -> usize {
    s.bytes().filter(|b| *b == b'\n').count()
}

impl Kb {
    /// Ingests one source synchronously: when this returns Ok, the data is durable and
    /// searchable.
    #[tracing::instrument(skip_all, fields(source_urn = %req.source_urn, kind = %req.kind))]
    pub async fn ingest(&self, req: IngestRequest, priority: Priority) -> Result<IngestOutcome> {
        let checked = check(&req)?;
        let _permit = self.pools.acquire(priority).await;
        let partition = checked.scope.partition().to_string();

        let previous = self.stores.sources.get(&partition, &req.source_urn).await?;
        if let Some(prev) = &previous {
            if prev.content_hash == checked.source_hash && prev.status == SourceStatus::Indexed {
                metrics::counter!("evident_ingest_total", "status" => "skipped_unchanged")
                    .increment(1);
                return Ok(IngestOutcome {
                    status: IngestStatus::SkippedUnchanged,
                    source_urn: req.source_urn,
                    content_hash: checked.source_hash,
                    chunks: ChunkCounts {
                        total: prev.chunk_count,
                        unchanged: prev.chunk_count,
                        ..Default::default()
                    },
                    nodes: Vec::new(),
                    edges: 0,
                    removed_nodes: 0,
                    removed_edges: 0,
                });
            }
        }

        // Chunk, with ids from content hashes (occurrence disambiguates repeated text).
        let pieces = chunk_text(&req.content, &self.chunking);
        let mut occurrences: HashMap<String, usize> = HashMap::new();
        let mut drafts: Vec<Draft> = pieces
            .into_iter()
            .map(|piece| {
                let hash = content_hash(&piece.text);
                let occ = occurrences.entry(hash.clone()).or_insert(0);
                let id = chunk_id(&partition, &req.source_urn, &hash, *occ);
                *occ += 1;
                let refs = refs::extract_refs(&piece.text)
                    .into_iter()
                    .map(|f| f.key)
                    .collect();
                Draft {
                    piece,
                    id,
                    hash,
                    refs,
                }
            })
            .collect();
        if drafts.is_empty() {
            return Err(validate::FieldError::Empty { field: "content" }.into());
        }

        // Relationships: found in content (evidenced by the chunk holding them) and explicit.
        let mut rel_evidence: Vec<(Relationship, Vec<usize>)> = Vec::new();
        for found in refs::find_relationships(&req.content, checked.main.as_ref()) {
            let at = drafts
                .iter()
                .position(|d| d.piece.byte_start <= found.start && found.start < d.piece.byte_end)
                .unwrap_or(0);
            rel_evidence.push((found.rel, vec![at]));
        }
        for (index, raw) in req.relationships.iter().flatten().enumerate() {
            let rel = refs::parse_relationship(raw, checked.main.as_ref()).ok_or_else(|| {
                KbError::InvalidRelationship {
                    index,
                    reason: format!("`{}`", raw.chars().take(120).collect::<String>()),
                }
            })?;
            rel_evidence.push((rel, Vec::new()));
        }

        // Resolve every key through the alias registry in one round trip.
        let mut all_keys: Vec<NodeKey> = Vec::new();
        let mut seen_keys = HashSet::new();
        let mut want = |k: &NodeKey| {
            if seen_keys.insert(k.clone()) {
                all_keys.push(k.clone());
            }
        };
        checked.main.iter().for_each(&mut want);
        drafts
            .iter()
            .flat_map(|d| d.refs.iter())
            .for_each(&mut want);
        for (r, _) in &rel_evidence {
            want(&r.from);
            want(&r.to);
        }
        let client = checked.scope.partition();
        let resolved_list = self.stores.aliases.resolve(client, &all_keys).await?;
        let resolved: HashMap<NodeKey, NodeKey> = all_keys.into_iter().zip(resolved_list).collect();
        let canon = |k: &NodeKey| resolved.get(k).cloned().unwrap_or_else(|| k.clone());
        let main = checked.main.as_ref().map(canon);
        for d in &mut drafts {
            let mut seen = HashSet::new();
            d.refs = d
                .refs
                .iter()
                .map(canon)
                .filter(|k| seen.insert(k.clone()))
                .collect();
        }
        // Explicit relationships are evidenced by the chunks that mention an endpoint, or
        // by the first chunk when none does.
        for (rel, ev) in &mut rel_evidence {
            rel.from = canon(&rel.from);
            rel.to = canon(&rel.to);
            if ev.is_empty() {
                ev.extend(
                    drafts
                        .iter()
                        .enumerate()
                        .filter(|(_, d)| d.refs.contains(&rel.from) || d.refs.contains(&rel.to))
                        .map(|(i, _)| i),
                );
                if ev.is_empty() {
                    ev.push(0);
                }
            }
        }
        // Unicode keys also answer to their ASCII-folded spelling.
        for key in resolved.values().collect::<HashSet<_>>() {
            if let Some(folded) = refs::ascii_fold_key(key) {
                let current = self
                    .stores
                    .aliases
                    .resolve(client, std::slice::from_ref(&folded))
                    .await?;
                if current.first() == Some(&folded) {
                    self.stores.aliases.register(client, &folded, key).await?;
                }
            }
        }

        // Which chunks are new, kept or gone.
        let existing: Vec<(String, String)> = self
            .stores
            .chunks
            .source_chunks(&partition, &req.source_urn)
            .await?;
        let existing_ids: HashSet<&str> = existing.iter().map(|(id, _)| id.as_str()).collect();
        let new_ids: HashSet<&str> = drafts.iter().map(|d| d.id.as_str()).collect();
        let delete_chunk_ids: Vec<String> = existing
            .iter()
            .filter(|(id, _)| !new_ids.contains(id.as_str()))
            .map(|(id, _)| id.clone())
            .collect();

        // Line numbers for file locators, counted once over the document (chunks are in order).
        let mut counted_to = 0;
        let mut lines_so_far = 0;
        let chunks: Vec<Chunk> = drafts
            .iter()
            .map(|d| {
                lines_so_far += count_newlines(&req.content[counted_to..d.piece.byte_start]);
                counted_to = d.piece.byte_start;
                self.to_chunk(&req, &checked.scope, d, lines_so_far)
            })
            .collect();
        let (mut upsert_chunks, mut relocate_chunks) = (Vec::new(), Vec::new());
        let mut to_embed: Vec<String> = Vec::new();
        for (chunk, d) in chunks.into_iter().zip(&drafts) {
            if existing_ids.contains(d.id.as_str()) {
                relocate_chunks.push(chunk);
            } else {
                to_embed.push(embedding_text(&chunk));
                upsert_chunks.push(chunk);
            }
        }
        let vectors = if to_embed.is_empty() {
            Vec::new()
        } else {
            self.embedder.embed(&to_embed, priority).await?
        };
        if vectors.len() != upsert_chunks.len() {
            return Err(KbError::Invalid(format!(
                "embedder returned {} vectors for {} chunks",
                vectors.len(),
                upsert_chunks.len()
            )));
        }

        // Graph: every ref is a node evidenced by the chunks mentioning it; the main node by
        // every chunk; each relationship an edge evidenced by its chunks.
        let evidence = |i: usize| Evidence {
            chunk_id: drafts[i].id.clone(),
            scope: checked.scope.clone(),
        };
        let mut node_ev: BTreeMap<NodeKey, Vec<Evidence>> = BTreeMap::new();
        for (i, d) in drafts.iter().enumerate() {
            for k in &d.refs {
                node_ev.entry(k.clone()).or_default().push(evidence(i));
            }
        }
        // Relationship endpoints are nodes too, evidenced by the relationship's chunks.
        for (rel, ev) in &rel_evidence {
            for key in [&rel.from, &rel.to] {
                let entry = node_ev.entry(key.clone()).or_default();
                for i in ev {
                    let item = evidence(*i);
                    if !entry.contains(&item) {
                        entry.push(item);
                    }
                }
            }
        }
        let mut nodes: Vec<NodeWrite> = node_ev
            .into_iter()
            .map(|(key, evidence)| plain_node(key, evidence))
            .collect();
        if let Some(main) = &main {
            let mut props = Map::new();
            props.insert("sourceUrn".into(), Value::String(req.source_urn.clone()));
            props.insert("kind".into(), Value::String(req.kind.clone()));
            if let Some(t) = &req.title {
                props.insert("title".into(), Value::String(t.clone()));
            }
            let mut n = plain_node(main.clone(), (0..drafts.len()).map(evidence).collect());
            n.props = props;
            if let Some(t) = &req.title {
                n.label = t.clone();
            }
            nodes.retain(|x| &x.key != main);
            nodes.push(n);
        }
        let mut edge_map: BTreeMap<(NodeKey, String, NodeKey), Vec<Evidence>> = BTreeMap::new();
        for (rel, ev) in &rel_evidence {
            if rel.from == rel.to {
                continue; // a self-loop says nothing
            }
            let e = edge_map
                .entry((rel.from.clone(), rel.edge_type.clone(), rel.to.clone()))
                .or_default();
            for i in ev {
                let item = evidence(*i);
                if !e.contains(&item) {
                    e.push(item);
                }
            }
        }
        let edges: Vec<EdgeWrite> = edge_map
            .into_iter()
            .map(|((from, edge_type, to), evidence)| EdgeWrite {
                from,
                to,
                edge_type,
                props: Map::new(),
                evidence,
            })
            .collect();

        let node_keys: Vec<NodeKey> = nodes.iter().map(|n| n.key.clone()).collect();
        let edge_count = edges.len();
        let counts = ChunkCounts {
            total: drafts.len(),
            added: upsert_chunks.len(),
            removed: delete_chunk_ids.len(),
            unchanged: relocate_chunks.len(),
        };
        let record = SourceRecord {
            scope: checked.scope.clone(),
            source_urn: req.source_urn.clone(),
            kind: req.kind.clone(),
            title: req.title.clone(),
            content_hash: checked.source_hash.clone(),
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
                partition,
                source_urn: req.source_urn.clone(),
                upsert_chunks: upsert_chunks.into_iter().zip(vectors).collect(),
                relocate_chunks,
                delete_chunk_ids,
                nodes,
                edges,
                record: RecordUpdate::Put(record),
            })
            .await?;
        let status = if previous.is_some() {
            IngestStatus::Updated
        } else {
            IngestStatus::Ingested
        };
        metrics::counter!("evident_ingest_total", "status" => if previous.is_some() { "updated" } else { "ingested" }).increment(1);
        metrics::counter!("evident_chunks_embedded_total").increment(counts.added as u64);
        tracing::info!(
            chunks = counts.total,
            added = counts.added,
            removed = counts.removed,
            edges = edge_count,
            "ingested"
        );
        Ok(IngestOutcome {
            status,
            source_urn: req.source_urn,
            content_hash: checked.source_hash,
            chunks: counts,
            nodes: node_keys,
            edges: edge_count,
            removed_nodes: removed.nodes,
            removed_edges: removed.edges,
        })
    }

    /// `lines_before`: newlines in the source before the chunk.
    fn to_chunk(
        &self,
        req: &IngestRequest,
        scope: &Scope,
        d: &Draft,
        lines_before: usize,
    ) -> Chunk {
        let section = (!d.piece.heading_path.is_empty()).then(|| d.piece.heading_path.join(" > "));
        let lines_inside = count_newlines(&d.piece.text);
        let locator = Locator::for_chunk(
            req.locator.as_ref(),
            &req.source_urn,
            section.as_deref(),
            d.piece.char_start,
            d.piece.char_end,
            lines_before,
            lines_inside,
        );
        Chunk {
            id: d.id.clone(),
            scope: scope.clone(),
            source_urn: req.source_urn.clone(),
            kind: req.kind.clone(),
            title: req.title.clone(),
            content: d.piece.text.clone(),
            content_hash: d.hash.clone(),
            locator,
            graph_refs: d.refs.clone(),
            metadata: req.metadata.clone().unwrap_or_default(),
            observed_at: req.observed_at.clone(),
            ordinal: d.piece.ordinal,
        }
    }

    /// Removes a source: its chunks, its registry record, and graph items left without evidence.
    #[tracing::instrument(skip(self))]
    pub async fn purge(
        &self,
        scope: &Scope,
        source_urn: &str,
        priority: Priority,
    ) -> Result<PurgeOutcome> {
        validate::bounded_text("sourceUrn", source_urn, validate::MAX_URN_LEN)?;
        let _permit = self.pools.acquire(priority).await;
        let partition = scope.partition().to_string();
        let found = self
            .stores
            .sources
            .get(&partition, source_urn)
            .await?
            .is_some();
        let ids: Vec<String> = self
            .stores
            .chunks
            .source_chunks(&partition, source_urn)
            .await?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        if !found && ids.is_empty() {
            return Ok(PurgeOutcome {
                source_urn: source_urn.to_string(),
                found: false,
                chunks: 0,
                nodes: 0,
                edges: 0,
            });
        }
        let removed = self
            .stores
            .writer
            .apply(SourceWrite {
                partition,
                source_urn: source_urn.to_string(),
                delete_chunk_ids: ids,
                record: RecordUpdate::Remove,
                ..Default::default()
            })
            .await?;
        metrics::counter!("evident_purge_total").increment(1);
        Ok(PurgeOutcome {
            source_urn: source_urn.to_string(),
            found: true,
            chunks: removed.chunks,
            nodes: removed.nodes,
            edges: removed.edges,
        })
    }
}

fn plain_node(key: NodeKey, evidence: Vec<Evidence>) -> NodeWrite {
    let label = if key.value().is_empty() {
        key.as_str().to_string()
    } else {
        key.value().replace('_', " ")
    };
    NodeWrite {
        node_type: key.namespace().to_string(),
        label,
        key,
        props: Map::new(),
        evidence,
    }
}

/// What the embedder sees: the chunk text with its title and section for context.
fn embedding_text(chunk: &Chunk) -> String {
    let mut s = String::new();
    if let Some(t) = &chunk.title {
        s.push_str(t);
        s.push('\n');
    }
    if let Locator::Document {
        section: Some(sec), ..
    } = &chunk.locator
    {
        s.push_str(sec);
        s.push('\n');
    }
    s.push_str(&chunk.content);
    s
}
