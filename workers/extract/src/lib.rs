//! Evident's source formats, shared by the indexers and the push API.
//!
//! - [`document`]: text out of PDF (per page), HTML, DOCX, Markdown and plain text, and a
//!   document as a prepared source with `{uri, page?, charStart, charEnd}` locators.
//! - [`html`]: readable text out of HTML (scripts and hidden content dropped).
//! - [`mail`]: mbox and RFC 5322 messages as threads, people, links and attachments.
//! - [`meeting`]: a transcript as a meeting with participants and turn-aligned chunks.
//! - [`tracker`]: GitHub, GitLab and Jira issues with comments, history and links.
//! - [`transcript`]: WebVTT, SRT and JSON transcripts as timed, attributed cues.
//! - [`wiki`]: Confluence pages (sections, hierarchy, labels, mentions, attachments).
//! - [`xml`]: DOCX and Confluence storage-format text.
//!
//! Must not: do I/O. Inputs are bytes and metadata; outputs are text and
//! [`evident_core::PreparedSource`]s.

pub mod document;
pub mod html;
pub mod mail;
pub mod meeting;
pub mod tracker;
pub mod transcript;
pub mod wiki;
pub mod xml;
