//! Confluence: REST responses (`/wiki/rest/api/content`, `/content/search`,
//! `/content/{id}/child/attachment`) as pages and attachments, and a page as a prepared source
//! with one chunk run per section (`{pageId, version, section, uri}` locators), its author,
//! the people it mentions, its parent, space, labels and the pages it links to.
//!
//! Pure functions: the poller does HTTP and pagination and calls these once per response body.
//!
//! Storage format becomes text through [`crate::xml::storage_to_text`]; this module only
//! prepares its input and reads its output:
//!
//! - heading start tags get a private-use mark (`U+E000`) right after them, so a heading line
//!   of the output (`## \u{E000}Deploy`) is told apart from text that merely starts with `#`
//!   (a shell comment in a code macro, "# of users" in a paragraph); the mark never reaches a
//!   chunk;
//! - a body-less link to a page or an attachment (`<ac:link><ri:page ri:content-title="X"/>
//!   </ac:link>`) gets its title as text, which `storage_to_text` would otherwise drop
//!   ("Read  before your first release");
//! - the lone `-` line that `storage_to_text` writes for Confluence's usual `<li><p>…</p></li>`
//!   is joined with its text again (`- text`).
//!
//! Identities: the last editor is a person keyed like everywhere else ([`keys::person`]: e-mail,
//! else display name, else account id) with the display name and the account id as aliases.
//! Mentions carry only an account id; they are keyed by it (`user:{accountId}`) and resolve to
//! the person through those aliases once the person has edited a page.

use std::sync::LazyLock;

use evident_core::chunking::{ChunkingConfig, chunk_text};
use evident_core::hashing::content_hash;
use evident_core::prepared::props;
use evident_core::secrets::redact;
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource,
    Scope, keys, refs,
};
use regex::{Captures, Regex};
use serde_json::{Map, Value};

use crate::document::{DocumentMeta, Format};
use crate::tracker::opt;
use crate::xml::storage_to_text;

mod api;
mod attachments;
mod mentions;
mod source;
mod storage;
mod urns;

pub use api::*;
pub use attachments::*;
use mentions::*;
pub use source::*;
use storage::*;
pub use urns::*;

/// Bump when what a page becomes changes (re-ingests unchanged pages once).
pub const WIKI_VERSION: &str = "wiki-v1";

/// The chunk kind of attachments (the `kind` of their document sources).
pub const ATTACHMENT_KIND: &str = "wiki-attachment";

/// Put after every heading start tag before conversion (see the module docs). Private use:
/// it means nothing in real text, and any occurrence in the input is removed first.
const HEADING_MARK: char = '\u{E000}';

#[cfg(test)]
mod tests;
