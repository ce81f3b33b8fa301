//! Entity profiles (seed 000's metadata layer): properties of a node, written with evidence
//! like every other write. A profile is the source `profile:{key}` (the global profile:
//! `profile:global`, on the node [`GLOBAL_PROFILE_KEY`]) of one chunk — the properties as
//! `name: value` lines, typed `infoType: user_profile` about the entity — that evidences the
//! node, whose `props.profile` holds the properties. Writing a profile again replaces it.

use evident_ai::Priority;
use evident_core::hashing::content_hash;
use evident_core::typed::{Typed, entity_key};
use evident_core::validate::{self, FieldError};
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedNode, PreparedSource, Scope, Visibility,
};
use serde_json::{Map, Value};

pub use crate::context::{GLOBAL_PROFILE_KEY, profile_urn};
use crate::{IngestOutcome, Kb, Result};

/// Most properties in one profile.
pub const MAX_PROPERTIES: usize = 200;
/// Largest profile, as JSON.
pub const MAX_PROFILE_BYTES: usize = 64 * 1024;
/// The kind of profile chunks.
pub const PROFILE_KIND: &str = "profile";

/// A profile to write: the entity (`global` for the global profile), optionally its node type
/// and label (kept from the existing node, else from the key, when absent), its properties.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileWrite {
    pub key: String,
    pub node_type: Option<String>,
    pub label: Option<String>,
    pub properties: Map<String, Value>,
}

/// The node a profile key names: `global` is the global profile's node; anything else a node
/// key normalised like every key.
pub fn profile_key(raw: &str) -> Result<NodeKey> {
    if raw.trim().eq_ignore_ascii_case("global") {
        return Ok(NodeKey::from_canonical(GLOBAL_PROFILE_KEY));
    }
    Ok(entity_key("key", raw)?)
}

/// Checks a profile's properties: at most [`MAX_PROPERTIES`], [`MAX_PROFILE_BYTES`] as JSON,
/// names 1..=64 bytes.
pub fn check_properties(props: &Map<String, Value>) -> Result<()> {
    if props.len() > MAX_PROPERTIES {
        return Err(FieldError::TooLong {
            field: "properties",
            len: props.len(),
            max: MAX_PROPERTIES,
        }
        .into());
    }
    let len = serde_json::to_string(props).map_or(usize::MAX, |s| s.len());
    if len > MAX_PROFILE_BYTES {
        return Err(FieldError::TooLong {
            field: "properties",
            len,
            max: MAX_PROFILE_BYTES,
        }
        .into());
    }
    for name in props.keys() {
        validate::bounded_text("properties", name, evident_core::typed::MAX_LABEL_LEN)?;
    }
    Ok(())
}

/// The profile's text: one `name: value` line per property, names in order.
pub fn profile_text(props: &Map<String, Value>) -> String {
    let mut names: Vec<&String> = props.keys().collect();
    names.sort();
    names
        .into_iter()
        .map(|n| match &props[n] {
            Value::String(s) => format!("{n}: {s}"),
            other => format!("{n}: {other}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The chunk and node of a profile inside a source whose URN is `urn` (the profile's own
/// source, or a structured file). `chunk_index` is the chunk's index in that source.
pub(crate) fn profile_parts(
    urn: &str,
    key: &NodeKey,
    node_type: &str,
    label: &str,
    props: &Map<String, Value>,
    chunk_index: usize,
) -> (PreparedChunk, PreparedNode) {
    let text = profile_text(props);
    let text = if text.is_empty() {
        format!("{key}: (no properties)")
    } else {
        text
    };
    let locator = Locator::Document {
        uri: urn.to_string(),
        char_start: 0,
        char_end: text.chars().count(),
        page: None,
        section: Some(format!("profile {key}")),
    };
    let mut chunk = PreparedChunk::new(text, locator);
    chunk.kind = Some(PROFILE_KIND.into());
    chunk.refs = vec![key.clone()];
    Typed {
        info_type: Some("user_profile".into()),
        entity: Some(key.clone()),
        ..Default::default()
    }
    .insert_into(&mut chunk.metadata);
    let mut node_props = Map::new();
    node_props.insert("profile".into(), Value::Object(props.clone()));
    let node = PreparedNode {
        key: key.clone(),
        node_type: node_type.to_string(),
        label: label.to_string(),
        props: node_props,
        evidence: EvidenceSpec::chunk(chunk_index),
    };
    (chunk, node)
}

impl Kb {
    /// Writes (replaces) a node's profile in `scope` (see the module documentation).
    #[tracing::instrument(skip_all, fields(key = %w.key))]
    pub async fn put_profile(
        &self,
        scope: Scope,
        w: ProfileWrite,
        priority: Priority,
    ) -> Result<IngestOutcome> {
        let key = profile_key(&w.key)?;
        check_properties(&w.properties)?;
        if let Some(t) = &w.node_type {
            validate::kind("nodeType", t)?;
        }
        if let Some(l) = &w.label {
            validate::bounded_text("label", l, 1024)?;
        }
        // Type and label the caller leaves out stay what the graph says (a profile describes
        // a node; it does not retype it).
        let existing = self
            .stores
            .graph
            .get_nodes(&Visibility::of(scope.clone()), std::slice::from_ref(&key))
            .await?
            .into_iter()
            .next();
        let node_type = w
            .node_type
            .or_else(|| existing.as_ref().map(|n| n.node_type.clone()))
            .unwrap_or_else(|| key.namespace().to_string());
        let label = w
            .label
            .or_else(|| existing.as_ref().map(|n| n.label.clone()))
            .unwrap_or_else(|| key.value().replace('_', " "));
        let urn = profile_urn(&key);
        let (chunk, node) = profile_parts(&urn, &key, &node_type, &label, &w.properties, 0);
        let fingerprint = content_hash(
            &serde_json::to_string(&(&scope, key.as_str(), &node_type, &label, &w.properties))
                .unwrap_or_default(),
        );
        let src = PreparedSource {
            scope,
            source_urn: urn,
            kind: PROFILE_KIND.into(),
            title: Some(format!("Profile of {key}")),
            fingerprint,
            observed_at: None,
            chunks: vec![chunk],
            nodes: vec![node],
            edges: Vec::new(),
            aliases: Vec::new(),
            merges: Vec::new(),
        };
        self.ingest_prepared(src, priority).await
    }
}
