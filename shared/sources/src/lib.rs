//! Source registration, shared by the HTTP API, the CLI, the configuration file and the
//! pollers: one flat request shape per source, the one list of source kinds ([`KINDS`]),
//! every kind's settings with their checks ([`kinds`]), what sources may reach ([`access`]),
//! the programs the operator lets them run ([`commands`]) and the credential variables they
//! may name ([`credentials`]), and git registration and pushes ([`git`]).
//!
//! Must not: poll, fetch or read a source (that is `evident-indexers`), serve HTTP, or know
//! a database; it sees `evident-store` traits and the knowledge base.

pub mod access;
pub mod commands;
pub mod credentials;
pub mod git;
pub mod kinds;
pub mod registration;

pub use registration::*;
