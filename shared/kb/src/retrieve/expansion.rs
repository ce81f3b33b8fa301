//! Step 3: graph expansion from the refs of the top fused hits and the named entities;
//! the evidence of the edges kept is the `graph` channel, in the edges' rank (relevant, then
//! nearer, first).
//!
//! Not every edge reached earns its place: a seed file's twenty `contains` / `imports`
//! edges say nothing about most questions. So the edges reached are ranked
//! ([`rank_edges`]) by their relevance to the query — the query's words found in the far
//! endpoint's label and key or in the edge type (`affect` ~ `affects`), an endpoint the query
//! names, a commit for a question about change — then by distance; edges without evidence
//! are left out, unrelated ones are kept at most [`UNRELATED_PER_GROUP`] per (near node,
//! edge type), and at most [`MAX_PACK_EDGES`] in all. The pack's nodes are the kept edges'
//! endpoints and the seeds.

use std::collections::{HashMap, HashSet};

use evident_core::refs::NodeKey;
use evident_core::{Chunk, Edge, Node, Visibility};
use evident_store::{EdgeKey, ScoredId, Subgraph, TraverseOptions};

use super::links::Links;
use super::phrase::words;
use super::{MAX_EXPANDED_NODES, MAX_GRAPH_CHUNKS, PackGraph};
use crate::{Kb, Result};

/// What expansion found: the subgraph for the pack and the graph channel's hits.
#[derive(Debug, Default)]
pub struct Expansion {
    pub graph: PackGraph,
    pub hits: Vec<ScoredId>,
}

/// The nodes to expand from: the named entities first, then the nodes the seed chunks
/// evidence as facts (back-links, [`Links::fact_nodes_of`](super::links::Links::fact_nodes_of)),
/// then the refs of the seed chunks, each once.
pub fn expansion_seeds<'a>(
    entity_nodes: &[Node],
    evidenced: impl IntoIterator<Item = &'a NodeKey>,
    seed_chunks: &[Chunk],
) -> Vec<NodeKey> {
    let mut seeds: Vec<NodeKey> = entity_nodes.iter().map(|n| n.key.clone()).collect();
    // At most MAX_EVIDENCED_SEEDS: the passages' facts are seeds, not a budget of their own.
    let evidenced = evidenced.into_iter().take(MAX_EVIDENCED_SEEDS);
    for k in evidenced {
        if !seeds.contains(k) {
            seeds.push(k.clone());
        }
    }
    for chunk in seed_chunks {
        for r in &chunk.graph_refs {
            if !seeds.contains(r) {
                seeds.push(r.clone());
            }
        }
    }
    seeds
}

/// Nodes evidenced by the top passages taken as expansion seeds at most.
const MAX_EVIDENCED_SEEDS: usize = 12;

/// Edges kept in the pack at most.
pub const MAX_PACK_EDGES: usize = 20;
/// Edges unrelated to the query kept per (near endpoint, edge type): enough to show the
/// neighbourhood, never a file's whole fan-out.
pub const UNRELATED_PER_GROUP: usize = 2;

/// Query words too common to relate an edge to the query.
const IGNORED: &[&str] = &[
    "the", "and", "for", "how", "what", "who", "why", "when", "where", "which", "does", "did",
    "with", "from", "this", "that", "are", "was", "were", "has", "have", "into", "about",
];

/// The words of a label or key, camel-case parts included (`RetrieveQuery` → `retrieve`,
/// `query`, `retrievequery`).
fn label_words(text: &str) -> Vec<String> {
    let mut spaced = String::with_capacity(text.len() + 8);
    let mut prev: Option<char> = None;
    for c in text.chars() {
        if c.is_uppercase() && prev.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) {
            spaced.push(' ');
        }
        spaced.push(c);
        prev = Some(c);
    }
    let mut out = words(&spaced);
    out.extend(words(text));
    out
}

/// Two words match when equal, or when the shorter (at least four letters) starts the
/// longer: `affect` ~ `affects`, `retriev` ~ `retrieval`.
fn matches(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short == long || (short.len() >= 4 && long.starts_with(short))
}

/// What relates an edge to the query: its words, the nodes it names, whether it asks about
/// change.
#[derive(Debug, Default, Clone)]
pub struct EdgeRelevance {
    terms: Vec<String>,
    named: HashSet<NodeKey>,
    change: bool,
    /// Edges the top passages evidence (back-links): the facts the answer rests on.
    evidenced: HashSet<EdgeKey>,
}

impl EdgeRelevance {
    pub fn new(query: &str, named: &[Node], change: bool) -> Self {
        let mut terms: Vec<String> = Vec::new();
        for w in words(query) {
            if w.len() >= 3 && !IGNORED.contains(&w.as_str()) && !terms.contains(&w) {
                terms.push(w);
            }
        }
        EdgeRelevance {
            terms,
            named: named.iter().map(|n| n.key.clone()).collect(),
            change,
            evidenced: HashSet::new(),
        }
    }

