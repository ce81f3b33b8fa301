//! Request bodies of the HTTP API that the knowledge base takes as domain types: each body is
//! parsed here (unknown fields refused, defaults filled in) and converted into the type
//! [`evident_kb`] takes, so the HTTP shape can change without changing the knowledge base's
//! interface or what the queue stores.

use evident_core::Locator;
use evident_kb::{Document, RetrieveQuery, TraverseQuery};
use evident_store::Direction;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `POST /api/v1/ingest` and `POST /api/v1/ingest-queue` body.
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

impl From<IngestRequest> for Document {
    fn from(r: IngestRequest) -> Document {
        Document {
            client_id: r.client_id,
            project_id: r.project_id,
            group_id: r.group_id,
            global: r.global,
            source_urn: r.source_urn,
            kind: r.kind,
            content: r.content,
            title: r.title,
            metadata: r.metadata,
            observed_at: r.observed_at,
            main_node_key: r.main_node_key,
            relationships: r.relationships,
            locator: r.locator,
        }
    }
}

/// `POST /api/v1/retrieve` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetrieveRequest {
    pub query: String,
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub group_id: Option<String>,
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

impl From<RetrieveRequest> for RetrieveQuery {
    fn from(r: RetrieveRequest) -> RetrieveQuery {
        RetrieveQuery {
            query: r.query,
            client_id: r.client_id,
            project_id: r.project_id,
            group_id: r.group_id,
            kinds: r.kinds,
            max_results: r.max_results,
            expand_graph: r.expand_graph,
            max_depth: r.max_depth,
            min_score: r.min_score,
        }
    }
}

/// `POST /api/v1/traverse` body: the reader's scope (its visibility) and the walk.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TraverseRequest {
    pub client_id: Option<String>,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub group_id: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The bodies' defaults are the domain types' defaults, and unknown fields are refused.
    #[test]
    fn bodies_convert_with_the_domain_defaults() {
        let r: RetrieveRequest =
            serde_json::from_value(serde_json::json!({"query": "q", "clientId": "c"}))
                .expect("retrieve body");
        assert_eq!(RetrieveQuery::from(r), RetrieveQuery::new("q", Some("c")));
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
            serde_json::from_value::<RetrieveRequest>(
                serde_json::json!({"query": "q", "colour": 1})
            )
            .is_err()
        );
    }
}
