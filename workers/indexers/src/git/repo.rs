//! Reading repositories with libgit2: open a local repository or a mirror of a remote one
//! (cloned and fetched with credentials from the environment, never logged), list branches,
//! walk history, list trees, read blobs, and turn a commit into a lossless [`CommitInfo`].
//!
//! Everything here blocks: callers run it on the blocking pool.

use std::path::{Path, PathBuf};

use evident_code::commit::{ChangeStatus, CommitInfo, FileChange, Hunk};
use evident_code::overview::CommitSummary;
use evident_code::skip::{SkipReason, skip_by_path};
use git2::{Delta, DiffFindOptions, DiffOptions, Oid, Repository, Sort};

use super::GitSourceConfig;

/// Why a repository operation failed, classified for retry.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The network or the remote: retry later.
    #[error("remote unavailable: {0}")]
    Remote(String),
    /// The repository cannot be used as configured (not found, corrupt, bad credentials).
    #[error("repository: {0}")]
    Repository(String),
    /// An object the task needs is not in the repository (history rewritten and collected).
    #[error("not found: {0}")]
    Missing(String),
}

impl GitError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, GitError::Remote(_))
    }
}

fn repo_err(e: git2::Error) -> GitError {
    use git2::ErrorClass as C;
    match e.class() {
        C::Net | C::Http | C::Ssl | C::Ssh | C::Os => GitError::Remote(e.message().to_string()),
        _ => GitError::Repository(e.message().to_string()),
    }
}

/// A repository opened for reading: a local one, or the mirror of a remote.
pub struct GitRepo {
    repo: Repository,
    /// Branches live under `refs/remotes/origin/` (a mirror) rather than `refs/heads/`.
    mirror: bool,
}

/// Where the mirror of a remote source lives.
/// The mirrors of one client's sources: source ids are unique per client only, so each
/// client's mirrors live in a folder of their own (`c-{client}`, every byte outside
/// `[A-Za-z0-9_-]` written `~XX`: one client's name never reaches another's folder). Mirrors
/// that a build before per-client ids kept directly under `mirrors` are not reused (whose
/// they were cannot be told): they are cloned again, and the old folders can be deleted.
pub fn client_mirrors(mirrors: &Path, client: &str) -> PathBuf {
    let mut dir = String::from("c-");
    for b in client.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            dir.push(b as char);
        } else {
            dir.push_str(&format!("~{b:02x}"));
        }
    }
    mirrors.join(dir)
}

pub fn mirror_dir(mirrors: &Path, source_id: &str) -> PathBuf {
    let safe: String = source_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    mirrors.join(format!("{safe}.git"))
}

fn callbacks(cfg: &GitSourceConfig) -> git2::RemoteCallbacks<'static> {
    let user_env = cfg.username_env.clone();
    let token_env = cfg.token_env.clone();
    let mut cb = git2::RemoteCallbacks::new();
    let mut attempts = 0;
    cb.credentials(move |_url, user_from_url, allowed| {
        // libgit2 asks again after a rejected credential: give up instead of looping.
        attempts += 1;
        if attempts > 1 {
            return Err(git2::Error::from_str("the remote rejected the credentials"));
        }
        let token = token_env.as_deref().and_then(|v| std::env::var(v).ok());
        let user = user_env
            .as_deref()
            .and_then(|v| std::env::var(v).ok())
            .or(user_from_url.map(str::to_string))
            .unwrap_or_else(|| "x-access-token".into());
        match token {
            Some(t) if allowed.contains(git2::CredentialType::USER_PASS_PLAINTEXT) => {
                git2::Cred::userpass_plaintext(&user, &t)
            }
            _ => Err(git2::Error::from_str(
                "the remote needs credentials; set tokenEnv",
            )),
        }
    });
    cb
}

