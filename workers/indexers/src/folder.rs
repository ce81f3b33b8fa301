//! Watching a folder of files (documents, transcripts): which files are new or changed since
//! the last poll, and which are gone. One cursor per file, `file:{relative path}` →
//! `{mtimeMs, len, sha256}`; a file whose time or size moved is hashed, and only a changed hash
//! counts as changed (a `touch` is not a change).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use evident_ai::Priority;
use evident_store::indexers::{IndexerSource, SourceKey};

use crate::poll::{PollContext, PollError};
use crate::report::{FolderReport, Skips};

const PREFIX: &str = "file:";

/// Files listed per scan at most: a runaway folder does not exhaust memory.
const MAX_FILES: usize = 200_000;

/// What the last poll saw of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileState {
    pub mtime_ms: i64,
    pub len: u64,
    pub sha256: String,
}

/// A file found new or changed.
#[derive(Debug, Clone)]
pub struct ChangedFile {
    /// Path relative to the folder, `/`-separated: the file's identity in the source.
    pub rel: String,
    pub path: PathBuf,
    pub state: FileState,
    /// The file's content (read once, for the hash and the task).
    pub bytes: Vec<u8>,
}

/// The outcome of a scan.
#[derive(Debug, Default)]
pub struct FolderScan {
    pub changed: Vec<ChangedFile>,
    /// Relative paths seen before and now missing.
    pub removed: Vec<String>,
    pub unchanged: usize,
    /// Files whose time moved but whose content did not: their state is re-recorded only.
    pub touched: Vec<(String, FileState)>,
    /// Files not read, with the reason (too large, unreadable).
    pub skipped: Vec<String>,
}

/// A file's modification time in milliseconds.
pub(crate) fn mtime_ms(meta: &std::fs::Metadata) -> i64 {
    meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000
}

/// The files under `root` that `accept` takes, as (`/`-separated path relative to `root`,
/// path), sorted; dot-files and dot-folders are left out, and at most [`MAX_FILES`] listed.
pub(crate) fn walk(root: &Path, accept: &dyn Fn(&Path) -> bool) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            if out.len() >= MAX_FILES {
                out.sort();
                return out;
            }
            let name = e.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let path = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() && accept(&path) => {
                    let rel = path
                        .strip_prefix(root)
                        .unwrap_or(&path)
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/");
                    out.push((rel, path));
                }
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// Lists the folder and compares with the cursors. Reading and hashing run on the blocking
/// pool. Files over `max_bytes` are skipped with the reason.
pub async fn scan(
    ctx: &PollContext,
    source_id: &SourceKey,
    root: &Path,
    max_bytes: u64,
    accept: fn(&Path) -> bool,
) -> Result<FolderScan, PollError> {
    if !root.is_dir() {
        return Err(PollError::NotFound {
            what: root.display().to_string(),
            reason: "not a folder (or not readable)".into(),
        });
    }
    let known: std::collections::HashMap<String, FileState> = ctx
        .cursors(source_id, PREFIX)
        .await?
        .into_iter()
        .filter_map(|(k, v)| {
            Some((
                k.strip_prefix(PREFIX)?.to_string(),
                serde_json::from_value(v).ok()?,
            ))
        })
        .collect();
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || compare_folder(&root, accept, &known, max_bytes))
        .await
        .map_err(|e| PollError::internal("scanning the folder", e))
}

/// The folder's files compared with what the cursors remember: removed, unchanged, touched
/// (time changed, content not), changed (read), skipped (with the reason).
fn compare_folder(
    root: &Path,
    accept: fn(&Path) -> bool,
    known: &std::collections::HashMap<String, FileState>,
    max_bytes: u64,
) -> FolderScan {
    let files = walk(root, &accept);
    let mut out = FolderScan::default();
    let present: std::collections::HashSet<&str> =
        files.iter().map(|(rel, _)| rel.as_str()).collect();
    out.removed = known
        .keys()
        .filter(|k| !present.contains(k.as_str()))
        .cloned()
        .collect();
    out.removed.sort();
    for (rel, path) in &files {
        compare_file(rel, path, known.get(rel), max_bytes, &mut out);
    }
    out
}

fn compare_file(
    rel: &str,
    path: &Path,
    before: Option<&FileState>,
    max_bytes: u64,
    out: &mut FolderScan,
) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    let mtime_ms = mtime_ms(&meta);
    if before.is_some_and(|b| b.mtime_ms == mtime_ms && b.len == meta.len()) {
        out.unchanged += 1;
        return;
    }
    if meta.len() > max_bytes {
        out.skipped.push(format!(
            "{rel}: {} bytes, over the {max_bytes}-byte limit",
            meta.len()
        ));
        return;
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            out.skipped.push(format!("{rel}: {e}"));
            return;
        }
    };
    let state = FileState {
        mtime_ms,
        len: meta.len(),
        sha256: hex::encode(Sha256::digest(&bytes)),
    };
    if before.is_some_and(|b| b.sha256 == state.sha256) {
        // Touched, not changed: remember the new time so it is not hashed again.
        out.unchanged += 1;
        out.touched.push((rel.to_string(), state));
        return;
    }
    out.changed.push(ChangedFile {
        rel: rel.to_string(),
        path: path.to_path_buf(),
        state,
        bytes,
    });
}

/// Records a file as handled (call once its work is queued).
pub async fn mark(
    ctx: &PollContext,
    source_id: &SourceKey,
    rel: &str,
    state: &FileState,
) -> Result<(), PollError> {
    ctx.set_cursor(source_id, &format!("{PREFIX}{rel}"), &json!(state))
        .await
}

/// Forgets a file that is gone (call once its removal is queued).
pub async fn forget(ctx: &PollContext, source_id: &SourceKey, rel: &str) -> Result<(), PollError> {
    ctx.forget_cursor(source_id, &format!("{PREFIX}{rel}"))
        .await
}

/// A file's extension, lower-cased.
pub fn extension(path: &Path) -> Option<String> {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
}

/// After the changed files are queued: records the touched ones, and queues the purge of each
/// removed file's source (`urn_of(rel)`) before forgetting it. Returns the scan's counts for
/// the poll report, with `queued` as given.
pub async fn settle(
    ctx: &PollContext,
    source: &IndexerSource,
    scan: FolderScan,
    queued: u64,
    urn_of: impl Fn(&str) -> String,
) -> Result<FolderReport, PollError> {
    for (rel, state) in &scan.touched {
        mark(ctx, &source.key(), rel, state).await?;
    }
    for rel in &scan.removed {
        ctx.tasks
            .enqueue_purge(
                source.scope.clone(),
                &urn_of(rel),
                Priority::DEFAULT,
                ctx.clock.now_ms(),
            )
            .await?;
        forget(ctx, &source.key(), rel).await?;
    }
    Ok(FolderReport {
        queued,
        unchanged: scan.unchanged,
        removed: scan.removed.len(),
        skipped: Skips::of(scan.skipped),
    })
}
