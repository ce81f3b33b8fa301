//! Evident's code understanding, shared by the git indexer and the push API
//! (`/ingest/git-structure`, `/ingest/git-commits`, `/ingest/cpg`).
//!
//! - [`lang`]: the languages parsed (Rust, Python, Java, Kotlin, Go, JavaScript/JSX,
//!   TypeScript/TSX), recognised by file name.
//! - [`outline`]: tree-sitter extraction of symbols (qualified names, signatures, line spans)
//!   and imports.
//!
//! Must not: do I/O (no files, no git, no network). Inputs are text and metadata; outputs are
//! outlines and [`evident_core::PreparedSource`]s for the knowledge base.

pub mod chunks;
pub mod lang;
pub mod outline;
pub mod skip;
pub mod structure;

pub use lang::Language;
pub use outline::{Import, Outline, OutlineError, Symbol, SymbolKind, outline};
