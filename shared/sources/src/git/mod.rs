//! Git sources registered through the API, the CLI or the configuration file, and git data
//! pushed by external indexers (`/ingest/git-structure`, `/ingest/git-commits`,
//! `/ingest/cpg`), parsed by `evident-code` and written through the knowledge base.

pub mod push;
pub mod service;
pub mod write;
