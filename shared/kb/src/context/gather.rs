//! Step 1: the layers as ranked candidates, one per future line.
//!
//! Scores (higher first; ties broken by each candidate's order key), chosen so a line's rank
//! depends only on what is stored:
//!
//! | layer | candidate | score |
//! |---|---|---|
//! | metadata | a property of the active entity's profile / of the global profile | 2.0 / 1.5 |
//! | pieces | a piece about the active entity (`entity` = it) | 1.0 |
//! | pieces | a query hit, by its relevance relative to the best hit (user knowledge and outcomes found by the query too) | 0.5 ..= 1.0 |
//! | userKnowledge | one of the 20 newest items | 0.9 |
//! | graph | a relationship `d` hops out, the pieces evidencing it, pieces about a node `d` hops out | 1/(d+1) |
//! | pieces | another chunk naming the active entity | 0.45 |
//! | outcomes | a task outcome: a query hit as a piece is, else one of the 5 newest | 0.5 ..= 1.0 / 0.4 |
//! | memory | a session-log entry, newest first | 0.3 |
//! | claims | an active claim about the active entity / recalled by the query (`claims.rs`) | 1.0 / 0.5 ..= 1.0 |

use std::collections::{BTreeMap, BTreeSet};

use evident_core::typed::METADATA_KEY;
use evident_core::{Chunk, NodeKey, Typed, TypedFilter, Visibility};
use evident_store::{ChunkFilter, Direction, TraverseOptions};
use serde_json::Value;

use super::format::ContextItem;
use super::{ContextQuery, Layer};
use crate::{Kb, Result, RetrieveQuery};

/// Query hits taken from the piece search.
const SEARCH_HITS: usize = 20;
/// Evidence chunks of the active entity read (smallest ids first).
const ENTITY_EVIDENCE: usize = 200;
/// Nodes the graph walk reaches at most.
const GRAPH_NODES: usize = 50;
/// Evidence chunks read per node reached (pieces about it).
const NODE_EVIDENCE: usize = 20;
/// Evidence chunks read per relationship.
const EDGE_EVIDENCE: usize = 3;
const OUTCOMES: usize = 5;
const USER_KNOWLEDGE: usize = 20;
const SESSION_ENTRIES: usize = 10;

/// The source URN of an entity's profile (`profile:{key}`), or of the global profile.
pub fn profile_urn(key: &NodeKey) -> String {
    if key.as_str() == GLOBAL_PROFILE_KEY {
        "profile:global".to_string()
    } else {
        format!("profile:{}", key.as_str())
    }
}

/// The node the global profile lives on.
pub const GLOBAL_PROFILE_KEY: &str = "global:profile";

/// One future line: what it says, where it goes, how it ranks, what it cites.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Candidate {
    /// Identity for de-duplication (`chunk:{id}`, `edge:{from}|{type}|{to}`, …).
    pub key: String,
    pub info_type: String,
    pub score: f32,
    /// Tie-break among equal scores (stable, from stored values only).
    pub order: String,
    /// The line without its marker.
    pub line: String,
    pub item: ContextItem,
}

