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
        self.run_on(commits, tx, readers_for(commits.len()))
    }

    /// [`CommitReading::run`] on `k` reader threads.
    fn run_on(
        &self,
        commits: &[String],
        tx: &tokio::sync::mpsc::Sender<PreparedSource>,
        k: usize,
    ) -> Result<usize, GitError> {
        let k = k.max(1);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository of `n` commits, each changing one of three files. Returns (dir, hashes
    /// oldest first).
    fn history(n: usize) -> (tempfile::TempDir, Vec<String>) {
        let dir = tempfile::tempdir().expect("tmp");
        let repo = git2::Repository::init(dir.path()).expect("init");
        let sig = git2::Signature::now("Ada", "ada@example.com").expect("sig");
        let mut parent: Option<git2::Oid> = None;
        let mut hashes = Vec::new();
        for i in 0..n {
            let file = format!("f{}.py", i % 3);
            let body = format!("def f{i}():\n    return {i}\n");
            std::fs::write(dir.path().join(&file), body).expect("write");
            let mut index = repo.index().expect("index");
            index.add_path(std::path::Path::new(&file)).expect("add");
            let tree = repo
                .find_tree(index.write_tree().expect("tree"))
                .expect("tree");
            let parents: Vec<git2::Commit<'_>> = parent
                .map(|p| repo.find_commit(p).expect("parent"))
                .into_iter()
                .collect();
            let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
            let oid = repo
                .commit(
                    Some("HEAD"),
                    &sig,
                    &sig,
                    &format!("Change {i} (refs #{i})"),
                    &tree,
                    &refs,
                )
                .expect("commit");
            hashes.push(oid.to_string());
            parent = Some(oid);
        }
        (dir, hashes)
    }

    fn read(reading: &CommitReading, commits: &[String], k: usize) -> Vec<PreparedSource> {
        let (tx, mut rx) = tokio::sync::mpsc::channel(commits.len() + 1);
        let n = reading.run_on(commits, &tx, k).expect("read");
        drop(tx);
        let mut out = Vec::new();
        while let Ok(p) = rx.try_recv() {
            out.push(p);
        }
        assert_eq!(n, out.len());
        out
    }

    /// Several readers send exactly what one reader sends, in the same order, skipping a
    /// commit that is not in the repository without losing their alignment.
    #[test]
    fn parallel_readers_send_what_one_reader_sends_in_order() {
        let (dir, mut commits) = history(45);
        commits.insert(7, "0123456789abcdef0123456789abcdef01234567".into());
        let cfg = GitSourceConfig {
            name: "repo".into(),
            url: None,
            path: Some(dir.path().to_path_buf()),
            branches: vec![],
            username_env: None,
            token_env: None,
            issue_tracker: None,
            max_file_bytes: super::super::default_max_file_bytes(),
        };
        let scope = evident_core::Scope::client("c");
        let reading = CommitReading {
            ctx: super::super::repo_context("src", &scope, &cfg),
            cfg,
            mirrors: dir.path().join("mirrors"),
            source_id: "src".into(),
            max_tokens: 400,
        };
        let one = read(&reading, &commits, 1);
        assert_eq!(one.len(), 45, "the missing commit is skipped");
        for k in [2, 3, 4] {
            let many = read(&reading, &commits, k);
            assert_eq!(many, one, "{k} readers");
        }
    }
}
