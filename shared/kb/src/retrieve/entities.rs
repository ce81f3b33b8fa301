//! Step 2: the entities a query names, the nodes they resolve to, and the chunks
//! evidencing those nodes (the `entity` channel).

use std::sync::LazyLock;

use evident_core::refs::{self, NodeKey};
use evident_core::{Node, Visibility};
use evident_store::ScoredId;

use super::MAX_ENTITY_CHUNKS;
use crate::{Kb, Result};

static ISSUE_KEY: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"\b([A-Z][A-Z0-9]{1,9})-(\d{1,7})\b").expect("static regex")
});
static EMAIL: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b").expect("static regex")
});
static FILE_NAME: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"\b[\w./-]*\w\.(rs|py|kt|java|ts|tsx|js|jsx|go|md|toml|yaml|yml|json|c|h|cpp|rb|sh)\b",
    )
    .expect("static regex")
});
static CAMEL: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b").expect("static regex")
});
static MENTION: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"(?:^|\s)@([A-Za-z0-9_.-]{2,64})").expect("static regex"));

/// What the query names: exact keys to look up, and bare values to search node keys for.
#[derive(Debug, Default, PartialEq)]
pub struct QueryEntities {
    pub keys: Vec<NodeKey>,
    pub values: Vec<String>,
}

/// Finds entity mentions in a query (reference-behaviour §6).
pub fn query_entities(query: &str) -> QueryEntities {
    let mut out = QueryEntities::default();
    let push_key = |k: Option<NodeKey>, out: &mut QueryEntities| {
        if let Some(k) = k
            && !out.keys.contains(&k)
        {
            out.keys.push(k);
        }
    };
    for r in refs::extract_query_refs(query) {
        push_key(Some(r.key), &mut out);
    }
    for m in ISSUE_KEY.find_iter(query).filter(|m| {
        !evident_core::commits::NOT_ISSUE_PREFIXES
            .contains(&m.as_str().split('-').next().unwrap_or(""))
    }) {
        push_key(
            refs::normalize_ref(&format!("jira:{}", m.as_str())),
            &mut out,
        );
    }
    for m in EMAIL.find_iter(query) {
        push_key(
            refs::normalize_ref(&format!("user:{}", m.as_str())),
            &mut out,
        );
    }
    for c in MENTION.captures_iter(query) {
        push_key(refs::normalize_ref(&format!("user:{}", &c[1])), &mut out);
    }
    for m in FILE_NAME.find_iter(query).chain(CAMEL.find_iter(query)) {
        if let Some(k) = refs::normalize_ref(m.as_str()) {
            let v = k.value().to_string();
            if !v.is_empty() && !out.values.contains(&v) {
                out.values.push(v);
            }
        }
    }
    out
}

/// Whether a node found by searching for the bare value `v` is the one the query names:
/// its value is `v`, or ends with `v` as its last path or key segment.
fn names_value(node: &Node, v: &str) -> bool {
    let value = node.key.value();
    value == v || value.ends_with(&format!("_{v}")) || value.ends_with(&format!("/{v}"))
}

/// The entity channel: the evidence chunks of the named nodes, in node order, each once,
/// at most [`MAX_ENTITY_CHUNKS`] per node.
pub fn entity_hits(nodes: &[Node]) -> Vec<ScoredId> {
    let mut hits: Vec<ScoredId> = Vec::new();
    for n in nodes {
        for id in n.evidence_chunk_ids.iter().take(MAX_ENTITY_CHUNKS) {
            if !hits.iter().any(|h| &h.chunk_id == id) {
                hits.push(ScoredId {
                    chunk_id: id.clone(),
                    score: 1.0,
                });
            }
        }
    }
    hits
}

impl Kb {
    /// The visible nodes the query's entities name: exact keys through the alias registry,
    /// bare values by a node search (three best per value) kept when they match exactly.
    pub(crate) async fn entity_nodes(
        &self,
        vis: &Visibility,
        entities: &QueryEntities,
    ) -> Result<Vec<Node>> {
        let client = vis.reader().partition().to_string();
        let mut nodes: Vec<Node> = Vec::new();
        if !entities.keys.is_empty() {
            let keys = self.stores.aliases.resolve(&client, &entities.keys).await?;
            nodes.extend(self.stores.graph.get_nodes(vis, &keys).await?);
        }
        for v in &entities.values {
            for n in self.stores.graph.search_nodes(vis, v, None, 3).await? {
                if names_value(&n, v) && !nodes.iter().any(|x| x.key == n.key) {
                    nodes.push(n);
                }
            }
        }
        Ok(nodes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_entities_finds_issue_keys_emails_files_and_camel_case() {
        let e = query_entities(
            "Why did ABC-123 break parser.rs for jan.novak@example.com in QualificationQueue? see jira:XY-9",
        );
        let keys: Vec<&str> = e.keys.iter().map(NodeKey::as_str).collect();
        assert!(keys.contains(&"jira:abc-123"), "{keys:?}");
        assert!(keys.contains(&"jira:xy-9"), "{keys:?}");
        assert!(keys.contains(&"user:jan_novak_example_com"), "{keys:?}");
        assert!(e.values.iter().any(|v| v == "parser_rs"), "{:?}", e.values);
        assert!(
            e.values.iter().any(|v| v == "qualificationqueue"),
            "{:?}",
            e.values
        );
        let none = query_entities("what is UTF-8 good for");
        assert!(
            none.keys.iter().all(|k| k.as_str() != "jira:utf-8"),
            "UTF-8 is no issue key: {none:?}"
        );
    }
}
