//! Evident's code understanding, shared by the git indexer and the push API
//! (`/ingest/git-structure`, `/ingest/git-commits`, `/ingest/cpg`).
//!
//! - [`lang`]: the languages parsed (Rust, Python, Java, Kotlin, Go, JavaScript/JSX,
//!   TypeScript/TSX), recognised by file name.
//! - [`outline`]: tree-sitter extraction of symbols (qualified names, signatures, line spans)
//!   and imports.
//! - [`chunks`]: code chunks at symbol boundaries, never inside a line.
//! - [`semantic`]: `calls`, `extends`, `implements` and `uses_type` edges resolved against a
//!   per-branch symbol table (rules per language in its documentation).
//! - [`skip`]: which files are not indexed (vendored, generated, binary, oversized) and why.
//! - [`structure`], [`commit`], [`overview`], [`cpg`]: files, commits, branch overviews and
//!   call-graph exports as [`evident_core::PreparedSource`]s with the git vocabulary
//!   (`repository –has_branch→ branch –contains_file→ file –contains→ class –has_method→
//!   method`, `commit –modifies/creates/deletes/renames→ file`, `–parent→`, `–authored_by→`,
//!   `–fixes/references→` issues).
//!
//! Must not: do I/O (no files, no git, no network). Inputs are text and metadata; outputs are
//! outlines and [`evident_core::PreparedSource`]s for the knowledge base.

pub mod chunks;
pub mod commit;
pub mod cpg;
pub mod lang;
pub mod outline;
mod overloads;
pub mod overview;
pub mod semantic;
pub mod skip;
pub mod structure;

pub use lang::Language;
pub use outline::{Import, Outline, OutlineError, Symbol, SymbolKind, outline};
