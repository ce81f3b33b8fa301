//! Node keys of the indexed vocabulary, built in one place so that every producer — the git
//! indexer, the push API, mail, trackers, transcripts — names the same thing the same way.
//! That is what joins the graph across sources: a commit's `fixes` edge and the tracker's
//! issue node meet at one key, and a git author, a mail sender and a meeting speaker meet at
//! one person (through the alias registry).
//!
//! # Structural keys are exact
//!
//! The namespaces in [`EXACT_NAMESPACES`] — `repository`, `branch`, `file`, `symbol`,
//! `import`, `commit` — name identities an extractor read from a repository, and their keys
//! are **exact and injective**: case and separators are kept in the namespace's own syntax
//! (paths stay paths, qualified names keep their dots), so `file:shop/src/Cart.java` and
//! `file:shop/src/cart.java`, `file:r/a/b_c.rs` and `file:r/a_b/c.rs` are different nodes.
//! In a symbol key a function or method ends in `()` and a type does not, so a method and a
//! type of the same name (`Cart.builder()`, `Cart.Builder`) differ too. A repository name is
//! written with `%` and `/` escaped (`%25`, `%2F`) so that `{repository}/{path}` splits one
//! way only; control characters (never in a real path) become U+FFFD.
//!
//! Each exact key also answers to its folded spelling — the free-text normalisation of
//! [`normalize_ref`] (`file:shop_src_cart_java`, the keys' spelling before they were exact):
//! [`folded`] gives it and the ingest path registers it as an alias when unknown (the first
//! key seen claims a spelling two keys share), so a ref in prose still resolves.
//!
//! Other structural namespaces — mail `message` / `thread` / `attachment`, `meeting`,
//! `url` — are produced only by their extractors but their keys are still normalised refs.
//! All of them, exact or not, are [`RESERVED_NAMESPACES`]: free-text ref extraction never
//! makes them (a note saying `thread:x` or `commit:abc` is prose, not structure); explicit
//! relationships still may. Everything else (people,
//! issues named in commit messages, free-text refs) follows the reference normalisation rules
//! ([`normalize_ref`]), so what a person types finds the node. Namespaces are chosen outside
//! the entity-type alias table where the alias would change the meaning (`import`, not
//! `module`, which the table folds into `file`).
//!
//! Version of the key scheme: [`KEYS_VERSION`] (stores record it; a data directory written
//! under an older scheme re-indexes its git sources).

use crate::commits::IssueKey;
use crate::refs::{NodeKey, canonical_entity_type, normalize_ref};

/// The key scheme. 1: every key a normalised ref; 2: exact keys in [`EXACT_NAMESPACES`].
pub const KEYS_VERSION: u32 = 2;

/// Namespaces whose keys are exact (see the module docs).
pub const EXACT_NAMESPACES: &[&str] =
    &["repository", "branch", "file", "symbol", "import", "commit"];

/// The structural vocabulary: namespaces whose nodes only extractors (git, mail, meetings,
/// link extraction) and explicit relationships make, never a ref found in free text
/// ([`crate::refs::extract_refs`] leaves them out). The exact namespaces, then mail's
/// `message`, `thread` and `attachment`, `meeting`, and `url` (links are read by extractors;
/// a URL in text is not a ref). Namespaces a person names on purpose in prose (`user:`,
/// `jira:`, a tracker's issues, `confluence:`, concepts) are not reserved.
pub const RESERVED_NAMESPACES: &[&str] = &[
    "repository",
    "branch",
    "file",
    "symbol",
    "import",
    "commit",
    "message",
    "thread",
    "attachment",
    "meeting",
    "url",
];

/// Whether a key's namespace is reserved to extractors and explicit relationships.
pub fn is_reserved(key: &NodeKey) -> bool {
    RESERVED_NAMESPACES.contains(&key.namespace())
}

/// Whether a key's namespace holds exact keys.
pub fn is_exact(key: &NodeKey) -> bool {
    EXACT_NAMESPACES.contains(&key.namespace())
}

/// The folded spelling of an exact key (its free-text normalisation), when it differs.
pub fn folded(key: &NodeKey) -> Option<NodeKey> {
    if !is_exact(key) {
        return None;
    }
    normalize_ref(key.as_str()).filter(|f| f != key)
}