/// The info type of a chunk without one of its own (the documented defaults).
fn default_info_type(kind: &str) -> &'static str {
    if kind.starts_with("user_knowledge_") {
        "user_profile"
    } else {
        "context"
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A chunk as a line (`[type] text (tags: …)`), routed by its own info type.
fn chunk_candidate(chunk: &Chunk, layer: Layer, score: f32) -> Candidate {
    let typed = Typed::from_metadata(&chunk.metadata);
    let info_type = typed
        .info_type
        .clone()
        .unwrap_or_else(|| default_info_type(&chunk.kind).to_string());
    let label = typed
        .knowledge_type
        .map_or(chunk.kind.as_str(), |k| k.as_str());
    let mut line = format!("[{label}] {}", one_line(&chunk.content));
    if !typed.tags.is_empty() {
        line.push_str(&format!(" (tags: {})", typed.tags.join(", ")));
    }
    Candidate {
        key: format!("chunk:{}", chunk.id),
        info_type,
        score,
        order: chunk.id.clone(),
        line,
        item: ContextItem {
            marker: String::new(),
            layer: layer.as_str().to_string(),
            chunk_id: Some(chunk.id.clone()),
            source_urn: Some(chunk.source_urn.clone()),
            node_key: typed.entity.as_ref().map(|e| e.as_str().to_string()),
            citation: chunk.locator.citation(),
        },
    }
}

/// Profiles are told as metadata lines, never again as pieces.
fn is_profile(chunk: &Chunk) -> bool {
    chunk.kind == crate::profile::PROFILE_KIND
}

impl Kb {
    pub(super) async fn gather(
        &self,
        vis: &Visibility,
        q: &ContextQuery,
        layers: &[Layer],
        depth: usize,
        typed: TypedFilter,
    ) -> Result<(Vec<Candidate>, bool)> {
        // Whether the query's search found anything relevant (`gaps::nothing_relevant`);
        // true when there is no query to answer.
        let mut answered = true;
        let has = |l: Layer| layers.contains(&l);
        let mut out: Vec<Candidate> = Vec::new();
        let active = match &q.active_entity {
            Some(raw) => Some(self.lookup(vis, "activeEntity", raw).await?),
            None => None,
        };
        if has(Layer::Metadata) {
            if let Some(a) = &active {
                self.profile_lines(vis, a, 2.0, &mut out).await?;
            }
            let global = NodeKey::from_canonical(GLOBAL_PROFILE_KEY);
            self.profile_lines(vis, &global, 1.5, &mut out).await?;
        }
        // One search serves every chunk layer: its hits are routed by kind (pieces, task
        // outcomes, user knowledge), each kept only when its layer is included.
        let searched = [Layer::Pieces, Layer::Outcomes, Layer::UserKnowledge];
        if let Some(query) = &q.query
            && searched.iter().any(|l| has(*l))
        {
            answered = self
                .search_pieces(vis, query, typed, layers, &mut out)
                .await?;
        }
        if has(Layer::Pieces)
            && let Some(a) = &active
        {
            self.entity_pieces(vis, a, &mut out).await?;
        }
        if has(Layer::Graph)
            && depth > 0
            && let Some(a) = &active
        {
            self.graph_lines(vis, a, depth, &mut out).await?;
        }
        if has(Layer::Outcomes) && q.query.is_none() {
            for (c, s) in newest(
                self,
                vis,
                vec![crate::outcomes::OUTCOME_KIND.into()],
                OUTCOMES,
                0.4,
            )
            .await?
            {
                out.push(chunk_candidate(&c, Layer::Outcomes, s));
            }
        }
        if has(Layer::UserKnowledge) {
            self.user_knowledge_lines(vis, &mut out).await?;
        }
        if has(Layer::Memory) {
            self.session_lines(q, &mut out).await?;
        }
        if has(Layer::Claims) {
            self.claim_lines(vis, active.as_ref(), q.query.as_deref(), &mut out)
                .await?;
        }
        Ok((out, answered))
    }

    /// Each property of a node's profile (`props.profile`), keys in alphabetical order,
    /// citing the profile's chunk.
    async fn profile_lines(
        &self,
        vis: &Visibility,
        key: &NodeKey,
        score: f32,
        out: &mut Vec<Candidate>,
    ) -> Result<()> {
        let nodes = self
            .stores
            .graph
            .get_nodes(vis, std::slice::from_ref(key))
            .await?;
        let Some(node) = nodes.first() else {
            return Ok(());
        };
        let Some(profile) = node.props.get("profile").and_then(Value::as_object) else {
            return Ok(());
        };
        let Some(chunk) = self
            .profile_chunk(vis, key, &node.evidence_chunk_ids)
            .await?
        else {
            return Ok(());
        };
        for (name, value) in profile {
            let value = match value {
                Value::String(s) => one_line(s),
                other => other.to_string(),
            };
            out.push(Candidate {
                key: format!("meta:{}:{name}", key.as_str()),
                info_type: "user_profile".into(),
                score,
                order: format!("{}:{name}", key.as_str()),
                line: format!("{name}: {value}"),
                item: ContextItem {
                    marker: String::new(),
                    layer: Layer::Metadata.as_str().to_string(),
                    chunk_id: Some(chunk.id.clone()),
                    source_urn: Some(chunk.source_urn.clone()),
                    node_key: Some(key.as_str().to_string()),
                    citation: chunk.locator.citation(),
                },
            });
        }
        Ok(())
    }

    /// The chunk a profile was written in: its own source's (`PUT …/profile`), else the
    /// first profile chunk about the node among its evidence (a structured file's).
    async fn profile_chunk(
        &self,
        vis: &Visibility,
        key: &NodeKey,
        evidence: &[String],
    ) -> Result<Option<Chunk>> {
        let urn = profile_urn(key);
        let mut ids = Vec::new();
        for partition in vis.partitions() {
            ids.extend(
                self.stores
                    .chunks
                    .source_chunks(partition, &urn)
                    .await?
                    .into_iter()
                    .map(|(id, _)| id),
            );
        }
        if let Some(c) = self.stores.chunks.get(vis, &ids).await?.into_iter().next() {
            return Ok(Some(c));
        }
        let mut ids: Vec<String> = evidence.to_vec();
        ids.sort();
        ids.truncate(ENTITY_EVIDENCE);
        Ok(self
            .stores
            .chunks
            .get(vis, &ids)
            .await?
            .into_iter()
            .find(|c| {
                is_profile(c) && Typed::from_metadata(&c.metadata).entity.as_ref() == Some(key)
            }))
    }

    /// Query hits, relevance relative to the best hit (0.5..=1.0). Memory chunks found by
    /// the query belong to their own layers and count only when those are included. Returns
    /// whether anything relevant was found (`gaps::nothing_relevant`'s rule).
    async fn search_pieces(
        &self,
        vis: &Visibility,
        query: &str,
        typed: TypedFilter,
        layers: &[Layer],
        out: &mut Vec<Candidate>,
    ) -> Result<bool> {
        let req = RetrieveQuery {
            query: query.to_string(),
            client_id: vis.reader().client_id.clone(),
            project_id: vis.reader().project_id.clone(),
            group_id: vis.reader().group_id.clone(),
            typed,
            max_results: SEARCH_HITS,
            expand_graph: false,
            max_depth: 0,
            ..RetrieveQuery::new("", None)
        };
        let pack = self.retrieve(&req).await?;
        let best = pack
            .items
            .first()
            .map_or(1.0, |i| i.score)
            .max(f32::EPSILON);
        let scores: BTreeMap<String, f32> = pack
            .items
            .iter()
            .map(|i| {
                (
                    i.chunk_id.clone(),
                    0.5 + 0.5 * (i.score / best).clamp(0.0, 1.0),
                )
            })
            .collect();
        let ids: Vec<String> = pack.items.iter().map(|i| i.chunk_id.clone()).collect();
        for chunk in self.stores.chunks.get(vis, &ids).await? {
            let layer = if chunk.kind.starts_with("user_knowledge_") {
                Layer::UserKnowledge
            } else if chunk.kind == crate::outcomes::OUTCOME_KIND {
                Layer::Outcomes
            } else {
                Layer::Pieces
            };
            if is_profile(&chunk) || !layers.contains(&layer) {
                continue;
            }
            let score = scores.get(&chunk.id).copied().unwrap_or(0.5);
            out.push(chunk_candidate(&chunk, layer, score));
        }
        Ok(!crate::gaps::nothing_relevant(&pack))
    }

    /// The chunks evidencing the active entity's node: pieces about it (1.0), other chunks
    /// naming it (0.45).
    async fn entity_pieces(
        &self,
        vis: &Visibility,
        active: &NodeKey,
        out: &mut Vec<Candidate>,
    ) -> Result<()> {
        let nodes = self
            .stores
            .graph
            .get_nodes(vis, std::slice::from_ref(active))
            .await?;
        let Some(node) = nodes.first() else {
            return Ok(());
        };
        let ids: Vec<String> = node
            .evidence_chunk_ids
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .take(ENTITY_EVIDENCE)
            .collect();
        for chunk in self.stores.chunks.get(vis, &ids).await? {
            if is_profile(&chunk) {
                continue;
            }
            let about = Typed::from_metadata(&chunk.metadata).entity.as_ref() == Some(active);
            let layer = if chunk.kind.starts_with("user_knowledge_") {
                Layer::UserKnowledge
            } else {
                Layer::Pieces
            };
            out.push(chunk_candidate(
                &chunk,
                layer,
                if about { 1.0 } else { 0.45 },
            ));
        }
        Ok(())
    }

    /// BFS from the active entity: each relationship `d` hops out as a line, routed by the
    /// info type of the piece evidencing it (the seed's table: a linked piece's info type;
    /// else `user_profile` from the active entity, `context` otherwise), and its linked
    /// pieces as candidates of their own, both at `1/(d+1)`.
    async fn graph_lines(
        &self,
        vis: &Visibility,
        active: &NodeKey,
        depth: usize,
        out: &mut Vec<Candidate>,
    ) -> Result<()> {
        let opts = TraverseOptions {
            max_depth: depth,
            direction: Direction::Any,
            edge_types: Vec::new(),
            max_nodes: GRAPH_NODES,
        };
        let sub = self
            .stores
            .graph
            .traverse(vis, std::slice::from_ref(active), &opts)
            .await?;
        let depth_of: BTreeMap<&NodeKey, usize> =
            sub.nodes.iter().map(|(n, d)| (&n.key, *d)).collect();
        let mut edges: Vec<_> = sub.edges.iter().collect();
        edges.sort_by(|a, b| (&a.edge_type, &a.to, &a.from).cmp(&(&b.edge_type, &b.to, &b.from)));
        let evidence: Vec<Vec<String>> = edges
            .iter()
            .map(|e| first_ids(&e.evidence_chunk_ids, EDGE_EVIDENCE))
            .collect();
        // Pieces about the nodes reached (their `entity`), as the edges' linked pieces are.
        let about: Vec<(&NodeKey, usize, Vec<String>)> = sub
            .nodes
            .iter()
            .filter(|(n, d)| *d > 0 && n.key != *active)
            .map(|(n, d)| (&n.key, *d, first_ids(&n.evidence_chunk_ids, NODE_EVIDENCE)))
            .collect();
        let all: Vec<String> = evidence
            .iter()
            .flatten()
            .chain(about.iter().flat_map(|(_, _, ids)| ids.iter()))
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let chunks: BTreeMap<String, Chunk> = self
            .stores
            .chunks
            .get(vis, &all)
            .await?
            .into_iter()
            .map(|c| (c.id.clone(), c))
            .collect();
        for (key, d, ids) in &about {
            let score = 1.0 / (*d as f32 + 1.0);
            for c in ids.iter().filter_map(|id| chunks.get(id)) {
                if !is_profile(c) && Typed::from_metadata(&c.metadata).entity.as_ref() == Some(*key)
                {
                    out.push(chunk_candidate(c, Layer::Graph, score));
                }
            }
        }
        for (edge, ids) in edges.iter().zip(&evidence) {
            let hops = depth_of
                .get(&edge.from)
                .min(depth_of.get(&edge.to))
                .copied()
                .unwrap_or(depth)
                + 1;
            let score = 1.0 / (hops as f32 + 1.0);
            let seen: Vec<&Chunk> = ids.iter().filter_map(|id| chunks.get(id)).collect();
            edge_candidates(edge, score, &seen, active, out);
        }
        Ok(())
    }

    /// What agents learned about the user, newest first, to `user_profile` by default.
    async fn user_knowledge_lines(&self, vis: &Visibility, out: &mut Vec<Candidate>) -> Result<()> {
        let kinds = crate::KnowledgeCategory::ALL
            .iter()
            .map(|c| c.kind())
            .collect();
        for (c, s) in newest(self, vis, kinds, USER_KNOWLEDGE, 0.9).await? {
            out.push(chunk_candidate(&c, Layer::UserKnowledge, s));
        }
        Ok(())
    }

    /// The newest session-log entries of the reader's client (and project), to `context`.
    async fn session_lines(&self, q: &ContextQuery, out: &mut Vec<Candidate>) -> Result<()> {
        let Some(client) = q.client_id.as_deref() else {
            return Ok(());
        };
        let project = q.project_id.as_deref();
        let entries = self
            .session_recent(client, project, SESSION_ENTRIES, q.now_ms)
            .await?;
        for e in entries {
            let at = format!(
                "session:{client}{}@{}",
                project.map(|p| format!("/{p}")).unwrap_or_default(),
                e.timestamp
            );
            out.push(Candidate {
                key: format!("{at}:{}", e.summary),
                info_type: "context".into(),
                score: 0.3,
                order: format!("{:020}", i64::MAX.saturating_sub(e.timestamp)),
                line: format!("[{}] {}", e.source.as_str(), one_line(&e.summary)),
                item: ContextItem {
                    marker: String::new(),
                    layer: Layer::Memory.as_str().to_string(),
                    chunk_id: None,
                    source_urn: None,
                    node_key: None,
                    citation: at,
                },
            });
        }
        Ok(())
    }
}

/// The smallest `n` ids (a stable choice among many).
fn first_ids(ids: &[String], n: usize) -> Vec<String> {
    let mut ids = ids.to_vec();
    ids.sort();
    ids.truncate(n);
    ids
}

/// A relationship as a line, routed by the seed's table (the info type of the piece evidencing
/// it; else `user_profile` when it touches the active entity, `context` otherwise), and the
/// typed pieces evidencing it as candidates of their own, all at `score`.
fn edge_candidates(
    edge: &evident_core::Edge,
    score: f32,
    seen: &[&Chunk],
    active: &NodeKey,
    out: &mut Vec<Candidate>,
) {
    let Some(cited) = seen.first() else { return };
    let linked: Vec<&Chunk> = seen
        .iter()
        .copied()
        .filter(|c| c.metadata.contains_key(METADATA_KEY) && !is_profile(c))
        .collect();
    for piece in &linked {
        out.push(chunk_candidate(piece, Layer::Graph, score));
    }
    let routed_by = linked
        .first()
        .and_then(|c| Typed::from_metadata(&c.metadata).info_type);
    let info_type = match routed_by {
        Some(i) => i,
        None if edge.from == *active || edge.to == *active => "user_profile".into(),
        None => "context".into(),
    };
    let cite = linked.first().copied().unwrap_or(cited);
    out.push(Candidate {
        key: format!("edge:{}|{}|{}", edge.from, edge.edge_type, edge.to),
        info_type,
        score,
        order: format!("{}|{}|{}", edge.edge_type, edge.to, edge.from),
        line: format!("{} -[{}]-> {}", edge.from, edge.edge_type, edge.to),
        item: ContextItem {
            marker: String::new(),
            layer: Layer::Graph.as_str().to_string(),
            chunk_id: Some(cite.id.clone()),
            source_urn: Some(cite.source_urn.clone()),
            node_key: Some(edge.from.as_str().to_string()),
            citation: cite.locator.citation(),
        },
    });
}

/// The newest `limit` visible chunks of `kinds`, all scored `top` (so among themselves they
/// rank by id: insertion order must not change the answer).
async fn newest(
    kb: &Kb,
    vis: &Visibility,
    kinds: Vec<String>,
    limit: usize,
    top: f32,
) -> Result<Vec<(Chunk, f32)>> {
    let filter = ChunkFilter {
        kinds,
        ..Default::default()
    };
    Ok(kb
        .stores
        .chunks
        .by_kind(vis, &filter, limit)
        .await?
        .into_iter()
        .map(|c| (c, top))
        .collect())
}
