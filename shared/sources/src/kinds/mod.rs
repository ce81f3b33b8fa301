//! The settings of every kind of source, as stored in `IndexerSource::config`, with the
//! checks registration runs on them. The pollers read them back with [`crate::config_of`].

pub mod documents;
pub mod git;
pub mod mail;
pub mod meetings;
pub mod tracker;
pub mod wiki;

/// Attachments larger than this are not read unless a source says otherwise.
pub const DEFAULT_MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;
