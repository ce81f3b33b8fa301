//! mbox files and Maildir folders on the indexer's disk.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use evident_extract::mail::split_mbox;
use evident_store::indexers::IndexerSource;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{ENQUEUE_IN_FLIGHT, MaildirConfig, MboxConfig, queue_batch, queue_message};
use crate::poll::{LeasedPoller, PollContext, PollError, PollReport};
use crate::report::{MaildirReport, MboxReport, examples};

/// How much of an mbox is read at a time: memory stays bounded on multi-gigabyte archives.
const MBOX_BLOCK_BYTES: usize = 64 * 1024 * 1024;
/// Bytes hashed at the resume point to tell an appended mbox from a rewritten one.
const CHECK_BYTES: u64 = 4096;

fn io_err(path: &Path, e: std::io::Error) -> PollError {
    PollError::unreachable(path.display().to_string(), e)
}

/// Where an mbox was left: its size and time then, and the offset of its last message (which
/// is read again, since a writer may still have been appending to it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MboxCursor {
    len: u64,
    mtime_ms: i64,
    resume: u64,
    /// SHA-256 of the bytes at `resume` (up to [`CHECK_BYTES`]).
    check: String,
}

fn hash_at(file: &mut std::fs::File, offset: u64, len: u64) -> std::io::Result<String> {
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = vec![0; len as usize];
    file.read_exact(&mut buf)?;
    Ok(hex::encode(Sha256::digest(&buf)))
}

/// The files of an mbox source: the file itself, or the regular, non-hidden files of a folder.
fn mbox_files(path: &Path) -> Result<Vec<PathBuf>, PollError> {
    let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| io_err(path, e))?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    files.sort();
    Ok(files)
}

/// Where the last complete message of `buf` ends, when more may follow: the start of the
/// last `From ` line after a blank line (`None` when the buffer holds at most one message).
fn last_boundary(buf: &[u8]) -> Option<usize> {
    (2..buf.len()).rev().find(|&i| {
        buf[i..].starts_with(b"From ")
            && buf[i - 1] == b'\n'
            && (buf[i - 2] == b'\n' || (i >= 3 && buf[i - 2] == b'\r' && buf[i - 3] == b'\n'))
    })
}

/// Reads an mbox from `start`, calling `each(offset, bytes)` per message in order.
fn read_mbox(
    path: &Path,
    start: u64,
    block: usize,
    mut each: impl FnMut(u64, Vec<u8>),
) -> Result<(), PollError> {
    let mut file = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
    file.seek(SeekFrom::Start(start))
        .map_err(|e| io_err(path, e))?;
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_offset = start;
    let mut eof = false;
    while !eof {
        let mut chunk = vec![0; block];
        let mut filled = 0;
        while filled < block {
            let n = file
                .read(&mut chunk[filled..])
                .map_err(|e| io_err(path, e))?;
            if n == 0 {
                eof = true;
                break;
            }
            filled += n;
        }
        buf.extend_from_slice(&chunk[..filled]);
        let cut = if eof {
            buf.len()
        } else {
            match last_boundary(&buf) {
                Some(b) if b > 0 => b,
                // One message larger than the block: keep reading.
                _ => continue,
            }
        };
        for entry in split_mbox(&buf[..cut]) {
            each(buf_offset + entry.offset as u64, entry.bytes);
        }
        buf.drain(..cut);
        buf_offset += cut as u64;
    }
    Ok(())
}

/// Polls `kind = "mbox"` sources.
pub struct MboxPoller {
    pub ctx: PollContext,
}

