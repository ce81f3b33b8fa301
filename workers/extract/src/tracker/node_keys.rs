//! Keys: issues, people, labels and refs keyed as the other indexers key them.

use super::*;

/// The issue's node key: `github:acme_shop_12` ([`keys::issue`]), `jira:shop-12`
/// ([`keys::jira_issue`]) — what [`keys::issue_ref`] gives `fixes #12` / `SHOP-12` in a
/// commit message, so commit → issue edges land on this node.
pub fn issue_key(issue: &Issue) -> NodeKey {
    let tracker = issue.tracker.as_str();
    match (
        issue.tracker,
        issue.number.or_else(|| issue.key.parse().ok()),
    ) {
        (TrackerKind::Jira, _) => keys::jira_issue(&issue.key),
        (_, Some(n)) => keys::issue(tracker, &issue.project, n),
        (_, None) => refs::normalize_ref(&format!("{tracker}:{}_{}", issue.project, issue.key))
            .unwrap_or_else(|| NodeKey::from_canonical(tracker)),
    }
}

/// The issue as locators and citations name it: `SHOP-12`, `acme/shop#12`, `group/proj#5`.
pub fn locator_key(issue: &Issue) -> String {
    if issue.tracker.numbered() {
        format!("{}#{}", issue.project, issue.key)
    } else {
        issue.key.clone()
    }
}

/// The key as people write it in the tracker's own text: `#12`, `SHOP-12`.
pub(super) fn display_key(issue: &Issue) -> String {
    if issue.tracker.numbered() {
        format!("#{}", issue.key)
    } else {
        issue.key.clone()
    }
}

/// The issue's source URN, `tracker:{source}:{key}` (the source is one tracker project).
pub fn issue_urn(source_id: &str, issue: &Issue) -> String {
    format!("tracker:{source_id}:{}", issue.key)
}

/// A person's key: by e-mail when the tracker exposes it (the identity git and mail use),
/// else by login (stable, unlike display names), else by name.
pub fn person_key(p: &TrackerPerson) -> Option<NodeKey> {
    keys::person(None, p.email.as_deref())
        .or_else(|| keys::person(p.login.as_deref(), None))
        .or_else(|| keys::person(p.name.as_deref(), None))
        .filter(fits)
}

/// Keys longer than the knowledge base accepts would fail the whole source.
pub(super) fn fits(key: &NodeKey) -> bool {
    key.as_str().len() <= MAX_ID_LEN
}

/// What `#5`, `owner/repo#5` mean in this issue's text (nothing on Jira, which has no
/// numbered issues).
pub(super) fn number_context(issue: &Issue) -> Option<IssueContext> {
    issue.tracker.numbered().then(|| IssueContext {
        tracker: issue.tracker.as_str().into(),
        project: issue.project.clone(),
    })
}

/// Full commit hashes (40 or 64 hex digits) in text: the form that names a commit's node
/// ([`keys::commit`]); short hashes would make nodes no commit ever joins.
pub(super) fn commit_hashes(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            (w.len() == 40 || w.len() == 64)
                && w.bytes().all(|b| b.is_ascii_hexdigit())
                && w.bytes().any(|b| b.is_ascii_alphabetic())
        })
}

/// Refs a text makes: `ns:value` refs, issue keys (`#12` in the issue's project, `SHOP-7`),
/// full commit hashes.
pub(super) fn text_refs(text: &str, numbers: Option<&IssueContext>) -> Vec<NodeKey> {
    let mut out: Vec<NodeKey> = refs::extract_refs(text)
        .into_iter()
        .map(|f| f.key)
        .collect();
    for r in issue_refs(text) {
        match (&r.key, numbers) {
            (IssueKey::Project(k), _) => out.push(keys::jira_issue(k)),
            (IssueKey::Number { .. }, Some(ctx)) => out.push(keys::issue_ref(ctx, &r.key)),
            (IssueKey::Number { .. }, None) => {}
        }
    }
    out.extend(commit_hashes(text).map(keys::commit));
    out
}

/// Keys in first-seen order, each once, each one the knowledge base accepts.
pub(super) fn dedup(keys: Vec<NodeKey>) -> Vec<NodeKey> {
    let mut seen = HashSet::new();
    keys.into_iter()
        .filter(|k| fits(k) && seen.insert(k.clone()))
        .collect()
}

/// The other end of a link: a Jira key, or a number (`12`, `group/proj#12`) of a numbered
/// tracker.
pub(super) fn link_target_key(issue: &Issue, target: &str) -> Option<NodeKey> {
    if !target.chars().any(char::is_alphanumeric) {
        return None;
    }
    if !issue.tracker.numbered() {
        return Some(keys::jira_issue(target));
    }
    let (project, number) = match target.rsplit_once('#') {
        Some((p, n)) if !p.is_empty() => (p, n),
        Some((_, n)) => (issue.project.as_str(), n),
        None => (issue.project.as_str(), target),
    };
    let n: u64 = number.trim().parse().ok()?;
    Some(keys::issue(issue.tracker.as_str(), project, n))
}

/// Passive link relations and their active form: `A blocked_by B` is written `B blocks A`,
/// as [`refs::parse_relationship`] does, so both issues of a link evidence one edge.
pub(super) const PASSIVE: &[(&str, &str)] = &[
    ("blocked_by", "blocks"),
    ("duplicated_by", "duplicates"),
    ("cloned_by", "clones"),
    ("caused_by", "causes"),
];

/// The edge type of a link relation (the graph's relation vocabulary, ASCII as edge types
/// must be) and whether the edge runs from the other issue to this one.
pub(super) fn link_edge(relation: &str) -> (String, bool) {
    let rel = refs::canonical_relation(relation)
        .filter(|r| is_edge_type(r))
        .unwrap_or_else(|| "relates_to".into());
    match PASSIVE.iter().find(|(passive, _)| *passive == rel) {
        Some((_, active)) => (active.to_string(), true),
        None => (rel, false),
    }
}

/// What the knowledge base accepts as an edge type (lower-case ASCII, digits, `_-.`).
pub(super) fn is_edge_type(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.')
        })
}

/// `label:{tracker}/{project}/{name}`: labels are per project (`bug` in two repositories
/// is two labels).
pub(super) fn label_key(issue: &Issue, name: &str) -> Option<NodeKey> {
    refs::normalize_ref(&format!(
        "label:{}/{}/{name}",
        issue.tracker.as_str(),
        issue.project
    ))
    .filter(|k| fits(k) && !k.value().is_empty())
}
