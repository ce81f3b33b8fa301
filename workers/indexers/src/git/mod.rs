//! The git indexer.
//!
//! - [`poller`]: per registered repository and followed branch, fetch, compare the tip with the
//!   branch's cursor, and plan the difference onto the qualification queue: files to re-index
//!   (every file on a branch's first index, then only changed ones), every new commit, commits
//!   rewritten away by a force-push, deleted branches, the branch overview. Cursors move only
//!   after the work is durably queued, so a restart re-plans at worst (handlers are idempotent).
//! - [`tasks`]: the task handlers, reading objects from the repository and writing prepared
//!   sources through the knowledge base.
//! - [`repo`]: libgit2 access (local repositories and mirrors of remote ones).

pub mod poller;
pub mod repo;
pub mod service;
pub mod tasks;
pub mod write;

use std::path::PathBuf;

use evident_core::Scope;
use evident_core::keys::IssueContext;
use serde::{Deserialize, Serialize};

pub use poller::{GitPoller, PollReport};
pub use tasks::{GitTask, GitTasks};

/// The `config` of a registered git source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitSourceConfig {
    /// The repository's name in node keys (`repository:{name}`).
    pub name: String,
    /// A clone URL (http(s), file://, or a path libgit2 can fetch from), mirrored under the
    /// data directory…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// …or a local repository, read in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Branches to follow: names or globs (`release/*`, `**`). Empty: the default branch.
    #[serde(default)]
    pub branches: Vec<String>,
    /// Environment variables holding the user name and the token for HTTPS remotes. The
    /// values are read when fetching and never stored or logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// Where `#12` in commit messages points: `github:owner/repo`. Default: derived from a
    /// GitHub or GitLab URL, else `issues:{name}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue_tracker: Option<String>,
    /// Files larger than this are skipped (and their diffs omitted).
    #[serde(default = "default_max_file_bytes")]
    pub max_file_bytes: u64,
}

pub(crate) fn default_max_file_bytes() -> u64 {
    1024 * 1024
}

impl crate::sources::SourceConfig for GitSourceConfig {
    const KIND: &'static str = "git";
    const FAMILY: &'static str = "git";

    fn validate(&self) -> Result<(), String> {
        GitSourceConfig::validate(self)
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn local_paths(&self) -> Vec<PathBuf> {
        match (&self.path, self.location()) {
            (Some(p), _) => vec![p.clone()],
            (None, Ok(GitLocation::Local(p))) => vec![p],
            _ => Vec::new(),
        }
    }

    fn remote_urls(&self) -> Vec<String> {
        match self.location() {
            Ok(GitLocation::Https(u)) => vec![u.to_string()],
            _ => Vec::new(),
        }
    }
}

/// Where a git source's `url` points, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitLocation {
    /// `https://host/…`: mirrored; the host must pass the egress policy.
    Https(url::Url),
    /// `file:///…` or an absolute path: must lie under `[sources] roots`.
    Local(PathBuf),
}

/// Checks a git source's `url`: `https://`, `file:///…` or an absolute path only. Refuses
/// other transports (`ssh://`, `git://`, `http://`, `git@host:path`), libgit2/git transport
/// helpers (`ext::…`, `fd::…`), anything starting with `-` (option injection such as
/// `--upload-pack=…`), and control characters. Used at registration and before every open.
pub fn check_location(url: &str) -> Result<GitLocation, String> {
    let refuse = |why: &str| Err(format!("`url` `{}`: {why}", url.escape_debug()));
    if url.is_empty() || url.trim() != url {
        return refuse("empty or padded with spaces");
    }
    if url.chars().any(char::is_control) {
        return refuse("control characters are not allowed");
    }
    if url.starts_with('-') || url.contains("--upload-pack") || url.contains("--exec") {
        return refuse("options are not allowed in a repository URL");
    }
    let scheme_end = url.find("://");
    if url
        .find("::")
        .is_some_and(|i| scheme_end.is_none_or(|s| i < s))
    {
        return refuse("transport helpers (`ext::`, `fd::`) are not allowed");
    }
    if let Some(rest) = url.strip_prefix("file://") {
        let u = url::Url::parse(url).map_err(|e| format!("`url` `{url}`: {e}"))?;
        if !rest.starts_with('/') {
            return refuse("a file URL names an absolute path (`file:///srv/repo.git`)");
        }
        return u
            .to_file_path()
            .map(GitLocation::Local)
            .or_else(|()| refuse("not a local path"));
    }
    if url.starts_with('/') {
        return Ok(GitLocation::Local(PathBuf::from(url)));
    }
    if url.starts_with("https://") {
        let u = url::Url::parse(url).map_err(|e| format!("`url` `{url}`: {e}"))?;
        if u.host().is_none() {
            return refuse("no host");
        }
        return Ok(GitLocation::Https(u));
    }
    refuse(
        "use `https://`, `file:///…` or an absolute path (ssh, git, http and scp-style `host:path` remotes are not supported)",
    )
}

