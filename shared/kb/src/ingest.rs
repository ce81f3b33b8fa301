//! Ingest and purge.
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
    Chunk, EdgeWrite, Evidence, EvidenceSpec, Locator, NodeWrite, PreparedChunk, PreparedEdge,
    PreparedNode, PreparedSource, Scope, validate,
};
use evident_store::{RecordUpdate, SourceRecord, SourceStatus, SourceWrite};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Kb, KbError, Result};

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

pub(crate) fn check(req: &Document) -> Result<Checked> {
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
    // Every string that would be stored (one rule: `credentials`).
    let mut scan = crate::credentials::Scan::default();
    scan.text("content", &req.content)?;
    scan.text("sourceUrn", &req.source_urn)?;
    scan.all("title", req.title.as_deref())?;
    scan.all("mainNodeKey", req.main_node_key.as_deref())?;
    scan.all("relationships", rels.iter().map(String::as_str))?;
    if let Some(m) = &req.metadata {
        scan.map("metadata", m)?;
    }
    if let Some(l) = &req.locator {
        scan.serialised("locator", l)?;
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

fn count_newlines(s: &str) -> usize {
    s.bytes().filter(|b| *b == b'\n').count()
}

/// Cuts a validated document into a [`PreparedSource`]: structure-aware chunks with their
/// locators and per-chunk refs, the main node (evidenced by every chunk), and edges for the
/// relationships in the content (evidenced by the chunk holding them) and in the explicit list
/// (evidenced by the chunks naming an endpoint).
pub(crate) fn prepare_document(
    req: &Document,
    checked: &Checked,
    chunking: &ChunkingConfig,
) -> Result<PreparedSource> {
    let pieces = chunk_text(&req.content, chunking);
    if pieces.is_empty() {
        return Err(validate::FieldError::Empty { field: "content" }.into());
    }
    // Line numbers for file locators, counted once over the document (chunks are in order).
    let (mut counted_to, mut lines_so_far) = (0, 0);
    let chunks: Vec<PreparedChunk> = pieces
        .iter()
        .map(|piece| {
            lines_so_far += count_newlines(&req.content[counted_to..piece.byte_start]);
            counted_to = piece.byte_start;
            let section = (!piece.heading_path.is_empty()).then(|| piece.heading_path.join(" > "));
            let locator = Locator::for_chunk(
                req.locator.as_ref(),
                &req.source_urn,
                section.as_deref(),
                piece.char_start,
                piece.char_end,
                lines_so_far,
                count_newlines(&piece.text),
            );
            let mut chunk = PreparedChunk::new(piece.text.clone(), locator);
            chunk.refs = refs::extract_refs(&piece.text)
                .into_iter()
                .map(|f| f.key)
                .collect();
            chunk.metadata = req.metadata.clone().unwrap_or_default();
            chunk.context = section;
            chunk
        })
        .collect();

    let mut edges = Vec::new();
    for found in refs::find_relationships(&req.content, checked.main.as_ref()) {
        let at = pieces
            .iter()
            .position(|p| p.byte_start <= found.start && found.start < p.byte_end)
            .unwrap_or(0);
        edges.push(relationship_edge(found.rel, EvidenceSpec::chunk(at)));
    }
    for (index, raw) in req.relationships.iter().flatten().enumerate() {
        let rel = refs::parse_relationship(raw, checked.main.as_ref()).ok_or_else(|| {
            KbError::InvalidRelationship {
                index,
                reason: format!("`{}`", raw.chars().take(120).collect::<String>()),
            }
        })?;
        edges.push(relationship_edge(rel, EvidenceSpec::MentioningEndpoints));
    }
    let nodes = checked
        .main
        .iter()
        .map(|main| {
            let mut props = Map::new();
            props.insert("sourceUrn".into(), Value::String(req.source_urn.clone()));
            props.insert("kind".into(), Value::String(req.kind.clone()));
            if let Some(t) = &req.title {
                props.insert("title".into(), Value::String(t.clone()));
            }
            let mut node = plain_node(main.clone(), EvidenceSpec::AllChunks);
            node.props = props;
            if let Some(t) = &req.title {
                node.label = t.clone();
            }
            node
        })
        .collect();
    Ok(PreparedSource {
        scope: checked.scope.clone(),
        source_urn: req.source_urn.clone(),
        kind: req.kind.clone(),
        title: req.title.clone(),
        fingerprint: checked.source_hash.clone(),
        observed_at: req.observed_at.clone(),
        chunks,
        nodes,
        edges,
        aliases: Vec::new(),
        merges: Vec::new(),
    })
}

fn relationship_edge(rel: Relationship, evidence: EvidenceSpec) -> PreparedEdge {
    PreparedEdge {
        from: rel.from,
        to: rel.to,
        edge_type: rel.edge_type,
        props: Map::new(),
        evidence,
    }
}

/// Largest number of chunks one prepared source may carry.
const MAX_PREPARED_CHUNKS: usize = 100_000;
/// Most keys a source may merge into identities (a mail thread: a message's ancestry and itself).
const MAX_MERGED_KEYS: usize = 4_096;

/// Validates what a producer prepared, with the same limits as a document ingest.
fn check_prepared(src: &PreparedSource) -> Result<()> {
    let mut scan = crate::credentials::Scan::default();
    if !src.scope.is_consistent() {
        return Err(KbError::Invalid(
            "projectId and groupId need a clientId".into(),
        ));
    }
    for id in [
        &src.scope.client_id,
        &src.scope.project_id,
        &src.scope.group_id,
    ]
    .into_iter()
    .flatten()
    {
        validate::identifier("scope", id)?;
    }
    validate::bounded_text("sourceUrn", &src.source_urn, validate::MAX_URN_LEN)?;
    validate::kind("kind", &src.kind)?;
    validate::identifier("fingerprint", &src.fingerprint)?;
    if let Some(t) = &src.title {
        validate::bounded_text("title", t, 1024)?;
    }
    if src.chunks.is_empty() {
        return Err(validate::FieldError::Empty { field: "chunks" }.into());
    }
    if src.chunks.len() > MAX_PREPARED_CHUNKS {
        return Err(validate::FieldError::TooLong {
            field: "chunks",
            len: src.chunks.len(),
            max: MAX_PREPARED_CHUNKS,
        }
        .into());
    }
    for c in &src.chunks {
        validate::content("content", &c.text)?;
        if let Some(k) = &c.kind {
            validate::kind("kind", k)?;
        }
        scan.text("content", &c.text)?;
        scan.all("title", c.title.as_deref())?;
        scan.all("context", c.context.as_deref())?;
        scan.map("metadata", &c.metadata)?;
        scan.serialised("locator", &c.locator)?;
        scan.all("refs", c.refs.iter().map(NodeKey::as_str))?;
    }
    let in_range = |spec: &EvidenceSpec| match spec {
        EvidenceSpec::Chunks(ix) => !ix.is_empty() && ix.iter().all(|i| *i < src.chunks.len()),
        _ => true,
    };
    for n in &src.nodes {
        validate::identifier("nodeKey", n.key.as_str())?;
        validate::kind("nodeType", &n.node_type)?;
        if !in_range(&n.evidence) {
            return Err(KbError::Invalid(format!(
                "node {} cites no chunk of its source",
                n.key
            )));
        }
    }
    for e in &src.edges {
        validate::identifier("nodeKey", e.from.as_str())?;
        validate::identifier("nodeKey", e.to.as_str())?;
        validate::kind("edgeType", &e.edge_type)?;
        if !in_range(&e.evidence) {
            return Err(KbError::Invalid(format!(
                "edge {} -{}-> {} cites no chunk of its source",
                e.from, e.edge_type, e.to
            )));
        }
    }
    // Every other string that would be stored: the source's own, its graph's (keys, labels,
    // props — a commit message, a symbol name), its aliases.
    scan.text("sourceUrn", &src.source_urn)?;
    scan.all("title", src.title.as_deref())?;
    for n in &src.nodes {
        scan.all("nodeKey", [n.key.as_str(), n.label.as_str()])?;
        scan.map("props", &n.props)?;
    }
    for e in &src.edges {
        scan.all(
            "edges",
            [e.from.as_str(), e.to.as_str(), e.edge_type.as_str()],
        )?;
        scan.map("props", &e.props)?;
    }
    scan.all(
        "aliases",
        src.aliases
            .iter()
            .flat_map(|(a, c)| [a.as_str(), c.as_str()]),
    )?;
    let merged = src.merges.iter().map(Vec::len).sum::<usize>();
    if merged > MAX_MERGED_KEYS {
        return Err(validate::FieldError::TooLong {
            field: "merges",
            len: merged,
            max: MAX_MERGED_KEYS,
        }
        .into());
    }
    for k in src.merges.iter().flatten() {
        validate::identifier("merges", k.as_str())?;
    }
    scan.all("merges", src.merges.iter().flatten().map(NodeKey::as_str))?;
    Ok(())
}

/// A chunk with its id, before the store sees it.
struct Draft {
    id: String,
    hash: String,
}

/// The ownership rule: within its partition (client, or global), a `sourceUrn` belongs to
/// exactly one scope — the one its registry record names. A write or purge from any other
/// scope is refused (`scope_conflict`) rather than silently moving the source away from its
/// owners; only [`Kb::move_source`] changes it. Checked here over the `SourceRegistry`
/// trait, so every backend enforces it. (Another client's identical URN is a different
/// source in another partition and never conflicts.)
pub(crate) fn ensure_owner(
    record: Option<&SourceRecord>,
    scope: &Scope,
    source_urn: &str,
) -> Result<()> {
    match record {
        Some(r) if r.scope != *scope => Err(KbError::ScopeConflict {
            source_urn: source_urn.to_string(),
            owner: crate::error::describe(&r.scope),
            requested: crate::error::describe(scope),
        }),
        _ => Ok(()),
    }
}

/// The outcome of a skipped ingest when the source is stored (`previous`) with this
/// fingerprint.
fn unchanged(
    previous: Option<&SourceRecord>,
    source_urn: &str,
    fingerprint: &str,
) -> Option<IngestOutcome> {
    previous
        .filter(|p| p.content_hash == fingerprint && p.status == SourceStatus::Indexed)
        .map(|p| {
            metrics::counter!("evident_ingest_total", "status" => "skipped_unchanged").increment(1);
            IngestOutcome {
                status: IngestStatus::SkippedUnchanged,
                source_urn: source_urn.to_string(),
                content_hash: fingerprint.to_string(),
                chunks: ChunkCounts {
                    total: p.chunk_count,
                    unchanged: p.chunk_count,
                    ..Default::default()
                },
                nodes: Vec::new(),
                edges: 0,
                removed_nodes: 0,
                removed_edges: 0,
            }
        })
}

impl Kb {
    /// Ingests one document synchronously: when this returns Ok, the data is durable and
    /// searchable.
    pub async fn ingest(
        &self,
        doc: impl Into<Document>,
        priority: Priority,
    ) -> Result<IngestOutcome> {
        self.ingest_document(doc.into(), priority).await
    }

    #[tracing::instrument(skip_all, fields(source_urn = %req.source_urn, kind = %req.kind))]
    async fn ingest_document(&self, req: Document, priority: Priority) -> Result<IngestOutcome> {
        let checked = check(&req)?;
        let _permit = self.pools.acquire(priority).await;
        let previous = self
            .stores
            .sources
            .get(checked.scope.partition(), &req.source_urn)
            .await?;
        ensure_owner(previous.as_ref(), &checked.scope, &req.source_urn)?;
        if let Some(skipped) = unchanged(previous.as_ref(), &req.source_urn, &checked.source_hash) {
            return Ok(skipped);
        }
        let prepared = prepare_document(&req, &checked, &self.chunking)?;
        self.write_prepared(prepared, previous, priority).await
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
        check_prepared(&src)?;
        let _permit = self.pools.acquire(priority).await;
        let previous = self
            .stores
            .sources
            .get(src.scope.partition(), &src.source_urn)
            .await?;
        ensure_owner(previous.as_ref(), &src.scope, &src.source_urn)?;
        if let Some(skipped) = unchanged(previous.as_ref(), &src.source_urn, &src.fingerprint) {
            return Ok(skipped);
        }
        self.write_prepared(src, previous, priority).await
    }

    /// Registers the source's identities (when unknown) and returns the canonical key of
    /// every key the source uses, resolved in one round trip.
    async fn resolve_keys(&self, src: &PreparedSource) -> Result<HashMap<NodeKey, NodeKey>> {
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
        if !folded.is_empty() {
            let current = self.stores.aliases.resolve(client, &folded).await?;
            let new: Vec<(NodeKey, NodeKey)> = folded
                .iter()
                .zip(keys)
                .zip(current)
                .filter(|((alias, _), now)| now == *alias)
                .map(|((alias, key), _)| (alias.clone(), key.clone()))
                .collect();
            // One write for all of them (a file's symbols, a commit's files).
            self.stores.aliases.register_many(client, &new).await?;
        }
        Ok(resolved)
    }

    /// The shared write path: ids, alias resolution, new/kept/gone chunks, embedding of new
    /// chunks only, graph with evidence, one atomic write.
    async fn write_prepared(
        &self,
        src: PreparedSource,
        previous: Option<SourceRecord>,
        priority: Priority,
    ) -> Result<IngestOutcome> {
        let partition = src.scope.partition().to_string();

        // Ids from content hashes (occurrence disambiguates repeated text).
        let mut occurrences: HashMap<String, usize> = HashMap::new();
        let drafts: Vec<Draft> = src
            .chunks
            .iter()
            .map(|c| {
                let hash = content_hash(&c.text);
                let occ = occurrences.entry(hash.clone()).or_insert(0);
                let id = chunk_id(&partition, &src.source_urn, &hash, *occ);
                *occ += 1;
                Draft { id, hash }
            })
            .collect();

        self.merge_identities(&partition, &src.merges).await?;
        let resolved = self.resolve_keys(&src).await?;
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

        let (mut upsert_chunks, mut relocate_chunks) = (Vec::new(), Vec::new());
        let mut to_embed: Vec<String> = Vec::new();
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
                to_embed.push(embedding_text(&chunk, c.context.as_deref()));
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
                partition,
                source_urn: src.source_urn.clone(),
                upsert_chunks: upsert_chunks.into_iter().zip(vectors).collect(),
                relocate_chunks,
                delete_chunk_ids,
                nodes,
                edges,
                record: RecordUpdate::Put(record),
            })
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

    /// Removes every source of a partition whose URN starts with `prefix` (what an
    /// unregistered indexer source wrote). Returns how many sources were purged.
    pub async fn purge_prefix(
        &self,
        scope: &Scope,
        prefix: &str,
        priority: Priority,
    ) -> Result<usize> {
        validate::bounded_text("prefix", prefix, validate::MAX_URN_LEN)?;
        if prefix.len() < 4 || !prefix.contains(':') {
            return Err(KbError::Invalid(format!(
                "`{prefix}` is too broad a prefix to purge"
            )));
        }
        let mut purged = 0;
        let mut after: Option<String> = None;
        loop {
            let page = self
                .stores
                .sources
                .list_prefix(scope.partition(), prefix, after.as_deref(), 500)
                .await?;
            let Some(last) = page.last() else {
                return Ok(purged);
            };
            after = Some(last.source_urn.clone());
            // Only this scope's sources: one under the prefix that an admin moved to another
            // scope of the client belongs to that scope now (see `ensure_owner`).
            for r in page.into_iter().filter(|r| r.scope == *scope) {
                self.purge(&r.scope, &r.source_urn, priority).await?;
                purged += 1;
            }
        }
    }

    /// Fails with `scope_conflict` when `source_urn` is registered in `scope`'s partition
    /// under another scope — what an ingest or purge from `scope` would refuse. For callers
    /// that want the refusal before doing work (the queued ingest route, before enqueuing).
    pub async fn check_source_owner(&self, scope: &Scope, source_urn: &str) -> Result<()> {
        let record = self
            .stores
            .sources
            .get(scope.partition(), source_urn)
            .await?;
        ensure_owner(record.as_ref(), scope, source_urn)
    }

    /// An admin's explicit move of a source from the scope that owns it to another scope of
    /// the same client: chunks keep their ids, text and vectors (nothing is re-embedded), the
    /// graph evidence they give follows them. `from` must be the owner (`scope_conflict`
    /// otherwise; `not_found` when there is no such source). Moving between clients is
    /// refused: chunk ids, graph and aliases are per client, so that is a purge and a fresh
    /// ingest. Returns how many chunks moved.
    #[tracing::instrument(skip(self))]
    pub async fn move_source(
        &self,
        from: &Scope,
        source_urn: &str,
        to: &Scope,
        priority: Priority,
    ) -> Result<usize> {
        validate::bounded_text("sourceUrn", source_urn, validate::MAX_URN_LEN)?;
        for scope in [from, to] {
            if !scope.is_consistent() {
                return Err(KbError::Invalid(
                    "projectId and groupId need a clientId".into(),
                ));
            }
            for id in [&scope.client_id, &scope.project_id, &scope.group_id]
                .into_iter()
                .flatten()
            {
                validate::identifier("scope", id)?;
            }
        }
        if from.partition() != to.partition() {
            return Err(KbError::Invalid(
                "a source moves only between scopes of one client; to change client, purge it \
                 and ingest it again"
                    .into(),
            ));
        }
        let _permit = self.pools.acquire(priority).await;
        let partition = from.partition();
        let record = self.stores.sources.get(partition, source_urn).await?;
        let Some(record) = record else {
            return Err(KbError::NotFound {
                what: format!("source `{source_urn}`"),
            });
        };
        ensure_owner(Some(&record), from, source_urn)?;
        if from == to {
            return Ok(0);
        }
        let moved = self
            .stores
            .writer
            .move_source(partition, source_urn, to)
            .await?
            .ok_or_else(|| KbError::NotFound {
                what: format!("source `{source_urn}`"),
            })?;
        metrics::counter!("evident_source_moves_total").increment(1);
        Ok(moved)
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
        let record = self.stores.sources.get(&partition, source_urn).await?;
        // 409 rather than a 404 that would pretend the source is absent: the conflict is only
        // ever visible inside one client (URNs are per client partition), and an ingest of the
        // same URN from this scope has to refuse with the same conflict anyway, so a 404 here
        // would hide nothing — it would only make purge and ingest disagree.
        ensure_owner(record.as_ref(), scope, source_urn)?;
        let found = record.is_some();
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

/// A node for a bare key: typed by its namespace, labelled by its value.
fn plain_node(key: NodeKey, evidence: EvidenceSpec) -> PreparedNode {
    let label = if key.value().is_empty() {
        key.as_str().to_string()
    } else {
        key.value().replace('_', " ")
    };
    PreparedNode {
        node_type: key.namespace().to_string(),
        label,
        key,
        props: Map::new(),
        evidence,
    }
}

/// The graph writes of a prepared source, with keys resolved: its own nodes, a node for every
/// ref (evidenced by the chunks mentioning it) and every edge endpoint (evidenced by the
/// edge's chunks) it does not define, and its edges. Duplicates merge (props: later wins;
/// evidence: union). Self-loops say nothing and are dropped.
fn graph_writes(
    src: &PreparedSource,
    drafts: &[Draft],
    chunk_refs: &[Vec<NodeKey>],
    canon: &dyn Fn(&NodeKey) -> NodeKey,
) -> (Vec<NodeWrite>, Vec<EdgeWrite>) {
    let evidence = |i: usize| Evidence {
        chunk_id: drafts[i].id.clone(),
        scope: src.scope.clone(),
    };
    let chunks_of = |spec: &EvidenceSpec, ends: Option<(&NodeKey, &NodeKey)>| -> Vec<usize> {
        match spec {
            EvidenceSpec::Chunks(ix) => ix.clone(),
            EvidenceSpec::AllChunks => (0..drafts.len()).collect(),
            EvidenceSpec::MentioningEndpoints => {
                let hits: Vec<usize> = match ends {
                    Some((a, b)) => (0..drafts.len())
                        .filter(|i| chunk_refs[*i].contains(a) || chunk_refs[*i].contains(b))
                        .collect(),
                    None => Vec::new(),
                };
                if hits.is_empty() { vec![0] } else { hits }
            }
        }
    };
    // Evidence is kept by chunk index beside each write, so merging stays linear however
    // many chunks evidence a node (a chunk's index and id correspond one to one).
    let add_evidence = |list: &mut Vec<Evidence>, seen: &mut HashSet<usize>, ev: &[usize]| {
        for &i in ev {
            if seen.insert(i) {
                list.push(evidence(i));
            }
        }
    };
    let mut nodes: BTreeMap<NodeKey, (NodeWrite, HashSet<usize>)> = BTreeMap::new();
    let mut add_node = |key: NodeKey, typed: Option<&PreparedNode>, ev: &[usize]| {
        let (entry, seen) = nodes.entry(key.clone()).or_insert_with(|| {
            let p = plain_node(key.clone(), EvidenceSpec::AllChunks);
            let write = NodeWrite {
                key,
                node_type: p.node_type,
                label: p.label,
                props: Map::new(),
                evidence: Vec::new(),
                mention_only: true,
            };
            (write, HashSet::new())
        });
        if let Some(t) = typed {
            entry.node_type = t.node_type.clone();
            entry.label = t.label.clone();
            entry.props.extend(t.props.clone());
            entry.mention_only = false;
        }
        add_evidence(&mut entry.evidence, seen, ev);
    };
    for (i, refs) in chunk_refs.iter().enumerate() {
        for k in refs {
            add_node(k.clone(), None, &[i]);
        }
    }
    let mut edges: BTreeMap<(NodeKey, String, NodeKey), (EdgeWrite, HashSet<usize>)> =
        BTreeMap::new();
    for e in &src.edges {
        let (from, to) = (canon(&e.from), canon(&e.to));
        if from == to {
            continue;
        }
        let ev = chunks_of(&e.evidence, Some((&from, &to)));
        add_node(from.clone(), None, &ev);
        add_node(to.clone(), None, &ev);
        let (entry, seen) = edges
            .entry((from.clone(), e.edge_type.clone(), to.clone()))
            .or_insert_with(|| {
                let write = EdgeWrite {
                    from,
                    to,
                    edge_type: e.edge_type.clone(),
                    props: Map::new(),
                    evidence: Vec::new(),
                };
                (write, HashSet::new())
            });
        entry.props.extend(e.props.clone());
        add_evidence(&mut entry.evidence, seen, &ev);
    }
    // The source's own nodes last, so their types and props win over bare refs.
    for n in &src.nodes {
        add_node(canon(&n.key), Some(n), &chunks_of(&n.evidence, None));
    }
    (
        nodes.into_values().map(|(n, _)| n).collect(),
        edges.into_values().map(|(e, _)| e).collect(),
    )
}

/// What the embedder sees: title, context (section, symbol) and the chunk text.
fn embedding_text(chunk: &Chunk, context: Option<&str>) -> String {
    let mut s = String::new();
    for part in [chunk.title.as_deref(), context].into_iter().flatten() {
        s.push_str(part);
        s.push('\n');
    }
    s.push_str(&chunk.content);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Built at run time: nothing in this file looks like a live credential.
    fn aws() -> String {
        format!("AKIA{}", "Z3MHQ7RT2LQKXW5P")
    }

    fn refused_field(r: Result<impl Sized>) -> Option<String> {
        match r {
            Err(KbError::CredentialDetected { field, .. }) => Some(field),
            _ => None,
        }
    }

    fn request() -> Document {
        Document {
            client_id: Some("acme".into()),
            source_urn: "doc:1".into(),
            kind: "doc".into(),
            content: "Ordinary text.".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_document_request_is_checked_in_every_stored_string() {
        assert!(check(&request()).is_ok());
        let key = aws();
        let cases: Vec<(Document, &str)> = vec![
            (
                Document {
                    content: format!("key {key}"),
                    ..request()
                },
                "content",
            ),
            (
                Document {
                    title: Some(format!("key {key}")),
                    ..request()
                },
                "title",
            ),
            (
                Document {
                    source_urn: format!("doc:{key}"),
                    ..request()
                },
                "sourceUrn",
            ),
            (
                Document {
                    main_node_key: Some(format!("k:{key}")),
                    ..request()
                },
                "mainNodeKey",
            ),
            (
                Document {
                    relationships: Some(vec![format!("a:{key}|rel|b:c")]),
                    ..request()
                },
                "relationships",
            ),
            (
                Document {
                    metadata: json!({"a": [{"secret": "s3cr3t-Value!"}]})
                        .as_object()
                        .cloned(),
                    ..request()
                },
                "metadata.a[0].secret",
            ),
            (
                Document {
                    locator: Some(Locator::for_chunk(
                        None,
                        &format!("https://x/{key}"),
                        None,
                        0,
                        1,
                        0,
                        0,
                    )),
                    ..request()
                },
                "locator.uri",
            ),
        ];
        for (req, field) in cases {
            assert_eq!(
                refused_field(check(&req)).as_deref(),
                Some(field),
                "{req:?}"
            );
        }
    }

    fn prepared() -> PreparedSource {
        PreparedSource {
            scope: Scope::client("acme"),
            source_urn: "git:1".into(),
            kind: "git-commit".into(),
            title: None,
            fingerprint: "f1".into(),
            observed_at: None,
            chunks: vec![PreparedChunk::new(
                "Ordinary text.",
                Locator::for_chunk(None, "git:1", None, 0, 14, 0, 0),
            )],
            nodes: Vec::new(),
            edges: Vec::new(),
            aliases: Vec::new(),
            merges: Vec::new(),
        }
    }

    #[test]
    fn a_prepared_source_is_checked_in_every_stored_string() {
        assert!(check_prepared(&prepared()).is_ok());
        let key = aws();
        let node = |props: Map<String, Value>, label: &str| PreparedNode {
            key: NodeKey::from_canonical("commit:abc"),
            node_type: "commit".into(),
            label: label.into(),
            props,
            evidence: EvidenceSpec::AllChunks,
        };
        let mut cases: Vec<(PreparedSource, &str)> = Vec::new();
        let mut s = prepared();
        s.title = Some(format!("t {key}"));
        cases.push((s, "title"));
        let mut s = prepared();
        s.chunks[0].metadata = json!({"token": key})
            .as_object()
            .cloned()
            .unwrap_or_default();
        cases.push((s, "metadata.token"));
        let mut s = prepared();
        s.chunks[0].title = Some(format!("t {key}"));
        cases.push((s, "title"));
        let mut s = prepared();
        s.nodes.push(node(
            json!({"message": "password = \"hunter2hunter2\""})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            "commit abc",
        ));
        cases.push((s, "props.message"));
        let mut s = prepared();
        s.nodes.push(node(Map::new(), &format!("commit {key}")));
        cases.push((s, "nodeKey"));
        let mut s = prepared();
        s.edges.push(PreparedEdge {
            from: NodeKey::from_canonical("symbol:a"),
            to: NodeKey::from_canonical(format!("symbol:{key}")),
            edge_type: "calls".into(),
            props: Map::new(),
            evidence: EvidenceSpec::AllChunks,
        });
        cases.push((s, "edges"));
        let mut s = prepared();
        s.aliases.push((
            NodeKey::from_canonical(format!("key:{key}")),
            NodeKey::from_canonical("person:jan"),
        ));
        cases.push((s, "aliases"));
        for (src, field) in cases {
            assert_eq!(
                refused_field(check_prepared(&src)).as_deref(),
                Some(field),
                "{field}"
            );
        }
    }
}
