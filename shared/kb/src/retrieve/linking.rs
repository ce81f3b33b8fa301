//! Entity linking per query: the nodes a question names in plain words.
//!
//! Two sources, merged: the **exact links** of the query's patterns ([`super::entities`]:
//! `type:id` keys, issue keys, e-mail addresses, `@mentions`, file names, CamelCase words),
//! and the **entity index** ([`GraphStore::match_entities`](evident_store::GraphStore::match_entities):
//! node names analysed as chunks are), whose matches are scored here by
//!
//! `score = coverage² × type prior × (1 + 0.1 · ln(1 + evidence count))`
//!
//! — match quality (how much of the node's best name the question covers, IDF-weighted),
//! what kind of thing questions name (a person, a type, a file more than a commit or an
//! import target), and the node's importance (how many passages evidence it). An exact link
//! scores [`EXACT_SCORE`]. Ambiguous matches are all kept with their scores in the pack
//! (`entities`); the entity channel and expansion start from the best
//! [`MAX_LINKED_NODES`] within [`KEEP_WITHIN`] of the best score.

use evident_core::refs::NodeKey;
use evident_core::{Node, Visibility};
use serde::{Deserialize, Serialize};

use super::entities::query_entities;
use crate::{Kb, Result};

/// An entity the question names, as the pack reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkedEntity {
    pub key: NodeKey,
    #[serde(rename = "type")]
    pub node_type: String,
    pub label: String,
    /// What matched: the analysed words of the question found in the node's name, or
    /// `pattern` for an exact link.
    pub matched: String,
    pub score: f32,
}

/// The score of an exact link (a key, an issue key, an address the question spells out).
pub const EXACT_SCORE: f32 = 2.0;
/// Entities reported in the pack at most.
pub const MAX_REPORTED: usize = 8;
/// Linked nodes the entity channel and expansion start from at most.
pub const MAX_LINKED_NODES: usize = 5;
/// A match is used (not only reported) when its score is at least this share of the best.
pub const KEEP_WITHIN: f32 = 0.5;
/// Index matches asked for per question.
const MATCHES: usize = 16;

/// How likely a question naming words means a node of this type.
pub fn type_prior(node_type: &str) -> f32 {
    match node_type {
        "person" | "user" | "symbol" | "class" | "interface" | "struct" | "enum" | "trait"
        | "type" | "service" | "component" => 1.0,
        "function" | "method" => 0.9,
        "file" | "module" | "issue" | "jira" | "github" | "gitlab" | "project" | "team"
        | "concept" | "topic" | "system" => 0.9,
        "repository" | "thread" | "meeting" | "document" | "page" => 0.7,
        "branch" | "message" | "attachment" => 0.4,
        "commit" | "import" | "claim" | "assertion" => 0.3,
        _ => 0.8,
    }
}

/// The link score of an index match (see the module documentation).
pub fn link_score(coverage: f32, node: &Node) -> f32 {
    let importance = 1.0 + 0.1 * (1.0 + node.evidence_chunk_ids.len() as f32).ln();
    coverage * coverage * type_prior(&node.node_type) * importance
}

/// Merges exact links (first, [`EXACT_SCORE`]) and scored index matches into the reported
/// entities, best first, each node once; and the nodes to use: exact links, then matches
/// within [`KEEP_WITHIN`] of the best match, at most [`MAX_LINKED_NODES`] in all.
pub fn merge_links(
    exact: Vec<Node>,
    matches: Vec<(Node, String, f32)>,
) -> (Vec<Node>, Vec<LinkedEntity>) {
    let mut reported: Vec<LinkedEntity> = Vec::new();
    let mut used: Vec<Node> = Vec::new();
    for n in exact {
        reported.push(entity(&n, "pattern".into(), EXACT_SCORE));
        used.push(n);
    }
    let mut matches = matches;
    matches.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.key.cmp(&b.0.key)));
    let best = matches.first().map_or(0.0, |m| m.2);
    for (n, matched, score) in matches {
        if reported.iter().any(|e| e.key == n.key) {
            continue;
        }
        reported.push(entity(&n, matched, score));
        if score >= best * KEEP_WITHIN && used.len() < MAX_LINKED_NODES {
            used.push(n);
        }
    }
    reported.truncate(MAX_REPORTED);
    (used, reported)
}

fn entity(n: &Node, matched: String, score: f32) -> LinkedEntity {
    LinkedEntity {
        key: n.key.clone(),
        node_type: n.node_type.clone(),
        label: n.label.clone(),
        matched,
        score: (score * 1000.0).round() / 1000.0,
    }
}

impl Kb {
    /// The entities `query` names: exact links by pattern, and (with `index`) the entity
    /// index's matches scored by [`link_score`]; see [`merge_links`].
    pub(crate) async fn link_entities(
        &self,
        vis: &Visibility,
        query: &str,
        index: bool,
    ) -> Result<(Vec<Node>, Vec<LinkedEntity>)> {
        let exact = self.entity_nodes(vis, &query_entities(query)).await?;
        let matches = if index {
            self.stores
                .graph
                .match_entities(vis, query, MATCHES)
                .await?
                .into_iter()
                .map(|m| {
                    let score = link_score(m.coverage, &m.node);
                    (m.node, m.matched.join(" "), score)
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(merge_links(exact, matches))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(key: &str, t: &str, evidence: usize) -> Node {
        Node {
            key: NodeKey::from_canonical(key),
            node_type: t.into(),
            label: key.into(),
            props: Default::default(),
            evidence_chunk_ids: (0..evidence).map(|i| format!("c{i}")).collect(),
        }
    }

    #[test]
    fn people_and_types_outrank_commits_and_exact_links_come_first() {
        let person = node("user:ada", "person", 3);
        let commit = node("commit:abc", "commit", 1);
        assert!(link_score(1.0, &person) > link_score(1.0, &commit));
        // More evidence, more important, at equal match.
        assert!(link_score(1.0, &node("user:b", "person", 40)) > link_score(1.0, &person));
        let exact = node("jira:pay-7", "jira", 1);
        let matches = vec![
            (commit.clone(), "ada".into(), link_score(1.0, &commit)),
            (person.clone(), "ada".into(), link_score(1.0, &person)),
        ];
        let (used, reported) = merge_links(vec![exact], matches);
        let keys: Vec<&str> = reported.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["jira:pay-7", "user:ada", "commit:abc"]);
        assert_eq!(reported[0].matched, "pattern");
        // The commit is reported (ambiguous, with its score) but too weak to be used.
        let used: Vec<&str> = used.iter().map(|n| n.key.as_str()).collect();
        assert_eq!(used, ["jira:pay-7", "user:ada"]);
    }
}
