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
//! - [`semantic`]: a branch's symbol table kept between structure tasks, and the semantic
//!   pass that writes `calls` / `extends` / `implements` / `uses_type` edges with the files.

pub mod poller;
mod read_commits;
pub mod repo;
pub mod semantic;
mod similarity;
pub mod tasks;

use evident_core::Scope;

pub use crate::report::GitReport;
pub use evident_sources::git::{service, write};
pub use evident_sources::kinds::git::{
    GitLocation, GitSourceConfig, check_branch, check_location, default_max_file_bytes,
};
pub use poller::GitPoller;
pub use semantic::SemanticCache;
pub use tasks::{GitTask, GitTasks};
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
    use evident_core::keys::IssueContext;
    use std::path::PathBuf;

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
