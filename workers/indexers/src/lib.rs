//! Evident's continuous indexers: each polls its kind of source, plans the difference since
//! its last poll onto the qualification queue, and executes those tasks (registered as task
//! handlers, so any worker can run them).
//!
//! - [`git`]: repositories — files with their symbols, every commit, branch overviews.
//!
//! Must not: know HTTP or a database; it sees `evident-store` traits, the knowledge base and
//! the sources themselves.

pub mod git;
pub mod poll;
