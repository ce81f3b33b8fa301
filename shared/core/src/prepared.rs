//! A source already cut into chunks, with its graph: what indexers (git, mail, trackers,
//! transcripts, documents) and the document ingest path hand to the knowledge base.
//!
//! Producers decide *what* a source says — its chunks with precise locators, typed nodes and
//! typed edges, and which chunks evidence each of them. The knowledge base decides *how* it
//! is stored: chunk ids, freshness, alias resolution, embedding only new chunks, atomic
//! writes. Keeping the two apart is what lets every source type share one write path.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::Locator;
use crate::refs::NodeKey;
use crate::scope::Scope;

/// Which chunks of the source evidence a node or an edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EvidenceSpec {
    /// These chunks (indexes into [`PreparedSource::chunks`]).
    Chunks(Vec<usize>),
    /// Every chunk of the source (the node the source is about).
    AllChunks,
    /// The chunks whose refs name one of the edge's endpoints (after alias resolution), or the
    /// first chunk when none does. For explicit relationships stated beside the text.
    MentioningEndpoints,
    /// Existing chunks of other sources, with their scopes: what an agent cites for a graph
    /// write. The knowledge base checks they exist, lie in the write's partition and are
    /// visible to the writer before it builds such a source (`evident_kb::evidence`).
    Cited(Vec<crate::model::Evidence>),
}

impl EvidenceSpec {
    pub fn chunk(i: usize) -> EvidenceSpec {
        EvidenceSpec::Chunks(vec![i])
    }
}

/// One chunk: its exact text and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedChunk {
    pub text: String,
    /// The chunk's kind when it differs from the source's (a commit's diff chunks are
    /// `git-diff` beside its `git-commit` message chunk).
    pub kind: Option<String>,
    /// The chunk's title when it differs from the source's.
    pub title: Option<String>,
    pub locator: Locator,
    /// Graph refs this chunk mentions; each becomes (or evidences) a node.
    pub refs: Vec<NodeKey>,
    pub metadata: Map<String, Value>,
    /// Context the embedder sees before the text (a heading path, a symbol's qualified name);
    /// not stored as content.
    pub context: Option<String>,
    /// Text embedded *instead of* the chunk's text (a knowledge piece's `embeddingText`); it
    /// takes part in the chunk's id, so changing it re-embeds the chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_text: Option<String>,
}

impl PreparedChunk {
    pub fn new(text: impl Into<String>, locator: Locator) -> PreparedChunk {
        PreparedChunk {
            text: text.into(),
            kind: None,
            title: None,
            locator,
            refs: Vec::new(),
            metadata: Map::new(),
            context: None,
            embed_text: None,
        }
    }
}

/// A typed node. Its key is resolved through the alias registry before it is written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedNode {
    pub key: NodeKey,
    pub node_type: String,
    pub label: String,
    pub props: Map<String, Value>,
    pub evidence: EvidenceSpec,
}

/// A typed edge between two keys (resolved through the alias registry before writing). Its
/// endpoints become nodes evidenced by the same chunks if the source does not define them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedEdge {
    pub from: NodeKey,
    pub to: NodeKey,
    pub edge_type: String,
    pub props: Map<String, Value>,
    pub evidence: EvidenceSpec,
}

/// Everything one source contributes, replacing what it contributed before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedSource {
    pub scope: Scope,
    pub source_urn: String,
    /// The source's kind, and the kind of every chunk that does not set its own.
    pub kind: String,
    pub title: Option<String>,
    /// Identifies everything that shapes what is stored (e.g. a hash of the input and of the
    /// extractor version): the same fingerprint again is `skipped_unchanged`, with no work.
    pub fingerprint: String,
    /// RFC 3339 time the content was observed at the source.
    pub observed_at: Option<String>,
    pub chunks: Vec<PreparedChunk>,
    pub nodes: Vec<PreparedNode>,
    pub edges: Vec<PreparedEdge>,
    /// Identities seen in this source, `(alias, canonical)`: registered when the alias is
    /// still unknown (an existing mapping, e.g. an operator's merge, is never overwritten).
    pub aliases: Vec<(NodeKey, NodeKey)>,
    /// Keys that name one identity, each group listed from the most senior key down (a mail
    /// thread: the key of its root, then of each message below it). Unlike `aliases`, an
    /// existing mapping is not kept apart but joined: whatever each key already resolves to
    /// is merged into one canonical key — the one resolved from the most senior key of the
    /// group, unless another key resolves outside the group (to an ancestor the group did not
    /// know). See `Kb::merge_identities`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merges: Vec<Vec<NodeKey>>,
}

/// Puts `value` under `key` unless it is empty (`null`, `""`), so props stay compact.
pub fn put_prop(props: &mut Map<String, Value>, key: &str, value: impl Into<Value>) {
    let v = value.into();
    let empty = matches!(&v, Value::Null) || v.as_str().is_some_and(str::is_empty);
    if !empty {
        props.insert(key.to_string(), v);
    }
}

/// Props from `(key, value)` pairs, skipping empty values.
pub fn props<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in pairs {
        put_prop(&mut m, k, v);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn props_skip_empty_values() {
        let p = props([
            ("name", Value::from("Foo")),
            ("email", Value::from("")),
            ("line", Value::from(3)),
            ("none", Value::Null),
        ]);
        assert_eq!(p.len(), 2);
        assert_eq!(p["name"], "Foo");
        assert_eq!(p["line"], 3);
    }
}