/// Checks a branch name or pattern: no leading `-`, no control characters or spaces, none of
/// git's forbidden sequences (`..`, `:`, `~`, `^`, `\\`, `@{`).
pub fn check_branch(b: &str) -> Result<(), String> {
    let bad = b.is_empty()
        || b.len() > 255
        || b.starts_with('-')
        || b.starts_with('/')
        || b.chars().any(|c| c.is_control() || c.is_whitespace())
        || ["..", ":", "~", "^", "\\", "@{"]
            .iter()
            .any(|s| b.contains(s));
    if bad {
        Err(format!(
            "`{}` is not a branch name or pattern",
            b.escape_debug()
        ))
    } else {
        Ok(())
    }
}

impl GitSourceConfig {
    /// Checks the settings a registration must have.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.trim().is_empty() || self.name.len() > 200 {
            return Err("`name` must be 1..=200 characters".into());
        }
        match (&self.url, &self.path) {
            (Some(_), Some(_)) => return Err("give either `url` or `path`, not both".into()),
            (None, None) => return Err("a git source needs a `url` or a `path`".into()),
            (Some(u), None) if url_has_password(u) => {
                return Err("put credentials in `tokenEnv`/`usernameEnv`, not in the URL".into());
            }
            (Some(u), None) => {
                check_location(u)?;
            }
            (None, Some(p)) => {
                if !p.is_absolute() {
                    return Err("give an absolute `path`".into());
                }
                if p.to_string_lossy().chars().any(char::is_control) {
                    return Err("control characters are not allowed in `path`".into());
                }
            }
        }
        for b in &self.branches {
            check_branch(b)?;
        }
        if let Some(t) = &self.issue_tracker
            && !t.contains(':')
        {
            return Err("`issueTracker` looks like `github:owner/repo`".into());
        }
        Ok(())
    }

    /// Where the `url` points (an error for a source with a `path`, or a refused URL).
    pub fn location(&self) -> Result<GitLocation, String> {
        match &self.url {
            Some(u) => check_location(u),
            None => Err("no `url`".into()),
        }
    }

    /// Where `#12` points for this repository.
    pub fn issue_context(&self) -> IssueContext {
        if let Some((tracker, project)) = self
            .issue_tracker
            .as_deref()
            .and_then(|t| t.split_once(':'))
        {
            return IssueContext {
                tracker: tracker.into(),
                project: project.into(),
            };
        }
        if let Some(url) = &self.url {
            let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
            let rest = rest.rsplit_once('@').map(|(_, r)| r).unwrap_or(rest);
            let (host, path) = rest.split_once(['/', ':']).unwrap_or((rest, ""));
            let project = path.trim_end_matches('/').trim_end_matches(".git");
            let tracker = if host.contains("github") {
                Some("github")
            } else if host.contains("gitlab") {
                Some("gitlab")
            } else {
                None
            };
            if let (Some(t), false) = (tracker, project.is_empty()) {
                return IssueContext {
                    tracker: t.into(),
                    project: project.into(),
                };
            }
        }
        IssueContext {
            tracker: "issues".into(),
            project: self.name.clone(),
        }
    }
}

