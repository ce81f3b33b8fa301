//! The transactional SourceWriter with group commit.
//!
//! Each source write is applied inside its own SAVEPOINT, and every write waiting at the
//! moment is committed in one transaction — one fsync for many ingests (`synchronous=FULL`
//! makes the fsync the dominant cost of a small write). A write that fails rolls back to its
//! savepoint without touching its neighbours; the caller is answered only after COMMIT, so
//! acknowledgement still means durable. The vector index is updated after the commit, in the
//! same writer critical section, so its tail receives row ids in commit order.

use std::sync::mpsc;

use async_trait::async_trait;
use evident_store::{RecordUpdate, RemovedCounts, Result, SourceWrite, SourceWriter, StoreError};
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::{EmbeddedStore, Inner, chunks, graph, sources, sqlite_err};

/// Most writes committed together.
const MAX_GROUP: usize = 64;

pub(crate) struct Job {
    write: SourceWrite,
    reply: oneshot::Sender<Result<RemovedCounts>>,
}

/// Row-level effects of an applied write, published to the vector index after commit.
struct Applied {
    removed: RemovedCounts,
    forgotten: Vec<u64>,
    inserted: Vec<u64>,
}

fn apply_in(conn: &Connection, w: &SourceWrite) -> Result<Applied> {
    // Evidence of deleted chunks goes; so does that of relocated chunks, whose refs may have
    // changed (an alias merge since) — the write's nodes and edges re-add what still holds.
    // Garbage is collected only after the upsert, so nothing still evidenced is deleted.
    let mut affected = graph::Affected::default();
    let mut forgotten = Vec::new();
    if !w.delete_chunk_ids.is_empty() {
        graph::drop_evidence(conn, &w.partition, &w.delete_chunk_ids, &mut affected)?;
        forgotten = chunks::delete_chunks(conn, &w.partition, &w.delete_chunk_ids)?;
    }
    let deleted = forgotten.len();
    if !w.relocate_chunks.is_empty() {
        let ids: Vec<String> = w.relocate_chunks.iter().map(|c| c.id.clone()).collect();
        graph::drop_evidence(conn, &w.partition, &ids, &mut affected)?;
    }
    let mut inserted = Vec::with_capacity(w.upsert_chunks.len());
    for (chunk, vector) in &w.upsert_chunks {
        let (rid, replaced) = chunks::insert_chunk(conn, chunk, vector)?;
        forgotten.extend(replaced);
        inserted.push(rid);
    }
    for chunk in &w.relocate_chunks {
        chunks::relocate_chunk(conn, chunk)?;
    }
    graph::upsert_graph(conn, &w.partition, &w.nodes, &w.edges)?;
    match &w.record {
        RecordUpdate::Put(rec) => sources::put(conn, rec)?,
        RecordUpdate::Remove => sources::remove(conn, &w.partition, &w.source_urn)?,
        RecordUpdate::Keep => {}
    }
    let mut removed = graph::collect_garbage(conn, affected)?;
    removed.chunks = deleted;
    Ok(Applied {
        removed,
        forgotten,
        inserted,
    })
}

/// Removes deleted rows from the in-memory indexes (after their commit).
pub(crate) fn unpublish(inner: &Inner, rids: &[u64]) {
    inner.vectors.forget(rids);
    inner.text.remove(rids);
}

fn publish(conn: &Connection, inner: &Inner, w: SourceWrite, applied: &Applied) -> Result<()> {
    unpublish(inner, &applied.forgotten);
    for (rid, (chunk, vector)) in applied.inserted.iter().zip(w.upsert_chunks) {
        inner
            .vectors
            .track_row(*rid, &chunk.id, &chunk.scope, &chunk.kind);
        inner.text.add(*rid, chunk.title.as_deref(), &chunk.content);
        inner.vectors.push(*rid, vector);
    }
    retrack(conn, inner, &w.relocate_chunks)
}

type Reply = (
    oneshot::Sender<Result<RemovedCounts>>,
    Result<RemovedCounts>,
);

