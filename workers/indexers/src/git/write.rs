//! Writing prepared git sources through the knowledge base, shared by the task handlers and
//! the push API: concurrent ingest (writes share group commits), and commits linked to their
//! branch.

use std::collections::BTreeMap;

use evident_ai::Priority;
use evident_core::hashing::{chunk_id, content_hash};
use evident_core::{EdgeWrite, Evidence, NodeKey, PreparedSource, Scope, Visibility, keys};
use evident_kb::{IngestStatus, Kb, KbError};
use evident_store::{Direction, TraverseOptions};

/// Ingests prepared sources, `parallel` at a time. One result per source, in order.
pub async fn ingest_all(
    kb: &Kb,
    sources: Vec<PreparedSource>,
    parallel: usize,
    priority: Priority,
) -> Vec<Result<IngestStatus, KbError>> {
    let mut out: Vec<Option<Result<IngestStatus, KbError>>> =
        (0..sources.len()).map(|_| None).collect();
    let mut set = tokio::task::JoinSet::new();
    let collect = |out: &mut Vec<Option<Result<IngestStatus, KbError>>>, joined| match joined {
        Ok((i, r)) => out[i] = Some(r),
        Err(e) => tracing::error!(error = %e, "ingest worker failed"),
    };
    for (i, p) in sources.into_iter().enumerate() {
        if set.len() >= parallel.max(1)
            && let Some(j) = set.join_next().await
        {
            collect(&mut out, j);
        }
        let kb = kb.clone();
        set.spawn(async move { (i, kb.ingest_prepared(p, priority).await.map(|o| o.status)) });
    }
    while let Some(j) = set.join_next().await {
        collect(&mut out, j);
    }
    out.into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(KbError::Store(evident_store::StoreError::unavailable(
                    "the ingest did not complete; retry",
                )))
            })
        })
        .collect()
}

/// The id of a commit source's message chunk (its first), which evidences branch links.
fn message_chunk_id(scope: &Scope, p: &PreparedSource) -> Option<String> {
    p.chunks
        .first()
        .map(|c| chunk_id(scope.partition(), &p.source_urn, &content_hash(&c.text), 0))
}

/// Ingests commit sources and links them to `branch` (`branch –has_commit→ commit`, evidenced
/// by each commit's message chunk).
///
/// A commit re-derived under a new fingerprint replaces its chunks, and with them the
/// evidence of its links from *every* branch; those links are read first and put back.
pub async fn ingest_commits(
    kb: &Kb,
    scope: &Scope,
    repository: &str,
    branch: Option<&str>,
    prepared: Vec<PreparedSource>,
    parallel: usize,
    priority: Priority,
) -> Result<Vec<Result<IngestStatus, KbError>>, KbError> {
    let partition = scope.partition().to_string();
    let mut links: BTreeMap<String, (NodeKey, String)> = BTreeMap::new();
    for p in &prepared {
        if let (Some(node), Some(chunk)) = (p.nodes.first(), message_chunk_id(scope, p)) {
            links.insert(p.source_urn.clone(), (node.key.clone(), chunk));
        }
    }
    let mut relinks: Vec<(NodeKey, String)> = Vec::new();
    for p in &prepared {
        let Some(prev) = kb.stores().sources.get(&partition, &p.source_urn).await? else {
            continue;
        };
        if prev.content_hash == p.fingerprint {
            continue;
        }
        let Some((commit, _)) = links.get(&p.source_urn) else {
            continue;
        };
        let sub = kb
            .stores()
            .graph
            .traverse(
                &Visibility::of(scope.clone()),
                std::slice::from_ref(commit),
                &TraverseOptions {
                    max_depth: 1,
                    direction: Direction::In,
                    edge_types: vec!["has_commit".into()],
                    max_nodes: 10_000,
                },
            )
            .await?;
        relinks.extend(
            sub.edges
                .into_iter()
                .map(|e| (e.from, p.source_urn.clone())),
        );
    }

    let urns: Vec<String> = prepared.iter().map(|p| p.source_urn.clone()).collect();
    let results = ingest_all(kb, prepared, parallel, priority).await;
    // Only stored commits have a message chunk to evidence a link.
    let stored: std::collections::HashSet<&str> = urns
        .iter()
        .zip(&results)
        .filter(|(_, r)| r.is_ok())
        .map(|(u, _)| u.as_str())
        .collect();
    links.retain(|urn, _| stored.contains(urn.as_str()));

    let evidence = |chunk: &str| {
        vec![Evidence {
            chunk_id: chunk.to_string(),
            scope: scope.clone(),
        }]
    };
    let mut edges: Vec<EdgeWrite> = Vec::new();
    let mut link = |from: NodeKey, urn: &str| {
        if let Some((commit, chunk)) = links.get(urn) {
            edges.push(EdgeWrite {
                from,
                to: commit.clone(),
                edge_type: "has_commit".into(),
                props: serde_json::Map::new(),
                evidence: evidence(chunk),
            });
        }
    };
    if let Some(b) = branch {
        let branch_key = keys::branch(repository, b);
        for urn in links.keys() {
            link(branch_key.clone(), urn);
        }
    }
    for (from, urn) in relinks {
        link(from, &urn);
    }
    for batch in edges.chunks(500) {
        kb.stores()
            .graph
            .upsert(&partition, Vec::new(), batch.to_vec())
            .await?;
    }
    Ok(results)
}
