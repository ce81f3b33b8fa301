//! The mail indexer: mbox files, Maildir folders and IMAP mailboxes, polled for new messages.
//! Each new message goes on the queue as an `ingest-mail` item (its bytes, up to the size
//! limit); workers parse it into a message with its thread, people, links and attachments.
//!
//! - [`local`]: mbox (append detection: only the bytes after the last poll's last message are
//!   re-read while the head is unchanged) and Maildir (a `ctime` watermark per folder:
//!   delivery and flag changes both rename, and renames set `ctime`).
//! - [`imap`]: UID-based, per mailbox, restarting from the beginning when `UIDVALIDITY`
//!   changes; TLS or STARTTLS; credentials read from the environment when connecting.
//!
//! A message seen again (a re-read mbox, the same Message-ID in two folders) is written once:
//! its URN is its Message-ID within the source and an unchanged fingerprint is skipped.

pub mod imap;
pub mod local;

use std::path::PathBuf;

use evident_store::indexers::IndexerSource;
use serde::{Deserialize, Serialize};

use crate::items::ItemTask;
use crate::poll::{PollContext, PollError};
use crate::sources::SourceConfig;

pub use imap::{ImapConfig, ImapPoller, ImapSecurity};
pub use local::{MaildirPoller, MboxPoller};

/// Messages larger than this are read only up to it unless a source says otherwise (their
/// text comes first; the attachment cut off is listed as not read).
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 25 * 1024 * 1024;

fn default_max_message_bytes() -> u64 {
    DEFAULT_MAX_MESSAGE_BYTES
}

fn default_max_attachment_bytes() -> u64 {
    crate::items::DEFAULT_MAX_ATTACHMENT_BYTES
}

fn check_limits(max_message: u64, max_attachment: u64) -> Result<(), String> {
    if !(1024..=1 << 30).contains(&max_message) {
        return Err("`maxMessageBytes` must be between 1 KiB and 1 GiB".into());
    }
    if max_attachment == 0 {
        return Err("`maxAttachmentBytes` must be positive".into());
    }
    Ok(())
}

fn check_path(path: &std::path::Path) -> Result<(), String> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(format!("`path` must be absolute, not `{}`", path.display()))
    }
}

/// The file (or folder) name a path is known by: the source's default name.
fn path_name(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mail".into())
}

/// `kind = "mbox"`: one mbox file, or every mbox file in a folder (each file is a mailbox).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MboxConfig {
    pub path: PathBuf,
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: u64,
    #[serde(default = "default_max_attachment_bytes")]
    pub max_attachment_bytes: u64,
}

impl SourceConfig for MboxConfig {
    const KIND: &'static str = "mbox";
    const FAMILY: &'static str = "mail";

    fn validate(&self) -> Result<(), String> {
        check_path(&self.path)?;
        check_limits(self.max_message_bytes, self.max_attachment_bytes)
    }

    fn name(&self) -> String {
        path_name(&self.path)
    }

    fn local_paths(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
}

/// `kind = "maildir"`: a Maildir (`cur/`, `new/`), with Maildir++ subfolders (`.Sent/`) as
/// further mailboxes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaildirConfig {
    pub path: PathBuf,
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: u64,
    #[serde(default = "default_max_attachment_bytes")]
    pub max_attachment_bytes: u64,
}

impl SourceConfig for MaildirConfig {
    const KIND: &'static str = "maildir";
    const FAMILY: &'static str = "mail";

    fn validate(&self) -> Result<(), String> {
        check_path(&self.path)?;
        check_limits(self.max_message_bytes, self.max_attachment_bytes)
    }

    fn name(&self) -> String {
        path_name(&self.path)
    }

    fn local_paths(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
}

/// A quick look for the Message-ID in a message's header (no full parse): it orders the
/// message's tasks in the queue. Messages without one are ordered by a hash of their bytes.
pub fn message_id_hint(raw: &[u8]) -> Option<String> {
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .or_else(|| raw.windows(2).position(|w| w == b"\n\n"))
        .unwrap_or(raw.len().min(64 * 1024));
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let mut lines = head.lines().peekable();
    while let Some(line) = lines.next() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if !name.trim().eq_ignore_ascii_case("message-id") {
            continue;
        }
        let mut value = value.to_string();
        while let Some(next) = lines.peek().filter(|l| l.starts_with([' ', '\t'])) {
            value.push_str(next);
            lines.next();
        }
        let id = value.trim().trim_start_matches('<');
        let id = id.split('>').next().unwrap_or(id).trim();
        return (!id.is_empty()).then(|| id.to_string());
    }
    None
}

/// Messages being queued at once (their writes share the store's group commits).
pub(crate) const ENQUEUE_IN_FLIGHT: usize = 64;

/// Queues messages read from `mailbox` (`(bytes, size at the source)`), several at a time.
/// Returns how many were queued.
pub(crate) async fn queue_batch(
    ctx: &PollContext,
    source: &IndexerSource,
    mailbox: &str,
    messages: Vec<(Vec<u8>, u64)>,
    max_bytes: u64,
) -> Result<u64, PollError> {
    use futures_util::{StreamExt, TryStreamExt};
    futures_util::stream::iter(messages)
        .map(|(raw, size)| queue_message(ctx, source, mailbox, raw, size, max_bytes))
        .buffer_unordered(ENQUEUE_IN_FLIGHT)
        .try_fold(0u64, |n, ()| async move { Ok(n + 1) })
        .await
}

/// Queues one message read from `mailbox` (`full_size` bytes at the source; cut at
/// `max_bytes`).
pub(crate) async fn queue_message(
    ctx: &PollContext,
    source: &IndexerSource,
    mailbox: &str,
    mut raw: Vec<u8>,
    full_size: u64,
    max_bytes: u64,
) -> Result<(), PollError> {
    let truncated_at = (full_size.max(raw.len() as u64) > max_bytes).then(|| {
        raw.truncate(max_bytes as usize);
        max_bytes
    });
    let queue_urn = match message_id_hint(&raw) {
        Some(id) => evident_extract::mail::message_urn(&source.id, &id),
        None => format!(
            "{}{}",
            crate::sources::urn_prefix(&source.kind, &source.id),
            &evident_core::hashing::content_hash(&String::from_utf8_lossy(&raw))
        ),
    };
    let task = ItemTask::IngestMail {
        v: 1,
        source_id: source.id.clone(),
        mailbox: mailbox.to_string(),
        raw,
        truncated_at,
    };
    task.queue(ctx, source, &queue_urn).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_id_hints_read_folded_headers() {
        assert_eq!(
            message_id_hint(b"From: a@x\r\nMessage-ID:\r\n <abc@x.io>\r\n\r\nbody").as_deref(),
            Some("abc@x.io")
        );
        assert_eq!(
            message_id_hint(b"message-id: <q@z>\n\nMessage-ID: <not@header>").as_deref(),
            Some("q@z")
        );
        assert_eq!(message_id_hint(b"Subject: none\n\nMessage-ID: <b@x>"), None);
        assert_eq!(message_id_hint(b""), None);
    }
}