impl MboxPoller {
    /// Reads `path` from `start` on the blocking pool and queues its messages as they come
    /// (bounded channel: the reader waits for the queue, so memory holds one block and a few
    /// messages); the start of the last message read, and how many were queued.
    async fn queue_from(
        &self,
        source: &IndexerSource,
        cfg: &MboxConfig,
        path: &std::path::Path,
        name: &str,
        start: u64,
    ) -> Result<(u64, u64), PollError> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(u64, Vec<u8>)>(64);
        let p = path.to_path_buf();
        let reader = tokio::task::spawn_blocking(move || {
            read_mbox(&p, start, MBOX_BLOCK_BYTES, |offset, bytes| {
                let _ = tx.blocking_send((offset, bytes));
            })
        });
        let mut last_start = start;
        let mut queued = 0u64;
        // Enqueues in flight together share the store's group commits.
        let mut in_flight = futures_util::stream::FuturesUnordered::new();
        while let Some((offset, bytes)) = rx.recv().await {
            last_start = last_start.max(offset);
            let size = bytes.len() as u64;
            in_flight.push(queue_message(
                &self.ctx,
                source,
                name,
                bytes,
                size,
                cfg.max_message_bytes,
            ));
            if in_flight.len() >= ENQUEUE_IN_FLIGHT
                && let Some(done) = in_flight.next().await
            {
                done?;
                queued += 1;
            }
        }
        while let Some(done) = in_flight.next().await {
            done?;
            queued += 1;
        }
        reader
            .await
            .map_err(|e| PollError::internal(format!("reading {name}"), e))??;
        Ok((last_start, queued))
    }
}

/// Where to read an mbox from, given its cursor: `None` when it is unchanged; else the
/// offset and whether it is read from scratch (it was rewritten, not appended to: the bytes
/// at the cursor's resume point are no longer the ones seen).
async fn resume_point(
    path: &std::path::Path,
    cursor: Option<&MboxCursor>,
    len: u64,
    mtime: i64,
) -> Option<(u64, bool)> {
    match cursor {
        Some(c) if c.len == len && c.mtime_ms == mtime => None,
        Some(c) if len >= c.len && c.len > c.resume => {
            let p = path.to_path_buf();
            let (resume, check_len, check) = (
                c.resume,
                (c.len - c.resume).min(CHECK_BYTES),
                c.check.clone(),
            );
            let same = tokio::task::spawn_blocking(move || {
                std::fs::File::open(&p)
                    .and_then(|mut f| hash_at(&mut f, resume, check_len))
                    .is_ok_and(|h| h == check)
            })
            .await
            .unwrap_or(false);
            Some(if same { (resume, false) } else { (0, true) })
        }
        Some(_) => Some((0, true)),
        None => Some((0, false)),
    }
}

#[async_trait]
impl LeasedPoller for MboxPoller {
    const KIND: &'static str = "mbox";

    fn context(&self) -> &PollContext {
        &self.ctx
    }

    async fn poll_source(&self, source: &IndexerSource) -> Result<PollReport, PollError> {
        let cfg = self
            .ctx
            .rooted_config(source, |c: &mut MboxConfig| &mut c.path)?;
        let files = mbox_files(&cfg.path)?;
        let (mut queued, mut unchanged, mut reread) = (0u64, 0u64, 0u64);
        for path in &files {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let key = format!("mbox:{name}");
            let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
            let (len, mtime) = (meta.len(), crate::folder::mtime_ms(&meta));
            let cursor: Option<MboxCursor> = self
                .ctx
                .cursor(&source.key(), &key)
                .await?
                .and_then(|v| serde_json::from_value(v).ok());
            let Some((start, from_scratch)) = resume_point(path, cursor.as_ref(), len, mtime).await
            else {
                unchanged += 1;
                continue;
            };
            if from_scratch {
                reread += 1;
            }
            let (last_start, n) = self.queue_from(source, &cfg, path, &name, start).await?;
            queued += n;
            let p = path.clone();
            let check_len = len.saturating_sub(last_start).min(CHECK_BYTES);
            let check = tokio::task::spawn_blocking(move || {
                std::fs::File::open(&p).and_then(|mut f| hash_at(&mut f, last_start, check_len))
            })
            .await
            .map_err(|e| PollError::internal("checking the mbox", e))?
            .map_err(|e| io_err(path, e))?;
            let cursor = MboxCursor {
                len,
                mtime_ms: mtime,
                resume: last_start,
                check,
            };
            self.ctx
                .set_cursor(&source.key(), &key, &json!(cursor))
                .await?;
        }
        Ok(MboxReport {
            files: files.len(),
            unchanged_files: unchanged,
            reread_files: reread,
            messages: queued,
            queued,
        }
        .into())
    }
}

