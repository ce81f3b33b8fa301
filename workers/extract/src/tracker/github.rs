//! GitHub: issue, comment and event list bodies.

use super::*;

/// Issue events that say nothing about the issue itself (notifications, cross-references
/// whose source is another issue's business).
pub(super) const GITHUB_NOISE: &[&str] = &[
    "mentioned",
    "subscribed",
    "unsubscribed",
    "cross-referenced",
    "user_blocked",
];

/// A GitHub user object (`login`; `name` and `email` only where GitHub includes them).
pub(super) fn github_person(v: &Value) -> Option<TrackerPerson> {
    person_of(str_at(v, "login"), str_at(v, "name"), str_at(v, "email"))
}

/// `GET /repos/{owner}/{repo}/issues`: issues and pull requests (`pull_request` key) of
/// `project` (`owner/repo`), without comments and history (separate endpoints).
pub fn github_issues(body: &[u8], project: &str) -> Result<Vec<Issue>, TrackerError> {
    let v = parse_body(body)?;
    items(&v, "issues")?
        .iter()
        .enumerate()
        .map(|(i, it)| github_issue(it, project, &format!("issues[{i}]")))
        .collect()
}

/// One item of the issue list; `number` is required (it is the key).
pub(super) fn github_issue(v: &Value, project: &str, path: &str) -> Result<Issue, TrackerError> {
    let v = object(v, path)?;
    let number = require_u64(v, path, "number")?;
    Ok(Issue {
        tracker: TrackerKind::Github,
        project: project.to_string(),
        key: number.to_string(),
        number: Some(number),
        title: str_at(v, "title").unwrap_or_default(),
        body: body_at(v, "body"),
        state: str_at(v, "state").unwrap_or_default(),
        labels: labels(at(v, "labels")),
        assignees: people(v, "assignees", "assignee", github_person),
        reporter: github_person(at(v, "user")),
        created: str_at(v, "created_at"),
        updated: str_at(v, "updated_at"),
        url: str_at(v, "html_url"),
        // Organisation issue types (`{"name": "Bug"}`); null on most repositories.
        issue_type: str_at(at(v, "type"), "name"),
        priority: None,
        is_pull_request: github_is_pull_request(at(v, "pull_request")),
        milestones: github_milestone(at(v, "milestone")).into_iter().collect(),
        comments: Vec::new(),
        history: Vec::new(),
        links: Vec::new(),
    })
}

/// Whether an issue list item's `pull_request` value makes it a pull request. Current
/// answers carry the key on pull requests only (`{"url": …, "html_url": …, "merged_at": …}`);
/// older ones carried it on every issue, with null links on plain issues
/// (`{"html_url": null, "diff_url": null, "patch_url": null}`). A pull request is an object
/// with at least one link.
pub fn github_is_pull_request(v: &Value) -> bool {
    ["url", "html_url", "diff_url", "patch_url"]
        .iter()
        .any(|k| str_at(v, k).is_some())
}

/// The issue's `milestone` object (`{number, title, state, due_on, html_url}`), if any.
pub(super) fn github_milestone(v: &Value) -> Option<Milestone> {
    Some(Milestone {
        title: exact_str_at(v, "title")?,
        id: str_at(v, "number"),
        state: str_at(v, "state"),
        due: str_at(v, "due_on"),
        url: str_at(v, "html_url"),
    })
}

/// `GET /repos/{owner}/{repo}/issues/{n}/comments`.
pub fn github_comments(body: &[u8]) -> Result<Vec<IssueComment>, TrackerError> {
    let v = parse_body(body)?;
    items(&v, "comments")?
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let path = format!("comments[{i}]");
            let c = object(c, &path)?;
            Ok(IssueComment {
                id: require_str(c, &path, "id")?,
                author: github_person(at(c, "user")),
                body: body_at(c, "body"),
                created: str_at(c, "created_at"),
                updated: str_at(c, "updated_at"),
                url: str_at(c, "html_url"),
            })
        })
        .collect()
}

/// `GET /repos/{owner}/{repo}/issues/{n}/events`: assignments, labels, state changes,
/// renames, milestones, locks as history; notification events are left out.
pub fn github_events(body: &[u8]) -> Result<Vec<IssueChange>, TrackerError> {
    let v = parse_body(body)?;
    let mut out = Vec::new();
    for (i, e) in items(&v, "issue events")?.iter().enumerate() {
        if let Some(change) = github_change(e, &format!("events[{i}]"))? {
            out.push(change);
        }
    }
    Ok(out)
}

/// One issue event as a change (`None` for notification noise).
pub(super) fn github_change(e: &Value, path: &str) -> Result<Option<IssueChange>, TrackerError> {
    let e = object(e, path)?;
    let event = require_str(e, path, "event")?;
    let login = |k: &str| github_person(at(e, k)).and_then(|p| p.login.or(p.name));
    let name = |k: &str| str_at(at(e, k), "name");
    let title = |k: &str| str_at(at(e, k), "title");
    let s = |x: &str| Some(x.to_string());
    let (field, from, to) = match event.as_str() {
        "assigned" => ("assignee", None, login("assignee")),
        "unassigned" => ("assignee", login("assignee"), None),
        "labeled" => ("label", None, name("label")),
        "unlabeled" => ("label", name("label"), None),
        "closed" => ("state", s("open"), s("closed")),
        "reopened" => ("state", s("closed"), s("open")),
        "merged" => ("state", s("open"), s("merged")),
        "renamed" => (
            "title",
            str_at(at(e, "rename"), "from"),
            str_at(at(e, "rename"), "to"),
        ),
        "milestoned" => ("milestone", None, title("milestone")),
        "demilestoned" => ("milestone", title("milestone"), None),
        "locked" => (
            "lock",
            None,
            str_at(e, "lock_reason").or_else(|| s("locked")),
        ),
        "unlocked" => ("lock", s("locked"), None),
        noise if GITHUB_NOISE.contains(&noise) => return Ok(None),
        other => (other, None, None),
    };
    Ok(Some(IssueChange {
        at: str_at(e, "created_at"),
        actor: github_person(at(e, "actor")),
        field: field.to_string(),
        from,
        to,
        commit: str_at(e, "commit_id"),
    }))
}