    /// The same relevance, with `edges` (evidenced by the top passages) counted related.
    pub fn with_evidenced(mut self, edges: impl IntoIterator<Item = EdgeKey>) -> Self {
        self.evidenced.extend(edges);
        self
    }

    /// How related `edge` is to the query: query words in the far endpoint (`far`, its
    /// label and key) or the edge type, +1 for an endpoint the query names, +1 for a commit
    /// when the query asks about change.
    fn score(&self, edge: &Edge, far: &[&Node]) -> usize {
        let mut have: Vec<String> = words(&edge.edge_type);
        for n in far {
            have.extend(label_words(&n.label));
            have.extend(label_words(n.key.as_str()));
        }
        let overlap = self
            .terms
            .iter()
            .filter(|t| have.iter().any(|h| matches(t, h)))
            .count();
        let named = [&edge.from, &edge.to]
            .iter()
            .any(|k| self.named.contains(*k));
        let commit = self.change
            && [&edge.from, &edge.to]
                .iter()
                .any(|k| k.as_str().starts_with("commit:"));
        // A code chunk evidences its file's whole skeleton: only the facts a passage
        // evidences (agent-written, extracted, semantic, history) earn the bonus.
        let evidenced = !self.evidenced.is_empty()
            && !super::links::is_skeleton(&edge.edge_type)
            && self.evidenced.contains(&EdgeKey {
                from: edge.from.clone(),
                edge_type: edge.edge_type.clone(),
                to: edge.to.clone(),
            });
        overlap + usize::from(named) + usize::from(commit) + 2 * usize::from(evidenced)
    }
}

