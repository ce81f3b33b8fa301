//! Writing prepared git sources through the knowledge base, shared by the task handlers and
//! the push API: concurrent ingest (writes share group commits), and commits linked to their
//! branch.

use evident_ai::Priority;
use evident_core::hashing::{chunk_id, content_hash};
use evident_core::{EdgeWrite, Evidence, NodeKey, PreparedSource, Scope, Visibility, keys};
use evident_kb::{IngestStatus, Kb, KbError};
use evident_store::{Direction, TraverseOptions};

/// Prepared sources as they are produced: a reader thread sends, the writers receive, so
/// reading the repository overlaps with embedding and writing.
pub type PreparedStream = tokio::sync::mpsc::Receiver<PreparedSource>;

/// A stream of sources already in memory (the push API).
pub fn stream_of(sources: Vec<PreparedSource>) -> PreparedStream {
    let (tx, rx) = tokio::sync::mpsc::channel(sources.len().max(1));
    for s in sources {
        // Cannot fail: the channel holds them all and the receiver is alive.
        let _ = tx.try_send(s);
    }
    rx
}

/// Runs `job` on each item as it arrives, `parallel` at a time. One output per item, in
/// arrival order; an item whose job panicked gets a retryable error.
async fn run_bounded<T, R, F, Fut>(
    mut items: tokio::sync::mpsc::Receiver<T>,
    parallel: usize,
    job: F,
) -> Vec<Result<R, KbError>>
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> Fut,
    Fut: std::future::Future<Output = Result<R, KbError>> + Send + 'static,
{
    let mut out: Vec<Option<Result<R, KbError>>> = Vec::new();
    let mut set = tokio::task::JoinSet::new();
    let collect = |out: &mut Vec<Option<Result<R, KbError>>>, joined| match joined {
        Ok((i, r)) => out[i] = Some(r),
        Err(e) => tracing::error!(error = %e, "ingest worker failed"),
    };
    while let Some(item) = items.recv().await {
        while set.len() >= parallel.max(1) {
            if let Some(j) = set.join_next().await {
                collect(&mut out, j);
            }
        }
        let i = out.len();
        out.push(None);
        let fut = job(item);
        set.spawn(async move { (i, fut.await) });
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

/// Ingests prepared sources as they arrive, `parallel` at a time. One result per source, in
/// order.
pub async fn ingest_all(
    kb: &Kb,
    sources: PreparedStream,
    parallel: usize,
    priority: Priority,
) -> Vec<Result<IngestStatus, KbError>> {
    run_bounded(sources, parallel, |p| {
        let kb = kb.clone();
        async move { kb.ingest_prepared(p, priority).await.map(|o| o.status) }
    })
    .await
}

/// The id of a commit source's message chunk (its first), which evidences branch links.
fn message_chunk_id(scope: &Scope, p: &PreparedSource) -> Option<String> {
    p.chunks
        .first()
        .map(|c| chunk_id(scope.partition(), &p.source_urn, &content_hash(&c.text), 0))
}

/// A stored commit's node and message chunk, and the branches linked to it before.
type CommitLinks = ((NodeKey, String), Vec<NodeKey>);

/// One commit ingested. Before its ingest replaces its chunks: the branches linked to it
/// when it is stored under another fingerprint. Each commit's links are evidenced by its own
/// message chunk only, so reading them just before its own write is enough.
async fn ingest_commit(
    kb: Kb,
    scope: Scope,
    partition: String,
    p: PreparedSource,
    priority: Priority,
) -> Result<(IngestStatus, Option<(NodeKey, String)>, Vec<NodeKey>), KbError> {
    let link = match (p.nodes.first(), message_chunk_id(&scope, &p)) {
        (Some(node), Some(chunk)) => Some((node.key.clone(), chunk)),
        _ => None,
    };
    let mut relinks: Vec<NodeKey> = Vec::new();
    if let Some((commit, _)) = &link
        && let Some(prev) = kb.stores().sources.get(&partition, &p.source_urn).await?
        && prev.content_hash != p.fingerprint
    {
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
        relinks.extend(sub.edges.into_iter().map(|e| e.from));
    }
    let status = kb.ingest_prepared(p, priority).await?.status;
    Ok((status, link, relinks))
}

/// `branch –has_commit→ commit` for every stored commit, from `branch` and from the
/// branches linked to it before, each evidenced by the commit's message chunk.
fn has_commit_edges(
    scope: &Scope,
    branch_key: Option<NodeKey>,
    links: Vec<CommitLinks>,
) -> Vec<EdgeWrite> {
    let evidence = |chunk: &str| {
        vec![Evidence {
            chunk_id: chunk.to_string(),
            scope: scope.clone(),
        }]
    };
    let mut edges: Vec<EdgeWrite> = Vec::new();
    for ((commit, chunk), relinks) in links {
        for from in branch_key.iter().cloned().chain(relinks) {
            edges.push(EdgeWrite {
                from,
                to: commit.clone(),
                edge_type: "has_commit".into(),
                props: serde_json::Map::new(),
                evidence: evidence(&chunk),
            });
        }
    }
    edges
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
    prepared: PreparedStream,
    parallel: usize,
    priority: Priority,
) -> Result<Vec<Result<IngestStatus, KbError>>, KbError> {
    let partition = scope.partition().to_string();
    let outcomes = run_bounded(prepared, parallel, |p| {
        ingest_commit(kb.clone(), scope.clone(), partition.clone(), p, priority)
    })
    .await;

    // Only stored commits have a message chunk to evidence a link.
    let mut links: Vec<CommitLinks> = Vec::new();
    let mut results = Vec::with_capacity(outcomes.len());
    for outcome in outcomes {
        results.push(outcome.map(|(status, link, relinks)| {
            if let Some(link) = link {
                links.push((link, relinks));
            }
            status
        }));
    }
    let branch_key = branch.map(|b| keys::branch(repository, b));
    let edges = has_commit_edges(scope, branch_key, links);
    for batch in edges.chunks(500) {
        kb.stores()
            .graph
            .upsert(&partition, Vec::new(), batch.to_vec())
            .await?;
    }
    Ok(results)
}
