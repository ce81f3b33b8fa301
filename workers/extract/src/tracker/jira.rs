//! Jira: search pages with fields, comments, changelog and links (v2 text and v3 documents).

use super::*;

/// A Jira user: Server's `name` (else Cloud's `accountId`) as login, `displayName`,
/// `emailAddress` (absent when the user's privacy settings hide it).
pub(super) fn jira_person(v: &Value) -> Option<TrackerPerson> {
    person_of(
        str_at(v, "name")
            .or_else(|| str_at(v, "accountId"))
            .or_else(|| str_at(v, "key")),
        str_at(v, "displayName"),
        str_at(v, "emailAddress"),
    )
}

/// `GET /rest/api/2/search` (`startAt`/`maxResults`/`total`) or `/rest/api/{2,3}/search/jql`
/// (`nextPageToken`/`isLast`), with `fields` including comment and issuelinks and
/// `expand=changelog` for history.
pub fn jira_search(body: &[u8]) -> Result<JiraPage, TrackerError> {
    let v = parse_body(body)?;
    let list = match v.get("issues") {
        Some(Value::Array(a)) if v.is_object() => a,
        _ => {
            return Err(TrackerError::Shape(format!(
                "expected a search result with `issues`, got {}",
                describe(&v)
            )));
        }
    };
    let issues = list
        .iter()
        .enumerate()
        .map(|(i, it)| jira_issue(it, &format!("issues[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(JiraPage {
        start_at: u64_at(&v, "startAt").unwrap_or(0),
        max_results: u64_at(&v, "maxResults").unwrap_or(issues.len() as u64),
        total: u64_at(&v, "total"),
        next_page_token: str_at(&v, "nextPageToken"),
        is_last: at(&v, "isLast").as_bool(),
        issues,
    })
}

/// One issue of a search page; `key` is required, every field is optional (the search may
/// have asked for fewer).
pub(super) fn jira_issue(v: &Value, path: &str) -> Result<Issue, TrackerError> {
    let v = object(v, path)?;
    let key = require_str(v, path, "key")?;
    let f = at(v, "fields");
    let (project, number) = match key.rsplit_once('-') {
        Some((p, n)) if !p.is_empty() => (p.to_string(), n.parse().ok()),
        _ => (
            str_at(at(f, "project"), "key").unwrap_or_else(|| key.clone()),
            None,
        ),
    };
    let base = jira_base(v);
    Ok(Issue {
        tracker: TrackerKind::Jira,
        project,
        number,
        title: str_at(f, "summary").unwrap_or_default(),
        body: jira_text(at(f, "description")),
        state: str_at(at(f, "status"), "name").unwrap_or_default(),
        labels: labels(at(f, "labels")),
        assignees: jira_person(at(f, "assignee")).into_iter().collect(),
        reporter: jira_person(at(f, "reporter")),
        created: str_at(f, "created"),
        updated: str_at(f, "updated"),
        url: base.as_ref().map(|b| format!("{b}/browse/{key}")),
        issue_type: str_at(at(f, "issuetype"), "name"),
        priority: str_at(at(f, "priority"), "name"),
        is_pull_request: false,
        milestones: jira_fix_versions(at(f, "fixVersions")),
        comments: jira_comments(f, base.as_deref(), &key, path)?,
        history: jira_history(v),
        links: jira_links(f),
        key,
    })
}

/// `fields.fixVersions` (`[{id, name, released, releaseDate}]`): the versions the issue is
/// planned for, Jira's milestones.
pub(super) fn jira_fix_versions(v: &Value) -> Vec<Milestone> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|fv| {
            Some(Milestone {
                title: exact_str_at(fv, "name")?,
                id: str_at(fv, "id"),
                state: at(fv, "released")
                    .as_bool()
                    .map(|r| if r { "released" } else { "unreleased" }.to_string()),
                due: str_at(fv, "releaseDate"),
                url: None,
            })
        })
        .collect()
}

/// The site's base URL, from the issue's API `self` link (`{base}/rest/api/2/issue/10012`):
/// people open `{base}/browse/SHOP-12`, not the API.
pub(super) fn jira_base(v: &Value) -> Option<String> {
    let api = str_at(v, "self")?;
    let i = api.find("/rest/api/")?;
    Some(api[..i].to_string())
}