fn key(raw: &str) -> NodeKey {
    // Every caller passes a namespace and a value with at least one letter or digit; a value
    // that normalises to nothing still yields its namespace rather than a panic.
    normalize_ref(raw)
        .unwrap_or_else(|| NodeKey::from_canonical(raw.split(':').next().unwrap_or("entity")))
}

/// An exact key: the value as given, control characters replaced.
fn exact(namespace: &str, value: &str) -> NodeKey {
    let value: String = value
        .chars()
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .collect();
    NodeKey::from_canonical(format!("{namespace}:{value}"))
}

/// A repository name as the first component of a key (`/` and `%` escaped).
fn repo_part(repo: &str) -> String {
    repo.replace('%', "%25").replace('/', "%2F")
}

pub fn repository(repo: &str) -> NodeKey {
    exact("repository", &repo_part(repo))
}

pub fn branch(repo: &str, branch: &str) -> NodeKey {
    exact("branch", &format!("{}/{branch}", repo_part(repo)))
}

/// A file of a repository (shared by its branches: each branch that holds it evidences it).
pub fn file(repo: &str, path: &str) -> NodeKey {
    exact("file", &format!("{}/{path}", repo_part(repo)))
}

/// A type (class, interface, struct, enum, trait…) by qualified name (`::` and `.` both
/// separate: `crate::m::Type` is `symbol:{repo}/crate.m.Type`).
pub fn symbol(repo: &str, qualified_name: &str) -> NodeKey {
    exact(
        "symbol",
        &format!("{}/{}", repo_part(repo), qualified_name.replace("::", ".")),
    )
}

/// A function or method by qualified name: the symbol key followed by `()`, so it never meets
/// a type of the same name. A name already ending in a parameter list — `()`, or the
/// parameter types that tell overloads apart, `com.acme.Cart.add(Item,int)` — is taken as it
/// is.
pub fn callable(repo: &str, qualified_name: &str) -> NodeKey {
    let name = qualified_name.replace("::", ".");
    let has_parameters = name.ends_with(')') && name.contains('(');
    let parens = if has_parameters { "" } else { "()" };
    exact("symbol", &format!("{}/{name}{parens}", repo_part(repo)))
}

/// An import target: a module, package or class named by an import statement (`::` written
/// `.`). Relative imports (`./util`, `.models`) belong to their repository.
pub fn import(repo: &str, target: &str) -> NodeKey {
    let target = target.replace("::", ".");
    if target.starts_with('.') {
        exact("import", &format!("{}/{target}", repo_part(repo)))
    } else {
        exact("import", &target)
    }
}