impl GitRepo {
    /// Opens the source's repository: its local path, or its mirror under `mirrors` (cloned
    /// on first use; call [`GitRepo::fetch`] to update it).
    pub fn open(
        cfg: &GitSourceConfig,
        mirrors: &Path,
        source_id: &str,
    ) -> Result<GitRepo, GitError> {
        // The registration checks, again: settings stored before they existed are refused.
        cfg.validate().map_err(GitError::Repository)?;
        if let Some(path) = &cfg.path {
            let repo = Repository::open(path).map_err(|e| {
                GitError::Repository(format!("{}: {}", path.display(), e.message()))
            })?;
            return Ok(GitRepo {
                repo,
                mirror: false,
            });
        }
        let url = cfg
            .url
            .as_deref()
            .ok_or_else(|| GitError::Repository("a git source needs a url or a path".into()))?;
        let dir = mirror_dir(mirrors, source_id);
        let repo = match Repository::open_bare(&dir) {
            Ok(r) => r,
            Err(_) => {
                std::fs::create_dir_all(&dir)
                    .map_err(|e| GitError::Repository(format!("{}: {e}", dir.display())))?;
                let r = Repository::init_bare(&dir).map_err(repo_err)?;
                r.remote_with_fetch("origin", url, "+refs/heads/*:refs/remotes/origin/*")
                    .map_err(repo_err)?;
                r
            }
        };
        Ok(GitRepo { repo, mirror: true })
    }

    /// Brings a mirror up to date (prunes deleted branches) and records the remote's default
    /// branch. A local repository is read as it is.
    pub fn fetch(&self, cfg: &GitSourceConfig) -> Result<(), GitError> {
        if !self.mirror {
            return Ok(());
        }
        let mut remote = self.repo.find_remote("origin").map_err(repo_err)?;
        let mut opts = git2::FetchOptions::new();
        opts.remote_callbacks(callbacks(cfg));
        opts.prune(git2::FetchPrune::On);
        opts.download_tags(git2::AutotagOption::None);
        // The remote's host passed the egress policy before this fetch (the poller and the
        // tasks check it); a redirect could lead anywhere, so none is followed. libgit2
        // resolves the host itself: between that check and its connection, a DNS answer
        // could change (a rebinding window this process cannot close without its own
        // transport; a short one, and only for hosts an operator registered).
        opts.follow_redirects(git2::RemoteRedirect::None);
        remote
            .fetch(
                &["+refs/heads/*:refs/remotes/origin/*"],
                Some(&mut opts),
                None,
            )
            .map_err(repo_err)?;
        // The remote's HEAD names its default branch; remember it as origin/HEAD.
        if let Ok(default) = remote.default_branch()
            && let Some(name) = default.as_str().and_then(|d| d.strip_prefix("refs/heads/"))
        {
            let target = format!("refs/remotes/origin/{name}");
            if self.repo.find_reference(&target).is_ok() {
                let _ = self.repo.reference_symbolic(
                    "refs/remotes/origin/HEAD",
                    &target,
                    true,
                    "default branch",
                );
            }
        }
        Ok(())
    }

