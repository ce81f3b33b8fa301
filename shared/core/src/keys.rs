//! Node keys of the indexed vocabulary, built in one place so that every producer — the git
//! indexer, the push API, mail, trackers, transcripts — names the same thing the same way.
//! That is what joins the graph across sources: a commit's `fixes` edge and the tracker's
//! issue node meet at one key, and a git author, a mail sender and a meeting speaker meet at
//! one person (through the alias registry).
//!
//! Every key is a normalised ref ([`normalize_ref`]), so what a person types (`GET
//! /graph/node/file:evident/src/main.rs`) finds the node. Namespaces are chosen outside the
//! entity-type alias table where the alias would change the meaning (`import`, not `module`,
//! which the table folds into `file`).

use crate::commits::IssueKey;
use crate::refs::{NodeKey, normalize_ref};

fn key(raw: &str) -> NodeKey {
    // Every caller passes a namespace and a value with at least one letter or digit; a value
    // that normalises to nothing still yields its namespace rather than a panic.
    normalize_ref(raw)
        .unwrap_or_else(|| NodeKey::from_canonical(raw.split(':').next().unwrap_or("entity")))
}

pub fn repository(repo: &str) -> NodeKey {
    key(&format!("repository:{repo}"))
}

pub fn branch(repo: &str, branch: &str) -> NodeKey {
    key(&format!("branch:{repo}/{branch}"))
}

/// A file of a repository (shared by its branches: each branch that holds it evidences it).
pub fn file(repo: &str, path: &str) -> NodeKey {
    key(&format!("file:{repo}/{path}"))
}

/// A class, function, method… by qualified name (`::` and `.` both separate).
pub fn symbol(repo: &str, qualified_name: &str) -> NodeKey {
    key(&format!(
        "symbol:{repo}/{}",
        qualified_name.replace("::", ".")
    ))
}

/// An import target: a module, package or class named by an import statement. Relative
/// imports (`./util`, `.models`) belong to their repository.
pub fn import(repo: &str, target: &str) -> NodeKey {
    let target = target.replace("::", ".");
    if target.starts_with('.') {
        key(&format!("import:{repo}/{target}"))
    } else {
        key(&format!("import:{target}"))
    }
}

pub fn commit(hash: &str) -> NodeKey {
    key(&format!("commit:{}", hash.to_ascii_lowercase()))
}

/// A person: by e-mail address when known (the identity that joins sources), else by name.
pub fn person(name: Option<&str>, email: Option<&str>) -> Option<NodeKey> {
    let email = email.map(str::trim).filter(|e| e.contains('@'));
    let name = name.map(str::trim).filter(|n| !n.is_empty());
    match (email, name) {
        (Some(e), _) => normalize_ref(&format!("user:{}", e.to_lowercase())),
        (None, Some(n)) => normalize_ref(&format!("user:{n}")),
        (None, None) => None,
    }
}

/// Aliases that make other spellings of a person resolve to their canonical key: the
/// display name (how speakers and mentions name people) and any handles (tracker logins).
pub fn person_aliases(
    canonical: &NodeKey,
    name: Option<&str>,
    handles: &[&str],
) -> Vec<(NodeKey, NodeKey)> {
    name.into_iter()
        .chain(handles.iter().copied())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .filter_map(|s| normalize_ref(&format!("user:{s}")))
        .filter(|alias| alias != canonical)
        .map(|alias| (alias, canonical.clone()))
        .collect()
}

/// The forge login inside a GitHub or GitLab no-reply address — the address a commit is
/// authored with when its author keeps their e-mail private:
/// `12345+octocat@users.noreply.github.com` (or the older `octocat@users.noreply.github.com`)
/// and `4242-jdoe@users.noreply.gitlab.com`. The tracker knows such a person only by login, so
/// the login made an alias of the address joins the two.
pub fn forge_login(email: &str) -> Option<String> {
    let (local, domain) = email.trim().rsplit_once('@')?;
    let domain = domain.to_ascii_lowercase();
    let login = match domain.as_str() {
        "users.noreply.github.com" => match local.split_once('+') {
            Some((id, login)) if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) => login,
            Some(_) => return None,
            None => local,
        },
        "users.noreply.gitlab.com" => match local.split_once('-') {
            Some((id, login)) if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) => login,
            _ => return None,
        },
        _ => return None,
    };
    let valid = !login.is_empty()
        && login
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    valid.then(|| login.to_string())
}

