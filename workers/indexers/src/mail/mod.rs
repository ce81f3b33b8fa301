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

use evident_store::indexers::IndexerSource;

use crate::items::ItemTask;
use crate::poll::{PollContext, PollError};
pub use evident_sources::kinds::mail::{DEFAULT_MAX_MESSAGE_BYTES, MaildirConfig, MboxConfig};

pub use imap::{ImapConfig, ImapPoller, ImapSecurity};
pub use local::{MaildirPoller, MboxPoller};

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