    fn branch_prefix(&self) -> &'static str {
        if self.mirror {
            "refs/remotes/origin/"
        } else {
            "refs/heads/"
        }
    }

    /// Every branch and its tip.
    pub fn branches(&self) -> Result<Vec<(String, Oid)>, GitError> {
        let prefix = self.branch_prefix();
        let mut out = Vec::new();
        for r in self
            .repo
            .references_glob(&format!("{prefix}*"))
            .map_err(repo_err)?
        {
            let r = r.map_err(repo_err)?;
            let (Some(name), Some(target)) = (r.name(), r.resolve().ok().and_then(|t| t.target()))
            else {
                continue;
            };
            let short = &name[prefix.len()..];
            if short == "HEAD" {
                continue;
            }
            out.push((short.to_string(), target));
        }
        out.sort();
        Ok(out)
    }

    /// The default branch: the remote's HEAD for a mirror, HEAD for a local repository.
    pub fn default_branch(&self) -> Option<String> {
        let head = if self.mirror {
            "refs/remotes/origin/HEAD"
        } else {
            "HEAD"
        };
        let r = self.repo.find_reference(head).ok()?;
        let target = r.symbolic_target()?.to_string();
        target
            .strip_prefix(self.branch_prefix())
            .map(str::to_string)
    }

    pub fn has_commit(&self, hash: &str) -> bool {
        Oid::from_str(hash)
            .ok()
            .is_some_and(|o| self.repo.find_commit(o).is_ok())
    }

    pub fn is_ancestor(&self, ancestor: Oid, of: Oid) -> bool {
        ancestor == of || self.repo.graph_descendant_of(of, ancestor).unwrap_or(false)
    }

    /// Commits reachable from `push` but from none of `hide`, oldest first (parents before
    /// children).
    pub fn walk(&self, push: Oid, hide: &[Oid]) -> Result<Vec<Oid>, GitError> {
        let mut w = self.repo.revwalk().map_err(repo_err)?;
        w.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)
            .map_err(repo_err)?;
        w.push(push).map_err(repo_err)?;
        for h in hide {
            // A hidden tip that no longer exists (collected) hides nothing.
            let _ = w.hide(*h);
        }
        w.map(|o| o.map_err(repo_err)).collect()
    }

    /// A commit's tree.
    fn commit_tree(&self, commit: Oid) -> Result<git2::Tree<'_>, GitError> {
        self.repo
            .find_commit(commit)
            .map_err(repo_err)?
            .tree()
            .map_err(repo_err)
    }

    /// Every file (blob) of a commit's tree: path, blob id, size. Symlinks and submodules are
    /// not files.
    pub fn tree_files(&self, commit: Oid) -> Result<Vec<(String, Oid, u64)>, GitError> {
        let tree = self.commit_tree(commit)?;
        let odb = self.repo.odb().map_err(repo_err)?;
        let mut out = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob)
                && entry.filemode() != 0o120000
                && let Some(name) = entry.name()
            {
                let size = odb
                    .read_header(entry.id())
                    .map(|(s, _)| s as u64)
                    .unwrap_or(0);
                out.push((format!("{dir}{name}"), entry.id(), size));
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(repo_err)?;
        Ok(out)
    }

    /// Paths added or modified, and paths deleted, from `old` to `new` (renames count as a
    /// deletion and an addition).
    pub fn changed_paths(
        &self,
        old: Oid,
        new: Oid,
    ) -> Result<(Vec<String>, Vec<String>), GitError> {
        let (a, b) = (self.commit_tree(old)?, self.commit_tree(new)?);
        let mut opts = DiffOptions::new();
        opts.ignore_submodules(true);
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&a), Some(&b), Some(&mut opts))
            .map_err(repo_err)?;
        let (mut changed, mut deleted) = (Vec::new(), Vec::new());
        for d in diff.deltas() {
            let new_path = d
                .new_file()
                .path()
                .and_then(|p| p.to_str())
                .map(str::to_string);
            let old_path = d
                .old_file()
                .path()
                .and_then(|p| p.to_str())
                .map(str::to_string);
            match d.status() {
                Delta::Deleted => deleted.extend(old_path),
                _ => {
                    if old_path != new_path {
                        deleted.extend(old_path.clone().filter(|_| d.status() != Delta::Added));
                    }
                    changed.extend(new_path);
                }
            }
        }
        Ok((changed, deleted))
    }

    /// A blob's bytes.
    pub fn blob(&self, id: Oid) -> Result<Vec<u8>, GitError> {
        Ok(self
            .repo
            .find_blob(id)
            .map_err(repo_err)?
            .content()
            .to_vec())
    }

    /// The blob at `path` in a commit's tree, if there is one.
    pub fn blob_at(&self, commit: Oid, path: &str) -> Result<Option<(Oid, u64)>, GitError> {
        let tree = self.commit_tree(commit)?;
        let entry = match tree.get_path(Path::new(path)) {
            Ok(e) => e,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(repo_err(e)),
        };
        if entry.kind() != Some(git2::ObjectType::Blob) || entry.filemode() == 0o120000 {
            return Ok(None);
        }
        let size = self
            .repo
            .odb()
            .and_then(|o| o.read_header(entry.id()))
            .map(|(s, _)| s as u64)
            .unwrap_or(0);
        Ok(Some((entry.id(), size)))
    }

    pub fn oid(&self, hash: &str) -> Result<Oid, GitError> {
        let oid = Oid::from_str(hash)
            .map_err(|_| GitError::Repository(format!("`{hash}` is not a commit id")))?;
        self.repo
            .find_commit(oid)
            .map(|c| c.id())
            .map_err(|_| GitError::Missing(format!("commit {hash}")))
    }

    /// The newest `n` commits from `tip`.
    pub fn recent(&self, tip: Oid, n: usize) -> Result<Vec<CommitSummary>, GitError> {
        let mut w = self.repo.revwalk().map_err(repo_err)?;
        w.set_sorting(Sort::TIME).map_err(repo_err)?;
        w.push(tip).map_err(repo_err)?;
        let mut out = Vec::new();
        for oid in w.take(n) {
            let c = self
                .repo
                .find_commit(oid.map_err(repo_err)?)
                .map_err(repo_err)?;
            out.push(CommitSummary {
                hash: c.id().to_string(),
                date: rfc3339(c.time().seconds()).chars().take(10).collect(),
                author: c.author().name().unwrap_or("").to_string(),
                subject: c.summary().unwrap_or("").to_string(),
            });
        }
        Ok(out)
    }

    /// A commit with its parents, people, message, and its changes against its first parent
    /// (the whole tree for a root commit), with hunks. Files skipped by rule (vendored,
    /// generated) and blobs over `max_diff_bytes` keep their place in the file list; their
    /// diff is omitted and the reason said.
    pub fn commit_info(&self, oid: Oid, max_diff_bytes: u64) -> Result<CommitInfo, GitError> {
        let c = self.repo.find_commit(oid).map_err(repo_err)?;
        let diff = self.first_parent_diff(&c, true)?;
        // Renames git would not call renames are reported as git reports them: a deletion and
        // an addition, taken from the same diff without rename detection.
        let split: Vec<(String, String)> = self.renames_git_refuses(&diff)?;
        let plain = if split.is_empty() {
            None
        } else {
            Some(self.first_parent_diff(&c, false)?)
        };
        let is_split = |d: &git2::DiffDelta<'_>| {
            let path =
                |f: git2::DiffFile<'_>| f.path().and_then(|p| p.to_str()).map(str::to_string);
            split.iter().any(|(old, new)| match d.status() {
                Delta::Renamed => path(d.old_file()).as_ref() == Some(old),
                Delta::Deleted => path(d.old_file()).as_ref() == Some(old),
                Delta::Added => path(d.new_file()).as_ref() == Some(new),
                _ => false,
            })
        };
        let mut files: Vec<FileChange> = Vec::new();
        let mut diffable: Vec<bool> = Vec::new();
        let mut sources: Vec<(&git2::Diff<'_>, usize)> = Vec::new();
        for (i, d) in diff.deltas().enumerate() {
            if d.status() == Delta::Renamed && is_split(&d) {
                continue;
            }
            let (file, keep) = file_change(&d, max_diff_bytes);
            diffable.push(keep);
            files.push(file);
            sources.push((&diff, i));
        }
        if let Some(plain) = &plain {
            for (i, d) in plain.deltas().enumerate() {
                if matches!(d.status(), Delta::Added | Delta::Deleted) && is_split(&d) {
                    let (file, keep) = file_change(&d, max_diff_bytes);
                    diffable.push(keep);
                    files.push(file);
                    sources.push((plain, i));
                }
            }
        }
        // Hunks and lines of the files whose diff is kept.
        for (i, f) in files.iter_mut().enumerate() {
            if !diffable[i] || f.binary {
                continue;
            }
            let (from, index) = sources[i];
            let Some(patch) = git2::Patch::from_diff(from, index).map_err(repo_err)? else {
                continue;
            };
            if patch.delta().flags().is_binary() {
                f.binary = true;
                continue;
            }
            f.hunks = hunks(&patch)?;
        }

        let author = c.author();
        let committer = c.committer();
        Ok(CommitInfo {
            hash: oid.to_string(),
            parents: c.parent_ids().map(|p| p.to_string()).collect(),
            author_name: author.name().unwrap_or("").to_string(),
            author_email: author.email().unwrap_or("").to_string(),
            committer_name: committer.name().map(str::to_string),
            committer_email: committer.email().map(str::to_string),
            date: rfc3339(author.when().seconds()),
            message: String::from_utf8_lossy(c.message_bytes()).to_string(),
            files,
        })
    }

    /// Renames of `diff` between different blobs that git's own similarity estimate scores
    /// below its 50% minimum, as (old path, new path) ([`super::similarity`]).
    fn renames_git_refuses(
        &self,
        diff: &git2::Diff<'_>,
    ) -> Result<Vec<(String, String)>, GitError> {
        let mut out = Vec::new();
        for d in diff.deltas() {
            let (old, new) = (d.old_file(), d.new_file());
            if d.status() != Delta::Renamed || old.id() == new.id() {
                continue;
            }
            let (Ok(a), Ok(b)) = (self.repo.find_blob(old.id()), self.repo.find_blob(new.id()))
            else {
                continue;
            };
            if !super::similarity::git_would_rename(a.content(), b.content()) {
                let path = |f: git2::DiffFile<'_>| {
                    f.path().and_then(|p| p.to_str()).unwrap_or("").to_string()
                };
                out.push((path(old), path(new)));
            }
        }
        Ok(out)
    }

    /// The diff of a commit against its first parent (the whole tree for a root commit),
    /// with renames found (when `renames`) and submodules ignored.
    fn first_parent_diff(
        &self,
        c: &git2::Commit<'_>,
        renames: bool,
    ) -> Result<git2::Diff<'_>, GitError> {
        let tree = c.tree().map_err(repo_err)?;
        let parent_tree = match c.parent(0) {
            Ok(p) => Some(p.tree().map_err(repo_err)?),
            Err(_) => None,
        };
        let mut opts = DiffOptions::new();
        opts.ignore_submodules(true).context_lines(3);
        let mut diff = self
            .repo
            .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut opts))
            .map_err(repo_err)?;
        if renames {
            let mut find = DiffFindOptions::new();
            find.renames(true).rename_limit(400);
            diff.find_similar(Some(&mut find)).map_err(repo_err)?;
        }
        Ok(diff)
    }
}

