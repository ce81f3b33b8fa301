//! Storage traits for Evident, with their contracts, and the conformance suite.
//!
//! The API and the workers see only these traits; only `store-*` crates know a database.
//! Every read takes a [`Visibility`] and must apply it (and nothing narrower or wider) —
//! the conformance suite checks each backend does.
//!
//! Must not: contain a backend, do I/O, or depend on a runtime.

pub mod access;
pub mod claims;
pub mod conformance;
mod error;
pub mod gaps;
pub mod indexers;
pub mod memory;
pub mod procedures;
pub mod queue;
#[cfg(feature = "model")]
pub mod queue_model;
mod traits;
mod types;
pub mod walk;
mod writer;

pub use error::{ErrorKind, StoreError};
pub use traits::{
    AliasRegistry, ChunkStore, GraphStore, Health, QUEUE_SIDE_ROLES, ServingRoles, SourceRegistry,
    SourceWriter, check_merge,
};
pub use types::*;
pub use writer::{SequencedWriter, SourceRecordWriter};

use std::sync::Arc;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The set of stores one deployment uses; each role may come from a different backend.
#[derive(Clone)]
pub struct Stores {
    pub graph: Arc<dyn GraphStore>,
    pub chunks: Arc<dyn ChunkStore>,
    pub aliases: Arc<dyn AliasRegistry>,
    pub sources: Arc<dyn SourceRegistry>,
    /// Applies one source's changes across the stores above, atomically where the backend
    /// can (embedded) and as an idempotent ordered sequence where it cannot.
    pub writer: Arc<dyn SourceWriter>,
    /// The qualification queue.
    pub queue: Arc<dyn queue::TaskQueue>,
    /// Polled sources, their cursors and polling leases.
    pub indexers: Arc<dyn indexers::IndexerStore>,
    /// Session memory of agents.
    pub memory: Arc<dyn memory::MemoryStore>,
    /// API tokens and the audit log.
    pub access: Arc<dyn access::AccessStore>,
    /// Claims, their history and the chunks that evidence them.
    pub claims: Arc<dyn claims::ClaimStore>,
    /// Procedural memory of agents.
    pub procedures: Arc<dyn procedures::ProcedureStore>,
    /// Knowledge gaps and their history.
    pub gaps: Arc<dyn gaps::GapStore>,
    /// Every backend in use, for readiness checks.
    pub health: Vec<Arc<dyn Health>>,
}