/// `https://user:secret@host/…`: a password in the URL would be stored and shown.
fn url_has_password(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// Whether a branch name matches a pattern: `*` within a path segment, `**` across segments,
/// `?` one character.
pub fn branch_matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some(b'*') if p.get(1) == Some(&b'*') => (0..=n.len()).any(|i| go(&p[2..], &n[i..])),
            Some(b'*') => (0..=n.len())
                .take_while(|i| *i == 0 || n[i - 1] != b'/')
                .any(|i| go(&p[1..], &n[i..])),
            Some(b'?') => !n.is_empty() && n[0] != b'/' && go(&p[1..], &n[1..]),
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// Cursor key of a followed branch (its value: `{"tip": "<oid>"}`).
pub(crate) const BRANCH_CURSOR: &str = "branch:";

/// The recorded tip of each followed branch, from a source's cursors.
pub(crate) fn branch_tips(
    cursors: Vec<(String, serde_json::Value)>,
) -> std::collections::BTreeMap<String, git2::Oid> {
    cursors
        .into_iter()
        .filter_map(|(k, v)| {
            let branch = k.strip_prefix(BRANCH_CURSOR)?.to_string();
            let tip = git2::Oid::from_str(v.get("tip")?.as_str()?).ok()?;
            Some((branch, tip))
        })
        .collect()
}

/// The queue URN of a branch's tasks: one branch's work runs in order, one task at a time.
pub fn branch_task_urn(source_id: &str, branch: &str) -> String {
    format!("git:{source_id}:branch:{branch}")
}

/// The repository context of a registered source.
pub fn repo_context(
    source_id: &str,
    scope: &Scope,
    cfg: &GitSourceConfig,
) -> evident_code::structure::RepoContext {
    evident_code::structure::RepoContext {
        source_id: source_id.to_string(),
        repository: cfg.name.clone(),
        scope: scope.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_patterns() {
        assert!(branch_matches("main", "main"));
        assert!(!branch_matches("main", "mainline"));
        assert!(branch_matches("release/*", "release/1.2"));
        assert!(!branch_matches("release/*", "release/1.2/hotfix"));
        assert!(branch_matches("release/**", "release/1.2/hotfix"));
        assert!(branch_matches("**", "feature/a/b"));
        assert!(branch_matches("v?", "v1"));
        assert!(!branch_matches("*", "a/b"));
    }

    #[test]
    fn issue_context_from_config_or_url() {
        let mut cfg = GitSourceConfig {
            name: "shop".into(),
            url: Some("https://github.com/acme/shop.git".into()),
            path: None,
            branches: vec![],
            username_env: None,
            token_env: None,
            issue_tracker: None,
            max_file_bytes: default_max_file_bytes(),
        };
        assert_eq!(
            cfg.issue_context(),
            IssueContext {
                tracker: "github".into(),
                project: "acme/shop".into()
            }
        );
        cfg.url = Some("git@gitlab.example.com:team/app.git".into());
        assert_eq!(
            cfg.issue_context(),
            IssueContext {
                tracker: "gitlab".into(),
                project: "team/app".into()
            }
        );
        cfg.url = Some("https://git.example.com/x.git".into());
        assert_eq!(cfg.issue_context().tracker, "issues");
        cfg.issue_tracker = Some("github:acme/other".into());
        assert_eq!(cfg.issue_context().project, "acme/other");
        assert!(cfg.validate().is_ok());
        cfg.url = Some("https://user:secret@github.com/acme/shop.git".into());
        assert!(
            cfg.validate().is_err(),
            "credentials in the URL are refused"
        );
    }

    #[test]
    fn locations_and_branches_are_checked() {
        for ok in [
            "https://github.com/acme/shop.git",
            "file:///srv/git/shop.git",
            "/srv/git/shop",
        ] {
            assert!(check_location(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            check_location("file:///srv/git/shop.git"),
            Ok(GitLocation::Local(PathBuf::from("/srv/git/shop.git")))
        );
        for bad in [
            "ssh://git@github.com/acme/shop.git",
            "git@github.com:acme/shop.git",
            "git://github.com/acme/shop.git",
            "http://github.com/acme/shop.git",
            "ext::sh -c touch% /tmp/pwned",
            "fd::17",
            "--upload-pack=touch /tmp/pwned",
            "-uhttps://x/",
            "https://github.com/a\nb",
            "https://x/--upload-pack=evil",
            "relative/repo",
            "file://host/srv/repo",
            "",
        ] {
            assert!(check_location(bad).is_err(), "{bad:?}");
        }
        for ok in ["main", "release/*", "**", "feature/a-b_c.d", "v?"] {
            assert!(check_branch(ok).is_ok(), "{ok}");
        }
        for bad in [
            "-main",
            "--upload-pack=x",
            "--exec=x",
            "a..b",
            "a:b",
            "a b",
            "a\u{7}b",
            "",
            "HEAD@{1}",
        ] {
            assert!(check_branch(bad).is_err(), "{bad:?}");
        }
    }
}
