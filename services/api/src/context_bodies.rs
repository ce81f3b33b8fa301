//! Request bodies of prompt context, profiles and the structured loader, converted into the
//! knowledge base's domain types and shared with the CLI (which sends them).

use std::collections::BTreeMap;

use evident_core::KnowledgeType;
use evident_kb::context::{ContextQuery, Layer, SectionSpec};
use evident_kb::profile::ProfileWrite;
use evident_kb::structured::{FileGraph, FileMetadata, KnowledgeFile};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

scoped_request! {
    /// `POST /api/v1/context` body.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ContextRequest {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub query: Option<String>,
        /// The entity (node key) the prompt is for, e.g. `user:alice`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub active_entity: Option<String>,
        /// Section name → the info types routed into it (default: its name) and its budget.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub sections: Option<BTreeMap<String, SectionSpec>>,
        /// Layers to draw from (default: all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub include: Option<Vec<Layer>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub max_depth: Option<usize>,
        /// Narrow the query's piece search.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub knowledge_types: Vec<KnowledgeType>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub tags: Vec<String>,
        /// When the query finds nothing relevant (`evident_kb::gaps::nothing_relevant`), open a
        /// knowledge gap with it (needs a write grant), as `retrieve` does.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub record_gap: bool,
    }
}

impl ContextRequest {
    /// The domain query, the session log read at `now_ms`.
    pub fn into_query(self, now_ms: i64) -> ContextQuery {
        ContextQuery {
            query: self.query,
            active_entity: self.active_entity,
            client_id: self.client_id,
            project_id: self.project_id,
            group_id: self.group_id,
            sections: self.sections,
            include: self.include,
            max_depth: self.max_depth,
            knowledge_types: self.knowledge_types,
            tags: self.tags,
            now_ms,
        }
    }
}

scoped_request! {
    global:
    /// `PUT /api/v1/graph/node/{key}/profile` body (`{key}` = `global`: the global profile).
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ProfileRequest {
        /// Global data (visible to every reader); excludes `clientId`.
        #[serde(default)]
        pub global: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub node_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub label: Option<String>,
        pub properties: Map<String, Value>,
    }
}

impl ProfileRequest {
    pub fn into_write(self, key: String) -> ProfileWrite {
        ProfileWrite {
            key,
            node_type: self.node_type,
            label: self.label,
            properties: self.properties,
        }
    }
}

scoped_request! {
    global:
    /// `POST /api/v1/ingest/structured` body: the scope, the source URN the file is written as
    /// (loading again under it replaces it), and the file's three sections.
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct StructuredRequest {
        #[serde(default)]
        pub global: bool,
        pub source_urn: String,
        #[serde(default)]
        pub metadata: FileMetadata,
        #[serde(default)]
        pub pieces: Vec<Value>,
        #[serde(default)]
        pub graph: FileGraph,
    }
}

impl StructuredRequest {
    pub fn file(self) -> KnowledgeFile {
        KnowledgeFile {
            metadata: self.metadata,
            pieces: self.pieces,
            graph: self.graph,
        }
    }
}