/// An issue in a tracker: Jira-style `ABC-12` keys live in `jira:`; numbered issues in
/// `{tracker}:{project}#{n}` (`github:owner/repo#12` → `github:owner_repo_12`).
pub fn issue(tracker: &str, project: &str, number: u64) -> NodeKey {
    key(&format!("{tracker}:{project}_{number}"))
}

pub fn jira_issue(issue_key: &str) -> NodeKey {
    key(&format!("jira:{issue_key}"))
}

/// Where `#12` points when a commit message does not say: the repository's tracker project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueContext {
    /// `github`, `gitlab`, … (the namespace of numbered issues).
    pub tracker: String,
    /// `owner/repo`.
    pub project: String,
}

/// The node key of an issue reference found in a commit message.
pub fn issue_ref(ctx: &IssueContext, issue_key: &IssueKey) -> NodeKey {
    match issue_key {
        IssueKey::Project(k) => jira_issue(k),
        IssueKey::Number { repo, number } => issue(
            &ctx.tracker,
            repo.as_deref().unwrap_or(&ctx.project),
            *number,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_normalised_refs() {
        assert_eq!(
            file("evident", "src/main.rs").as_str(),
            "file:evident_src_main_rs"
        );
        assert_eq!(
            symbol("evident", "core::refs::NodeKey::as_str").as_str(),
            "symbol:evident_core_refs_nodekey_as_str"
        );
        assert_eq!(commit("ABCDEF12").as_str(), "commit:abcdef12");
        assert_eq!(
            branch("evident", "feature/x").as_str(),
            "branch:evident_feature_x"
        );
        assert_eq!(
            import("r", "java.util.List").as_str(),
            "import:java_util_list"
        );
        assert_eq!(import("r", "./util").as_str(), "import:r_util");
        assert_eq!(import("r", "std::io::Read").as_str(), "import:std_io_read");
        for k in [
            file("a", "b/c.rs"),
            symbol("a", "x::Y"),
            commit("0a1b"),
            import("r", "os"),
        ] {
            assert_eq!(
                normalize_ref(k.as_str()),
                Some(k.clone()),
                "{k} is a fixed point"
            );
        }
    }

    #[test]
    fn forge_logins_come_out_of_no_reply_addresses_only() {
        let login = |e: &str| forge_login(e);
        assert_eq!(
            login("12345+octocat@users.noreply.github.com").as_deref(),
            Some("octocat")
        );
        assert_eq!(
            login("octocat@Users.NoReply.GitHub.com").as_deref(),
            Some("octocat")
        );
        assert_eq!(
            login("4242-jane.doe@users.noreply.gitlab.com").as_deref(),
            Some("jane.doe")
        );
        for not in [
            "octocat@github.com",
            "x+octocat@users.noreply.github.com",
            "+octocat@users.noreply.github.com",
            "jdoe@users.noreply.gitlab.com",
            "12-@users.noreply.gitlab.com",
            "a b@users.noreply.github.com",
            "no-at-sign",
        ] {
            assert_eq!(login(not), None, "{not}");
        }
    }

    #[test]
    fn people_meet_at_their_email() {
        let p = person(Some("Jan Novák"), Some("Jan.Novak@Example.com")).expect("key");
        assert_eq!(p.as_str(), "user:jan_novak_example_com");
        assert_eq!(
            person(Some("Jan Novák"), None).expect("key").as_str(),
            "user:jan_novák"
        );
        assert_eq!(person(None, Some("not-an-email")), None);
        let aliases = person_aliases(&p, Some("Jan Novák"), &["jnovak"]);
        let names: Vec<&str> = aliases.iter().map(|(a, _)| a.as_str()).collect();
        assert_eq!(names, vec!["user:jan_novák", "user:jnovak"]);
    }

    #[test]
    fn issues_from_commit_messages_match_tracker_keys() {
        let ctx = IssueContext {
            tracker: "github".into(),
            project: "owner/repo".into(),
        };
        let n = IssueKey::Number {
            repo: None,
            number: 12,
        };
        assert_eq!(issue_ref(&ctx, &n), issue("github", "owner/repo", 12));
        assert_eq!(issue_ref(&ctx, &n).as_str(), "github:owner_repo_12");
        assert_eq!(
            issue_ref(&ctx, &IssueKey::Project("ABC-12".into())).as_str(),
            "jira:abc-12"
        );
    }
}