/// A commit by its full hash (hexadecimal, lower case).
pub fn commit(hash: &str) -> NodeKey {
    exact("commit", &hash.trim().to_ascii_lowercase())
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

/// The node types extractors write (repositories, code, mail, trackers, wikis, meetings,
/// documents): the structural vocabulary's types. A caller's type filter that names one of
/// them means exactly it; anything else goes through the entity-type aliases
/// ([`canonical_entity_type`]), so `type=issue` finds the tracker's `issue` nodes (not
/// `jira`, the alias of `issue` for refs) and `type=person` the people (not `user`).
pub const NODE_TYPES: &[&str] = &[
    // git and code (symbols are typed by their kind)
    "repository",
    "branch",
    "file",
    "commit",
    "import",
    "symbol",
    "class",
    "interface",
    "struct",
    "enum",
    "trait",
    "type",
    "function",
    "method",
    // mail, trackers, wikis, meetings, documents
    "message",
    "thread",
    "person",
    "issue",
    "label",
    "page",
    "space",
    "meeting",
    "document",
    "url",
];

/// The node type a caller's type filter names: a structural type exactly, anything else
/// through the entity-type aliases (`ticket` → `jira`).
pub fn node_type_filter(raw: &str) -> String {
    let lower = raw.trim().to_lowercase();
    if NODE_TYPES.contains(&lower.as_str()) {
        lower
    } else {
        canonical_entity_type(&lower)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn structural_types_are_matched_exactly_and_others_through_the_aliases() {
        for (raw, want) in [
            ("issue", "issue"),
            ("person", "person"),
            ("Thread", "thread"),
            ("page", "page"),
            ("document", "document"),
            (" meeting ", "meeting"),
            ("ticket", "jira"),
            ("developer", "user"),
            ("service", "service"),
        ] {
            assert_eq!(node_type_filter(raw), want, "{raw}");
        }
    }
    use super::*;

    #[test]
    fn every_exact_namespace_is_reserved_and_people_and_issues_are_not() {
        for ns in EXACT_NAMESPACES {
            assert!(RESERVED_NAMESPACES.contains(ns), "{ns}");
        }
        for k in ["user:jan", "jira:abc-1", "concept:x", "confluence:1"] {
            assert!(!is_reserved(&NodeKey::from_canonical(k)), "{k}");
        }
        assert!(is_reserved(&NodeKey::from_canonical("thread:x")));
    }

    #[test]
    fn structural_keys_are_exact_and_injective() {
        assert_eq!(
            file("shop", "src/Cart.java").as_str(),
            "file:shop/src/Cart.java"
        );
        assert_ne!(file("shop", "src/Cart.java"), file("shop", "src/cart.java"));
        assert_ne!(file("r", "a/b_c.rs"), file("r", "a_b/c.rs"));
        assert_ne!(file("a/b", "c.rs"), file("a", "b/c.rs"));
        assert_eq!(file("a/b", "c.rs").as_str(), "file:a%2Fb/c.rs");
        assert_eq!(
            symbol("shop", "com.acme.Cart").as_str(),
            "symbol:shop/com.acme.Cart"
        );
        assert_eq!(
            callable("shop", "com.acme.Cart.total").as_str(),
            "symbol:shop/com.acme.Cart.total()"
        );
        assert_eq!(
            callable("e", "core::refs::NodeKey::as_str").as_str(),
            "symbol:e/core.refs.NodeKey.as_str()"
        );
        assert_eq!(callable("e", "f()"), callable("e", "f"));
        // Overloads keep their parameter types.
        assert_eq!(
            callable("shop", "com.acme.Cart.add(Item,int)").as_str(),
            "symbol:shop/com.acme.Cart.add(Item,int)"
        );
        assert_ne!(
            callable("shop", "com.acme.Cart.add(Item,int)"),
            callable("shop", "com.acme.Cart.add(Item)")
        );
        // A method and a type of the same name, names differing in case (Java, Go).
        assert_ne!(
            callable("shop", "com.acme.Cart.Builder"),
            symbol("shop", "com.acme.Cart.Builder")
        );
        assert_ne!(callable("g", "flag.Set"), callable("g", "flag.set"));
        assert_eq!(commit("ABCDEF12").as_str(), "commit:abcdef12");
        assert_eq!(
            branch("shop", "feature/X").as_str(),
            "branch:shop/feature/X"
        );
        assert_eq!(repository("shop").as_str(), "repository:shop");
        assert_eq!(
            import("r", "java.util.List").as_str(),
            "import:java.util.List"
        );
        assert_eq!(import("r", "./util").as_str(), "import:r/./util");
        assert_eq!(import("r", "std::io::Read").as_str(), "import:std.io.Read");
        assert_eq!(file("r", "a\u{7}b").as_str(), "file:r/a\u{FFFD}b");
    }

    #[test]
    fn exact_keys_answer_to_their_old_folded_spelling() {
        let f = |k: NodeKey| folded(&k).map(|k| k.as_str().to_string());
        assert_eq!(
            f(file("shop", "src/Cart.java")).as_deref(),
            Some("file:shop_src_cart_java")
        );
        assert_eq!(
            f(callable("shop", "com.acme.Cart.total")).as_deref(),
            Some("symbol:shop_com_acme_cart_total")
        );
        assert_eq!(
            f(import("r", "std::sync::Arc")).as_deref(),
            Some("import:std_sync_arc")
        );
        assert_eq!(f(commit("0a1b")), None, "already its own folded form");
        assert_eq!(f(import("r", "os")), None);
        assert_eq!(folded(&NodeKey::from_canonical("user:Jan")), None);
        assert!(is_exact(&file("a", "b")) && !is_exact(&NodeKey::from_canonical("user:x")));
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
