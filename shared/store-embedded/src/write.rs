//! The transactional SourceWriter: one SQLite transaction per source write, and the vector
//! index updated in the same writer critical section right after the commit.

use async_trait::async_trait;
use evident_store::{RemovedCounts, Result, SourceWrite, SourceWriter};
use rusqlite::Connection;

use crate::{EmbeddedStore, Inner, chunks, graph, sources, sqlite_err};

/// Applies `w` in one transaction; on success updates the in-memory vector index.
pub(crate) fn apply(conn: &mut Connection, inner: &Inner, w: SourceWrite) -> Result<RemovedCounts> {
    let tx = conn.transaction().map_err(sqlite_err)?;
    let mut removed = RemovedCounts::default();
    let mut forgotten = Vec::new();
    if !w.delete_chunk_ids.is_empty() {
        removed = graph::remove_evidence(&tx, &w.partition, &w.delete_chunk_ids)?;
        forgotten = chunks::delete_chunks(&tx, &w.partition, &w.delete_chunk_ids)?;
        removed.chunks = forgotten.len();
    }
    let mut inserted = Vec::with_capacity(w.upsert_chunks.len());
    for (chunk, vector) in &w.upsert_chunks {
        let (rid, replaced) = chunks::insert_chunk(&tx, chunk, vector)?;
        if let Some(old) = replaced {
            forgotten.push(old);
        }
        inserted.push(rid);
    }
    for chunk in &w.relocate_chunks {
        chunks::relocate_chunk(&tx, chunk)?;
    }
    graph::upsert_graph(&tx, &w.partition, &w.nodes, &w.edges)?;
    match &w.record {
        Some(rec) => sources::put(&tx, rec)?,
        None => sources::remove(&tx, &w.partition, &w.source_urn)?,
    }
    tx.commit().map_err(sqlite_err)?;

    // Durable now. Publish to the vector index while still holding the writer lock, so the
    // tail receives row ids in commit order.
    inner.vectors.forget(&forgotten);
    for (rid, (chunk, vector)) in inserted.into_iter().zip(w.upsert_chunks) {
        inner
            .vectors
            .track_row(rid, &chunk.id, &chunk.scope, &chunk.kind);
        inner.vectors.push(rid, vector);
    }
    retrack(conn, inner, &w.relocate_chunks)?;
    Ok(removed)
}

/// Relocated chunks may have changed scope or kind: refresh the vector filter's row map.
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
            inner
                .vectors
                .track_row(rid as u64, &chunk.id, &chunk.scope, &chunk.kind);
        }
    }
    Ok(())
}

/// Chunk-only upsert (the ChunkStore trait method) with the same publication rules.
pub(crate) fn apply_chunks_only(
    conn: &mut Connection,
    inner: &Inner,
    w: SourceWrite,
) -> Result<()> {
    let tx = conn.transaction().map_err(sqlite_err)?;
    let mut inserted = Vec::with_capacity(w.upsert_chunks.len());
    let mut forgotten = Vec::new();
    for (chunk, vector) in &w.upsert_chunks {
        let (rid, replaced) = chunks::insert_chunk(&tx, chunk, vector)?;
        forgotten.extend(replaced);
        inserted.push(rid);
    }
    tx.commit().map_err(sqlite_err)?;
    inner.vectors.forget(&forgotten);
    for (rid, (chunk, vector)) in inserted.into_iter().zip(w.upsert_chunks) {
        inner
            .vectors
            .track_row(rid, &chunk.id, &chunk.scope, &chunk.kind);
        inner.vectors.push(rid, vector);
    }
    Ok(())
}

#[async_trait]
impl SourceWriter for EmbeddedStore {
    async fn apply(&self, write: SourceWrite) -> Result<RemovedCounts> {
        for (chunk, v) in &write.upsert_chunks {
            if v.len() != self.inner.vectors.space().dim {
                return Err(evident_store::StoreError::invalid(format!(
                    "chunk {} has a {}-d vector; the store holds {}-d vectors",
                    chunk.id,
                    v.len(),
                    self.inner.vectors.space().dim
                )));
            }
        }
        self.write(move |conn, inner| apply(conn, inner, write))
            .await
    }
}