/// Commits a group of writes and returns each one's answer (sent by the caller, after it has
/// let go of the store, so that a caller who drops the store right after its write returns
/// really releases it).
fn commit_group(inner: &Inner, jobs: Vec<Job>) -> Vec<Reply> {
    let mut conn = inner.writer.lock();
    let mut applied: Vec<(Job, Result<Applied>)> = Vec::with_capacity(jobs.len());
    let committed = (|| -> Result<()> {
        let tx = conn.transaction().map_err(sqlite_err)?;
        for job in jobs {
            tx.execute_batch("SAVEPOINT source_write")
                .map_err(sqlite_err)?;
            let r = apply_in(&tx, &job.write);
            if r.is_err() {
                tx.execute_batch("ROLLBACK TO source_write")
                    .map_err(sqlite_err)?;
            }
            tx.execute_batch("RELEASE source_write")
                .map_err(sqlite_err)?;
            applied.push((job, r));
        }
        tx.commit().map_err(sqlite_err)
    })();
    match committed {
        Ok(()) => applied
            .into_iter()
            .map(|(job, r)| {
                let answer = match r {
                    Ok(a) => publish(&conn, inner, job.write, &a).map(|_| a.removed),
                    Err(e) => Err(e),
                };
                (job.reply, answer)
            })
            .collect(),
        Err(e) => {
            // Nothing of the group is durable (the transaction rolled back): every write fails
            // with the cause, and may be retried.
            tracing::error!(error = %e, "group commit failed; no write of this group was applied");
            applied
                .into_iter()
                .map(|(job, _)| (job.reply, Err(e.clone())))
                .collect()
        }
    }
}

/// The writer thread: takes every waiting write and commits them together.
pub(crate) fn run_writer(inner: std::sync::Weak<Inner>, jobs: mpsc::Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(j) => group.push(j),
                Err(_) => break,
            }
        }
        let replies = {
            let Some(inner) = inner.upgrade() else { return };
            commit_group(&inner, group)
        };
        for (reply, answer) in replies {
            let _ = reply.send(answer);
        }
    }
}

/// Relocated chunks may have changed scope, kind or title: refresh the in-memory indexes.
pub(crate) fn retrack(
    conn: &Connection,
    inner: &Inner,
    relocated: &[evident_core::Chunk],
) -> Result<()> {
    use rusqlite::OptionalExtension;
    for chunk in relocated {
        let rid: Option<i64> = conn
            .query_row("SELECT rid FROM chunks WHERE id = ?1", [&chunk.id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sqlite_err)?;
        if let Some(rid) = rid {
            let rid = rid as u64;
            inner
                .vectors
                .track_row(rid, &chunk.id, &chunk.scope, &chunk.kind);
            // The title may have changed: re-index the row's text.
            inner.text.remove(&[rid]);
            inner.text.add(rid, chunk.title.as_deref(), &chunk.content);
        }
    }
    Ok(())
}

/// Chunk-only upsert (the ChunkStore trait method): the same path as a source write.
pub(crate) async fn apply_chunks_only(
    store: &EmbeddedStore,
    chunks: Vec<(evident_core::Chunk, Vec<f32>)>,
) -> Result<()> {
    let Some(first) = chunks.first() else {
        return Ok(());
    };
    let (partition, urn) = (
        first.0.scope.partition().to_string(),
        first.0.source_urn.clone(),
    );
    let write = SourceWrite {
        partition,
        source_urn: urn,
        upsert_chunks: chunks,
        record: RecordUpdate::Keep,
        ..Default::default()
    };
    store.submit(write).await.map(drop)
}

impl EmbeddedStore {
    /// Sends a write to the group-commit thread and waits for its durable outcome.
    pub(crate) async fn submit(&self, write: SourceWrite) -> Result<RemovedCounts> {
        let dim = self.inner.vectors.space().dim;
        for (chunk, v) in &write.upsert_chunks {
            if v.len() != dim {
                return Err(StoreError::invalid(format!(
                    "chunk {} has a {}-d vector; the store holds {dim}-d vectors",
                    chunk.id,
                    v.len()
                )));
            }
        }
        let (reply, answer) = oneshot::channel();
        self.inner
            .writes
            .lock()
            .as_ref()
            .ok_or_else(|| StoreError::unavailable("store is closed"))?
            .send(Job { write, reply })
            .map_err(|_| StoreError::unavailable("store writer stopped"))?;
        answer.await.map_err(|_| {
            StoreError::unavailable("the write was not committed (see the log); retry")
        })?
    }
}

#[async_trait]
impl SourceWriter for EmbeddedStore {
    async fn apply(&self, write: SourceWrite) -> Result<RemovedCounts> {
        self.submit(write).await
    }
}