/// A Maildir folder's watermark: the latest `ctime` seen, and the files seen at exactly it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MaildirCursor {
    ctime_ns: i128,
    at_watermark: Vec<String>,
}

/// The mailboxes of a Maildir: the root as `INBOX`, Maildir++ subfolders (`.Sent`) by name.
fn maildir_folders(root: &Path) -> Result<Vec<(String, PathBuf)>, PollError> {
    let is_maildir = |p: &Path| p.join("cur").is_dir() || p.join("new").is_dir();
    if !root.is_dir() {
        return Err(PollError::NotFound {
            what: root.display().to_string(),
            reason: "not a folder".into(),
        });
    }
    let mut out = Vec::new();
    if is_maildir(root) {
        out.push(("INBOX".to_string(), root.to_path_buf()));
    }
    let mut subs: Vec<(String, PathBuf)> = std::fs::read_dir(root)
        .map_err(|e| io_err(root, e))?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let folder = name.strip_prefix('.')?.to_string();
            (!folder.is_empty() && is_maildir(&e.path())).then(|| (folder, e.path()))
        })
        .collect();
    subs.sort();
    out.extend(subs);
    if out.is_empty() {
        return Err(PollError::NotFound {
            what: root.display().to_string(),
            reason: "no Maildir here (no cur/ or new/)".into(),
        });
    }
    Ok(out)
}

