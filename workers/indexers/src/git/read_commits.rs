//! Reading a commit task's commits on several threads.
//!
//! Diffing a commit (tree diff, rename detection, patches) is CPU work in libgit2 of about half
//! a millisecond; one reader thread capped a commit task at ~2,000 commits/s whatever the
//! writer did. Each reader opens its own repository handle (a libgit2 repository is not shared
//! between threads) and takes every k-th commit; their outputs are merged back into the given
//! order, so what the writers receive is exactly what one reader would have sent.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use evident_code::commit::commit_source;
use evident_code::structure::RepoContext;
use evident_core::PreparedSource;

use super::GitSourceConfig;
use super::repo::{GitError, GitRepo};

/// Fewer commits than this are read on one thread (not worth a second repository handle).
const PARALLEL_FROM: usize = 32;
/// Most reader threads (the writers need the rest of the machine).
const MAX_READERS: usize = 4;

/// What the readers share.
pub(super) struct CommitReading {
    pub cfg: GitSourceConfig,
    pub mirrors: PathBuf,
    pub source_id: String,
    pub ctx: RepoContext,
    pub max_tokens: usize,
}

/// How many threads read `n` commits on this machine.
fn readers_for(n: usize) -> usize {
    if n < PARALLEL_FROM {
        return 1;
    }
    std::thread::available_parallelism()
        .map(|p| p.get())
        .unwrap_or(1)
        .clamp(1, MAX_READERS)
}

impl CommitReading {
    /// Reads the commits at positions `me`, `me + k`, … and sends each (or `None` for a commit
    /// no longer in the repository) until done or the merger stops listening.
    fn read_share(
        &self,
        commits: &[String],
        me: usize,
        k: usize,
        out: SyncSender<Option<PreparedSource>>,
    ) -> Result<(), GitError> {
        let repo = GitRepo::open(&self.cfg, &self.mirrors, &self.source_id)?;
        let issues = self.cfg.issue_context();
        for c in commits.iter().skip(me).step_by(k) {
            let prepared = match repo.oid(c) {
                Ok(oid) => {
                    let info = repo.commit_info(oid, self.cfg.max_file_bytes)?;
                    Some(commit_source(&self.ctx, &info, &issues, self.max_tokens))
                }
                Err(GitError::Missing(_)) => {
                    // Rewritten away and collected since planning: nothing to index.
                    tracing::warn!(commit = %c, "commit no longer in the repository; skipped");
                    None
                }
                Err(e) => return Err(e),
            };
            if out.send(prepared).is_err() {
                break;
            }
        }
        Ok(())
    }

    /// Reads `commits` (blocking; call on a blocking thread) and sends their prepared sources
    /// to `tx` in the order given. Returns how many were read. A mirror lacking the commits is
    /// fetched first, once.
    pub(super) fn run(
        &self,
        commits: &[String],
        tx: &tokio::sync::mpsc::Sender<PreparedSource>,
    ) -> Result<usize, GitError> {
        drop(super::tasks::open_with(
            &self.cfg,
            &self.mirrors,
            &self.source_id,
            commits,
        )?);
        let k = readers_for(commits.len());
        std::thread::scope(|s| {
            let mut inbox: Vec<Receiver<Option<PreparedSource>>> = Vec::with_capacity(k);
            let mut workers = Vec::with_capacity(k);
            for me in 0..k {
                let (out, rx) = sync_channel(8);
                inbox.push(rx);
                workers.push(s.spawn(move || self.read_share(commits, me, k, out)));
            }
            let mut read = 0;
            for i in 0..commits.len() {
                // A reader that stopped early failed: its error is returned below.
                let Ok(next) = inbox[i % k].recv() else { break };
                if let Some(p) = next {
                    if tx.blocking_send(p).is_err() {
                        break; // the writers stopped; their error is reported
                    }
                    read += 1;
                }
            }
            drop(inbox); // readers still sending see a closed channel and stop
            for w in workers {
                w.join()
                    .map_err(|_| GitError::Repository("a commit reader panicked".into()))??;
            }
            Ok(read)
        })
    }
}
