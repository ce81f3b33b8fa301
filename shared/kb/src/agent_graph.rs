//! Graph writes by agents (seed 004's `addGraphNode` / `addGraphEdge`): nodes and edges an
//! agent asserts, each with evidence, written through the one write path.
//!
//! Evidence is required (`evidence_required`, 422): existing chunk ids visible to the writer
//! ([`crate::evidence::cited_chunks`]), or inline text. Inline text becomes the one chunk of
//! an `assertion` source, `assertion:{hash}` (hash of scope, actor, gap and text), with an
//! [`Locator::Assertion`] `{actor, gapId, at}` — cited like any chunk, and the same text from
//! the same actor for the same gap is one chunk however often it is cited. The nodes and
//! edges themselves are one prepared source per request, `assertion-graph:{hash}`, without
//! chunks of its own: every item cites its evidence chunks (`EvidenceSpec::Cited`), so the
//! write path gives the endpoints of every edge the edge's evidence, resolves keys through the
//! alias registry and writes everything in one `SourceWriter::apply`. The same request again
//! is applied again and changes nothing (the graph upsert unions identical evidence and
//! props) — or brings back an edge deleted meanwhile.
//!
//! Keys are normalised like every ref (`normalize_ref`) and resolved through the alias
//! registry (exact code keys by their folded spelling too, as task outcomes do); edge types
//! through the relation aliases (`canonical_relation`; `blocked_by` is stored as `blocks`
//! the other way round). Props record provenance: `assertedBy` (the token), `gapId`, `phase`.
//!
//! A cited chunk's evidence lasts as long as that chunk: when its source is purged, or
//! re-ingested with the chunk changed or moved, the evidence it gave goes (the graph store
//! keeps evidence per chunk, not per citing source), and an item left without evidence goes.

use std::collections::{BTreeSet, HashMap};

use evident_ai::Priority;
use evident_core::hashing::content_hash;
use evident_core::refs::{NodeKey, canonical_relation, normalize_ref};
use evident_core::{
    Evidence, EvidenceSpec, Locator, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource,
    Scope, validate,
};
use evident_store::EdgeKey;
use evident_store::gaps::GapPhase;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Kb, KbError, Result};

/// The kind of assertion chunks and sources.
pub const ASSERTION_KIND: &str = "assertion";
/// Most nodes plus edges one request may write.
pub const MAX_ITEMS: usize = 1_000;
/// Largest inline evidence text.
pub const MAX_EVIDENCE_BYTES: usize = 16 * 1024;

/// What an item cites.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvidenceInput {
    #[serde(default)]
    pub chunk_ids: Vec<String>,
    #[serde(default)]
    pub text: Option<String>,
}

impl EvidenceInput {
    fn is_empty(&self) -> bool {
        self.chunk_ids.is_empty() && self.text.as_deref().is_none_or(|t| t.trim().is_empty())
    }
}

/// A node an agent asserts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAssertion {
    pub key: String,
    #[serde(rename = "type")]
    pub node_type: String,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub props: Map<String, Value>,
    #[serde(default)]
    pub evidence: Option<EvidenceInput>,
}

/// An edge an agent asserts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeAssertion {
    pub from: String,
    pub edge_type: String,
    pub to: String,
    #[serde(default)]
    pub props: Map<String, Value>,
    #[serde(default)]
    pub evidence: Option<EvidenceInput>,
}

/// Who writes, for which gap, in which phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Provenance {
    pub actor: String,
    pub gap_id: Option<String>,
    pub phase: GapPhase,
    /// RFC 3339.
    pub at: String,
}

/// One edge by its canonical identity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeRef {
    pub from: NodeKey,
    pub edge_type: String,
    pub to: NodeKey,
}

/// What a graph write did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphWriteOutcome {
    /// The source the items were written under.
    pub source_urn: String,
    pub nodes: Vec<NodeKey>,
    pub edges: Vec<EdgeRef>,
    /// Every chunk cited (inline texts' chunks included).
    pub evidence_chunk_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_id: Option<String>,
}

fn field(field: &'static str, reason: impl Into<String>) -> KbError {
    validate::FieldError::Invalid {
        field,
        reason: reason.into(),
    }
    .into()
}

fn node_key(raw: &str, what: &'static str) -> Result<NodeKey> {
    validate::identifier(what, raw)?;
    normalize_ref(raw).ok_or_else(|| field(what, format!("`{raw}` has no letters or digits")))
}

fn required(e: &Option<EvidenceInput>, what: &str) -> Result<EvidenceInput> {
    match e {
        Some(e) if e.chunk_ids.len() > crate::evidence::MAX_CITED => {
            Err(validate::FieldError::TooLong {
                field: "chunkIds",
                len: e.chunk_ids.len(),
                max: crate::evidence::MAX_CITED,
            }
            .into())
        }
        Some(e) if !e.is_empty() => Ok(e.clone()),
        _ => Err(KbError::Unprocessable {
            code: "evidence_required",
            message: format!(
                "{what} needs evidence: `evidence: {{chunkIds: [...]}}` (chunks you can see) or `evidence: {{text: \"...\"}}`"
            ),
        }),
    }
}

