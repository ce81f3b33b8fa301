//! Evident's domain core: the vocabulary every other crate speaks.
//!
//! What lives here: scopes and the one visibility rule ([`scope`]), graph keys, ref
//! extraction and relationship parsing ([`refs`]), the data model of nodes, edges, chunks
//! and locators ([`model`]), structure-aware chunking ([`chunking`]), content hashing
//! ([`hashing`]), credential detection ([`secrets`]) and input limits ([`validate`]).
//!
//! What must not live here: I/O of any kind, async, clocks, randomness, storage drivers.
//! Everything in this crate is a pure function of its inputs so it can be property-tested.

pub mod access;
pub mod chunking;
pub mod claims;
pub mod commits;
pub mod hashing;
pub mod keys;
pub mod model;
pub mod prepared;
pub mod refs;
pub mod scope;
pub mod secrets;
pub mod typed;
pub mod validate;

pub use model::{Chunk, Edge, EdgeWrite, Evidence, Locator, Node, NodeWrite};
pub use prepared::{EvidenceSpec, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource};
pub use refs::NodeKey;
pub use scope::{Scope, Visibility};
pub use typed::{KnowledgeType, Typed, TypedFilter};
