//! The graph writes of a prepared source.

use super::*;

/// The label of a bare key: its value with spaces (the key itself when it has no value).
pub(crate) fn plain_label(key: &NodeKey) -> String {
    if key.value().is_empty() {
        key.as_str().to_string()
    } else {
        key.value().replace('_', " ")
    }
}

/// A node for a bare key: typed by its namespace, labelled by its value.
pub(super) fn plain_node(key: NodeKey, evidence: EvidenceSpec) -> PreparedNode {
    let label = plain_label(&key);
    PreparedNode {
        node_type: key.namespace().to_string(),
        label,
        key,
        props: Map::new(),
        evidence,
    }
}

/// The graph writes of a prepared source, with keys resolved: its own nodes, a node for every
/// ref (evidenced by the chunks mentioning it) and every edge endpoint (evidenced by the
/// edge's chunks) it does not define, and its edges. Duplicates merge (props: later wins;
/// evidence: union). Self-loops say nothing and are dropped.
pub(super) fn graph_writes(
    src: &PreparedSource,
    drafts: &[Draft],
    chunk_refs: &[Vec<NodeKey>],
    canon: &dyn Fn(&NodeKey) -> NodeKey,
) -> (Vec<NodeWrite>, Vec<EdgeWrite>) {
    let mut g = Merge {
        src,
        drafts,
        chunk_refs,
        nodes: BTreeMap::new(),
        edges: BTreeMap::new(),
    };
    for (i, refs) in chunk_refs.iter().enumerate() {
        for k in refs {
            g.add_node(k.clone(), None, &[i], None);
        }
    }
    for e in &src.edges {
        g.add_edge(e, canon);
    }
    // The source's own nodes last, so their types and props win over bare refs.
    for n in &src.nodes {
        let ev = g.chunks_of(&n.evidence, None);
        g.add_node(canon(&n.key), Some(n), &ev, Some(&n.evidence));
    }
    (
        g.nodes.into_values().map(|(n, _)| n).collect(),
        g.edges.into_values().map(|(e, _)| e).collect(),
    )
}

/// The writes of [`graph_writes`] as they merge. Evidence is kept by chunk index beside each
/// write, so merging stays linear however many chunks evidence a node (a chunk's index and
/// id correspond one to one).
struct Merge<'a> {
    src: &'a PreparedSource,
    drafts: &'a [Draft],
    chunk_refs: &'a [Vec<NodeKey>],
    nodes: BTreeMap<NodeKey, (NodeWrite, HashSet<usize>)>,
    edges: BTreeMap<(NodeKey, String, NodeKey), (EdgeWrite, HashSet<usize>)>,
}

impl Merge<'_> {
    /// The indexes of the chunks an evidence spec names (`ends`: an edge's endpoints).
    fn chunks_of(&self, spec: &EvidenceSpec, ends: Option<(&NodeKey, &NodeKey)>) -> Vec<usize> {
        let (drafts, chunk_refs) = (self.drafts, self.chunk_refs);
        match spec {
            EvidenceSpec::Chunks(ix) => ix.clone(),
            // Other sources' chunks: added beside the indexed ones (`cited_of`).
            EvidenceSpec::Cited(_) => Vec::new(),
            EvidenceSpec::AllChunks => (0..drafts.len()).collect(),
            EvidenceSpec::MentioningEndpoints => {
                let hits: Vec<usize> = match ends {
                    Some((a, b)) => (0..drafts.len())
                        .filter(|i| chunk_refs[*i].contains(a) || chunk_refs[*i].contains(b))
                        .collect(),
                    None => Vec::new(),
                };
                if hits.is_empty() { vec![0] } else { hits }
            }
        }
    }

    /// Adds the evidence of the chunks `ev` not in `seen` yet, and the cited chunks of other
    /// sources `cited` names (an agent's graph write).
    fn add_evidence(
        drafts: &[Draft],
        scope: &Scope,
        list: &mut Vec<Evidence>,
        seen: &mut HashSet<usize>,
        ev: &[usize],
        cited: Option<&EvidenceSpec>,
    ) {
        for &i in ev {
            if seen.insert(i) {
                list.push(Evidence {
                    chunk_id: drafts[i].id.clone(),
                    scope: scope.clone(),
                });
            }
        }
        // Cited chunks are few per item: a linear check keeps them unique.
        if let Some(EvidenceSpec::Cited(cited)) = cited {
            for e in cited {
                if !list.contains(e) {
                    list.push(e.clone());
                }
            }
        }
    }

    /// A node write: a bare key's (mention only) unless `typed` gives its type and props.
    fn add_node(
        &mut self,
        key: NodeKey,
        typed: Option<&PreparedNode>,
        ev: &[usize],
        cited: Option<&EvidenceSpec>,
    ) {
        let (entry, seen) = self.nodes.entry(key.clone()).or_insert_with(|| {
            let p = plain_node(key.clone(), EvidenceSpec::AllChunks);
            let write = NodeWrite {
                key,
                node_type: p.node_type,
                label: p.label,
                props: Map::new(),
                evidence: Vec::new(),
                mention_only: true,
            };
            (write, HashSet::new())
        });
        if let Some(t) = typed {
            entry.node_type = t.node_type.clone();
            entry.label = t.label.clone();
            entry.props.extend(t.props.clone());
            entry.mention_only = false;
        }
        Self::add_evidence(
            self.drafts,
            &self.src.scope,
            &mut entry.evidence,
            seen,
            ev,
            cited,
        );
    }

    /// An edge write and its endpoints' nodes; a self-loop is dropped.
    fn add_edge(&mut self, e: &PreparedEdge, canon: &dyn Fn(&NodeKey) -> NodeKey) {
        let (from, to) = (canon(&e.from), canon(&e.to));
        if from == to {
            return;
        }
        let ev = self.chunks_of(&e.evidence, Some((&from, &to)));
        self.add_node(from.clone(), None, &ev, Some(&e.evidence));
        self.add_node(to.clone(), None, &ev, Some(&e.evidence));
        let (entry, seen) = self
            .edges
            .entry((from.clone(), e.edge_type.clone(), to.clone()))
            .or_insert_with(|| {
                let write = EdgeWrite {
                    from,
                    to,
                    edge_type: e.edge_type.clone(),
                    props: Map::new(),
                    evidence: Vec::new(),
                };
                (write, HashSet::new())
            });
        entry.props.extend(e.props.clone());
        let cited = Some(&e.evidence);
        Self::add_evidence(
            self.drafts,
            &self.src.scope,
            &mut entry.evidence,
            seen,
            &ev,
            cited,
        );
    }
}

/// What the embedder sees: title, context (section, symbol) and the chunk text.
pub(super) fn embedding_text(title: Option<&str>, context: Option<&str>, text: &str) -> String {
    let mut s = String::new();
    for part in [title, context].into_iter().flatten() {
        s.push_str(part);
        s.push('\n');
    }
    s.push_str(text);
    s
}