/// Files of one folder (`new/` and `cur/`) newer than the cursor, oldest first.
fn maildir_new_files(
    folder: &Path,
    cursor: &MaildirCursor,
) -> Result<Vec<(i128, String, PathBuf)>, PollError> {
    let mut out = Vec::new();
    for sub in ["new", "cur"] {
        let dir = folder.join(sub);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let Ok(meta) = e.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let ctime = meta.ctime() as i128 * 1_000_000_000 + meta.ctime_nsec() as i128;
            let seen = ctime < cursor.ctime_ns
                || (ctime == cursor.ctime_ns && cursor.at_watermark.contains(&name));
            if !seen {
                out.push((ctime, name, e.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn read_capped(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    std::fs::File::open(path)?
        .take(max + 1)
        .read_to_end(&mut out)?;
    Ok(out)
}

/// Polls `kind = "maildir"` sources.
pub struct MaildirPoller {
    pub ctx: PollContext,
}

#[async_trait]
impl LeasedPoller for MaildirPoller {
    const KIND: &'static str = "maildir";

    fn context(&self) -> &PollContext {
        &self.ctx
    }

    async fn poll_source(&self, source: &IndexerSource) -> Result<PollReport, PollError> {
        let cfg = self
            .ctx
            .rooted_config(source, |c: &mut MaildirConfig| &mut c.path)?;
        let root = cfg.path.clone();
        let folders = tokio::task::spawn_blocking(move || maildir_folders(&root))
            .await
            .map_err(|e| PollError::internal("listing the Maildir", e))??;
        let mut queued = 0u64;
        let mut unreadable = Vec::new();
        for (mailbox, folder) in &folders {
            // A subfolder symlinked out of the roots is not read.
            if let Err(e) = self.ctx.access.path(folder) {
                unreadable.push(e.to_string());
                continue;
            }
            let key = format!("maildir:{mailbox}");
            let mut cursor: MaildirCursor = self
                .ctx
                .cursor(&source.key(), &key)
                .await?
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default();
            let (f, c) = (folder.clone(), cursor.clone());
            let fresh = tokio::task::spawn_blocking(move || maildir_new_files(&f, &c))
                .await
                .map_err(|e| PollError::internal("listing a Maildir folder", e))??;
            if fresh.is_empty() {
                continue;
            }
            let max = cfg.max_message_bytes;
            for batch in fresh.chunks(ENQUEUE_IN_FLIGHT) {
                let paths: Vec<PathBuf> = batch.iter().map(|(_, _, p)| p.clone()).collect();
                let read = tokio::task::spawn_blocking(move || {
                    paths
                        .iter()
                        .map(|p| (p.clone(), read_capped(p, max)))
                        .collect::<Vec<_>>()
                })
                .await
                .map_err(|e| PollError::internal("reading messages", e))?;
                let mut messages = Vec::with_capacity(read.len());
                for (path, r) in read {
                    match r {
                        Ok(bytes) => {
                            let size = bytes.len() as u64;
                            messages.push((bytes, size));
                        }
                        // Moved or deleted since the listing (a client expunged it): nothing
                        // to read. Other errors are the file's, reported, and not retried.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => unreadable.push(format!("{}: {e}", path.display())),
                    }
                }
                queued += queue_batch(&self.ctx, source, mailbox, messages, max).await?;
                for (ctime, name, _) in batch {
                    if *ctime > cursor.ctime_ns {
                        cursor = MaildirCursor {
                            ctime_ns: *ctime,
                            at_watermark: vec![name.clone()],
                        };
                    } else {
                        cursor.at_watermark.push(name.clone());
                    }
                }
            }
            self.ctx
                .set_cursor(&source.key(), &key, &json!(cursor))
                .await?;
        }
        Ok(MaildirReport {
            mailboxes: folders.len(),
            messages: queued,
            queued,
            unreadable: unreadable.len(),
            unreadable_examples: examples(unreadable),
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MBOX: &[u8] = b"From a@x Mon Jan  5 10:00:00 2026\nMessage-ID: <1@x>\nSubject: one\n\n>From the start.\n\nFrom b@x Mon Jan  5 11:00:00 2026\nMessage-ID: <2@x>\nSubject: two\n\nbody two\n\nFrom c@x Mon Jan  5 12:00:00 2026\nMessage-ID: <3@x>\nSubject: three\n\nbody three\n";

    #[test]
    fn blocks_never_split_a_message() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("box.mbox");
        std::fs::write(&path, MBOX).expect("write");
        for block in [7, 40, 100, 1 << 20] {
            let mut got = Vec::new();
            read_mbox(&path, 0, block, |offset, bytes| {
                got.push((offset, String::from_utf8_lossy(&bytes).into_owned()))
            })
            .expect("read");
            assert_eq!(got.len(), 3, "block {block}: {got:?}");
            assert!(got[0].1.contains("Subject: one"));
            assert!(got[2].1.contains("body three"));
            let second = MBOX
                .windows(7)
                .position(|w| w == b"From b@")
                .expect("second") as u64;
            assert_eq!(got[1].0, second, "block {block}");
        }
        // Resuming at a message's offset reads from it on.
        let second = MBOX.windows(7).position(|w| w == b"From b@").expect("b") as u64;
        let mut got = Vec::new();
        read_mbox(&path, second, 1 << 20, |_, b| got.push(b)).expect("read");
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn maildir_watermark_sees_each_file_once() {
        let dir = tempfile::tempdir().expect("dir");
        for sub in ["cur", "new", "tmp"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        std::fs::create_dir_all(dir.path().join(".Sent/cur")).expect("mkdir");
        std::fs::write(dir.path().join("new/1.host"), "Subject: a\n\na").expect("w");
        std::fs::write(dir.path().join("cur/2.host:2,S"), "Subject: b\n\nb").expect("w");
        let folders = maildir_folders(dir.path()).expect("folders");
        assert_eq!(
            folders.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            vec!["INBOX", "Sent"]
        );
        let first = maildir_new_files(dir.path(), &MaildirCursor::default()).expect("list");
        assert_eq!(first.len(), 2);
        let max = first.iter().map(|f| f.0).max().expect("max");
        let cursor = MaildirCursor {
            ctime_ns: max,
            at_watermark: first
                .iter()
                .filter(|f| f.0 == max)
                .map(|f| f.1.clone())
                .collect(),
        };
        assert!(
            maildir_new_files(dir.path(), &cursor)
                .expect("again")
                .is_empty()
        );
        assert!(maildir_folders(&dir.path().join("tmp")).is_err());
    }
}
