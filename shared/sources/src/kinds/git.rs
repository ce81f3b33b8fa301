//! Git repositories: `git`.

use std::path::PathBuf;

use evident_core::keys::IssueContext;
use serde::{Deserialize, Serialize};

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

/// Files larger than this are skipped unless a source says otherwise.
pub fn default_max_file_bytes() -> u64 {
    1024 * 1024
}

impl crate::SourceConfig for GitSourceConfig {
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

    fn credential_envs(&self) -> Vec<(&'static str, String)> {
        [
            ("usernameEnv", &self.username_env),
            ("tokenEnv", &self.token_env),
        ]
        .into_iter()
        .filter_map(|(f, v)| v.clone().map(|v| (f, v)))
        .collect()
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