/// `assertion:{hash}`: one per (scope, actor, gap, text).
fn text_urn(scope: &Scope, prov: &Provenance, text: &str) -> String {
    let h = content_hash(&format!(
        "assertion/v1\n{}\n{}\n{}\n{text}",
        serde_json::to_string(scope).unwrap_or_default(),
        prov.actor,
        prov.gap_id.as_deref().unwrap_or("")
    ));
    format!("assertion:{}", h.rsplit(':').next().unwrap_or(&h))
}

impl Kb {
    /// Writes the chunk of an inline evidence text (once) and returns its evidence entry.
    async fn assertion_chunk(
        &self,
        scope: &Scope,
        prov: &Provenance,
        text: &str,
    ) -> Result<Evidence> {
        validate::bounded_text("evidence.text", text, MAX_EVIDENCE_BYTES).or_else(|e| match e {
            validate::FieldError::ControlChar { .. } => validate::content("evidence.text", text),
            other => Err(other),
        })?;
        let urn = text_urn(scope, prov, text);
        let mut chunk = PreparedChunk::new(
            text.trim(),
            Locator::Assertion {
                actor: prov.actor.clone(),
                gap_id: prov.gap_id.clone(),
                at: prov.at.clone(),
            },
        );
        let mut meta = Map::new();
        meta.insert("assertedBy".into(), prov.actor.clone().into());
        meta.insert("phase".into(), prov.phase.as_str().into());
        if let Some(g) = &prov.gap_id {
            meta.insert("gapId".into(), g.clone().into());
        }
        chunk.metadata = meta;
        let src = PreparedSource {
            scope: scope.clone(),
            source_urn: urn.clone(),
            kind: ASSERTION_KIND.into(),
            title: Some(format!("Asserted by {}", prov.actor)),
            // The text, actor and gap are the URN; the time is the first write's.
            fingerprint: format!("assertion-v1-{}", urn.trim_start_matches("assertion:")),
            observed_at: Some(prov.at.clone()),
            chunks: vec![chunk],
            nodes: Vec::new(),
            edges: Vec::new(),
            aliases: Vec::new(),
            merges: Vec::new(),
        };
        self.ingest_prepared(src, Priority::INTERACTIVE).await?;
        let ids = self
            .stores
            .chunks
            .source_chunks(scope.partition(), &urn)
            .await?;
        let (id, _) = ids
            .into_iter()
            .next()
            .ok_or_else(|| KbError::Invalid(format!("assertion {urn} has no chunk")))?;
        Ok(Evidence {
            chunk_id: id,
            scope: scope.clone(),
        })
    }