/// The edges worth a place in the pack, best first (see the module documentation).
pub fn rank_edges(nodes: &[(Node, usize)], edges: Vec<Edge>, rel: &EdgeRelevance) -> Vec<Edge> {
    let by_key: HashMap<&NodeKey, (&Node, usize)> =
        nodes.iter().map(|(n, d)| (&n.key, (n, *d))).collect();
    let depth = |k: &NodeKey| by_key.get(k).map_or(0, |(_, d)| *d);
    let mut scored: Vec<(usize, usize, usize, Edge)> = edges
        .into_iter()
        .enumerate()
        .filter(|(_, e)| !e.evidence_chunk_ids.is_empty())
        .map(|(i, e)| {
            let (df, dt) = (depth(&e.from), depth(&e.to));
            // The far endpoint is the one farther from the seeds; both when level.
            let far: Vec<&Node> = [(&e.from, df >= dt), (&e.to, dt >= df)]
                .into_iter()
                .filter(|(_, far)| *far)
                .filter_map(|(k, _)| by_key.get(k).map(|(n, _)| *n))
                .collect();
            (rel.score(&e, &far), df.max(dt), i, e)
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut groups: HashMap<(NodeKey, String), usize> = HashMap::new();
    let mut kept = Vec::new();
    for (score, _, _, e) in scored {
        if kept.len() >= MAX_PACK_EDGES {
            break;
        }
        if score == 0 {
            let near = if depth(&e.from) <= depth(&e.to) {
                &e.from
            } else {
                &e.to
            };
            let n = groups
                .entry((near.clone(), e.edge_type.clone()))
                .or_insert(0);
            if *n >= UNRELATED_PER_GROUP {
                continue;
            }
            *n += 1;
        }
        kept.push(e);
    }
    kept
}

/// The graph channel: evidence chunks of the kept edges in their rank ([`rank_edges`]:
/// relevance to the query, then distance), each once, at most [`MAX_GRAPH_CHUNKS`].
pub fn graph_hits(edges: &[Edge]) -> Vec<ScoredId> {
    let mut hits: Vec<ScoredId> = Vec::new();
    for e in edges {
        for id in &e.evidence_chunk_ids {
            if !hits.iter().any(|h| &h.chunk_id == id) {
                hits.push(ScoredId {
                    chunk_id: id.clone(),
                    score: 1.0,
                });
                if hits.len() >= MAX_GRAPH_CHUNKS {
                    return hits;
                }
            }
        }
    }
    hits
}

impl Kb {
    /// Expands `max_depth` hops in any direction from the entities and the refs of the
    /// `seed_ids` chunks (the top fused hits) and the nodes they evidence (`links`), keeping the edges [`rank_edges`] keeps for
    /// `rel`.
    pub(crate) async fn expand(
        &self,
        vis: &Visibility,
        entity_nodes: &[Node],
        seed_ids: &[String],
        links: &Links,
        max_depth: usize,
        rel: &EdgeRelevance,
    ) -> Result<Expansion> {
        let seed_chunks = self.stores.chunks.get(vis, seed_ids).await?;
        let seeds = expansion_seeds(entity_nodes, links.fact_nodes_of(seed_ids), &seed_chunks);
        if seeds.is_empty() {
            return Ok(Expansion::default());
        }
        let opts = TraverseOptions {
            max_depth,
            max_nodes: MAX_EXPANDED_NODES,
            ..Default::default()
        };
        let Subgraph { nodes, edges } = self.stores.graph.traverse(vis, &seeds, &opts).await?;
        let edges = rank_edges(&nodes, edges, rel);
        let hits = graph_hits(&edges);
        let endpoints: HashSet<&NodeKey> = edges.iter().flat_map(|e| [&e.from, &e.to]).collect();
        let nodes = nodes
            .iter()
            .filter(|(n, d)| *d == 0 || endpoints.contains(&n.key))
            .map(|(n, _)| n.clone())
            .collect();
        Ok(Expansion {
            graph: PackGraph { nodes, edges },
            hits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(key: &str, label: &str) -> Node {
        Node {
            key: NodeKey::from_canonical(key),
            node_type: key.split(':').next().unwrap_or("").into(),
            label: label.into(),
            props: Default::default(),
            evidence_chunk_ids: vec!["c0".into()],
        }
    }

    fn edge(from: &str, t: &str, to: &str, evidence: &[&str]) -> Edge {
        Edge {
            from: NodeKey::from_canonical(from),
            to: NodeKey::from_canonical(to),
            edge_type: t.into(),
            props: Default::default(),
            evidence_chunk_ids: evidence.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// A file with twenty imports and one method the question is about.
    fn fan_out() -> (Vec<(Node, usize)>, Vec<Edge>) {
        let mut nodes = vec![(node("file:r/src/Cart.java", "src/Cart.java"), 0)];
        let mut edges = Vec::new();
        for i in 0..20 {
            let k = format!("import:r/lib.Module{i}");
            nodes.push((node(&k, &format!("lib.Module{i}")), 1));
            edges.push(edge("file:r/src/Cart.java", "imports", &k, &["c0"]));
        }
        nodes.push((node("symbol:r/Cart.totalPrice()", "totalPrice"), 1));
        edges.push(edge(
            "file:r/src/Cart.java",
            "contains",
            "symbol:r/Cart.totalPrice()",
            &["c1"],
        ));
        nodes.push((node("symbol:r/Cart.clear()", "clear"), 1));
        edges.push(edge(
            "file:r/src/Cart.java",
            "contains",
            "symbol:r/Cart.clear()",
            &[],
        ));
        (nodes, edges)
    }

    #[test]
    fn a_question_about_x_keeps_xs_edge_first_and_not_the_files_whole_fan_out() {
        let (nodes, edges) = fan_out();
        let rel = EdgeRelevance::new("how is the cart total price computed", &[], false);
        let kept = rank_edges(&nodes, edges, &rel);
        assert_eq!(kept[0].to.as_str(), "symbol:r/Cart.totalPrice()");
        let imports = kept.iter().filter(|e| e.edge_type == "imports").count();
        assert_eq!(imports, UNRELATED_PER_GROUP);
        // The graph channel follows the ranking: the method's evidence first.
        assert_eq!(graph_hits(&kept)[0].chunk_id, "c1");
        // An edge without evidence adds none.
        assert!(
            kept.iter()
                .all(|e| e.to.as_str() != "symbol:r/Cart.clear()")
        );
    }

    #[test]
    fn named_nodes_edge_types_and_commits_for_change_questions_relate_edges() {
        let nodes = [
            (node("jira:pay-7", "PAY-7 checkout failure"), 0),
            (node("component:billing", "billing"), 1),
            (node("commit:abc", "abc Fix"), 0),
            (node("user:ada", "Ada"), 1),
        ];
        let affects = edge("jira:pay-7", "affects", "component:billing", &["c1"]);
        let authored = edge("commit:abc", "authored_by", "user:ada", &["c2"]);
        let rel = EdgeRelevance::new("what did the failure affect", &[], false);
        assert_eq!(rel.score(&affects, &[&nodes[1].0]), 1);
        assert_eq!(rel.score(&authored, &[&nodes[3].0]), 0);
        let rel = EdgeRelevance::new("who changed it", &[], true);
        assert_eq!(rel.score(&authored, &[&nodes[3].0]), 1);
        let rel = EdgeRelevance::new("tell me", &[nodes[1].0.clone()], false);
        assert_eq!(rel.score(&affects, &[&nodes[1].0]), 1);
    }

    #[test]
    fn at_most_the_cap_of_edges_is_kept() {
        let mut nodes = vec![(node("file:r/a", "a"), 0)];
        let mut edges = Vec::new();
        for i in 0..50 {
            let k = format!("symbol:r/price{i}");
            nodes.push((node(&k, &format!("price{i}")), 1));
            edges.push(edge("file:r/a", "contains", &k, &["c"]));
        }
        let rel = EdgeRelevance::new("price", &[], false);
        assert_eq!(rank_edges(&nodes, edges, &rel).len(), MAX_PACK_EDGES);
    }

    #[test]
    fn label_words_split_camel_case() {
        assert_eq!(
            label_words("RetrieveQuery"),
            ["retrieve", "query", "retrievequery"]
        );
        assert!(matches("affect", "affects") && !matches("aff", "affects"));
    }
}
