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
    let evidence = |i: usize| Evidence {
        chunk_id: drafts[i].id.clone(),
        scope: src.scope.clone(),
    };
    let chunks_of = |spec: &EvidenceSpec, ends: Option<(&NodeKey, &NodeKey)>| -> Vec<usize> {
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
    };
    // Evidence is kept by chunk index beside each write, so merging stays linear however
    // many chunks evidence a node (a chunk's index and id correspond one to one).
    let add_evidence = |list: &mut Vec<Evidence>, seen: &mut HashSet<usize>, ev: &[usize]| {
        for &i in ev {
            if seen.insert(i) {
                list.push(evidence(i));
            }
        }
    };
    // Cited chunks of other sources (an agent's graph write) are few per item: a linear check
    // keeps them unique.
    let add_cited = |list: &mut Vec<Evidence>, spec: &EvidenceSpec| {
        if let EvidenceSpec::Cited(cited) = spec {
            for e in cited {
                if !list.contains(e) {
                    list.push(e.clone());
                }
            }
        }
    };
    let mut nodes: BTreeMap<NodeKey, (NodeWrite, HashSet<usize>)> = BTreeMap::new();
    let mut add_node =
        |key: NodeKey, typed: Option<&PreparedNode>, ev: &[usize], cited: Option<&EvidenceSpec>| {
            let (entry, seen) = nodes.entry(key.clone()).or_insert_with(|| {
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
            add_evidence(&mut entry.evidence, seen, ev);
            if let Some(spec) = cited {
                add_cited(&mut entry.evidence, spec);
            }
        };
    for (i, refs) in chunk_refs.iter().enumerate() {
        for k in refs {
            add_node(k.clone(), None, &[i], None);
        }
    }
    let mut edges: BTreeMap<(NodeKey, String, NodeKey), (EdgeWrite, HashSet<usize>)> =
        BTreeMap::new();
    for e in &src.edges {
        let (from, to) = (canon(&e.from), canon(&e.to));
        if from == to {
            continue;
        }
        let ev = chunks_of(&e.evidence, Some((&from, &to)));
        add_node(from.clone(), None, &ev, Some(&e.evidence));
        add_node(to.clone(), None, &ev, Some(&e.evidence));
        let (entry, seen) = edges
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
        add_evidence(&mut entry.evidence, seen, &ev);
        add_cited(&mut entry.evidence, &e.evidence);
    }
    // The source's own nodes last, so their types and props win over bare refs.
    for n in &src.nodes {
        add_node(
            canon(&n.key),
            Some(n),
            &chunks_of(&n.evidence, None),
            Some(&n.evidence),
        );
    }
    (
        nodes.into_values().map(|(n, _)| n).collect(),
        edges.into_values().map(|(e, _)| e).collect(),
    )
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
