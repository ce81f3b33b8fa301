//! E-mail: mbox splitting (mboxo, mboxrd, Content-Length), MIME parsing (mail-parser:
//! charsets, RFC 2047 headers, multipart, nested messages), and a message as prepared sources —
//! the message with its header and body chunks (`{messageId, mailbox, part, charStart,
//! charEnd}`), its people, its thread, its links, and each attachment as a document.

use std::collections::HashMap;
use std::sync::LazyLock;

use evident_core::chunking::{ChunkingConfig, chunk_text};
use evident_core::hashing::content_hash;
use evident_core::prepared::props;
use evident_core::secrets::redact;
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource,
    Scope, keys, refs,
};
use mail_parser::{Address, HeaderValue, MessageParser, MimeHeaders, PartType};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::document::{DocumentMeta, Format, document_source, extract};
use crate::html::html_to_text;

mod decode;
mod mbox;
mod mime;
mod parse;
mod source;

use decode::*;
pub use mbox::*;
use mime::*;
pub use parse::*;
pub use source::*;

/// Bump when what a message becomes changes.
pub const MAIL_VERSION: &str = "mail-v2";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmailAddress {
    pub name: Option<String>,
    pub email: Option<String>,
}

impl EmailAddress {
    /// `"Name" <addr>`, `addr`, or `Name`.
    pub fn render(&self) -> String {
        match (&self.name, &self.email) {
            (Some(n), Some(e)) => format!("\"{n}\" <{e}>"),
            (None, Some(e)) => e.clone(),
            (Some(n), None) => n.clone(),
            (None, None) => String::new(),
        }
    }
}

/// The MIME structure: a content type and the parts inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MimeNode {
    pub content_type: String,
    pub children: Vec<MimeNode>,
}

/// A body (or nested message body) as text, with its MIME part number (`1`, `2.1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPart {
    pub part: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub part: String,
    pub filename: Option<String>,
    pub content_type: String,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    /// Without angle brackets; synthesised from the content when the message has none.
    pub message_id: String,
    pub subject: Option<String>,
    pub from: Vec<EmailAddress>,
    pub to: Vec<EmailAddress>,
    pub cc: Vec<EmailAddress>,
    /// RFC 3339.
    pub date: Option<String>,
    /// As RFC 5322 writes it (`Fri, 26 Sep 2025 10:18:40 -0700`).
    pub date_rfc822: Option<String>,
    pub in_reply_to: Vec<String>,
    pub references: Vec<String>,
    pub texts: Vec<TextPart>,
    pub attachments: Vec<Attachment>,
    pub links: Vec<String>,
    pub structure: MimeNode,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailError {
    #[error("not an e-mail message: {0}")]
    Unparsable(String),
}

#[cfg(test)]
mod tests;
