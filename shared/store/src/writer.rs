use std::sync::Arc;

use async_trait::async_trait;

use crate::{
    AliasRegistry, ChunkStore, GraphStore, RecordUpdate, RemovedCounts, Result, SourceWrite,
    SourceWriter,
};

/// A [`SourceWriter`] for deployments whose roles live in different backends, where one
/// transaction cannot span them. Steps are ordered so that a crash at any point leaves a
/// state that re-applying the same write repairs, and a reader never sees an edge whose
/// evidence chunk does not exist yet:
/// 0. register the write's aliases (idempotent: a crash after it leaves the source stale, and
///    the redone ingest registers what is still missing);
/// 1. insert new chunks; 2. upsert nodes and edges (evidence now exists);
/// 3. remove evidence of deleted chunks (graph first, so no edge cites a missing chunk);
/// 4. delete the chunks; 5. write (or remove) the registry record last — until then the
///    source still looks stale and the ingest is redone.
pub struct SequencedWriter {
    pub chunks: Arc<dyn ChunkStore>,
    pub graph: Arc<dyn GraphStore>,
    pub sources: Arc<dyn SourceRecordWriter>,
    /// Where [`SourceWrite::register_aliases`] go.
    pub aliases: Arc<dyn AliasRegistry>,
}

/// The write half of a source registry, used by [`SequencedWriter`] as its final step.
#[async_trait]
pub trait SourceRecordWriter: Send + Sync {
    async fn put(&self, record: &crate::SourceRecord) -> Result<()>;
    async fn remove(&self, partition: &str, source_urn: &str) -> Result<()>;
}

#[async_trait]
impl SourceWriter for SequencedWriter {
    async fn apply(&self, write: SourceWrite) -> Result<RemovedCounts> {
        if !write.register_aliases.is_empty() {
            self.aliases
                .register_many(&write.partition, &write.register_aliases)
                .await?;
        }
        if !write.upsert_chunks.is_empty() {
            self.chunks.upsert(write.upsert_chunks).await?;
        }
        let relocated: Vec<String> = write.relocate_chunks.iter().map(|c| c.id.clone()).collect();
        if !write.relocate_chunks.is_empty() {
            self.chunks.relocate(write.relocate_chunks).await?;
        }
        if !relocated.is_empty() {
            // Their refs may have changed: drop their evidence; the upsert below re-adds what
            // still holds (nodes and edges evidenced only by them are re-created).
            self.graph
                .remove_evidence(&write.partition, &relocated)
                .await?;
        }
        if !write.nodes.is_empty() || !write.edges.is_empty() {
            self.graph
                .upsert(&write.partition, write.nodes, write.edges)
                .await?;
        }
        let mut removed = RemovedCounts::default();
        if !write.delete_chunk_ids.is_empty() {
            removed = self
                .graph
                .remove_evidence(&write.partition, &write.delete_chunk_ids)
                .await?;
            removed.chunks = self
                .chunks
                .delete(&write.partition, &write.delete_chunk_ids)
                .await?;
        }
        match &write.record {
            RecordUpdate::Put(record) => self.sources.put(record).await?,
            RecordUpdate::Remove => {
                self.sources
                    .remove(&write.partition, &write.source_urn)
                    .await?
            }
            RecordUpdate::Keep => {}
        }
        Ok(removed)
    }
}
