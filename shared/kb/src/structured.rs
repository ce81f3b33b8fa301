//! The structured loader (seed 000's data loader): a knowledge file
//! `{metadata: {entities: [...], global: {...}}, pieces: [...], graph: {nodes: [...], edges: [...]}}`
//! checked item by item — an invalid item is skipped with its reason, a secret in any field
//! of an item refuses that item — and the valid ones written as **one** source (one atomic
//! write; loading the file again replaces what it wrote).
//!
//! Field names follow the seed (`piece_id`, `entity_id`, `knowledge_type`…) or camelCase.
//! Evidence: a piece is its own chunk; an entity's (and the global) profile is a chunk
//! evidencing its node; an edge is evidenced by the piece its `piece_id` (top level or in
//! `properties`) names, or by existing chunks it cites (`chunk_ids`: visible to the writer and
//! in its partition, [`crate::evidence::cited_chunks`]); a node by the pieces about it, its
//! profile and its edges — a node or edge without evidence is skipped. Edge endpoints must be nodes of the file
//! (graph nodes, entities, piece entities) or of the graph the writer sees.

use std::collections::{BTreeMap, BTreeSet};

use evident_ai::Priority;
use evident_core::hashing::content_hash;
use evident_core::refs::{self, NodeKey};
use evident_core::typed::{Typed, entity_key};
use evident_core::validate;
use evident_core::{
    EvidenceSpec, KnowledgeType, Locator, PreparedChunk, PreparedEdge, PreparedNode,
    PreparedSource, Scope, Visibility,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::profile::{GLOBAL_PROFILE_KEY, check_properties, profile_parts};
use crate::{IngestOutcome, Kb, KbError, Result};

/// Most items (pieces + entities + nodes + edges) in one file.
pub const MAX_ITEMS: usize = 5_000;
/// Largest piece content.
const MAX_PIECE_BYTES: usize = 64 * 1024;

/// A knowledge file; items stay JSON until each is checked on its own.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KnowledgeFile {
    #[serde(default)]
    pub metadata: FileMetadata,
    #[serde(default)]
    pub pieces: Vec<Value>,
    #[serde(default)]
    pub graph: FileGraph,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileMetadata {
    #[serde(default)]
    pub entities: Vec<Value>,
    /// The global profile: `{properties: {...}}` or the properties themselves.
    #[serde(default)]
    pub global: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileGraph {
    #[serde(default)]
    pub nodes: Vec<Value>,
    #[serde(default)]
    pub edges: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PieceItem {
    #[serde(alias = "piece_id")]
    piece_id: String,
    content: String,
    #[serde(default, alias = "knowledge_type")]
    knowledge_type: Option<String>,
    #[serde(default, alias = "info_type")]
    info_type: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default, alias = "entity_id", alias = "entity")]
    entity_id: Option<String>,
    #[serde(default, alias = "embedding_text")]
    embedding_text: Option<String>,
    #[serde(default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EntityItem {
    #[serde(alias = "entity_id")]
    entity_id: String,
    #[serde(alias = "entity_type")]
    entity_type: String,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    properties: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeItem {
    #[serde(alias = "node_id")]
    node_id: String,
    #[serde(alias = "node_type")]
    node_type: String,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    properties: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EdgeItem {
    #[serde(alias = "source_id")]
    source_id: String,
    #[serde(alias = "target_id")]
    target_id: String,
    #[serde(alias = "edge_type")]
    edge_type: String,
    #[serde(default)]
    properties: Map<String, Value>,
    #[serde(default, alias = "piece_id")]
    piece_id: Option<String>,
    /// Existing chunks that state the edge, when no piece of the file does.
    #[serde(default, alias = "chunk_ids")]
    chunk_ids: Vec<String>,
}

/// One skipped item: where it is in the file and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedItem {
    /// `pieces`, `metadata.entities`, `metadata.global`, `graph.nodes` or `graph.edges`.
    pub section: String,
    pub index: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadedCounts {
    pub pieces: usize,
    pub entities: usize,
    pub nodes: usize,
    pub edges: usize,
}

/// What a load wrote and skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadReport {
    pub source_urn: String,
    pub written: LoadedCounts,
    pub skipped: Vec<SkippedItem>,
    /// The write (absent when no item was valid: nothing was written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<IngestOutcome>,
}

/// A node being built: type, label, props, evidence (chunk indexes).
type NodeDraft = (String, String, Map<String, Value>, BTreeSet<usize>);

/// The file as one source, built item by item.
struct Build {
    urn: String,
    chunks: Vec<PreparedChunk>,
    /// Node key → (type, label, props, evidence chunk indexes).
    nodes: BTreeMap<NodeKey, NodeDraft>,
    edges: Vec<PreparedEdge>,
    pieces: BTreeMap<String, usize>,
    skipped: Vec<SkippedItem>,
    counts: LoadedCounts,
}

impl Build {
    fn skip(&mut self, section: &str, index: usize, id: Option<String>, reason: String) {
        self.skipped.push(SkippedItem {
            section: section.into(),
            index,
            id,
            reason,
        });
    }

    fn node(&mut self, key: &NodeKey, node_type: &str, label: &str) -> &mut NodeDraft {
        self.nodes.entry(key.clone()).or_insert_with(|| {
            (
                node_type.to_string(),
                label.to_string(),
                Map::new(),
                BTreeSet::new(),
            )
        })
    }
}

/// An item as its type, refusing it when any of its strings holds a secret.
fn parse_item<T: serde::de::DeserializeOwned>(
    section: &str,
    item: &Value,
) -> std::result::Result<T, String> {
    crate::credentials::refuse_in_json(section, item).map_err(|e| e.to_string())?;
    serde_json::from_value(item.clone()).map_err(|e| format!("malformed: {e}"))
}

fn item_id(item: &Value, fields: &[&str]) -> Option<String> {
    fields
        .iter()
        .find_map(|f| item.get(*f).and_then(Value::as_str))
        .map(str::to_string)
}

fn node_type_of(raw: &str) -> std::result::Result<String, String> {
    let t = raw.trim().to_lowercase();
    validate::kind("nodeType", &t).map_err(|e| e.to_string())?;
    Ok(t)
}

fn add_piece(b: &mut Build, item: PieceItem) -> std::result::Result<(), String> {
    validate::identifier("pieceId", &item.piece_id).map_err(|e| e.to_string())?;
    if b.pieces.contains_key(&item.piece_id) {
        return Err(format!("piece `{}` appears twice", item.piece_id));
    }
    validate::content("content", &item.content).map_err(|e| e.to_string())?;
    if item.content.len() > MAX_PIECE_BYTES {
        return Err(format!("content is longer than {MAX_PIECE_BYTES} bytes"));
    }
    let knowledge_type = item
        .knowledge_type
        .as_deref()
        .map(|k| KnowledgeType::parse("knowledgeType", k))
        .transpose()
        .map_err(|e| e.to_string())?;
    let typed = Typed::from_raw(
        knowledge_type,
        item.info_type.as_deref(),
        &item.tags,
        item.entity_id.as_deref(),
    )
    .map_err(|e| e.to_string())?;
    if let Some(e) = &item.embedding_text {
        validate::bounded_text("embeddingText", e, 16 * 1024).map_err(|e| e.to_string())?;
    }
    let kind = item.kind.unwrap_or_else(|| "piece".into());
    validate::kind("kind", &kind).map_err(|e| e.to_string())?;
    let mut chunk = PreparedChunk::new(
        item.content.clone(),
        Locator::Document {
            uri: b.urn.clone(),
            char_start: 0,
            char_end: item.content.chars().count(),
            page: None,
            section: Some(format!("piece {}", item.piece_id)),
        },
    );
    chunk.kind = Some(kind);
    chunk.title = Some(item.piece_id.clone());
    chunk.embed_text = item.embedding_text;
    typed.insert_into(&mut chunk.metadata);
    let index = b.chunks.len();
    if let Some(entity) = &typed.entity {
        chunk.refs.push(entity.clone());
        let (t, l) = (
            entity.namespace().to_string(),
            entity.value().replace('_', " "),
        );
        b.node(entity, &t, &l).3.insert(index);
    }
    b.chunks.push(chunk);
    b.pieces.insert(item.piece_id, index);
    b.counts.pieces += 1;
    Ok(())
}

fn add_profile(
    b: &mut Build,
    key: NodeKey,
    node_type: &str,
    label: &str,
    props: &Map<String, Value>,
) -> std::result::Result<(), String> {
    check_properties(props).map_err(|e| e.to_string())?;
    if b.nodes.get(&key).is_some_and(|n| !n.2.is_empty()) {
        return Err(format!("entity `{key}` appears twice"));
    }
    let index = b.chunks.len();
    let (chunk, node) = profile_parts(&b.urn, &key, node_type, label, props, index);
    b.chunks.push(chunk);
    let entry = b.node(&key, node_type, label);
    entry.0 = node.node_type;
    entry.1 = node.label;
    entry.2 = node.props;
    entry.3.insert(index);
    b.counts.entities += 1;
    Ok(())
}

/// What evidences an edge of the file.
enum EdgeEvidence {
    /// A piece of the file (its chunk index).
    Piece(usize),
    /// Existing chunks of other sources, by id (checked visible when the edge is added).
    Chunks(Vec<String>),
}

/// An edge's endpoints, canonical type, evidence and properties.
type CheckedEdge = (NodeKey, NodeKey, String, EdgeEvidence, Map<String, Value>);

fn checked_edge(b: &Build, e: EdgeItem) -> std::result::Result<CheckedEdge, String> {
    let from = entity_key("sourceId", &e.source_id).map_err(|e| e.to_string())?;
    let to = entity_key("targetId", &e.target_id).map_err(|e| e.to_string())?;
    let edge_type = refs::canonical_relation(&e.edge_type)
        .ok_or_else(|| format!("`{}` is not an edge type", e.edge_type))?;
    let piece = e.piece_id.clone().or_else(|| {
        e.properties
            .get("piece_id")
            .or(e.properties.get("pieceId"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let evidence = match piece {
        Some(piece) => EdgeEvidence::Piece(
            *b.pieces
                .get(&piece)
                .ok_or(format!("piece `{piece}` is not a valid piece of this file"))?,
        ),
        None if !e.chunk_ids.is_empty() => EdgeEvidence::Chunks(e.chunk_ids),
        None => {
            return Err(
                "no evidence: name the piece of this file that states the edge \
                 (`piece_id`) or existing chunks (`chunk_ids`)"
                    .into(),
            );
        }
    };
    Ok((from, to, edge_type, evidence, e.properties))
}

/// Every piece of the file, each checked on its own.
fn add_pieces(b: &mut Build, pieces: &[Value]) {
    for (i, item) in pieces.iter().enumerate() {
        let id = item_id(item, &["piece_id", "pieceId"]);
        if let Err(reason) = parse_item::<PieceItem>("pieces", item).and_then(|p| add_piece(b, p)) {
            b.skip("pieces", i, id, reason);
        }
    }
}

/// The entities' profiles and the global profile, each checked on its own.
fn add_metadata(b: &mut Build, metadata: &FileMetadata) {
    for (i, item) in metadata.entities.iter().enumerate() {
        let id = item_id(item, &["entity_id", "entityId"]);
        let r = parse_item::<EntityItem>("metadata.entities", item).and_then(|e| {
            let key = entity_key("entityId", &e.entity_id).map_err(|e| e.to_string())?;
            let t = node_type_of(&e.entity_type)?;
            let label = e.label.unwrap_or_else(|| key.value().replace('_', " "));
            add_profile(b, key, &t, &label, &e.properties)
        });
        if let Err(reason) = r {
            b.skip("metadata.entities", i, id, reason);
        }
    }
    if let Some(global) = &metadata.global {
        let props = match global.get("properties") {
            Some(Value::Object(p)) if global.len() == 1 => p.clone(),
            _ => global.clone(),
        };
        let r =
            crate::credentials::refuse_in_json("metadata.global", &Value::Object(props.clone()))
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    add_profile(
                        b,
                        NodeKey::from_canonical(GLOBAL_PROFILE_KEY),
                        "global",
                        "global profile",
                        &props,
                    )
                });
        if let Err(reason) = r {
            b.skip("metadata.global", 0, None, reason);
        }
    }
}

impl Kb {
    /// Loads a knowledge file as the source `source_urn` in `scope` (see the module docs).
    #[tracing::instrument(skip_all, fields(source_urn))]
    pub async fn load_structured(
        &self,
        scope: Scope,
        source_urn: &str,
        file: KnowledgeFile,
        priority: Priority,
    ) -> Result<LoadReport> {
        validate::bounded_text("sourceUrn", source_urn, validate::MAX_URN_LEN)?;
        crate::credentials::refuse_in("sourceUrn", source_urn)?;
        let total = file.pieces.len()
            + file.metadata.entities.len()
            + file.graph.nodes.len()
            + file.graph.edges.len();
        if total > MAX_ITEMS {
            return Err(validate::FieldError::TooLong {
                field: "items",
                len: total,
                max: MAX_ITEMS,
            }
            .into());
        }
        let mut b = Build {
            urn: source_urn.to_string(),
            chunks: Vec::new(),
            nodes: BTreeMap::new(),
            edges: Vec::new(),
            pieces: BTreeMap::new(),
            skipped: Vec::new(),
            counts: LoadedCounts::default(),
        };
        add_pieces(&mut b, &file.pieces);
        add_metadata(&mut b, &file.metadata);
        let declared = self.declared_nodes(&mut b, &file.graph.nodes);
        self.add_edges(&scope, &mut b, &file.graph.edges, &declared)
            .await?;
        // Declared nodes without evidence in the file are skipped: every node needs some.
        for (i, key) in declared.iter() {
            if let Some(key) = key {
                if b.nodes.get(key).is_none_or(|n| n.3.is_empty()) {
                    b.nodes.remove(key);
                    b.skip(
                        "graph.nodes",
                        *i,
                        Some(key.as_str().to_string()),
                        "no evidence: no piece, profile or edge of the file names this node".into(),
                    );
                } else {
                    b.counts.nodes += 1;
                }
            }
        }
        self.write_build(scope, b, priority).await
    }

    /// Graph nodes of the file, checked (index → key, `None` when skipped).
    fn declared_nodes(&self, b: &mut Build, nodes: &[Value]) -> Vec<(usize, Option<NodeKey>)> {
        let mut out = Vec::new();
        for (i, item) in nodes.iter().enumerate() {
            let id = item_id(item, &["node_id", "nodeId"]);
            let r = parse_item::<NodeItem>("graph.nodes", item).and_then(|n| {
                let key = entity_key("nodeId", &n.node_id).map_err(|e| e.to_string())?;
                let t = node_type_of(&n.node_type)?;
                check_properties(&n.properties).map_err(|e| e.to_string())?;
                let label = n.label.unwrap_or_else(|| key.value().replace('_', " "));
                let entry = b.node(&key, &t, &label);
                entry.0 = t;
                entry.1 = label;
                for (k, v) in n.properties {
                    entry.2.insert(k, v);
                }
                Ok(key)
            });
            match r {
                Ok(key) => out.push((i, Some(key))),
                Err(reason) => {
                    b.skip("graph.nodes", i, id, reason);
                    out.push((i, None));
                }
            }
        }
        out
    }

    /// Edges evidenced by a piece of the file, between nodes of the file or of the graph.
    async fn add_edges(
        &self,
        scope: &Scope,
        b: &mut Build,
        edges: &[Value],
        declared: &[(usize, Option<NodeKey>)],
    ) -> Result<()> {
        let vis = Visibility::of(scope.clone());
        for (i, item) in edges.iter().enumerate() {
            let id = item_id(item, &["source_id", "sourceId"]);
            let r = parse_item::<EdgeItem>("graph.edges", item).and_then(|e| checked_edge(b, e));
            let (from, to, edge_type, evidence, props) = match r {
                Ok(v) => v,
                Err(reason) => {
                    b.skip("graph.edges", i, id, reason);
                    continue;
                }
            };
            let mut missing = Vec::new();
            for key in [&from, &to] {
                let in_file = b.nodes.contains_key(key)
                    || declared.iter().any(|(_, k)| k.as_ref() == Some(key));
                if !in_file
                    && self
                        .stores
                        .graph
                        .get_nodes(&vis, std::slice::from_ref(key))
                        .await?
                        .is_empty()
                {
                    missing.push(key.as_str().to_string());
                }
            }
            if !missing.is_empty() {
                b.skip(
                    "graph.edges",
                    i,
                    id,
                    format!(
                        "endpoint {} is not a node of this file or of the graph",
                        missing.join(", ")
                    ),
                );
                continue;
            }
            let evidence = match evidence {
                EdgeEvidence::Piece(index) => {
                    for key in [&from, &to] {
                        let (t, l) = (key.namespace().to_string(), key.value().replace('_', " "));
                        b.node(key, &t, &l).3.insert(index);
                    }
                    EvidenceSpec::chunk(index)
                }
                // The write path adds cited evidence to both endpoints itself.
                EdgeEvidence::Chunks(ids) => {
                    match crate::evidence::cited_chunks(self, scope, &ids).await {
                        Ok(chunks) => EvidenceSpec::Cited(crate::evidence::evidence_of(&chunks)),
                        Err(e @ (KbError::EvidenceNotVisible { .. } | KbError::Field(_))) => {
                            b.skip("graph.edges", i, id, e.to_string());
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
            };
            b.edges.push(PreparedEdge {
                from,
                to,
                edge_type,
                props,
                evidence,
            });
            b.counts.edges += 1;
        }
        Ok(())
    }

    async fn write_build(&self, scope: Scope, b: Build, priority: Priority) -> Result<LoadReport> {
        let Build {
            urn,
            chunks,
            nodes,
            edges,
            skipped,
            counts,
            ..
        } = b;
        // Nothing of the file's own and no edge citing other sources: nothing to write. (A
        // file whose only valid items are such edges is a source without chunks, as an
        // agent's graph write is.)
        if chunks.is_empty() && edges.is_empty() {
            return Ok(LoadReport {
                source_urn: urn,
                written: LoadedCounts::default(),
                skipped,
                outcome: None,
            });
        }
        let nodes: Vec<PreparedNode> = nodes
            .into_iter()
            .map(|(key, (node_type, label, props, evidence))| PreparedNode {
                key,
                node_type,
                label,
                props,
                evidence: EvidenceSpec::Chunks(evidence.into_iter().collect()),
            })
            .collect();
        let fingerprint = content_hash(
            &serde_json::to_string(&(&scope, &chunks, &nodes, &edges))
                .map_err(|e| KbError::Invalid(e.to_string()))?,
        );
        let src = PreparedSource {
            scope,
            source_urn: urn.clone(),
            kind: "knowledge-file".into(),
            title: None,
            fingerprint,
            observed_at: None,
            chunks,
            nodes,
            edges,
            aliases: Vec::new(),
            merges: Vec::new(),
        };
        let outcome = self.ingest_prepared(src, priority).await?;
        Ok(LoadReport {
            source_urn: urn,
            written: counts,
            skipped,
            outcome: Some(outcome),
        })
    }
}
