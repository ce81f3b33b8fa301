//! Evident's continuous indexers: each polls its kind of source, plans the difference since
//! its last poll onto the qualification queue, and executes those tasks (registered as task
//! handlers, so any worker can run them).
//!
//! - [`git`]: repositories — files with their symbols, every commit, branch overviews.
//! - [`mail`]: mbox, Maildir and IMAP mailboxes.
//! - [`tracker`]: GitHub, GitLab and Jira issues over REST.
//! - [`wiki`]: Confluence spaces.
//! - [`meetings`]: transcripts, and recordings transcribed by an operator's command.
//! - [`documents`]: folders of documents and a bounded web crawler.
//! - [`poll`], [`report`]: the polling loop, leases, typed poll reports and errors.
//! - [`items`]: the queue tasks of polled items (extraction happens on workers).
//! - [`sources`], [`access`]: registration, every kind's settings and what sources may
//!   reach, re-exported from `evident-sources` (which the API depends on instead of this
//!   crate).
//!
//! Must not: serve HTTP or know a database; it sees `evident-store` traits, the knowledge base and
//! the sources themselves.

pub mod access;
pub mod documents;
pub mod folder;
pub mod git;
pub mod items;
pub mod mail;
pub mod meetings;
pub mod poll;
pub mod report;
pub mod robots;
pub mod sources;
pub mod tracker;
pub mod wiki;
