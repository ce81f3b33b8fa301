//! Request bodies of the HTTP API that the knowledge base takes as domain types: each body is
//! parsed here (unknown fields refused, defaults filled in) and converted into the type
//! [`evident_kb`] takes, so the HTTP shape can change without changing the knowledge base's
//! interface or what the queue stores.

use evident_kb::{Document, RetrieveQuery, TraverseQuery};
use evident_store::Direction;
use serde::{Deserialize, Serialize};

pub mod procedures;

/// `POST /api/v1/ingest` and `POST /api/v1/ingest-queue` body: a [`Document`] as its JSON
/// reads (unknown fields refused; `clientId` required unless `global` is true). The body has
/// the document's fields exactly, so it wraps the document instead of repeating its field
/// list; should the HTTP shape ever differ, this becomes a struct of its own with a `From`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IngestRequest(pub Document);

impl From<IngestRequest> for Document {
    fn from(r: IngestRequest) -> Document {
        r.0
    }
}

scoped_request! {
    /// `POST /api/v1/retrieve` body.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct RetrieveRequest {
        pub query: String,
        #[serde(default)]
        pub kinds: Vec<String>,
        #[serde(default = "ten")]
        pub max_results: usize,
        #[serde(default = "yes")]
        pub expand_graph: bool,
        #[serde(default = "two")]
        pub max_depth: usize,
        #[serde(default)]
        pub min_score: Option<f32>,
        /// When nothing relevant is found (`evident_kb::gaps::nothing_relevant`), open a knowledge
        /// gap with the query (needs a write grant).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub record_gap: bool,
        /// Rerank the fused candidates with the feature-based reranker (title, path, symbol and
        /// heading matches, coverage, adjacent terms, BM25 decisiveness, graph evidence).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub rerank: bool,
        /// Typed-knowledge filters (seed 000): chunks of any of these knowledge types…
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub knowledge_types: Vec<evident_core::KnowledgeType>,
        /// …of any of these info types…
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub info_types: Vec<String>,
        /// …carrying any of these tags…
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub tags: Vec<String>,
        /// …about this entity (a node key).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub entity: Option<String>,
    }
}

impl RetrieveRequest {
    /// A query with the body's defaults (10 results, graph expansion 2 hops deep).
    pub fn new(query: impl Into<String>) -> Self {
        RetrieveRequest {
            query: query.into(),
            client_id: None,
            project_id: None,
            group_id: None,
            kinds: Vec::new(),
            max_results: ten(),
            expand_graph: yes(),
            max_depth: two(),
            min_score: None,
            record_gap: false,
            rerank: false,
            knowledge_types: Vec::new(),
            info_types: Vec::new(),
            tags: Vec::new(),
            entity: None,
        }
    }
}

fn ten() -> usize {
    10
}
fn yes() -> bool {
    true
}
fn two() -> usize {
    2
}
fn default_nodes() -> usize {
    200
}

impl TryFrom<RetrieveRequest> for RetrieveQuery {
    type Error = evident_kb::KbError;

    /// Fails on a malformed typed-knowledge filter (an empty info type, a key without
    /// letters), as every other field error does.
    fn try_from(r: RetrieveRequest) -> Result<RetrieveQuery, evident_kb::KbError> {
        let typed = evident_kb::typed::typed_filter(
            &r.knowledge_types,
            &r.info_types,
            &r.tags,
            r.entity.as_slice(),
        )?;
        Ok(RetrieveQuery {
            query: r.query,
            client_id: r.client_id,
            project_id: r.project_id,
            group_id: r.group_id,
            kinds: r.kinds,
            typed,
            max_results: r.max_results,
            expand_graph: r.expand_graph,
            max_depth: r.max_depth,
            min_score: r.min_score,
            rerank: r.rerank,
            tuning: Default::default(),
        })
    }
}

scoped_request! {
    /// `POST /api/v1/traverse` body: the reader's scope (its visibility) and the walk.
    #[derive(Debug, Clone, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct TraverseRequest {
        pub start_key: String,
        #[serde(default = "two")]
        pub max_depth: usize,
        #[serde(default)]
        pub direction: Direction,
        #[serde(default)]
        pub edge_types: Vec<String>,
        #[serde(default = "default_nodes")]
        pub max_nodes: usize,
    }
}

impl From<TraverseRequest> for TraverseQuery {
    fn from(r: TraverseRequest) -> TraverseQuery {
        TraverseQuery {
            start_key: r.start_key,
            max_depth: r.max_depth,
            direction: r.direction,
            edge_types: r.edge_types,
            max_nodes: r.max_nodes,
        }
    }
}

/// `POST /api/v1/queue/{taskId}/reorder` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReorderRequest {
    /// 1 = next among the waiting tasks of its priority.
    pub position: i64,
}

/// `POST /api/v1/alias/register` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AliasRegisterRequest {
    pub client_id: String,
    pub alias: String,
    /// The canonical key it stands for (none: the alias's own normalised form).
    #[serde(default)]
    pub canonical: Option<String>,
}

/// `POST /api/v1/alias/merge` body: every alias of `source` moves to `target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AliasMergeRequest {
    pub client_id: String,
    pub source: String,
    pub target: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bodies' defaults are the domain types' defaults, and unknown fields are refused.
    #[test]
    fn bodies_convert_with_the_domain_defaults() {
        let r: RetrieveRequest =
            serde_json::from_value(serde_json::json!({"query": "q", "clientId": "c"}))
                .expect("retrieve body");
        assert_eq!(
            RetrieveQuery::try_from(r).expect("valid"),
            RetrieveQuery::new("q", Some("c"))
        );
        let t: TraverseRequest =
            serde_json::from_value(serde_json::json!({"clientId": "c", "startKey": "user:a"}))
                .expect("traverse body");
        assert_eq!(TraverseQuery::from(t), TraverseQuery::new("user:a"));
        let i: IngestRequest = serde_json::from_value(serde_json::json!({
            "clientId": "c", "sourceUrn": "doc:1", "kind": "doc", "content": "x"
        }))
        .expect("ingest body");
        let d = Document::from(i.clone());
        assert_eq!(
            serde_json::to_value(&d).expect("document"),
            serde_json::to_value(&i).expect("request"),
            "a document serialises as the body it came from (the v1 queue payload)"
        );
        assert!(
            serde_json::from_value::<IngestRequest>(serde_json::json!({
                "clientId": "c", "sourceUrn": "doc:1", "kind": "doc", "content": "x", "colour": 1
            }))
            .is_err(),
            "unknown ingest fields are refused"
        );
        // What the CLI sends (every field, nulls included) reads back as what it built.
        let r = RetrieveRequest::new("q");
        let back: RetrieveRequest =
            serde_json::from_value(serde_json::to_value(&r).expect("json")).expect("body");
        assert_eq!(back, r);
        assert_eq!(
            RetrieveQuery::try_from(r).expect("valid"),
            RetrieveQuery::new("q", None)
        );
        assert!(
            serde_json::from_value::<RetrieveRequest>(
                serde_json::json!({"query": "q", "colour": 1})
            )
            .is_err()
        );
    }
}