/// One changed file of a diff, without hunks, and whether its diff is kept (not skipped by
/// rule as vendored or generated, nor over `max_diff_bytes`).
fn file_change(d: &git2::DiffDelta<'_>, max_diff_bytes: u64) -> (FileChange, bool) {
    let path_of =
        |f: git2::DiffFile<'_>| f.path().and_then(|p| p.to_str()).unwrap_or("").to_string();
    let new_path = path_of(d.new_file());
    let old_path = path_of(d.old_file());
    let status = match d.status() {
        Delta::Added => ChangeStatus::Added,
        Delta::Deleted => ChangeStatus::Deleted,
        Delta::Renamed => ChangeStatus::Renamed,
        Delta::Copied => ChangeStatus::Copied,
        Delta::Typechange => ChangeStatus::TypeChanged,
        _ => ChangeStatus::Modified,
    };
    let path = if status == ChangeStatus::Deleted {
        old_path.clone()
    } else {
        new_path.clone()
    };
    let size = d.new_file().size().max(d.old_file().size());
    let omitted: Option<SkipReason> = skip_by_path(&path)
        .filter(|r| matches!(r, SkipReason::Vendored | SkipReason::Generated))
        .or((size > max_diff_bytes).then_some(SkipReason::Oversized));
    let keep = omitted.is_none();
    let file = FileChange {
        old_path: matches!(status, ChangeStatus::Renamed | ChangeStatus::Copied)
            .then_some(old_path),
        path,
        status,
        binary: d.flags().is_binary(),
        omitted: omitted.map(|r| r.as_str().to_string()),
        hunks: Vec::new(),
    };
    (file, keep)
}