/// A description or comment body: wiki markup or plain text (API v2) kept as is; an
/// Atlassian Document (API v3) flattened to its text.
pub(super) fn jira_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(_) => {
            let mut out = String::new();
            adf_text(v, &mut out, 0);
            out.trim_end().to_string()
        }
        _ => String::new(),
    }
}

/// Atlassian Document Format node types that end a line.
pub(super) const ADF_BLOCKS: &[&str] = &[
    "paragraph",
    "heading",
    "codeBlock",
    "blockquote",
    "listItem",
    "tableRow",
    "rule",
    "panel",
];

/// Appends the text of an Atlassian Document node and its children (depth-limited: hostile
/// nesting must not exhaust the stack).
pub(super) fn adf_text(v: &Value, out: &mut String, depth: usize) {
    if depth > 64 {
        return;
    }
    let kind = at(v, "type").as_str().unwrap_or_default();
    if let Some(t) = at(v, "text").as_str() {
        out.push_str(t);
    } else if kind == "mention" {
        out.push_str(at(at(v, "attrs"), "text").as_str().unwrap_or_default());
    } else if kind == "hardBreak" {
        out.push('\n');
    }
    for child in at(v, "content").as_array().into_iter().flatten() {
        adf_text(child, out, depth + 1);
    }
    if ADF_BLOCKS.contains(&kind) && !out.ends_with('\n') {
        out.push('\n');
    }
}

/// `fields.comment.comments` (the search returns the first page of them).
pub(super) fn jira_comments(
    f: &Value,
    base: Option<&str>,
    key: &str,
    path: &str,
) -> Result<Vec<IssueComment>, TrackerError> {
    at(at(f, "comment"), "comments")
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| {
            let p = format!("{path}.fields.comment.comments[{i}]");
            let c = object(c, &p)?;
            let id = require_str(c, &p, "id")?;
            Ok(IssueComment {
                url: base.map(|b| format!("{b}/browse/{key}?focusedCommentId={id}")),
                id,
                author: jira_person(at(c, "author")),
                body: jira_text(at(c, "body")),
                created: str_at(c, "created"),
                updated: str_at(c, "updated"),
            })
        })
        .collect()
}

/// `changelog.histories[].items[]`: one change per item, the readable `fromString` /
/// `toString` (display names, status names) over the raw ids.
pub(super) fn jira_history(v: &Value) -> Vec<IssueChange> {
    let mut out = Vec::new();
    for h in at(at(v, "changelog"), "histories")
        .as_array()
        .into_iter()
        .flatten()
    {
        let actor = jira_person(at(h, "author"));
        let when = str_at(h, "created");
        for item in at(h, "items").as_array().into_iter().flatten() {
            out.push(IssueChange {
                at: when.clone(),
                actor: actor.clone(),
                field: str_at(item, "field")
                    .map(|f| f.to_lowercase())
                    .unwrap_or_else(|| "change".into()),
                from: str_at(item, "fromString").or_else(|| str_at(item, "from")),
                to: str_at(item, "toString").or_else(|| str_at(item, "to")),
                commit: None,
            });
        }
    }
    out
}

/// `fields.issuelinks`, links without another issue's key dropped.
pub(super) fn jira_links(f: &Value) -> Vec<IssueLink> {
    at(f, "issuelinks")
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(jira_link)
        .collect()
}

/// One issue link from this issue's side: with an `outwardIssue` the link type's outward
/// name applies (`blocks`), with an `inwardIssue` its inward name (`is blocked by` →
/// `blocked_by`).
pub(super) fn jira_link(l: &Value) -> Option<IssueLink> {
    let t = at(l, "type");
    let (name, target) = match str_at(at(l, "outwardIssue"), "key") {
        Some(k) => (str_at(t, "outward"), k),
        None => (str_at(t, "inward"), str_at(at(l, "inwardIssue"), "key")?),
    };
    let name = name
        .or_else(|| str_at(t, "name"))
        .unwrap_or_else(|| "relates to".into());
    Some(IssueLink {
        relation: relation_name(&name),
        target,
    })
}

/// `is blocked by` → `blocked_by`, `relates to` → `relates_to`: lower case, a leading `is`
/// dropped, runs of other characters as one `_`.
pub(super) fn relation_name(raw: &str) -> String {
    let lower = raw.trim().to_lowercase();
    let words = lower.strip_prefix("is ").unwrap_or(&lower);
    let mut out = String::new();
    for c in words.chars() {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.is_empty() {
        "relates_to".into()
    } else {
        out
    }
}