    /// The evidence of every item, in order: all cited chunks checked in one read, each
    /// distinct text written once as an assertion chunk.
    async fn items_evidence(
        &self,
        scope: &Scope,
        prov: &Provenance,
        inputs: &[&EvidenceInput],
    ) -> Result<Vec<Vec<Evidence>>> {
        let all: Vec<String> = inputs
            .iter()
            .flat_map(|e| e.chunk_ids.iter().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let cited: std::collections::HashMap<String, Evidence> = if all.is_empty() {
            Default::default()
        } else {
            crate::evidence::evidence_of(&crate::evidence::cited_chunks(self, scope, &all).await?)
                .into_iter()
                .map(|e| (e.chunk_id.clone(), e))
                .collect()
        };
        let mut texts: std::collections::HashMap<&str, Evidence> = Default::default();
        let mut out = Vec::with_capacity(inputs.len());
        for e in inputs {
            let mut ev: Vec<Evidence> = e
                .chunk_ids
                .iter()
                .filter_map(|id| cited.get(id).cloned())
                .collect();
            if let Some(text) = e.text.as_deref().filter(|t| !t.trim().is_empty()) {
                if !texts.contains_key(text) {
                    let chunk = self.assertion_chunk(scope, prov, text).await?;
                    texts.insert(text, chunk);
                }
                ev.extend(texts.get(text).cloned());
            }
            out.push(ev);
        }
        Ok(out)
    }

    /// Writes the nodes and edges an agent asserts (see the module docs). Everything is
    /// checked before anything is written: a missing or invisible piece of evidence, a bad
    /// key or edge type refuses the whole request.
    pub async fn assert_graph(
        &self,
        scope: &Scope,
        prov: &Provenance,
        nodes: &[NodeAssertion],
        edges: &[EdgeAssertion],
    ) -> Result<GraphWriteOutcome> {
        // Checks that need no I/O first, so a refusal writes nothing.
        let checked = check_assertions(scope, nodes, edges)?;
        let canon = self.canonical_keys(scope, &checked).await?;
        let canon = |k: &NodeKey| canon.get(k).cloned().unwrap_or_else(|| k.clone());
        let inputs: Vec<&EvidenceInput> = checked
            .nodes
            .iter()
            .map(|n| &n.evidence)
            .chain(checked.edges.iter().map(|e| &e.evidence))
            .collect();
        let mut evidences = self.items_evidence(scope, prov, &inputs).await?.into_iter();
        let provenance = provenance_props(prov);
        let mut cited_ids = BTreeSet::new();
        let mut cite = |evidence: Vec<Evidence>| {
            cited_ids.extend(evidence.iter().map(|e| e.chunk_id.clone()));
            EvidenceSpec::Cited(evidence)
        };
        let mut prepared_nodes = Vec::new();
        for (c, n) in checked.nodes.iter().zip(nodes) {
            let mut props = n.props.clone();
            props.extend(provenance.clone());
            prepared_nodes.push(PreparedNode {
                key: canon(&c.key),
                node_type: n.node_type.clone(),
                label: c.label.clone(),
                props,
                evidence: cite(evidences.next().unwrap_or_default()),
            });
        }
        let mut prepared_edges = Vec::new();
        for (c, e) in checked.edges.iter().zip(edges) {
            let mut props = e.props.clone();
            props.extend(provenance.clone());
            prepared_edges.push(PreparedEdge {
                from: canon(&c.from),
                to: canon(&c.to),
                edge_type: c.edge_type.clone(),
                props,
                evidence: cite(evidences.next().unwrap_or_default()),
            });
        }
        let src = assertion_source(scope, prov, prepared_nodes, prepared_edges);
        let edges_out: Vec<EdgeRef> = src
            .edges
            .iter()
            .map(|e| EdgeRef {
                from: e.from.clone(),
                edge_type: e.edge_type.clone(),
                to: e.to.clone(),
            })
            .collect();
        let urn = src.source_urn.clone();
        // Applied even when this very request was written before: its edge may have been
        // deleted since (`retract_edge`), and asserting it again must bring it back.
        let written = self
            .ingest_prepared_again(src, Priority::INTERACTIVE)
            .await?;
        tracing::debug!(source_urn = %urn, status = ?written.status, actor = %prov.actor, "agent graph write");
        Ok(GraphWriteOutcome {
            source_urn: urn,
            nodes: written.nodes,
            edges: edges_out,
            evidence_chunk_ids: cited_ids.into_iter().collect(),
            gap_id: prov.gap_id.clone(),
        })
    }

    /// The canonical key of every key the request names: exact code keys are never
    /// resolved by the write path, so their spellings are resolved here.
    async fn canonical_keys(
        &self,
        scope: &Scope,
        checked: &CheckedAssertions,
    ) -> Result<HashMap<NodeKey, NodeKey>> {
        let all: Vec<NodeKey> = checked
            .nodes
            .iter()
            .map(|n| n.key.clone())
            .chain(
                checked
                    .edges
                    .iter()
                    .flat_map(|e| [e.from.clone(), e.to.clone()]),
            )
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let canonical = self.stores.aliases.resolve(scope.partition(), &all).await?;
        Ok(all.into_iter().zip(canonical).collect())
    }

    /// Deletes an edge agents wrote (its `assertedBy` prop marks it): whatever evidences it,
    /// it goes; its endpoints stay while something evidences them. `not_found` for an edge
    /// the writer cannot see, `not_agent_written` (409) for one only sources wrote.
    pub async fn retract_edge(&self, scope: &Scope, edge: &EdgeAssertion) -> Result<EdgeRef> {
        let (from, to) = (node_key(&edge.from, "from")?, node_key(&edge.to, "to")?);
        let edge_type = canonical_relation(&edge.edge_type).ok_or_else(|| {
            field(
                "edgeType",
                format!("`{}` is not a relation", edge.edge_type),
            )
        })?;
        let resolved = self
            .stores
            .aliases
            .resolve(scope.partition(), &[from.clone(), to.clone()])
            .await?;
        let (from, to) = (resolved[0].clone(), resolved[1].clone());
        let vis = evident_core::Visibility::of(scope.clone());
        let sub = self
            .stores
            .graph
            .traverse(
                &vis,
                std::slice::from_ref(&from),
                &evident_store::TraverseOptions {
                    max_depth: 1,
                    direction: evident_store::Direction::Out,
                    edge_types: vec![edge_type.clone()],
                    max_nodes: 100_000,
                },
            )
            .await?;
        let found = sub
            .edges
            .iter()
            .find(|e| e.from == from && e.to == to && e.edge_type == edge_type)
            .ok_or_else(|| KbError::NotFound {
                what: format!("edge {from} -{edge_type}-> {to}"),
            })?;
        if !found.props.contains_key("assertedBy") {
            return Err(KbError::Conflict {
                code: "not_agent_written",
                message: format!(
                    "edge {from} -{edge_type}-> {to} was written by its sources, not by an agent; purge or change the source instead"
                ),
            });
        }
        let key = EdgeKey {
            from: from.clone(),
            edge_type: edge_type.clone(),
            to: to.clone(),
        };
        self.stores
            .graph
            .remove_edges(scope.partition(), &[key])
            .await?;
        Ok(EdgeRef {
            from,
            edge_type,
            to,
        })
    }
}

/// A node of a request after the checks that need no I/O.
struct CheckedNode {
    key: NodeKey,
    label: String,
    evidence: EvidenceInput,
}

/// An edge of a request after the checks that need no I/O (`blocked_by` turned round).
struct CheckedEdge {
    from: NodeKey,
    edge_type: String,
    to: NodeKey,
    evidence: EvidenceInput,
}

struct CheckedAssertions {
    nodes: Vec<CheckedNode>,
    edges: Vec<CheckedEdge>,
}

/// Everything about a graph write that can be refused without reading the store: scope,
/// size, keys, types, labels and that every item has evidence.
fn check_assertions(
    scope: &Scope,
    nodes: &[NodeAssertion],
    edges: &[EdgeAssertion],
) -> Result<CheckedAssertions> {
    if scope.client_id.is_none() {
        return Err(validate::FieldError::Missing { field: "clientId" }.into());
    }
    if nodes.is_empty() && edges.is_empty() {
        return Err(validate::FieldError::Empty { field: "nodes" }.into());
    }
    if nodes.len() + edges.len() > MAX_ITEMS {
        return Err(validate::FieldError::TooLong {
            field: "nodes",
            len: nodes.len() + edges.len(),
            max: MAX_ITEMS,
        }
        .into());
    }
    let nodes = nodes.iter().map(check_node).collect::<Result<_>>()?;
    let edges = edges.iter().map(check_edge).collect::<Result<_>>()?;
    Ok(CheckedAssertions { nodes, edges })
}

fn check_node(n: &NodeAssertion) -> Result<CheckedNode> {
    let key = node_key(&n.key, "key")?;
    validate::kind("type", &n.node_type)?;
    let label = match &n.label {
        Some(l) => {
            validate::bounded_text("label", l, 1024)?;
            l.clone()
        }
        None => crate::ingest::plain_label(&key),
    };
    let evidence = required(&n.evidence, "a node")?;
    Ok(CheckedNode {
        key,
        label,
        evidence,
    })
}

fn check_edge(e: &EdgeAssertion) -> Result<CheckedEdge> {
    let (mut from, mut to) = (node_key(&e.from, "from")?, node_key(&e.to, "to")?);
    let mut edge_type = canonical_relation(&e.edge_type)
        .ok_or_else(|| field("edgeType", format!("`{}` is not a relation", e.edge_type)))?;
    if edge_type == "blocked_by" {
        std::mem::swap(&mut from, &mut to);
        edge_type = "blocks".into();
    }
    if from == to {
        return Err(field("to", "an edge joins two different nodes"));
    }
    let evidence = required(&e.evidence, "an edge")?;
    Ok(CheckedEdge {
        from,
        edge_type,
        to,
        evidence,
    })
}

/// The provenance every asserted item carries in its props.
fn provenance_props(prov: &Provenance) -> Map<String, Value> {
    let mut provenance = Map::new();
    provenance.insert("assertedBy".into(), prov.actor.clone().into());
    provenance.insert("phase".into(), prov.phase.as_str().into());
    if let Some(g) = &prov.gap_id {
        provenance.insert("gapId".into(), g.clone().into());
    }
    provenance
}

/// The one prepared source of a graph write: no chunks of its own, keyed by the hash of
/// what it asserts, so the same request is the same source.
fn assertion_source(
    scope: &Scope,
    prov: &Provenance,
    nodes: Vec<PreparedNode>,
    edges: Vec<PreparedEdge>,
) -> PreparedSource {
    let body = serde_json::json!({ "scope": scope, "nodes": nodes, "edges": edges });
    let hash = content_hash(&body.to_string());
    let hex = hash.rsplit(':').next().unwrap_or(&hash).to_string();
    PreparedSource {
        scope: scope.clone(),
        source_urn: format!("assertion-graph:{hex}"),
        kind: ASSERTION_KIND.into(),
        title: Some(format!("Graph asserted by {}", prov.actor)),
        fingerprint: format!("assertion-graph-v1-{hex}"),
        observed_at: Some(prov.at.clone()),
        chunks: Vec::new(),
        nodes,
        edges,
        aliases: Vec::new(),
        merges: Vec::new(),
    }
}
