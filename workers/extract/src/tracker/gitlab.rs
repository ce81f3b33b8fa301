//! GitLab: issue, note and state-event list bodies.

use super::*;

/// A GitLab user object (`username`, `name`; `email` / `public_email` when visible).
pub(super) fn gitlab_person(v: &Value) -> Option<TrackerPerson> {
    person_of(
        str_at(v, "username"),
        str_at(v, "name"),
        str_at(v, "email").or_else(|| str_at(v, "public_email")),
    )
}

/// `GET /projects/{id}/issues`. The project is the path GitLab names (`references.full`,
/// else `web_url`) when it does, `project` as given otherwise: commit messages and the git
/// indexer's issue context say `group/proj`, never the numeric id, and the keys must meet.
pub fn gitlab_issues(body: &[u8], project: &str) -> Result<Vec<Issue>, TrackerError> {
    let v = parse_body(body)?;
    items(&v, "issues")?
        .iter()
        .enumerate()
        .map(|(i, it)| gitlab_issue(it, project, &format!("issues[{i}]")))
        .collect()
}

/// One item of the issue list; `iid` is required (it is the key).
pub(super) fn gitlab_issue(v: &Value, project: &str, path: &str) -> Result<Issue, TrackerError> {
    let v = object(v, path)?;
    let iid = require_u64(v, path, "iid")?;
    Ok(Issue {
        tracker: TrackerKind::Gitlab,
        project: gitlab_path(v, iid).unwrap_or_else(|| project.to_string()),
        key: iid.to_string(),
        number: Some(iid),
        title: str_at(v, "title").unwrap_or_default(),
        body: body_at(v, "description"),
        state: str_at(v, "state").unwrap_or_default(),
        labels: labels(at(v, "labels")),
        assignees: people(v, "assignees", "assignee", gitlab_person),
        reporter: gitlab_person(at(v, "author")),
        created: str_at(v, "created_at"),
        updated: str_at(v, "updated_at"),
        url: str_at(v, "web_url"),
        issue_type: str_at(v, "issue_type").or_else(|| str_at(v, "type")),
        priority: None,
        is_pull_request: false,
        milestones: gitlab_milestone(at(v, "milestone")).into_iter().collect(),
        comments: Vec::new(),
        history: Vec::new(),
        links: Vec::new(),
    })
}

/// The issue's `milestone` object (`{iid, title, state, due_date, web_url}`), if any.
pub(super) fn gitlab_milestone(v: &Value) -> Option<Milestone> {
    Some(Milestone {
        title: exact_str_at(v, "title")?,
        id: str_at(v, "iid").or_else(|| str_at(v, "id")),
        state: str_at(v, "state"),
        due: str_at(v, "due_date"),
        url: str_at(v, "web_url"),
    })
}

/// The project path of a GitLab issue: `references.full` (`acme/shop#5`), else the part of
/// `web_url` before `/-/issues/`.
pub(super) fn gitlab_path(v: &Value, iid: u64) -> Option<String> {
    let from_ref = str_at(at(v, "references"), "full").and_then(|full| {
        let (path, n) = full.rsplit_once('#')?;
        (n == iid.to_string() && !path.is_empty()).then(|| path.to_string())
    });
    from_ref.or_else(|| {
        let url = str_at(v, "web_url")?;
        let (base, _) = url.split_once("/-/issues/")?;
        let rest = base.split_once("://").map_or(base, |(_, r)| r);
        let (_, path) = rest.split_once('/')?;
        (!path.is_empty()).then(|| path.to_string())
    })
}

/// `GET /projects/{id}/issues/{iid}/notes`: people's notes are comments; system notes
/// ("assigned to @x", "mentioned in commit …") are history, field `note`, text in `to`.
pub fn gitlab_notes(body: &[u8]) -> Result<(Vec<IssueComment>, Vec<IssueChange>), TrackerError> {
    let v = parse_body(body)?;
    let mut comments = Vec::new();
    let mut changes = Vec::new();
    for (i, n) in items(&v, "notes")?.iter().enumerate() {
        let path = format!("notes[{i}]");
        let n = object(n, &path)?;
        let id = require_str(n, &path, "id")?;
        if at(n, "system").as_bool().unwrap_or(false) {
            changes.push(IssueChange {
                at: str_at(n, "created_at"),
                actor: gitlab_person(at(n, "author")),
                field: "note".into(),
                from: None,
                to: str_at(n, "body"),
                commit: None,
            });
        } else {
            comments.push(IssueComment {
                id,
                author: gitlab_person(at(n, "author")),
                body: body_at(n, "body"),
                created: str_at(n, "created_at"),
                updated: str_at(n, "updated_at"),
                url: None,
            });
        }
    }
    Ok((comments, changes))
}

/// `GET /projects/{id}/issues/{iid}/resource_state_events`: closes and reopens.
pub fn gitlab_state_events(body: &[u8]) -> Result<Vec<IssueChange>, TrackerError> {
    let v = parse_body(body)?;
    items(&v, "state events")?
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let e = object(e, &format!("state_events[{i}]"))?;
            Ok(IssueChange {
                at: str_at(e, "created_at"),
                actor: gitlab_person(at(e, "user")),
                field: "state".into(),
                from: None,
                to: str_at(e, "state"),
                commit: str_at(e, "source_commit"),
            })
        })
        .collect()
}
