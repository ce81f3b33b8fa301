//! Issue trackers — GitHub, GitLab and Jira: their REST response bodies as issues, comments,
//! history and links, and an issue as a prepared source.
//!
//! The parsers are pure: the poller does HTTP, pagination and rate limits, and hands each
//! response body to the parser of its endpoint. A body that is not JSON (a proxy's sign-in
//! page) is [`TrackerError::NotJson`] saying what came back; JSON of the wrong shape (an error
//! object where a list was expected) is [`TrackerError::Shape`] naming the field. Nothing here
//! panics on hostile input.
//!
//! An issue becomes one source (`tracker:{source}:{key}`): a header chunk (state, type,
//! priority, labels, people, links) with the description, one chunk per comment (its id in
//! the locator), and the history (state, assignee, label changes, one line each). Its graph is
//! keyed so that it joins what other indexers write: the issue is [`keys::issue`] /
//! [`keys::jira_issue`] — exactly the key the git indexer gives `fixes #12` — people are
//! [`keys::person`] with their tracker login and display name as aliases, and `#12`, `SHOP-7`
//! and full commit hashes in the text become refs.

use std::collections::{BTreeSet, HashSet};

use evident_core::chunking::{ChunkingConfig, chunk_text, estimate_tokens};
use evident_core::commits::{IssueKey, issue_refs};
use evident_core::hashing::content_hash;
use evident_core::keys::{self, IssueContext};
use evident_core::prepared::{props, put_prop};
use evident_core::secrets::redact;
use evident_core::validate::MAX_ID_LEN;
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource,
    Scope, refs,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod github;
mod gitlab;
mod graph;
mod jira;
mod json;
mod model;
mod node_keys;
mod source;

pub use github::*;
pub use gitlab::*;
pub use graph::milestone_key;
pub(crate) use graph::*;
pub use jira::*;
pub(crate) use json::*;
pub use model::*;
pub use node_keys::*;
pub use source::*;

/// Bump when what an issue becomes changes (re-ingests unchanged issues once).
pub const TRACKER_VERSION: &str = "tracker-v2";

/// How much of a non-JSON body an error quotes.
const PREVIEW_CHARS: usize = 80;
/// How much of a non-JSON body is looked at to say what it is.
const SNIFF_BYTES: usize = 4096;
/// Longest old/new value quoted on a history line (a Jira description change carries both
/// whole descriptions; the history says *that* it changed, the description chunk says *what*).
const MAX_HISTORY_VALUE_CHARS: usize = 200;
/// Longest source title in chars (the knowledge base refuses titles over 1024 bytes; 250
/// chars of at most 4 bytes stay under it).
const MAX_TITLE_CHARS: usize = 250;

static NULL: Value = Value::Null;

#[cfg(test)]
mod tests;
