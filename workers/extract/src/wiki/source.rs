//! A page as a prepared source: fingerprint, page and person nodes, chunks and edges.

use super::*;

/// Where pages come from.
pub struct WikiContext<'a> {
    pub scope: &'a Scope,
    /// The registered source's id (URNs: `wiki:{source}:{page}`).
    pub source_id: &'a str,
    pub chunking: &'a ChunkingConfig,
}

/// Everything that shapes what a page becomes (the storage, not the text: a converter change
/// bumps [`WIKI_VERSION`]).
pub(super) fn fingerprint(page: &WikiPage, chunking: &ChunkingConfig) -> String {
    content_hash(&format!(
        "{WIKI_VERSION}\0{}\0{}\0{}\0{:?}\0{:?}\0{:?}\0{:?}\0{:?}\0{:?}\0{}/{}\0{}",
        page.id,
        page.version,
        page.title,
        page.space,
        page.modified,
        page.author,
        page.ancestors,
        page.labels,
        page.url,
        chunking.max_tokens,
        chunking.min_tokens,
        page.storage
    ))
}

pub(super) fn page_node(page: &WikiPage, key: &NodeKey) -> PreparedNode {
    PreparedNode {
        key: key.clone(),
        node_type: "page".into(),
        label: page.title.clone(),
        props: props([
            ("id", page.id.clone().into()),
            ("title", page.title.clone().into()),
            ("space", opt(&page.space)),
            ("version", page.version.into()),
            ("modified", opt(&page.modified)),
            ("url", opt(&page.url)),
            (
                "labels",
                if page.labels.is_empty() {
                    Value::Null
                } else {
                    Value::from(page.labels.clone())
                },
            ),
        ]),
        evidence: EvidenceSpec::AllChunks,
    }
}

pub(super) fn person_node(key: &NodeKey, p: &WikiPerson, evidence: Vec<usize>) -> PreparedNode {
    PreparedNode {
        key: key.clone(),
        node_type: "person".into(),
        label: p
            .name
            .clone()
            .or_else(|| p.email.clone())
            .or_else(|| p.account_id.clone())
            .unwrap_or_default(),
        props: props([
            ("name", opt(&p.name)),
            (
                "email",
                p.email
                    .as_ref()
                    .map(|e| Value::from(e.to_lowercase()))
                    .unwrap_or(Value::Null),
            ),
            ("accountId", opt(&p.account_id)),
        ]),
        evidence: EvidenceSpec::Chunks(evidence),
    }
}

/// A page as a prepared source: chunks per section; the page node; its last editor as a
/// person (`authored_by`, with aliases so the display name and account id resolve to them);
/// `mentions` edges to mentioned users, evidenced by the chunks that mention them;
/// `child_of` its parent, `in_space` its space, `labeled` its labels, `links_to` the pages it
/// links to (by title key, see [`page_title_key`]).
///
/// Mentioned users other than the editor get no typed node, only refs and edges: all the page
/// knows of them is an account id, and a typed node would set the person's label to that id
/// every time a page mentioning them is written (a source's own nodes overwrite label and
/// type after alias resolution).
pub fn page_source(page: &WikiPage, ctx: &WikiContext<'_>) -> PreparedSource {
    let key = page_key(&page.id);
    let author = page.author.as_ref().and_then(|p| Some((author_key(p)?, p)));
    let mentioned = mentions(&page.storage, author.as_ref());
    let links = page_links(&page.storage, page.space.as_deref());

    let mut chunks = page_chunks(page, ctx.chunking);
    add_refs(&mut chunks, &key, &mentioned);

    let mut nodes = vec![page_node(page, &key)];
    let mut edges = Vec::new();
    let mut aliases = Vec::new();
    let mut edge = |to: NodeKey, edge_type: &str, evidence: EvidenceSpec| {
        edges.push(PreparedEdge {
            from: key.clone(),
            to,
            edge_type: edge_type.into(),
            props: Map::new(),
            evidence,
        });
    };

    if let Some((parent, _)) = page.ancestors.last() {
        edge(page_key(parent), "child_of", EvidenceSpec::chunk(0));
    }
    if let Some(space) = page.space.as_deref()
        && let Some(space_node) = space_key(space)
    {
        nodes.push(PreparedNode {
            key: space_node.clone(),
            node_type: "space".into(),
            label: space.to_string(),
            props: props([("key", space.into())]),
            evidence: EvidenceSpec::chunk(0),
        });
        edge(space_node, "in_space", EvidenceSpec::chunk(0));
    }
    if let Some((person, p)) = &author {
        let evidence = author_evidence(&chunks, &mentioned, person);
        nodes.push(person_node(person, p, evidence));
        let handles: Vec<&str> = p.account_id.as_deref().into_iter().collect();
        aliases.extend(keys::person_aliases(person, p.name.as_deref(), &handles));
        edge(person.clone(), "authored_by", EvidenceSpec::chunk(0));
    }
    for m in &mentioned {
        let at = chunks_where(&chunks, |c| has_marker(&c.text, &m.marker));
        edge(m.key.clone(), "mentions", EvidenceSpec::Chunks(at));
    }
    for l in &links {
        let at = chunks_where(&chunks, |c| c.text.contains(&l.title));
        edge(l.key.clone(), "links_to", EvidenceSpec::Chunks(at));
    }
    for (label, node) in label_nodes(&page.labels) {
        nodes.push(node);
        edge(label, "labeled", EvidenceSpec::chunk(0));
    }
    if let Some(by_title) = page_title_key(page.space.as_deref(), &page.title) {
        aliases.push((by_title, key.clone()));
    }

    PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: page_urn(ctx.source_id, &page.id),
        kind: "wiki".into(),
        title: Some(page.title.clone()),
        fingerprint: fingerprint(page, ctx.chunking),
        observed_at: page.modified.clone(),
        chunks,
        nodes,
        edges,
        aliases,
        merges: Vec::new(),
    }
}

/// Each chunk refers to the page, the people it mentions and what its text names (each once).
fn add_refs(chunks: &mut [PreparedChunk], key: &NodeKey, mentioned: &[Mention]) {
    for c in chunks {
        let mut found = vec![key.clone()];
        for m in mentioned.iter().filter(|m| has_marker(&c.text, &m.marker)) {
            push_unique(&mut found, m.key.clone());
        }
        for r in refs::extract_refs(&c.text) {
            push_unique(&mut found, r.key);
        }
        c.refs = found;
    }
}

/// The chunks that evidence the author: the first, and those that mention them, in order.
fn author_evidence(
    chunks: &[PreparedChunk],
    mentioned: &[Mention],
    person: &NodeKey,
) -> Vec<usize> {
    let mut evidence = vec![0];
    for m in mentioned.iter().filter(|m| m.key == *person) {
        for i in chunks_where(chunks, |c| has_marker(&c.text, &m.marker)) {
            if !evidence.contains(&i) {
                evidence.push(i);
            }
        }
    }
    evidence.sort_unstable();
    evidence
}

/// A node per label of the page that has a key, with that key.
fn label_nodes(labels: &[String]) -> Vec<(NodeKey, PreparedNode)> {
    labels
        .iter()
        .filter_map(|name| {
            let label = label_key(name)?;
            let node = PreparedNode {
                key: label.clone(),
                node_type: "label".into(),
                label: name.clone(),
                props: props([("name", name.clone().into())]),
                evidence: EvidenceSpec::chunk(0),
            };
            Some((label, node))
        })
        .collect()
}
