//! Evident's application layer: the operations the API, the CLI and the workers share.
//!
//! - [`Kb::ingest`]: validate → reject credentials → normalise refs → resolve aliases →
//!   chunk → embed only new chunks → write chunks, nodes and edges as one unit.
//! - [`Kb::purge`]: remove a source, its chunks, and graph items left without evidence.
//! - [`Kb::retrieve`]: BM25 + vector candidates and entity hits fused by weighted RRF over
//!   chunk ids, graph expansion from the top hits, per-source diversity, an evidence pack.
//! - alias and graph reads, with the reader's visibility; [`listing`]: chunks by kind, the
//!   source registry, the queue's tasks.
//! - agent memory: user knowledge and its prefetch ([`user_knowledge`]), task outcomes
//!   ([`outcomes`]), the session log ([`session_log`]), procedures ([`procedures`]).
//!
//! Must not: know HTTP or a database. It sees `evident-store` traits and an `Embedder`.

pub mod agent_graph;
mod aliases;
pub mod claims;
pub mod code_graph;
pub mod context;
pub mod credentials;
mod error;
pub mod evidence;
pub mod gaps;
mod graph;
pub mod identities;
pub mod ingest;
mod knowledge;
pub mod listing;
pub mod memory;
pub mod outcomes;
pub mod overview;
mod pools;
pub mod procedures;
pub mod profile;
pub mod retrieve;
pub mod session_log;
pub mod structured;
pub mod tasks;
pub mod typed;
pub mod user_knowledge;
mod watch;

use std::sync::Arc;

use evident_ai::Embedder;
use evident_core::chunking::ChunkingConfig;
use evident_store::{Stores, VectorSpace};

pub use error::{KbError, Result, describe as describe_scope};
pub use graph::{NodeAtDepth, NodeView, TraverseQuery};
pub use ingest::{Document, IngestOutcome, IngestStatus, PurgeOutcome};
pub use knowledge::knowledge_urn;
pub use pools::{PoolConfig, WritePools};
pub use retrieve::{EvidencePack, RetrieveQuery};
pub use tasks::{TaskBody, TaskError, TaskHandler, TaskHandlers, TaskSubmitter};
pub use user_knowledge::{KnowledgeCategory, KnowledgeItem, UserContext};
pub use watch::{Stage, Watch};

/// The knowledge base: stores + embedder + write pools. Cheap to clone.
#[derive(Clone)]
pub struct Kb {
    pub(crate) stores: Stores,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) pools: WritePools,
    pub(crate) chunking: ChunkingConfig,
    pub(crate) session_log_ttl_secs: u64,
    pub(crate) procedure_half_life_days: u64,
    /// Lock stripes held while identities are merged (see [`identities`]).
    pub(crate) merging: Arc<[tokio::sync::Mutex<()>; identities::MERGE_STRIPES]>,
}

impl Kb {
    /// Binds the embedder's vector space to the chunk store (refusing a mismatch) and
    /// returns the knowledge base.
    pub async fn new(stores: Stores, embedder: Arc<dyn Embedder>, pools: PoolConfig) -> Result<Kb> {
        stores
            .chunks
            .bind_vector_space(&VectorSpace {
                embedder: embedder.identity().to_string(),
                dim: embedder.dim(),
            })
            .await?;
        Ok(Kb {
            stores,
            embedder,
            pools: WritePools::new(pools),
            chunking: ChunkingConfig::default(),
            session_log_ttl_secs: session_log::DEFAULT_TTL_SECS,
            procedure_half_life_days: procedures::DEFAULT_HALF_LIFE_DAYS,
            merging: Arc::new(std::array::from_fn(|_| tokio::sync::Mutex::new(()))),
        })
    }

    pub fn with_chunking(mut self, chunking: ChunkingConfig) -> Self {
        self.chunking = chunking;
        self
    }

    pub fn stores(&self) -> &Stores {
        &self.stores
    }

    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    pub fn pools(&self) -> &WritePools {
        &self.pools
    }
}

/// Builds the reader's visibility from request scope fields, validating them.
pub fn visibility(
    client_id: Option<&str>,
    project_id: Option<&str>,
    group_id: Option<&str>,
) -> Result<evident_core::Visibility> {
    Ok(evident_core::Visibility::of(scope(
        client_id, project_id, group_id,
    )?))
}

/// The scope a write lands in: global with `global: true` (and no client), else the
/// client's (project or group need a client).
pub fn write_scope(
    client_id: Option<&str>,
    project_id: Option<&str>,
    group_id: Option<&str>,
    global: bool,
) -> Result<evident_core::Scope> {
    match (global, client_id) {
        (true, Some(_)) => Err(KbError::Invalid(
            "`global: true` writes global data and takes no clientId".into(),
        )),
        (false, None) => {
            Err(evident_core::validate::FieldError::Missing { field: "clientId" }.into())
        }
        _ => scope(client_id, project_id, group_id),
    }
}

/// Validated scope from request fields: project or group need a client.
pub fn scope(
    client_id: Option<&str>,
    project_id: Option<&str>,
    group_id: Option<&str>,
) -> Result<evident_core::Scope> {
    use evident_core::validate;
    for (field, v) in [
        ("clientId", client_id),
        ("projectId", project_id),
        ("groupId", group_id),
    ] {
        if let Some(v) = v {
            validate::identifier(field, v)?;
        }
    }
    let scope = evident_core::Scope {
        client_id: client_id.map(str::to_string),
        project_id: project_id.map(str::to_string),
        group_id: group_id.map(str::to_string),
    };
    if !scope.is_consistent() {
        return Err(KbError::Invalid(
            "projectId and groupId need a clientId".into(),
        ));
    }
    Ok(scope)
}

/// A knowledge base over an embedded store in `dir`, with a small hashing embedder (tests).
#[cfg(test)]
pub(crate) async fn test_kb(dir: &std::path::Path) -> Kb {
    let embedder: Arc<dyn Embedder> = Arc::new(evident_ai::HashingEmbedder::new(32).expect("dim"));
    let store =
        evident_store_embedded::EmbeddedStore::open(evident_store_embedded::EmbeddedOptions {
            dir: dir.to_path_buf(),
            vector_space: VectorSpace {
                embedder: embedder.identity().to_string(),
                dim: embedder.dim(),
            },
            background_indexer: false,
        })
        .expect("store");
    Kb::new(store.stores(), embedder, Default::default())
        .await
        .expect("kb")
}
