//! Checks before anything is written: a document or prepared source validated (every stored
//! string through the secret scan), a document cut into a prepared source, ownership.

use super::*;

/// A validated request, ready to process.
pub(crate) struct Checked {
    pub(crate) scope: Scope,
    pub(super) main: Option<NodeKey>,
    pub(super) source_hash: String,
    /// The typed-knowledge labels every chunk carries (seed 000).
    pub(super) typed: Typed,
}

pub(crate) fn check(req: &Document) -> Result<Checked> {
    let scope = crate::write_scope(
        req.client_id.as_deref(),
        req.project_id.as_deref(),
        req.group_id.as_deref(),
        req.global,
    )?;
    validate::bounded_text("sourceUrn", &req.source_urn, validate::MAX_URN_LEN)?;
    validate::kind("kind", &req.kind)?;
    validate::content("content", &req.content)?;
    if let Some(t) = &req.title {
        validate::bounded_text("title", t, 1024)?;
    }
    if let Some(m) = &req.metadata {
        check_metadata(m)?;
    }
    if let Some(at) = &req.observed_at {
        humantime::parse_rfc3339_weak(at).map_err(|e| validate::FieldError::Invalid {
            field: "observedAt",
            reason: format!("not an RFC 3339 time: {e}"),
        })?;
    }
    let main = main_key(req.main_node_key.as_deref())?;
    let typed = Typed::from_raw(
        req.knowledge_type,
        req.info_type.as_deref(),
        &req.tags,
        req.entity.as_deref(),
    )?;
    if let Some(e) = &req.embedding_text {
        validate::bounded_text("embeddingText", e, MAX_EMBEDDING_TEXT)?;
        if req.content.len() > MAX_PIECE_BYTES {
            return Err(validate::FieldError::TooLong {
                field: "content",
                len: req.content.len(),
                max: MAX_PIECE_BYTES,
            }
            .into());
        }
    }
    let rels = req.relationships.as_deref().unwrap_or_default();
    check_relationships(rels)?;
    scan_document(req, rels)?;
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
        // Typed knowledge joined the fingerprint later: absent, it adds nothing, so documents
        // ingested before keep their fingerprint (and are not re-written).
        (!typed.is_empty() || req.embedding_text.is_some())
            .then_some((&typed, &req.embedding_text)),
    ))
    .map_err(|e| KbError::Invalid(format!("unserialisable request: {e}")))?;
    Ok(Checked {
        scope,
        main,
        source_hash: content_hash(&fingerprint),
        typed,
    })
}

/// A document's free metadata: bounded, and without the key typed knowledge is kept under.
fn check_metadata(m: &Map<String, Value>) -> Result<()> {
    if m.contains_key(evident_core::typed::METADATA_KEY) {
        return Err(validate::FieldError::Invalid {
            field: "metadata",
            reason: format!(
                "`{}` is reserved for typed knowledge (use knowledgeType, infoType, tags, entity)",
                evident_core::typed::METADATA_KEY
            ),
        }
        .into());
    }
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
    Ok(())
}

/// The document's main node key, normalised like every ref.
fn main_key(raw: Option<&str>) -> Result<Option<NodeKey>> {
    let Some(raw) = raw else { return Ok(None) };
    validate::identifier("mainNodeKey", raw)?;
    let key = refs::normalize_ref(raw).ok_or(validate::FieldError::Invalid {
        field: "mainNodeKey",
        reason: "has no letters or digits".into(),
    })?;
    Ok(Some(key))
}

fn check_relationships(rels: &[String]) -> Result<()> {
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
    Ok(())
}

/// Every string of a document that would be stored, through the secret scan (one rule:
/// `credentials`).
fn scan_document(req: &Document, rels: &[String]) -> Result<()> {
    let mut scan = crate::credentials::Scan::default();
    scan.text("content", &req.content)?;
    scan.text("sourceUrn", &req.source_urn)?;
    scan.all("title", req.title.as_deref())?;
    scan.all("mainNodeKey", req.main_node_key.as_deref())?;
    scan.all("relationships", rels.iter().map(String::as_str))?;
    scan.all("infoType", req.info_type.as_deref())?;
    scan.all("tags", req.tags.iter().map(String::as_str))?;
    scan.all("entity", req.entity.as_deref())?;
    scan.all("embeddingText", req.embedding_text.as_deref())?;
    if let Some(m) = &req.metadata {
        scan.map("metadata", m)?;
    }
    if let Some(l) = &req.locator {
        scan.serialised("locator", l)?;
    }
    Ok(())
}