/// A file's hunks with their lines as in a unified diff (`+`, `-`, ` `, and `\ No newline at
/// end of file`).
fn hunks(patch: &git2::Patch<'_>) -> Result<Vec<Hunk>, GitError> {
    let mut out = Vec::with_capacity(patch.num_hunks());
    for h in 0..patch.num_hunks() {
        let (hunk, n_lines) = patch.hunk(h).map_err(repo_err)?;
        let header = String::from_utf8_lossy(hunk.header());
        let section = header
            .rsplit_once("@@")
            .map(|(_, s)| s.trim().to_string())
            .unwrap_or_default();
        let mut lines = Vec::with_capacity(n_lines);
        for l in 0..n_lines {
            let line = patch.line_in_hunk(h, l).map_err(repo_err)?;
            match line.origin() {
                o @ ('+' | '-' | ' ') => {
                    let content = String::from_utf8_lossy(line.content());
                    lines.push(format!("{o}{}", content.trim_end_matches(['\n', '\r'])));
                }
                '<' | '>' | '=' => lines.push("\\ No newline at end of file".to_string()),
                _ => {}
            }
        }
        out.push(Hunk {
            old_start: hunk.old_start() as usize,
            old_lines: hunk.old_lines() as usize,
            new_start: hunk.new_start() as usize,
            new_lines: hunk.new_lines() as usize,
            section,
            lines,
        });
    }
    Ok(out)
}

/// Seconds since the epoch as RFC 3339 (UTC).
pub fn rfc3339(secs: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}