pub(super) fn count_newlines(s: &str) -> usize {
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
    // A piece with its own embedding text is one unit: kept whole, one chunk.
    let pieces = match &req.embedding_text {
        Some(_) => whole(&req.content),
        None => chunk_text(&req.content, chunking),
    };
    if pieces.is_empty() {
        return Err(validate::FieldError::Empty { field: "content" }.into());
    }
    let chunks = document_chunks(req, checked, &pieces);

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
        .map(|main| main_node(req, main))
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

/// The chunks of a document's pieces: locators (line numbers counted once over the document,
/// chunks being in order), refs, metadata with the typed labels, the entity evidenced.
fn document_chunks(
    req: &Document,
    checked: &Checked,
    pieces: &[evident_core::chunking::TextChunk],
) -> Vec<PreparedChunk> {
    let (mut counted_to, mut lines_so_far) = (0, 0);
    pieces
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
            checked.typed.insert_into(&mut chunk.metadata);
            // The entity's node is evidenced by the piece: the piece is found from the node.
            if let Some(entity) = &checked.typed.entity
                && !chunk.refs.contains(entity)
            {
                chunk.refs.push(entity.clone());
            }
            chunk.embed_text = req.embedding_text.clone();
            chunk.context = section;
            chunk
        })
        .collect()
}

/// The document's main node, evidenced by every chunk, labelled by the title.
fn main_node(req: &Document, main: &NodeKey) -> PreparedNode {
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
}

pub(super) fn relationship_edge(rel: Relationship, evidence: EvidenceSpec) -> PreparedEdge {
    PreparedEdge {
        from: rel.from,
        to: rel.to,
        edge_type: rel.edge_type,
        props: Map::new(),
        evidence,
    }
}

/// Largest number of chunks one prepared source may carry.
pub(super) const MAX_PREPARED_CHUNKS: usize = 100_000;
/// Most keys a source may merge into identities (a mail thread: a message's ancestry and itself).
const MAX_MERGED_KEYS: usize = 4_096;

/// Validates what a producer prepared, with the same limits as a document ingest.
pub(crate) fn check_prepared(src: &PreparedSource) -> Result<()> {
    check_prepared_header(src)?;
    let mut scan = crate::credentials::Scan::default();
    check_prepared_chunks(src, &mut scan)?;
    check_prepared_graph(src)?;
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

/// A prepared source's scope, names and that it carries something evidenced.
fn check_prepared_header(src: &PreparedSource) -> Result<()> {
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
    // A source without chunks of its own is an agent's assertion citing other sources'
    // chunks: every node and edge it writes must cite some (else nothing would evidence them).
    let cites = |spec: &EvidenceSpec| matches!(spec, EvidenceSpec::Cited(c) if !c.is_empty());
    if src.chunks.is_empty()
        && (src.nodes.is_empty() && src.edges.is_empty()
            || !src.nodes.iter().all(|n| cites(&n.evidence))
            || !src.edges.iter().all(|e| cites(&e.evidence)))
    {
        return Err(validate::FieldError::Empty { field: "chunks" }.into());
    }
    Ok(())
}

/// A prepared source's chunks: bounded in number, valid, every string through the scan.
fn check_prepared_chunks(src: &PreparedSource, scan: &mut crate::credentials::Scan) -> Result<()> {
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
        scan.all("embeddingText", c.embed_text.as_deref())?;
        scan.map("metadata", &c.metadata)?;
        scan.serialised("locator", &c.locator)?;
        scan.all("refs", c.refs.iter().map(NodeKey::as_str))?;
    }
    Ok(())
}

/// A prepared source's nodes and edges: valid keys and types, evidence that exists.
fn check_prepared_graph(src: &PreparedSource) -> Result<()> {
    let in_range = |spec: &EvidenceSpec| match spec {
        EvidenceSpec::Chunks(ix) => !ix.is_empty() && ix.iter().all(|i| *i < src.chunks.len()),
        // Cited chunks must lie in the source's partition: their deletion removes evidence
        // partition by partition.
        EvidenceSpec::Cited(c) => {
            !c.is_empty()
                && c.iter()
                    .all(|e| e.scope.partition() == src.scope.partition())
        }
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
    Ok(())
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
pub(super) fn unchanged(
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

/// Longest `embeddingText` accepted.
const MAX_EMBEDDING_TEXT: usize = 16 * 1024;
/// Largest content of a piece with its own embedding text (kept whole as one chunk).
const MAX_PIECE_BYTES: usize = 64 * 1024;

/// The whole content as the one piece of a document (no cutting).
fn whole(content: &str) -> Vec<evident_core::chunking::TextChunk> {
    vec![evident_core::chunking::TextChunk {
        text: content.to_string(),
        byte_start: 0,
        byte_end: content.len(),
        char_start: 0,
        char_end: content.chars().count(),
        heading_path: Vec::new(),
        ordinal: 0,
    }]
}
