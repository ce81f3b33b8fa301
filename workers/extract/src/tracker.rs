//! Issue trackers — GitHub, GitLab and Jira: their REST response bodies as issues, comments,
//! history and links, and an issue as a prepared source.
//!
//! The parsers are pure: the poller does HTTP, pagination and rate limits, and hands each
//! response body to the parser of its endpoint. A body that is not JSON (a proxy's sign-in
//! page) is [`TrackerError::NotJson`] saying what came back; JSON of the wrong shape (an error
//! object where a list was expected) is [`TrackerError::Shape`] naming the field. Nothing here
//! panics on hostile input.
//!
//! An issue becomes one source (`tracker:{source}:{key}`): a header chunk (state, type,
//! priority, labels, people, links) with the description, one chunk per comment (its id in
//! the locator), and the history (state, assignee, label changes, one line each). Its graph is
//! keyed so that it joins what other indexers write: the issue is [`keys::issue`] /
//! [`keys::jira_issue`] — exactly the key the git indexer gives `fixes #12` — people are
//! [`keys::person`] with their tracker login and display name as aliases, and `#12`, `SHOP-7`
//! and full commit hashes in the text become refs.

use std::collections::{BTreeSet, HashSet};

use evident_core::chunking::{ChunkingConfig, chunk_text, estimate_tokens};
use evident_core::commits::{IssueKey, issue_refs};
use evident_core::hashing::content_hash;
use evident_core::keys::{self, IssueContext};
use evident_core::prepared::{props, put_prop};
use evident_core::secrets::redact;
use evident_core::validate::MAX_ID_LEN;
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource,
    Scope, refs,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Bump when what an issue becomes changes (re-ingests unchanged issues once).
pub const TRACKER_VERSION: &str = "tracker-v1";

/// How much of a non-JSON body an error quotes.
const PREVIEW_CHARS: usize = 80;
/// How much of a non-JSON body is looked at to say what it is.
const SNIFF_BYTES: usize = 4096;
/// Longest old/new value quoted on a history line (a Jira description change carries both
/// whole descriptions; the history says *that* it changed, the description chunk says *what*).
const MAX_HISTORY_VALUE_CHARS: usize = 200;
/// Longest source title in chars (the knowledge base refuses titles over 1024 bytes; 250
/// chars of at most 4 bytes stay under it).
const MAX_TITLE_CHARS: usize = 250;

static NULL: Value = Value::Null;

// ---------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------

/// Which tracker an issue comes from; its namespace in keys and locators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrackerKind {
    Github,
    Gitlab,
    Jira,
}

impl TrackerKind {
    /// The tracker's namespace in keys and locators.
    pub fn as_str(self) -> &'static str {
        match self {
            TrackerKind::Github => "github",
            TrackerKind::Gitlab => "gitlab",
            TrackerKind::Jira => "jira",
        }
    }

    /// The tracker's own name, for text people read.
    fn display_name(self) -> &'static str {
        match self {
            TrackerKind::Github => "GitHub",
            TrackerKind::Gitlab => "GitLab",
            TrackerKind::Jira => "Jira",
        }
    }

    /// Whether issues are numbered per project (`#12`) rather than keyed (`SHOP-12`).
    fn numbered(self) -> bool {
        !matches!(self, TrackerKind::Jira)
    }
}

/// A person as a tracker names them: a login (GitHub/GitLab username, Jira account id or
/// Server user name), a display name, and an e-mail address when the tracker exposes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrackerPerson {
    pub login: Option<String>,
    pub name: Option<String>,
    pub email: Option<String>,
}

impl TrackerPerson {
    /// How text names the person: `Jan Novák (@jnovak)`, `ghopper`, `Jan Novák`. Opaque
    /// account ids (Jira Cloud) are not shown: nobody searches for them.
    pub fn display(&self) -> String {
        let handle = self.login.as_deref().filter(|l| is_handle(l));
        let shown = match (self.name.as_deref(), handle) {
            (Some(n), Some(l)) if !n.eq_ignore_ascii_case(l) => format!("{n} (@{l})"),
            (Some(n), _) => n.to_string(),
            (None, Some(l)) => l.to_string(),
            (None, None) => self
                .email
                .clone()
                .or_else(|| self.login.clone())
                .unwrap_or_else(|| "someone".into()),
        };
        let shown = one_line(&shown, 120);
        if shown.is_empty() {
            "someone".into()
        } else {
            shown
        }
    }

    /// Fills what this sighting lacks from another sighting of the same person.
    fn fill(&mut self, other: &TrackerPerson) {
        for (mine, theirs) in [
            (&mut self.login, &other.login),
            (&mut self.name, &other.name),
            (&mut self.email, &other.email),
        ] {
            if mine.is_none() {
                mine.clone_from(theirs);
            }
        }
    }
}

/// A user name a person would recognise (not a Jira Cloud account id such as
/// `712020:9b0c…` or a bare 24-hex id).
fn is_handle(login: &str) -> bool {
    !login.contains(':')
        && login.chars().count() <= 39
        && !(login.len() >= 20 && login.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A comment as people wrote it (GitLab system notes are [`IssueChange`]s instead).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssueComment {
    pub id: String,
    pub author: Option<TrackerPerson>,
    pub body: String,
    pub created: Option<String>,
    pub updated: Option<String>,
    pub url: Option<String>,
}

/// One change of an issue: a state change, an assignment, a label, a GitLab system note
/// (`field` `note`, its text in `to`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssueChange {
    pub at: Option<String>,
    pub actor: Option<TrackerPerson>,
    /// `state`, `assignee`, `label`, `status`, `title`, `note`, … (Jira's field names,
    /// lower-cased).
    pub field: String,
    pub from: Option<String>,
    pub to: Option<String>,
    /// The commit that made the change (GitHub's `closed` by a commit, GitLab's
    /// `source_commit`): written on the history line, so the commit's node is a ref there.
    pub commit: Option<String>,
}

/// A typed link to another issue of the same tracker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssueLink {
    /// snake_case, from this issue's side: `blocks`, `blocked_by`, `relates_to`,
    /// `duplicates`, `duplicated_by`, `clones`, `cloned_by`, …
    pub relation: String,
    /// The other issue's key as the tracker writes it: `SHOP-7`, `12`, `group/proj#5`.
    pub target: String,
}

/// An issue as one tracker describes it; the parsers fill what one endpoint returns and the
/// poller adds comments, history and links from the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Issue {
    pub tracker: TrackerKind,
    /// `acme/shop` (GitHub), the project path (GitLab, else its id), `SHOP` (Jira).
    pub project: String,
    /// `12` for GitHub/GitLab (number, iid), `SHOP-12` for Jira.
    pub key: String,
    pub number: Option<u64>,
    pub title: String,
    /// The description (Markdown, Jira wiki markup or plain text); may be empty.
    pub body: String,
    pub state: String,
    pub labels: Vec<String>,
    pub assignees: Vec<TrackerPerson>,
    pub reporter: Option<TrackerPerson>,
    pub created: Option<String>,
    /// Exactly as the API gave it: the poller's cursor.
    pub updated: Option<String>,
    pub url: Option<String>,
    pub issue_type: Option<String>,
    pub priority: Option<String>,
    /// GitHub lists pull requests among issues; the poller skips them.
    pub is_pull_request: bool,
    pub comments: Vec<IssueComment>,
    pub history: Vec<IssueChange>,
    pub links: Vec<IssueLink>,
}

/// One page of a Jira search, in either envelope: the classic `/search`
/// (`startAt`, `maxResults`, `total`) or `/search/jql` (`nextPageToken`, `isLast`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JiraPage {
    pub issues: Vec<Issue>,
    pub start_at: u64,
    pub max_results: u64,
    pub total: Option<u64>,
    pub next_page_token: Option<String>,
    pub is_last: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrackerError {
    /// Not JSON at all — typically a proxy's or SSO's HTML page answering with 200.
    #[error("the tracker did not answer with JSON: {0}")]
    NotJson(String),
    /// JSON, but not what the endpoint returns (an error object, a missing field).
    #[error("unexpected JSON from the tracker: {0}")]
    Shape(String),
}

// ---------------------------------------------------------------------------------------
// JSON helpers
// ---------------------------------------------------------------------------------------

/// The body as JSON, or what came back instead.
fn parse_body(body: &[u8]) -> Result<Value, TrackerError> {
    parse_json(body).map_err(TrackerError::NotJson)
}

/// A REST API's JSON body (a UTF-8 BOM allowed); when it is not JSON, what it is instead
/// (shared with the wiki extractor, whose APIs fail the same ways).
pub(crate) fn parse_json(body: &[u8]) -> Result<Value, String> {
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    serde_json::from_slice(body).map_err(|e| sniff(body, &e))
}

/// Says what a non-JSON body is (HTML page with its title, other markup, binary, text), with
/// its start, so an operator sees at a glance that a proxy answered instead of the tracker.
fn sniff(body: &[u8], err: &serde_json::Error) -> String {
    let cut = &body[..body.len().min(SNIFF_BYTES)];
    if let Err(e) = std::str::from_utf8(cut)
        && e.error_len().is_some()
    {
        return format!("binary data ({} bytes)", body.len());
    }
    let head = String::from_utf8_lossy(cut);
    let text = head.trim_start();
    if text.is_empty() {
        return if body.is_empty() {
            "an empty body".into()
        } else {
            format!("only whitespace ({} bytes)", body.len())
        };
    }
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || (lower.starts_with('<') && lower.contains("<html")) {
        let title = html_title(text, &lower)
            .map(|t| format!(" titled \"{t}\""))
            .unwrap_or_default();
        return format!(
            "an HTML page{title} ({} bytes): {}",
            body.len(),
            preview(text, PREVIEW_CHARS)
        );
    }
    if lower.starts_with('<') {
        return format!(
            "XML or other markup ({} bytes): {}",
            body.len(),
            preview(text, PREVIEW_CHARS)
        );
    }
    format!(
        "text ({} bytes; {err}): {}",
        body.len(),
        preview(text, PREVIEW_CHARS)
    )
}

/// The `<title>` of an HTML page. `lower` is `text` ASCII-lower-cased (same byte offsets).
fn html_title(text: &str, lower: &str) -> Option<String> {
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = preview(&text[start..end], PREVIEW_CHARS);
    (!title.is_empty()).then_some(title)
}

/// Whitespace collapsed, control characters dropped, at most `max` chars (`…` when cut).
fn preview(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        let word: String = word.chars().filter(|c| !c.is_control()).collect();
        if word.is_empty() {
            continue;
        }
        let sep = (!out.is_empty()).then_some(' ');
        for c in sep.into_iter().chain(word.chars()) {
            if count == max {
                out.push('…');
                return out;
            }
            out.push(c);
            count += 1;
        }
    }
    out
}

/// A title as one line, credentials redacted: titles are stored beside the chunks (source
/// title, node label), where chunk redaction does not reach.
fn clean_line(text: &str) -> String {
    let line = one_line(text, MAX_TITLE_CHARS);
    match redact(&line) {
        Some((clean, _)) => clean,
        None => line,
    }
}

/// One line of text for headers, titles and history: [`preview`] under another name, where
/// the point is that no newline or control character gets through.
fn one_line(text: &str, max: usize) -> String {
    preview(text, max)
}

/// What a JSON value is, for shape errors; an error object's message is quoted (GitHub and
/// GitLab `message`, GitLab `error`, Jira `errorMessages`), since that is the real answer.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string \"{}\"", preview(s, PREVIEW_CHARS)),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(m) => match error_message(m) {
            Some(msg) => format!("an error object: \"{}\"", preview(&msg, 200)),
            None => {
                let keys: Vec<&str> = m.keys().take(8).map(String::as_str).collect();
                format!("an object with keys [{}]", keys.join(", "))
            }
        },
    }
}

/// The message of an error body, if the object is one.
fn error_message(m: &Map<String, Value>) -> Option<String> {
    let jira: Vec<&str> = m
        .get("errorMessages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !jira.is_empty() {
        return Some(jira.join("; "));
    }
    match m.get("message").or_else(|| m.get("error"))? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// `v[key]`, or null so that lookups chain through missing or mistyped parents.
fn at<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key).unwrap_or(&NULL)
}

/// A non-blank string field; numbers as their decimal text (ids are numbers on GitHub and
/// GitLab, strings on Jira).
fn str_at(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A non-negative integer field (also written as a string).
fn u64_at(v: &Value, key: &str) -> Option<u64> {
    match v.get(key)? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A free-text field as is (`""` when absent or null).
fn body_at(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The body's list of `what`, or a shape error saying what came instead.
fn items<'a>(v: &'a Value, what: &str) -> Result<&'a [Value], TrackerError> {
    v.as_array().map(Vec::as_slice).ok_or_else(|| {
        TrackerError::Shape(format!("expected an array of {what}, got {}", describe(v)))
    })
}

/// `v` when it is an object; a shape error naming `path` otherwise.
fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Value, TrackerError> {
    if v.is_object() {
        Ok(v)
    } else {
        Err(TrackerError::Shape(format!(
            "{path}: expected an object, got {}",
            describe(v)
        )))
    }
}

/// The error for a required field: where, what was expected, what was there.
fn missing(v: &Value, path: &str, key: &str, expected: &str) -> TrackerError {
    let got = v.get(key).map_or_else(|| "nothing".to_string(), describe);
    TrackerError::Shape(format!("{path}.{key}: expected {expected}, got {got}"))
}

/// A required integer (issue numbers, iids): without it there is no key.
fn require_u64(v: &Value, path: &str, key: &str) -> Result<u64, TrackerError> {
    u64_at(v, key).ok_or_else(|| missing(v, path, key, "a non-negative integer"))
}

/// A required id or key: without it comments and Jira issues cannot be cited.
fn require_str(v: &Value, path: &str, key: &str) -> Result<String, TrackerError> {
    str_at(v, key).ok_or_else(|| missing(v, path, key, "a string or number"))
}

/// Label names: GitHub's label objects, GitLab's and Jira's strings.
fn labels(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| match l {
            Value::String(s) => Some(s.clone()),
            other => str_at(other, "name"),
        })
        .filter(|s| !s.trim().is_empty())
        .collect()
}

/// The people of a list field (`assignees`), else of the single field (`assignee`), which
/// older APIs and some payloads fill alone.
fn people(
    v: &Value,
    list: &str,
    single: &str,
    parse: fn(&Value) -> Option<TrackerPerson>,
) -> Vec<TrackerPerson> {
    let many: Vec<TrackerPerson> = at(v, list)
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(parse)
        .collect();
    if many.is_empty() {
        parse(at(v, single)).into_iter().collect()
    } else {
        many
    }
}

/// A person when any of the three is known.
fn person_of(
    login: Option<String>,
    name: Option<String>,
    email: Option<String>,
) -> Option<TrackerPerson> {
    let p = TrackerPerson { login, name, email };
    (p != TrackerPerson::default()).then_some(p)
}

// ---------------------------------------------------------------------------------------
// GitHub
// ---------------------------------------------------------------------------------------

/// Issue events that say nothing about the issue itself (notifications, cross-references
/// whose source is another issue's business).
const GITHUB_NOISE: &[&str] = &[
    "mentioned",
    "subscribed",
    "unsubscribed",
    "cross-referenced",
    "user_blocked",
];

/// A GitHub user object (`login`; `name` and `email` only where GitHub includes them).
fn github_person(v: &Value) -> Option<TrackerPerson> {
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
fn github_issue(v: &Value, project: &str, path: &str) -> Result<Issue, TrackerError> {
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
        is_pull_request: !at(v, "pull_request").is_null(),
        comments: Vec::new(),
        history: Vec::new(),
        links: Vec::new(),
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
fn github_change(e: &Value, path: &str) -> Result<Option<IssueChange>, TrackerError> {
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

// ---------------------------------------------------------------------------------------
// GitLab
// ---------------------------------------------------------------------------------------

/// A GitLab user object (`username`, `name`; `email` / `public_email` when visible).
fn gitlab_person(v: &Value) -> Option<TrackerPerson> {
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
fn gitlab_issue(v: &Value, project: &str, path: &str) -> Result<Issue, TrackerError> {
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
        comments: Vec::new(),
        history: Vec::new(),
        links: Vec::new(),
    })
}

/// The project path of a GitLab issue: `references.full` (`acme/shop#5`), else the part of
/// `web_url` before `/-/issues/`.
fn gitlab_path(v: &Value, iid: u64) -> Option<String> {
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

// ---------------------------------------------------------------------------------------
// Jira
// ---------------------------------------------------------------------------------------

/// A Jira user: Server's `name` (else Cloud's `accountId`) as login, `displayName`,
/// `emailAddress` (absent when the user's privacy settings hide it).
fn jira_person(v: &Value) -> Option<TrackerPerson> {
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
fn jira_issue(v: &Value, path: &str) -> Result<Issue, TrackerError> {
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
        comments: jira_comments(f, base.as_deref(), &key, path)?,
        history: jira_history(v),
        links: jira_links(f),
        key,
    })
}

/// The site's base URL, from the issue's API `self` link (`{base}/rest/api/2/issue/10012`):
/// people open `{base}/browse/SHOP-12`, not the API.
fn jira_base(v: &Value) -> Option<String> {
    let api = str_at(v, "self")?;
    let i = api.find("/rest/api/")?;
    Some(api[..i].to_string())
}

/// A description or comment body: wiki markup or plain text (API v2) kept as is; an
/// Atlassian Document (API v3) flattened to its text.
fn jira_text(v: &Value) -> String {
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
const ADF_BLOCKS: &[&str] = &[
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
fn adf_text(v: &Value, out: &mut String, depth: usize) {
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
fn jira_comments(
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
fn jira_history(v: &Value) -> Vec<IssueChange> {
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
fn jira_links(f: &Value) -> Vec<IssueLink> {
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
fn jira_link(l: &Value) -> Option<IssueLink> {
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
fn relation_name(raw: &str) -> String {
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

// ---------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------

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
fn display_key(issue: &Issue) -> String {
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
fn fits(key: &NodeKey) -> bool {
    key.as_str().len() <= MAX_ID_LEN
}

/// What `#5`, `owner/repo#5` mean in this issue's text (nothing on Jira, which has no
/// numbered issues).
fn number_context(issue: &Issue) -> Option<IssueContext> {
    issue.tracker.numbered().then(|| IssueContext {
        tracker: issue.tracker.as_str().into(),
        project: issue.project.clone(),
    })
}

/// Full commit hashes (40 or 64 hex digits) in text: the form that names a commit's node
/// ([`keys::commit`]); short hashes would make nodes no commit ever joins.
fn commit_hashes(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            (w.len() == 40 || w.len() == 64)
                && w.bytes().all(|b| b.is_ascii_hexdigit())
                && w.bytes().any(|b| b.is_ascii_alphabetic())
        })
}

/// Refs a text makes: `ns:value` refs, issue keys (`#12` in the issue's project, `SHOP-7`),
/// full commit hashes.
fn text_refs(text: &str, numbers: Option<&IssueContext>) -> Vec<NodeKey> {
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
fn dedup(keys: Vec<NodeKey>) -> Vec<NodeKey> {
    let mut seen = HashSet::new();
    keys.into_iter()
        .filter(|k| fits(k) && seen.insert(k.clone()))
        .collect()
}

/// The other end of a link: a Jira key, or a number (`12`, `group/proj#12`) of a numbered
/// tracker.
fn link_target_key(issue: &Issue, target: &str) -> Option<NodeKey> {
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
const PASSIVE: &[(&str, &str)] = &[
    ("blocked_by", "blocks"),
    ("duplicated_by", "duplicates"),
    ("cloned_by", "clones"),
    ("caused_by", "causes"),
];

/// The edge type of a link relation (the graph's relation vocabulary, ASCII as edge types
/// must be) and whether the edge runs from the other issue to this one.
fn link_edge(relation: &str) -> (String, bool) {
    let rel = refs::canonical_relation(relation)
        .filter(|r| is_edge_type(r))
        .unwrap_or_else(|| "relates_to".into());
    match PASSIVE.iter().find(|(passive, _)| *passive == rel) {
        Some((_, active)) => (active.to_string(), true),
        None => (rel, false),
    }
}

/// What the knowledge base accepts as an edge type (lower-case ASCII, digits, `_-.`).
fn is_edge_type(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.')
        })
}

/// `label:{tracker}/{project}/{name}`: labels are per project (`bug` in two repositories
/// is two labels).
fn label_key(issue: &Issue, name: &str) -> Option<NodeKey> {
    refs::normalize_ref(&format!(
        "label:{}/{}/{name}",
        issue.tracker.as_str(),
        issue.project
    ))
    .filter(|k| fits(k) && !k.value().is_empty())
}

// ---------------------------------------------------------------------------------------
// The prepared source
// ---------------------------------------------------------------------------------------

/// Where an issue comes from.
#[derive(Debug, Clone, Copy)]
pub struct TrackerContext<'a> {
    pub scope: &'a Scope,
    /// The registered source's id (URNs: `tracker:{source}:{key}`).
    pub source_id: &'a str,
    pub chunking: &'a ChunkingConfig,
}

/// A person seen in the issue, and the chunks that show them.
struct Seen {
    key: NodeKey,
    who: TrackerPerson,
    chunks: BTreeSet<usize>,
}

/// Builds one issue's chunks while recording who appears where.
struct Builder<'a> {
    issue: &'a Issue,
    chunking: &'a ChunkingConfig,
    key: NodeKey,
    numbers: Option<IssueContext>,
    title: String,
    chunks: Vec<PreparedChunk>,
    people: Vec<Seen>,
    /// Comment authors and the chunks of their comments.
    commented: Vec<(NodeKey, Vec<usize>)>,
    redacted: bool,
}

impl<'a> Builder<'a> {
    fn new(issue: &'a Issue, chunking: &'a ChunkingConfig) -> Self {
        Builder {
            issue,
            chunking,
            key: issue_key(issue),
            numbers: number_context(issue),
            title: clean_line(&format!("{}: {}", display_key(issue), issue.title)),
            chunks: Vec::new(),
            people: Vec::new(),
            commented: Vec::new(),
            redacted: false,
        }
    }

    /// Text with credentials redacted (whole lines, like every indexer), noting that it was.
    fn clean(&mut self, text: &str) -> String {
        match redact(text) {
            Some((clean, _)) => {
                self.redacted = true;
                clean
            }
            None => text.to_string(),
        }
    }

    /// Records that `p` appears in chunk `at`; their key.
    fn see(&mut self, p: &TrackerPerson, at: usize) -> Option<NodeKey> {
        let key = person_key(p)?;
        match self.people.iter_mut().find(|s| s.key == key) {
            Some(s) => {
                s.who.fill(p);
                s.chunks.insert(at);
            }
            None => self.people.push(Seen {
                key: key.clone(),
                who: p.clone(),
                chunks: BTreeSet::from([at]),
            }),
        }
        Some(key)
    }

    /// The issue (or one of its comments) as a citation names it.
    fn locator(&self, comment_id: Option<&str>) -> Locator {
        Locator::Issue {
            tracker: self.issue.tracker.as_str().to_string(),
            issue_key: locator_key(self.issue),
            comment_id: comment_id.map(str::to_string),
        }
    }

    /// Adds a chunk (redacted again as a whole: headers and prefixes are text too); refs are
    /// the issue, `people`, and what the text names. Returns its index.
    fn push(
        &mut self,
        text: &str,
        kind: Option<&str>,
        comment_id: Option<&str>,
        people: Vec<NodeKey>,
    ) -> usize {
        let text = self.clean(&text.replace('\0', ""));
        let mut refs = vec![self.key.clone()];
        refs.extend(people);
        refs.extend(text_refs(&text, self.numbers.as_ref()));
        let mut c = PreparedChunk::new(text, self.locator(comment_id));
        c.kind = kind.map(str::to_string);
        c.refs = dedup(refs);
        c.context = Some(self.title.clone());
        self.chunks.push(c);
        self.chunks.len() - 1
    }

    /// Chunk 0 — the header, then the description's first piece — and the rest of the
    /// description.
    fn description(&mut self) {
        let (header, people) = self.header();
        let issue = self.issue;
        let body = self.clean(&issue.body);
        let mut pieces = chunk_text(&body, self.chunking).into_iter();
        let first = match pieces.next() {
            Some(p) => format!("{header}\n\n{}", p.text),
            None => header,
        };
        self.push(&first, None, None, people);
        for p in pieces {
            self.push(&p.text, None, None, Vec::new());
        }
    }

    /// The header text, and the keys of the people it names (reporter, assignees).
    fn header(&mut self) -> (String, Vec<NodeKey>) {
        let issue = self.issue;
        let kind = if issue.is_pull_request {
            "pull request"
        } else {
            "issue"
        };
        let mut lines = vec![
            self.title.clone(),
            format!(
                "{} {kind} in {}",
                issue.tracker.display_name(),
                one_line(&issue.project, 200)
            ),
        ];
        let mut field = |name: &str, value: Option<&str>| {
            if let Some(v) = value.map(|v| one_line(v, 500)).filter(|v| !v.is_empty()) {
                lines.push(format!("{name}: {v}"));
            }
        };
        field("State", Some(issue.state.as_str()));
        field("Type", issue.issue_type.as_deref());
        field("Priority", issue.priority.as_deref());
        field("Labels", Some(issue.labels.join(", ").as_str()));
        let mut people = Vec::new();
        let reporter = issue.reporter.as_ref().map(TrackerPerson::display);
        field("Reporter", reporter.as_deref());
        let assignees: Vec<String> = issue.assignees.iter().map(TrackerPerson::display).collect();
        field("Assignees", Some(assignees.join(", ").as_str()));
        let links: Vec<String> = issue.links.iter().map(|l| self.link_text(l)).collect();
        field("Links", Some(links.join(", ").as_str()));
        field("Created", issue.created.as_deref());
        field("Updated", issue.updated.as_deref());
        for p in issue.reporter.iter().chain(&issue.assignees) {
            people.extend(self.see(p, 0));
        }
        (lines.join("\n"), people)
    }

    /// `blocks SHOP-12`, `relates to #7`.
    fn link_text(&self, l: &IssueLink) -> String {
        let target =
            if self.issue.tracker.numbered() && l.target.bytes().all(|b| b.is_ascii_digit()) {
                format!("#{}", l.target)
            } else {
                l.target.clone()
            };
        format!("{} {target}", l.relation.replace('_', " "))
    }

    /// One chunk per comment (several for a long one), each starting `Author, date:` so a
    /// chunk read alone still says who said it and when. Empty comments make none.
    fn comment(&mut self, c: &IssueComment) {
        let body = self.clean(&c.body);
        let who = c
            .author
            .as_ref()
            .map_or_else(|| "Someone".to_string(), TrackerPerson::display);
        let prefix = match &c.created {
            Some(d) => format!("{who}, {}:", one_line(d, 64)),
            None => format!("{who}:"),
        };
        let id = one_line(&c.id, 128);
        for piece in chunk_text(&body, self.chunking) {
            let at = self.chunks.len();
            let author = c.author.as_ref().and_then(|p| self.see(p, at));
            let text = format!("{prefix}\n{}", piece.text);
            let i = self.push(
                &text,
                Some("issue-comment"),
                Some(&id),
                author.iter().cloned().collect(),
            );
            let meta = &mut self.chunks[i].metadata;
            put_prop(meta, "commentId", id.clone());
            put_prop(meta, "author", who.clone());
            put_prop(
                meta,
                "created",
                c.created.clone().map_or(Value::Null, Value::from),
            );
            put_prop(meta, "url", c.url.clone().map_or(Value::Null, Value::from));
            if let Some(a) = author {
                match self.commented.iter_mut().find(|(k, _)| *k == a) {
                    Some((_, chunks)) => chunks.push(i),
                    None => self.commented.push((a, vec![i])),
                }
            }
        }
    }

    /// The history, one line per change in time order, packed into chunks up to the token
    /// budget (never cut inside a line, so each actor's evidence is exact).
    fn history(&mut self) {
        let issue = self.issue;
        let mut changes: Vec<&IssueChange> = issue.history.iter().collect();
        changes.sort_by(|a, b| a.at.cmp(&b.at));
        let max = self.chunking.max_tokens.max(1);
        let mut lines: Vec<String> = Vec::new();
        let mut actors: Vec<&TrackerPerson> = Vec::new();
        let mut tokens = 0;
        for ch in changes {
            let line = change_line(ch);
            if line.is_empty() {
                continue;
            }
            let t = estimate_tokens(&line);
            if !lines.is_empty() && tokens + t > max {
                self.flush_history(&mut lines, &mut actors);
                tokens = 0;
            }
            tokens += t;
            lines.push(line);
            actors.extend(ch.actor.as_ref());
        }
        self.flush_history(&mut lines, &mut actors);
    }

    /// Makes the lines so far one history chunk, evidence for their actors.
    fn flush_history(&mut self, lines: &mut Vec<String>, actors: &mut Vec<&TrackerPerson>) {
        if lines.is_empty() {
            return;
        }
        let at = self.chunks.len();
        let who: Vec<NodeKey> = actors.drain(..).filter_map(|p| self.see(p, at)).collect();
        let text = lines.join("\n");
        lines.clear();
        self.push(&text, Some("issue-history"), None, who);
    }
}

/// One history line: `2026-01-12T08:45:12Z ghopper: added assignee jnovak` (empty when the
/// change says nothing printable).
fn change_line(ch: &IssueChange) -> String {
    let what = change_text(ch);
    if what.is_empty() {
        return String::new();
    }
    let mut line = String::new();
    if let Some(when) = ch
        .at
        .as_deref()
        .map(|a| one_line(a, 64))
        .filter(|a| !a.is_empty())
    {
        line.push_str(&when);
        line.push(' ');
    }
    if let Some(who) = &ch.actor {
        line.push_str(&who.display());
        line.push_str(": ");
    }
    line.push_str(&what);
    if let Some(c) = ch
        .commit
        .as_deref()
        .map(|c| one_line(c, 80))
        .filter(|c| !c.is_empty())
    {
        line.push_str(&format!(" (commit {c})"));
    }
    line
}

/// Fields that hold several values, where a change adds or removes one.
const MULTI_VALUED: &[&str] = &["label", "labels", "assignee", "assignees"];

/// What changed, worded for the field: `added label bug`, `status: To Do → Done`, a note's
/// text as is.
fn change_text(ch: &IssueChange) -> String {
    let v = |s: &Option<String>| {
        s.as_deref()
            .map(|x| one_line(x, MAX_HISTORY_VALUE_CHARS))
            .filter(|x| !x.is_empty())
    };
    let field = one_line(&ch.field, 64);
    let multi = MULTI_VALUED.contains(&field.as_str());
    match (v(&ch.from), v(&ch.to)) {
        (_, Some(t)) if field == "note" => t,
        (None, Some(t)) if multi => format!("added {field} {t}"),
        (Some(f), None) if multi => format!("removed {field} {f}"),
        (Some(f), Some(t)) => format!("{field}: {f} → {t}"),
        (None, Some(t)) => format!("{field}: {t}"),
        (Some(f), None) => format!("{field}: {f} → none"),
        (None, None) => field,
    }
}

/// RFC 3339 as `observed_at` needs it: Jira writes offsets without a colon
/// (`2026-01-08T15:03:10.566+0100` → `+01:00`); others pass through.
fn rfc3339(at: &str) -> String {
    let b = at.as_bytes();
    let n = b.len();
    let compact_offset = n > 16
        && at.contains('T')
        && matches!(b[n - 5], b'+' | b'-')
        && b[n - 4..].iter().all(u8::is_ascii_digit);
    if compact_offset {
        format!("{}:{}", &at[..n - 2], &at[n - 2..])
    } else {
        at.to_string()
    }
}

/// An edge without props.
fn edge(from: &NodeKey, edge_type: &str, to: NodeKey, evidence: EvidenceSpec) -> PreparedEdge {
    PreparedEdge {
        from: from.clone(),
        to,
        edge_type: edge_type.into(),
        props: Map::new(),
        evidence,
    }
}

/// An optional string as a prop value (null is skipped by [`props`]).
pub(crate) fn opt(v: &Option<String>) -> Value {
    v.clone().map_or(Value::Null, Value::from)
}

/// The issue's own node.
fn issue_node(issue: &Issue, key: &NodeKey, title: &str) -> PreparedNode {
    let label = if issue.title.trim().is_empty() {
        title.to_string()
    } else {
        clean_line(&issue.title)
    };
    PreparedNode {
        key: key.clone(),
        node_type: "issue".into(),
        label,
        props: props([
            ("tracker", issue.tracker.as_str().into()),
            ("project", issue.project.clone().into()),
            ("key", issue.key.clone().into()),
            ("number", issue.number.map_or(Value::Null, Value::from)),
            ("state", issue.state.clone().into()),
            (
                "labels",
                if issue.labels.is_empty() {
                    Value::Null
                } else {
                    Value::from(issue.labels.clone())
                },
            ),
            ("type", opt(&issue.issue_type)),
            ("priority", opt(&issue.priority)),
            ("url", opt(&issue.url)),
            ("created", opt(&issue.created)),
            ("updated", opt(&issue.updated)),
            (
                "pullRequest",
                if issue.is_pull_request {
                    Value::Bool(true)
                } else {
                    Value::Null
                },
            ),
        ]),
        evidence: EvidenceSpec::AllChunks,
    }
}

/// A person's node. The login is kept per tracker (`githubLogin`), since props merge across
/// sources and one person has a login on each.
fn person_node(s: &Seen, tracker: TrackerKind) -> PreparedNode {
    let mut p = props([
        ("name", opt(&s.who.name)),
        (
            "email",
            s.who
                .email
                .as_ref()
                .map_or(Value::Null, |e| Value::from(e.to_lowercase())),
        ),
    ]);
    put_prop(
        &mut p,
        &format!("{}Login", tracker.as_str()),
        opt(&s.who.login),
    );
    PreparedNode {
        key: s.key.clone(),
        node_type: "person".into(),
        label: s.who.display(),
        props: p,
        evidence: EvidenceSpec::Chunks(s.chunks.iter().copied().collect()),
    }
}

/// The login and display name resolve to the person's canonical key (their e-mail identity
/// when known, else their login).
fn aliases_of(people: &[Seen]) -> Vec<(NodeKey, NodeKey)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for s in people {
        let handles: Vec<&str> = s.who.login.as_deref().into_iter().collect();
        for pair in keys::person_aliases(&s.key, s.who.name.as_deref(), &handles) {
            if fits(&pair.0) && seen.insert(pair.clone()) {
                out.push(pair);
            }
        }
    }
    out
}

/// Edges to labels (and their nodes), evidenced by the header.
fn label_graph(
    issue: &Issue,
    key: &NodeKey,
    nodes: &mut Vec<PreparedNode>,
    edges: &mut Vec<PreparedEdge>,
) {
    let mut seen = HashSet::new();
    for name in &issue.labels {
        let Some(label) = label_key(issue, name).filter(|k| seen.insert(k.clone())) else {
            continue;
        };
        nodes.push(PreparedNode {
            key: label.clone(),
            node_type: "label".into(),
            label: one_line(name, 200),
            props: props([
                ("name", name.clone().into()),
                ("tracker", issue.tracker.as_str().into()),
                ("project", issue.project.clone().into()),
            ]),
            evidence: EvidenceSpec::chunk(0),
        });
        edges.push(edge(key, "labeled", label, EvidenceSpec::chunk(0)));
    }
}

/// Edges of the issue's links, evidenced by the header that lists them.
fn link_edges(issue: &Issue, key: &NodeKey) -> Vec<PreparedEdge> {
    let mut out: Vec<PreparedEdge> = Vec::new();
    for l in &issue.links {
        let Some(other) = link_target_key(issue, &l.target).filter(|k| fits(k) && k != key) else {
            continue;
        };
        let (edge_type, reversed) = link_edge(&l.relation);
        let mut e = if reversed {
            edge(&other, &edge_type, key.clone(), EvidenceSpec::chunk(0))
        } else {
            edge(key, &edge_type, other, EvidenceSpec::chunk(0))
        };
        if l.relation != edge_type {
            put_prop(&mut e.props, "relation", l.relation.clone());
        }
        let duplicate = out
            .iter()
            .any(|x| x.from == e.from && x.to == e.to && x.edge_type == e.edge_type);
        if !duplicate {
            out.push(e);
        }
    }
    out
}

/// An issue as a prepared source: header and description, comments, history; the issue,
/// its people, labels and links as the graph.
pub fn issue_source(issue: &Issue, ctx: &TrackerContext<'_>) -> PreparedSource {
    let mut b = Builder::new(issue, ctx.chunking);
    b.description();
    for c in &issue.comments {
        b.comment(c);
    }
    b.history();

    let key = b.key.clone();
    let mut nodes = vec![issue_node(issue, &key, &b.title)];
    nodes.extend(b.people.iter().map(|s| person_node(s, issue.tracker)));
    let mut edges = Vec::new();
    let mut assigned = HashSet::new();
    if let Some(r) = issue.reporter.as_ref().and_then(person_key) {
        edges.push(edge(&key, "reported_by", r, EvidenceSpec::chunk(0)));
    }
    for a in issue.assignees.iter().filter_map(person_key) {
        if assigned.insert(a.clone()) {
            edges.push(edge(&key, "assigned_to", a, EvidenceSpec::chunk(0)));
        }
    }
    for (person, at) in &b.commented {
        edges.push(edge(
            &key,
            "commented_by",
            person.clone(),
            EvidenceSpec::Chunks(at.clone()),
        ));
    }
    edges.extend(link_edges(issue, &key));
    label_graph(issue, &key, &mut nodes, &mut edges);

    let fingerprint = content_hash(&format!(
        "{TRACKER_VERSION}\0{}\0{}/{}\0{}\0{issue:?}",
        ctx.source_id, ctx.chunking.max_tokens, ctx.chunking.min_tokens, b.redacted
    ));
    PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: issue_urn(ctx.source_id, issue),
        kind: "issue".into(),
        title: Some(b.title.clone()),
        fingerprint,
        observed_at: issue
            .updated
            .as_deref()
            .or(issue.created.as_deref())
            .map(rfc3339),
        aliases: aliases_of(&b.people),
        chunks: b.chunks,
        nodes,
        edges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GITHUB_PAGED: &str =
        include_str!("../../indexers/tests/fixtures/rest/github-issues-paged.json");
    const GITHUB_INCREMENTAL: &str =
        include_str!("../../indexers/tests/fixtures/rest/github-incremental.json");
    const GITHUB_HTML: &str =
        include_str!("../../indexers/tests/fixtures/rest/github-html-instead-of-json.json");
    const GITHUB_RATE_LIMITED: &str =
        include_str!("../../indexers/tests/fixtures/rest/github-rate-limited.json");
    const GITLAB_PAGED: &str =
        include_str!("../../indexers/tests/fixtures/rest/gitlab-issues-paged.json");
    const JIRA_PAGED: &str =
        include_str!("../../indexers/tests/fixtures/rest/jira-search-paged.json");
    const JIRA_RATE_LIMITED: &str =
        include_str!("../../indexers/tests/fixtures/rest/jira-rate-limited.json");
    const JIRA_GONE: &str =
        include_str!("../../indexers/tests/fixtures/rest/jira-search-gone.json");

    /// `(status, body bytes)` of every exchange whose request path is `path`, in order. A JSON
    /// body is serialised back to bytes; a string body is sent as is.
    fn bodies(fixture: &str, path: &str) -> Vec<(u64, Vec<u8>)> {
        let all: Value = serde_json::from_str(fixture).expect("fixture is JSON");
        all.as_array()
            .expect("fixture is an array of exchanges")
            .iter()
            .filter(|x| x["request"]["path"] == path)
            .map(|x| {
                let body = match &x["response"]["body"] {
                    Value::String(s) => s.clone().into_bytes(),
                    other => serde_json::to_vec(other).expect("serialises"),
                };
                (x["response"]["status"].as_u64().expect("status"), body)
            })
            .collect()
    }

    /// The `nth` successful (200) body of `path`.
    fn ok_body(fixture: &str, path: &str, nth: usize) -> Vec<u8> {
        bodies(fixture, path)
            .into_iter()
            .filter(|(status, _)| *status == 200)
            .nth(nth)
            .map(|(_, b)| b)
            .expect("exchange present")
    }

    fn logins(people: &[TrackerPerson]) -> Vec<&str> {
        people.iter().filter_map(|p| p.login.as_deref()).collect()
    }

    fn key(s: &str) -> NodeKey {
        NodeKey::from_canonical(s)
    }

    fn edges_of(src: &PreparedSource) -> Vec<(&str, &str, &str)> {
        src.edges
            .iter()
            .map(|e| (e.from.as_str(), e.edge_type.as_str(), e.to.as_str()))
            .collect()
    }

    fn comment_ids(src: &PreparedSource) -> Vec<(usize, String)> {
        src.chunks
            .iter()
            .enumerate()
            .filter_map(|(i, c)| match &c.locator {
                Locator::Issue {
                    comment_id: Some(id),
                    ..
                } => Some((i, id.clone())),
                _ => None,
            })
            .collect()
    }

    fn ctx<'a>(
        scope: &'a Scope,
        chunking: &'a ChunkingConfig,
        source_id: &'a str,
    ) -> TrackerContext<'a> {
        TrackerContext {
            scope,
            source_id,
            chunking,
        }
    }

    /// GitHub #12 as the incremental poll sees it: the issue, its 3 comments, its 4 events.
    fn github_12() -> Issue {
        let path = "/repos/acme/shop/issues";
        let mut issues =
            github_issues(&ok_body(GITHUB_INCREMENTAL, path, 0), "acme/shop").expect("issues");
        let mut issue = issues.remove(0);
        issue.comments = github_comments(&ok_body(
            GITHUB_INCREMENTAL,
            "/repos/acme/shop/issues/12/comments",
            0,
        ))
        .expect("comments");
        issue.history = github_events(&ok_body(
            GITHUB_INCREMENTAL,
            "/repos/acme/shop/issues/12/events",
            0,
        ))
        .expect("events");
        issue
    }

    fn jira_issues() -> Vec<Issue> {
        let path = "/rest/api/2/search";
        let mut all = jira_search(&ok_body(JIRA_PAGED, path, 0))
            .expect("page 1")
            .issues;
        all.extend(
            jira_search(&ok_body(JIRA_PAGED, path, 1))
                .expect("page 2")
                .issues,
        );
        all
    }

    #[test]
    fn github_issue_pages_mark_pull_requests() {
        let path = "/repos/acme/shop/issues";
        let page1 = github_issues(&ok_body(GITHUB_PAGED, path, 0), "acme/shop").expect("page 1");
        let page2 = github_issues(&ok_body(GITHUB_PAGED, path, 1), "acme/shop").expect("page 2");
        let keys = |p: &[Issue]| p.iter().map(|i| i.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&page1), vec!["7", "9"]);
        assert_eq!(keys(&page2), vec!["11", "12"]);
        assert!(page2[0].is_pull_request, "#11 is a pull request");
        assert!(!page2[1].is_pull_request);
        assert!(page1.iter().all(|i| !i.is_pull_request));

        let seven = &page1[0];
        assert_eq!(seven.title, "Cart total ignores discount codes");
        assert_eq!(seven.state, "open");
        assert_eq!(seven.labels, vec!["bug"]);
        assert_eq!(logins(&seven.assignees), vec!["jnovak"]);
        assert_eq!(
            seven.reporter.as_ref().and_then(|p| p.login.as_deref()),
            Some("alovelace")
        );
        assert!(seven.body.starts_with("Applying `WINTER10` in the cart"));
        assert_eq!(page1[1].labels, vec!["enhancement", "checkout"]);
        assert!(page1[1].assignees.is_empty());

        let twelve = &page2[1];
        assert_eq!(twelve.tracker, TrackerKind::Github);
        assert_eq!(twelve.project, "acme/shop");
        assert_eq!(twelve.number, Some(12));
        assert_eq!(
            twelve.title,
            "Checkout fails with 500 when the basket contains a gift card"
        );
        assert_eq!(twelve.state, "closed");
        assert_eq!(twelve.labels, vec!["bug", "checkout"]);
        assert_eq!(logins(&twelve.assignees), vec!["jnovak"]);
        assert_eq!(twelve.created.as_deref(), Some("2026-01-12T08:41:00Z"));
        assert_eq!(twelve.updated.as_deref(), Some("2026-01-20T16:45:00Z"));
        assert_eq!(
            twelve.url.as_deref(),
            Some("https://github.com/acme/shop/issues/12")
        );
        assert_eq!(twelve.issue_type, None, "`type` is null");
    }

    #[test]
    fn github_comments_and_events() {
        let c = github_comments(&ok_body(
            GITHUB_PAGED,
            "/repos/acme/shop/issues/12/comments",
            0,
        ))
        .expect("comments");
        let ids: Vec<&str> = c.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, vec!["3791201201", "3791201202"]);
        assert_eq!(
            c[1].author.as_ref().and_then(|p| p.login.as_deref()),
            Some("alovelace")
        );
        assert!(c[1].body.contains("This fixes #12."));
        assert_eq!(
            c[0].url.as_deref(),
            Some("https://github.com/acme/shop/issues/12#issuecomment-3791201201")
        );

        let later = github_12();
        assert_eq!(later.comments.len(), 3, "the incremental poll sees a third");
        assert_eq!(later.comments[2].id, "3791201203");
        assert_eq!(later.updated.as_deref(), Some("2026-01-22T10:12:40Z"));

        let h = &later.history;
        let got: Vec<(&str, Option<&str>, Option<&str>, Option<&str>)> = h
            .iter()
            .map(|c| {
                (
                    c.field.as_str(),
                    c.from.as_deref(),
                    c.to.as_deref(),
                    c.actor.as_ref().and_then(|p| p.login.as_deref()),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("assignee", None, Some("jnovak"), Some("ghopper")),
                ("label", None, Some("bug"), Some("ghopper")),
                ("label", None, Some("checkout"), Some("ghopper")),
                ("state", Some("open"), Some("closed"), Some("alovelace")),
            ]
        );
        assert_eq!(
            h[3].commit.as_deref(),
            Some("4f9c2e1b7a3d05e6f8091a2b3c4d5e6f708192a3")
        );
        assert_eq!(h[3].at.as_deref(), Some("2026-01-20T16:45:00Z"));

        let nine = github_events(&ok_body(
            GITHUB_PAGED,
            "/repos/acme/shop/issues/9/events",
            0,
        ))
        .expect("events");
        assert_eq!(nine.len(), 2);
        assert!(nine.iter().all(|c| c.field == "label"));
    }

    #[test]
    fn non_json_and_error_bodies_say_what_came_back() {
        let (status, html) = bodies(GITHUB_HTML, "/repos/acme/shop/issues").remove(0);
        assert_eq!(status, 200, "the proxy answers 200");
        match github_issues(&html, "acme/shop") {
            Err(TrackerError::NotJson(what)) => {
                assert!(what.starts_with("an HTML page"), "{what}");
                assert!(
                    what.contains("ACME Corporate Proxy - Sign in"),
                    "the title is quoted: {what}"
                );
                assert!(what.contains("<!DOCTYPE html>"), "{what}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            github_comments(b""),
            Err(TrackerError::NotJson(w)) if w == "an empty body"
        ));
        assert!(matches!(
            gitlab_notes(b"\xff\xfe\x00garbage"),
            Err(TrackerError::NotJson(w)) if w.starts_with("binary data")
        ));

        let (status, limited) = bodies(GITHUB_RATE_LIMITED, "/repos/acme/shop/issues").remove(0);
        assert_eq!(status, 429);
        match github_issues(&limited, "acme/shop") {
            Err(TrackerError::Shape(why)) => {
                assert!(why.contains("API rate limit exceeded"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        let (status, gone) = bodies(JIRA_GONE, "/rest/api/2/search").remove(0);
        assert_eq!(status, 410);
        match jira_search(&gone) {
            Err(TrackerError::Shape(why)) => {
                assert!(why.contains("The requested API has been removed"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        let (_, jira_limited) = bodies(JIRA_RATE_LIMITED, "/rest/api/2/search").remove(0);
        assert!(
            matches!(jira_search(&jira_limited), Err(TrackerError::Shape(w)) if w.contains("Rate limit exceeded."))
        );
        match github_issues(br#"[{"title": "no number"}]"#, "a/b") {
            Err(TrackerError::Shape(why)) => assert!(why.starts_with("issues[0].number"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn gitlab_issues_notes_and_state_events() {
        let path = "/api/v4/projects/42/issues";
        let page1 = gitlab_issues(&ok_body(GITLAB_PAGED, path, 0), "42").expect("page 1");
        let page2 = gitlab_issues(&ok_body(GITLAB_PAGED, path, 1), "42").expect("page 2");
        assert_eq!(page1.len(), 2);
        assert_eq!(page2.len(), 1);
        let five = &page1[0];
        assert_eq!(five.key, "5");
        assert_eq!(five.number, Some(5));
        assert_eq!(five.project, "acme/shop", "the path, not the id 42");
        assert_eq!(five.title, "Search results ignore product variants");
        assert_eq!(five.state, "opened");
        assert_eq!(five.labels, vec!["bug", "search"]);
        assert_eq!(five.issue_type.as_deref(), Some("issue"));
        assert_eq!(
            five.assignees,
            vec![TrackerPerson {
                login: Some("jnovak".into()),
                name: Some("Jan Novák".into()),
                email: None
            }]
        );
        assert_eq!(
            five.reporter.as_ref().and_then(|p| p.name.as_deref()),
            Some("Ada Lovelace")
        );
        assert_eq!(five.updated.as_deref(), Some("2026-01-09T14:03:12.512Z"));
        assert_eq!(
            five.url.as_deref(),
            Some("https://gitlab.com/acme/shop/-/issues/5")
        );
        assert_eq!(page1[1].key, "7");
        assert_eq!(page2[0].key, "9");
        assert_eq!(page2[0].state, "closed");

        let (comments, changes) = gitlab_notes(&ok_body(
            GITLAB_PAGED,
            "/api/v4/projects/42/issues/5/notes",
            0,
        ))
        .expect("notes");
        assert_eq!(comments.len(), 1);
        assert_eq!(comments[0].id, "2290100502");
        assert_eq!(
            comments[0].author.as_ref().and_then(|p| p.login.as_deref()),
            Some("jnovak")
        );
        assert_eq!(changes.len(), 1, "the system note is history");
        assert_eq!(changes[0].field, "note");
        assert_eq!(changes[0].to.as_deref(), Some("changed the description"));
        assert_eq!(
            changes[0].actor.as_ref().and_then(|p| p.login.as_deref()),
            Some("alovelace")
        );

        let (c7, h7) = gitlab_notes(&ok_body(
            GITLAB_PAGED,
            "/api/v4/projects/42/issues/7/notes",
            0,
        ))
        .expect("notes");
        assert!(c7.is_empty());
        assert_eq!(h7[0].to.as_deref(), Some("assigned to @jnovak"));

        let (c9, h9) = gitlab_notes(&ok_body(
            GITLAB_PAGED,
            "/api/v4/projects/42/issues/9/notes",
            0,
        ))
        .expect("notes");
        assert_eq!(c9.len(), 1);
        assert_eq!(c9[0].id, "2290100902");
        assert_eq!(
            h9[0].to.as_deref(),
            Some("mentioned in commit 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432")
        );

        let s9 = gitlab_state_events(&ok_body(
            GITLAB_PAGED,
            "/api/v4/projects/42/issues/9/resource_state_events",
            0,
        ))
        .expect("state events");
        assert_eq!(s9.len(), 1);
        assert_eq!(
            (s9[0].field.as_str(), s9[0].to.as_deref()),
            ("state", Some("closed"))
        );
        assert_eq!(s9[0].at.as_deref(), Some("2026-01-18T09:21:07.331Z"));
        assert_eq!(
            s9[0].actor.as_ref().and_then(|p| p.login.as_deref()),
            Some("ghopper")
        );
        let s5 = gitlab_state_events(&ok_body(
            GITLAB_PAGED,
            "/api/v4/projects/42/issues/5/resource_state_events",
            0,
        ))
        .expect("empty list");
        assert!(s5.is_empty());
    }

    #[test]
    fn jira_pages_links_comments_and_changelog() {
        let path = "/rest/api/2/search";
        let p1 = jira_search(&ok_body(JIRA_PAGED, path, 0)).expect("page 1");
        let p2 = jira_search(&ok_body(JIRA_PAGED, path, 1)).expect("page 2");
        assert_eq!((p1.start_at, p1.max_results, p1.total), (0, 2, Some(3)));
        assert_eq!((p2.start_at, p2.max_results, p2.total), (2, 2, Some(3)));
        assert_eq!(p1.next_page_token, None);
        let keys: Vec<&str> = p1
            .issues
            .iter()
            .chain(&p2.issues)
            .map(|i| i.key.as_str())
            .collect();
        assert_eq!(keys, vec!["SHOP-7", "SHOP-8", "SHOP-12"]);

        let seven = &p1.issues[0];
        assert_eq!(seven.project, "SHOP");
        assert_eq!(seven.number, Some(7));
        assert_eq!(
            seven.title,
            "Newsletter signup rejects plus-addressed emails"
        );
        assert_eq!(seven.state, "Done");
        assert_eq!(seven.issue_type.as_deref(), Some("Bug"));
        assert_eq!(seven.priority.as_deref(), Some("Medium"));
        assert_eq!(seven.labels, vec!["frontend", "newsletter"]);
        assert!(
            seven
                .body
                .starts_with("Signing up with an address like {{jan+news@example.com}}")
        );
        assert_eq!(
            seven.assignees,
            vec![TrackerPerson {
                login: Some("712020:9b0c3d4e-1f2a-4b5c-8d6e-7f8091a2b3c4".into()),
                name: Some("Jan Novák".into()),
                email: Some("jan.novak@example.com".into()),
            }]
        );
        assert_eq!(
            seven.reporter.as_ref().and_then(|p| p.email.as_deref()),
            Some("ada@example.com")
        );
        assert_eq!(
            seven.updated.as_deref(),
            Some("2026-01-08T15:03:10.566+0100")
        );
        assert_eq!(seven.url.as_deref(), Some("{BASE}/browse/SHOP-7"));
        assert_eq!(seven.comments.len(), 1);
        assert_eq!(seven.comments[0].id, "10131");
        let history: Vec<(&str, Option<&str>, Option<&str>)> = seven
            .history
            .iter()
            .map(|c| (c.field.as_str(), c.from.as_deref(), c.to.as_deref()))
            .collect();
        assert_eq!(
            history,
            vec![
                ("assignee", None, Some("Jan Novák")),
                ("status", Some("To Do"), Some("In Progress")),
                ("resolution", None, Some("Done")),
                ("status", Some("In Progress"), Some("Done")),
            ]
        );
        assert_eq!(
            seven.history[0]
                .actor
                .as_ref()
                .and_then(|p| p.name.as_deref()),
            Some("Ada Lovelace")
        );
        assert!(seven.links.is_empty());

        let eight = &p1.issues[1];
        assert_eq!(
            eight.links,
            vec![IssueLink {
                relation: "blocks".into(),
                target: "SHOP-12".into()
            }]
        );
        assert_eq!(eight.history[1].field, "link");
        assert_eq!(
            eight.history[1].to.as_deref(),
            Some("This issue blocks SHOP-12")
        );

        let twelve = &p2.issues[0];
        assert_eq!(
            twelve.links,
            vec![IssueLink {
                relation: "blocked_by".into(),
                target: "SHOP-8".into()
            }]
        );
        let ids: Vec<&str> = twelve.comments.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, vec!["10190", "10203"]);
        assert_eq!(
            twelve.comments[0].url.as_deref(),
            Some("{BASE}/browse/SHOP-12?focusedCommentId=10190")
        );
        assert_eq!(
            logins(&twelve.assignees),
            vec!["712020:51a3f0b2-6c4d-4e8f-9a1b-2c3d4e5f6a7b"]
        );
    }

    #[test]
    fn jira_new_search_envelope_and_documents() {
        let body = br#"{"issues": [{"key": "OPS-3", "fields": {"summary": "Disk full",
            "description": {"type": "doc", "version": 1, "content": [
                {"type": "paragraph", "content": [{"type": "text", "text": "Root is at 100%."}]},
                {"type": "paragraph", "content": [{"type": "mention", "attrs": {"text": "@Jan"}},
                    {"type": "text", "text": " please look"}]}]},
            "issuelinks": [{"type": {"name": "Duplicate", "inward": "is duplicated by", "outward": "duplicates"},
                "inwardIssue": {"key": "OPS-1"}}]}}],
            "nextPageToken": "CAEaAggD", "isLast": false}"#;
        let page = jira_search(body).expect("page");
        assert_eq!(page.next_page_token.as_deref(), Some("CAEaAggD"));
        assert_eq!(page.is_last, Some(false));
        assert_eq!((page.start_at, page.max_results, page.total), (0, 1, None));
        let issue = &page.issues[0];
        assert_eq!(issue.project, "OPS");
        assert_eq!(issue.body, "Root is at 100%.\n@Jan please look");
        assert_eq!(issue.links[0].relation, "duplicated_by");
        assert!(matches!(jira_search(b"[]"), Err(TrackerError::Shape(_))));
    }

    #[test]
    fn issue_keys_join_commit_references() {
        let twelve = github_12();
        assert_eq!(issue_key(&twelve).as_str(), "github:acme_shop_12");
        let git = IssueContext {
            tracker: "github".into(),
            project: "acme/shop".into(),
        };
        let fixes = issue_refs("Fixes #12");
        assert_eq!(keys::issue_ref(&git, &fixes[0].key), issue_key(&twelve));
        let jira = jira_issues();
        assert_eq!(issue_key(&jira[2]).as_str(), "jira:shop-12");
        assert_eq!(
            keys::issue_ref(&git, &issue_refs("closes SHOP-12")[0].key),
            issue_key(&jira[2])
        );
        let path = "/api/v4/projects/42/issues";
        let gl = gitlab_issues(&ok_body(GITLAB_PAGED, path, 0), "42").expect("issues");
        assert_eq!(issue_key(&gl[0]).as_str(), "gitlab:acme_shop_5");
        assert_eq!(locator_key(&gl[0]), "acme/shop#5");
        assert_eq!(
            issue_urn("acme.jira", &jira[2]),
            "tracker:acme.jira:SHOP-12"
        );
    }

    #[test]
    fn github_issue_source() {
        let scope = Scope::client("acme");
        let chunking = ChunkingConfig::default();
        let issue = github_12();
        let src = issue_source(&issue, &ctx(&scope, &chunking, "acme.shop"));
        assert_eq!(src.source_urn, "tracker:acme.shop:12");
        assert_eq!(src.kind, "issue");
        assert_eq!(
            src.title.as_deref(),
            Some("#12: Checkout fails with 500 when the basket contains a gift card")
        );
        assert_eq!(src.observed_at.as_deref(), Some("2026-01-22T10:12:40Z"));
        assert_eq!(
            src.chunks[0].locator,
            Locator::Issue {
                tracker: "github".into(),
                issue_key: "acme/shop#12".into(),
                comment_id: None
            }
        );
        let head = &src.chunks[0].text;
        assert!(head.starts_with("#12: Checkout fails"), "{head}");
        for line in [
            "State: closed",
            "Labels: bug, checkout",
            "Reporter: ghopper",
            "Assignees: jnovak",
        ] {
            assert!(head.contains(line), "{line} in {head}");
        }
        assert!(
            head.contains("\n\nPlacing an order with a gift card"),
            "the description follows the header: {head}"
        );

        let comments = comment_ids(&src);
        let ids: Vec<&str> = comments.iter().map(|(_, id)| id.as_str()).collect();
        assert_eq!(ids, vec!["3791201201", "3791201202", "3791201203"]);
        let second = comments[1].0;
        let c = &src.chunks[second];
        assert_eq!(c.kind.as_deref(), Some("issue-comment"));
        assert!(
            c.text
                .starts_with("alovelace, 2026-01-20T16:44:12Z:\nFixed in 4f9c2e1"),
            "{}",
            c.text
        );
        assert!(c.refs.contains(&key("github:acme_shop_12")));
        assert!(c.refs.contains(&key("user:alovelace")));

        let history = src.chunks.last().expect("chunks");
        assert_eq!(history.kind.as_deref(), Some("issue-history"));
        assert!(matches!(
            &history.locator,
            Locator::Issue {
                comment_id: None,
                ..
            }
        ));
        assert!(
            history
                .text
                .contains("2026-01-12T08:45:12Z ghopper: added assignee jnovak"),
            "{}",
            history.text
        );
        assert!(history.text.contains(
            "alovelace: state: open → closed (commit 4f9c2e1b7a3d05e6f8091a2b3c4d5e6f708192a3)"
        ));
        assert!(
            history
                .refs
                .contains(&key("commit:4f9c2e1b7a3d05e6f8091a2b3c4d5e6f708192a3")),
            "the closing commit joins: {:?}",
            history.refs
        );
        let h = src.chunks.len() - 1;

        let issue_node = &src.nodes[0];
        assert_eq!(issue_node.key.as_str(), "github:acme_shop_12");
        assert_eq!(issue_node.node_type, "issue");
        assert_eq!(issue_node.props["state"], "closed");
        assert_eq!(issue_node.props["number"], 12);
        assert_eq!(
            issue_node.props["labels"],
            serde_json::json!(["bug", "checkout"])
        );
        assert!(!issue_node.props.contains_key("pullRequest"));

        let people: Vec<(&str, &EvidenceSpec)> = src
            .nodes
            .iter()
            .filter(|n| n.node_type == "person")
            .map(|n| (n.key.as_str(), &n.evidence))
            .collect();
        let (c1, c2, c3) = (comments[0].0, comments[1].0, comments[2].0);
        assert_eq!(
            people,
            vec![
                ("user:ghopper", &EvidenceSpec::Chunks(vec![0, c3, h])),
                ("user:jnovak", &EvidenceSpec::Chunks(vec![0, c1])),
                ("user:alovelace", &EvidenceSpec::Chunks(vec![c2, h])),
            ]
        );
        assert_eq!(src.nodes[1].props["githubLogin"], "ghopper");

        let edges = edges_of(&src);
        for e in [
            ("github:acme_shop_12", "reported_by", "user:ghopper"),
            ("github:acme_shop_12", "assigned_to", "user:jnovak"),
            (
                "github:acme_shop_12",
                "labeled",
                "label:github_acme_shop_bug",
            ),
            (
                "github:acme_shop_12",
                "labeled",
                "label:github_acme_shop_checkout",
            ),
            ("github:acme_shop_12", "commented_by", "user:alovelace"),
        ] {
            assert!(edges.contains(&e), "{e:?} in {edges:?}");
        }
        assert!(
            !edges.contains(&("github:acme_shop_12", "assigned_to", "user:ghopper")),
            "history is not assignment"
        );
        let commented: Vec<&EvidenceSpec> = src
            .edges
            .iter()
            .filter(|e| e.edge_type == "commented_by")
            .map(|e| &e.evidence)
            .collect();
        assert_eq!(
            commented,
            vec![
                &EvidenceSpec::Chunks(vec![c1]),
                &EvidenceSpec::Chunks(vec![c2]),
                &EvidenceSpec::Chunks(vec![c3]),
            ]
        );
        assert!(
            src.aliases.is_empty(),
            "GitHub shows logins only: nothing to alias"
        );
    }

    #[test]
    fn pull_request_text_refers_to_its_issue() {
        let scope = Scope::client("acme");
        let chunking = ChunkingConfig::default();
        let path = "/repos/acme/shop/issues";
        let pr = github_issues(&ok_body(GITHUB_PAGED, path, 1), "acme/shop")
            .expect("page 2")
            .remove(0);
        let src = issue_source(&pr, &ctx(&scope, &chunking, "acme.shop"));
        assert!(
            src.chunks[0].refs.contains(&key("github:acme_shop_7")),
            "Refs #7"
        );
        assert_eq!(src.nodes[0].props["pullRequest"], true);
        assert!(
            src.chunks[0]
                .text
                .contains("GitHub pull request in acme/shop")
        );
    }

    #[test]
    fn jira_issue_source_links_and_aliases() {
        let scope = Scope::client("acme");
        let chunking = ChunkingConfig::default();
        let jira = jira_issues();
        let twelve = issue_source(&jira[2], &ctx(&scope, &chunking, "acme.jira"));
        assert_eq!(twelve.nodes[0].key.as_str(), "jira:shop-12");
        assert_eq!(
            twelve.title.as_deref(),
            Some("SHOP-12: Support 3-D Secure 2 for card payments")
        );
        assert_eq!(
            twelve.observed_at.as_deref(),
            Some("2026-01-19T17:45:31.662+01:00"),
            "RFC 3339 offset"
        );
        assert_eq!(
            twelve.chunks[0].locator,
            Locator::Issue {
                tracker: "jira".into(),
                issue_key: "SHOP-12".into(),
                comment_id: None
            }
        );
        assert!(twelve.chunks[0].text.contains("Links: blocked by SHOP-8"));
        let edges = edges_of(&twelve);
        for e in [
            ("jira:shop-8", "blocks", "jira:shop-12"),
            ("jira:shop-12", "reported_by", "user:grace_example_com"),
            ("jira:shop-12", "assigned_to", "user:ada_example_com"),
            ("jira:shop-12", "commented_by", "user:ada_example_com"),
            ("jira:shop-12", "commented_by", "user:jan_novak_example_com"),
            ("jira:shop-12", "labeled", "label:jira_shop_checkout"),
        ] {
            assert!(edges.contains(&e), "{e:?} in {edges:?}");
        }
        let blocks = twelve
            .edges
            .iter()
            .find(|e| e.edge_type == "blocks")
            .expect("blocks edge");
        assert_eq!(blocks.props["relation"], "blocked_by");

        // SHOP-8 states the same link from its side: one edge, evidenced by both sources.
        let eight = issue_source(&jira[1], &ctx(&scope, &chunking, "acme.jira"));
        assert!(edges_of(&eight).contains(&("jira:shop-8", "blocks", "jira:shop-12")));

        let comments = comment_ids(&twelve);
        let first = &twelve.chunks[comments[0].0];
        assert!(
            first
                .text
                .starts_with("Ada Lovelace, 2026-01-15T13:02:18.004+0100:\n"),
            "{}",
            first.text
        );
        assert!(first.refs.contains(&key("jira:shop-8")), "{:?}", first.refs);

        let ada = key("user:ada_example_com");
        let ada_login = keys::person(Some("712020:51a3f0b2-6c4d-4e8f-9a1b-2c3d4e5f6a7b"), None)
            .expect("login key");
        assert!(
            twelve
                .aliases
                .contains(&(key("user:ada_lovelace"), ada.clone()))
        );
        assert!(twelve.aliases.contains(&(ada_login, ada)));
        assert!(
            twelve
                .aliases
                .contains(&(key("user:jan_novák"), key("user:jan_novak_example_com")))
        );
        let ada_node = twelve
            .nodes
            .iter()
            .find(|n| n.key.as_str() == "user:ada_example_com")
            .expect("Ada");
        assert_eq!(ada_node.props["email"], "ada@example.com");
        assert_eq!(ada_node.label, "Ada Lovelace");
        assert!(
            twelve.chunks.iter().all(|c| !c.text.contains("712020:")),
            "account ids are not text"
        );

        let history = twelve.chunks.last().expect("chunks");
        assert_eq!(history.kind.as_deref(), Some("issue-history"));
        assert!(
            history
                .text
                .contains("Grace Hopper: link: This issue is blocked by SHOP-8"),
            "{}",
            history.text
        );
        assert!(
            history.text.contains("added assignee Ada Lovelace"),
            "{}",
            history.text
        );
    }

    #[test]
    fn gitlab_issue_source_history_and_aliases() {
        let scope = Scope::client("acme");
        let chunking = ChunkingConfig::default();
        let path = "/api/v4/projects/42/issues";
        let mut nine = gitlab_issues(&ok_body(GITLAB_PAGED, path, 1), "42")
            .expect("page 2")
            .remove(0);
        let (comments, mut history) = gitlab_notes(&ok_body(
            GITLAB_PAGED,
            "/api/v4/projects/42/issues/9/notes",
            0,
        ))
        .expect("notes");
        history.extend(
            gitlab_state_events(&ok_body(
                GITLAB_PAGED,
                "/api/v4/projects/42/issues/9/resource_state_events",
                0,
            ))
            .expect("state events"),
        );
        nine.comments = comments;
        nine.history = history;
        let src = issue_source(&nine, &ctx(&scope, &chunking, "acme.gitlab"));
        assert_eq!(src.nodes[0].key.as_str(), "gitlab:acme_shop_9");
        assert_eq!(
            src.title.as_deref(),
            Some("#9: Payment webhook retries flood the logs")
        );
        assert_eq!(
            comment_ids(&src)
                .iter()
                .map(|(_, id)| id.as_str())
                .collect::<Vec<_>>(),
            vec!["2290100902"]
        );
        let h = src.chunks.last().expect("chunks");
        assert_eq!(h.kind.as_deref(), Some("issue-history"));
        assert_eq!(
            h.text,
            "2026-01-17T17:02:19.880Z Jan Novák (@jnovak): mentioned in commit 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432\n\
             2026-01-18T09:21:07.331Z Grace Hopper (@ghopper): state: closed"
        );
        assert!(
            h.refs
                .contains(&key("commit:9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"))
        );
        assert!(src.chunks[0].text.contains("Reporter: Jan Novák (@jnovak)"));
        // No e-mail on GitLab: the login is the person, the display name an alias of it.
        assert!(
            src.aliases
                .contains(&(key("user:jan_novák"), key("user:jnovak")))
        );
        assert!(
            src.aliases
                .contains(&(key("user:grace_hopper"), key("user:ghopper")))
        );
        let edges = edges_of(&src);
        assert!(edges.contains(&("gitlab:acme_shop_9", "reported_by", "user:jnovak")));
        assert!(edges.contains(&("gitlab:acme_shop_9", "commented_by", "user:ghopper")));
        assert!(
            src.nodes
                .iter()
                .any(|n| n.props.get("gitlabLogin") == Some(&Value::from("jnovak")))
        );
    }

    #[test]
    fn fingerprints_follow_content() {
        let scope = Scope::client("acme");
        let chunking = ChunkingConfig::default();
        let c = ctx(&scope, &chunking, "acme.shop");
        let a = github_12();
        let fa = issue_source(&a, &c).fingerprint;
        assert_eq!(fa, issue_source(&a, &c).fingerprint);
        let mut b = a.clone();
        b.comments[2].body.push_str(" Closing.");
        assert_ne!(fa, issue_source(&b, &c).fingerprint);
        let mut d = a.clone();
        d.state = "open".into();
        assert_ne!(fa, issue_source(&d, &c).fingerprint);
    }

    #[test]
    fn secrets_are_redacted() {
        let scope = Scope::client("acme");
        let chunking = ChunkingConfig::default();
        let mut issue = github_12();
        issue.comments[0].body =
            "Use this token:\nghp_1234567890abcdefghijklmnopqrstuvwxyzAB\nthanks".into();
        let src = issue_source(&issue, &ctx(&scope, &chunking, "acme.shop"));
        assert!(
            src.chunks
                .iter()
                .all(|c| evident_core::secrets::find_secrets(&c.text).is_empty()),
            "no chunk keeps a credential"
        );
        assert!(src.chunks.iter().any(|c| c.text.contains("[redacted")));
    }

    #[test]
    fn small_helpers() {
        assert_eq!(relation_name("is blocked by"), "blocked_by");
        assert_eq!(relation_name("Relates To"), "relates_to");
        assert_eq!(relation_name("  "), "relates_to");
        assert_eq!(link_edge("blocked_by"), ("blocks".to_string(), true));
        assert_eq!(link_edge("relates_to"), ("relates_to".to_string(), false));
        assert_eq!(
            link_edge("verknüpft_mit"),
            ("relates_to".to_string(), false)
        );
        assert_eq!(
            rfc3339("2026-01-08T15:03:10.566+0100"),
            "2026-01-08T15:03:10.566+01:00"
        );
        assert_eq!(rfc3339("2026-01-08T15:03:10Z"), "2026-01-08T15:03:10Z");
        assert_eq!(rfc3339("2026-01-08"), "2026-01-08");
        let hashes: Vec<&str> =
            commit_hashes("in 4f9c2e1b7a3d05e6f8091a2b3c4d5e6f708192a3, not 4f9c2e1").collect();
        assert_eq!(hashes, vec!["4f9c2e1b7a3d05e6f8091a2b3c4d5e6f708192a3"]);
        assert_eq!(preview("a\n\n b\tc", 80), "a b c");
        assert_eq!(preview("abcdef", 3), "abc…");
        let p = TrackerPerson {
            login: Some("712020:abc".into()),
            name: Some("Jan".into()),
            email: None,
        };
        assert_eq!(p.display(), "Jan");
        assert_eq!(person_key(&p).expect("key").as_str(), "user:712020abc");
    }

    const FIELDS: &[&str] = &[
        "number",
        "iid",
        "key",
        "id",
        "title",
        "summary",
        "body",
        "description",
        "state",
        "labels",
        "name",
        "login",
        "username",
        "user",
        "author",
        "actor",
        "assignee",
        "assignees",
        "pull_request",
        "references",
        "full",
        "web_url",
        "fields",
        "status",
        "comment",
        "comments",
        "changelog",
        "histories",
        "items",
        "issuelinks",
        "type",
        "outward",
        "inward",
        "outwardIssue",
        "inwardIssue",
        "issues",
        "startAt",
        "total",
        "isLast",
        "nextPageToken",
        "event",
        "label",
        "rename",
        "from",
        "to",
        "system",
        "created_at",
        "updated_at",
        "created",
        "updated",
        "emailAddress",
        "displayName",
        "accountId",
        "content",
        "text",
        "attrs",
        "fromString",
        "toString",
        "commit_id",
        "source_commit",
        "self",
        "priority",
        "issuetype",
        "milestone",
        "message",
        "errorMessages",
    ];

    /// JSON built from the field names the parsers read, so generated values reach deep.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "\\PC{0,24}".prop_map(Value::from),
            "[A-Z]{1,4}-[0-9]{1,3}|#[0-9]{1,3}|[0-9a-f]{40}|[a-z]+ [a-z]+|\\{BASE\\}/rest/api/2/x"
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 96, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec(
                    (proptest::sample::select(FIELDS.to_vec()), inner),
                    0..10
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    /// Every parser on `body`; every parsed issue, with whatever comments and history the
    /// same body yields, made into a source whose evidence must stay in range.
    fn exercise(body: &[u8]) {
        let scope = Scope::client("c");
        let chunking = ChunkingConfig {
            max_tokens: 12,
            min_tokens: 3,
        };
        let c = ctx(&scope, &chunking, "s");
        let mut issues = Vec::new();
        issues.extend(github_issues(body, "acme/shop").unwrap_or_default());
        issues.extend(gitlab_issues(body, "42").unwrap_or_default());
        issues.extend(jira_search(body).map(|p| p.issues).unwrap_or_default());
        let comments = github_comments(body).unwrap_or_default();
        let mut history = github_events(body).unwrap_or_default();
        history.extend(gitlab_state_events(body).unwrap_or_default());
        let (more_comments, more_history) = gitlab_notes(body).unwrap_or_default();
        for mut issue in issues {
            issue.comments.extend(comments.iter().cloned());
            issue.comments.extend(more_comments.iter().cloned());
            issue.history.extend(history.iter().cloned());
            issue.history.extend(more_history.iter().cloned());
            let src = issue_source(&issue, &c);
            assert!(!src.chunks.is_empty());
            let n = src.chunks.len();
            let ok = |e: &EvidenceSpec| match e {
                EvidenceSpec::Chunks(ix) => !ix.is_empty() && ix.iter().all(|i| *i < n),
                _ => true,
            };
            assert!(src.nodes.iter().all(|x| ok(&x.evidence)));
            assert!(
                src.edges
                    .iter()
                    .all(|x| ok(&x.evidence) && is_edge_type(&x.edge_type))
            );
            assert!(
                src.chunks
                    .iter()
                    .all(|c| !c.text.trim().is_empty() && !c.text.contains('\0'))
            );
            assert!(src.title.iter().all(|t| !t.chars().any(char::is_control)));
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in proptest::collection::vec(any::<u8>(), 0..600)) {
            exercise(&s);
        }

        #[test]
        fn never_panics_on_json(v in json()) {
            exercise(&serde_json::to_vec(&v).expect("serialises"));
            exercise(&serde_json::to_vec(&Value::Array(vec![v.clone()])).expect("serialises"));
            exercise(&serde_json::to_vec(&serde_json::json!({"issues": [v]})).expect("serialises"));
        }

        #[test]
        fn never_panics_on_damaged_fixtures(
            which in 0usize..4,
            pos in any::<proptest::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<proptest::sample::Index>()
        ) {
            let body = match which {
                0 => ok_body(GITHUB_PAGED, "/repos/acme/shop/issues", 1),
                1 => ok_body(GITHUB_INCREMENTAL, "/repos/acme/shop/issues/12/events", 0),
                2 => ok_body(GITLAB_PAGED, "/api/v4/projects/42/issues/9/notes", 0),
                _ => ok_body(JIRA_PAGED, "/rest/api/2/search", 1),
            };
            let mut damaged = body.clone();
            let i = pos.index(damaged.len());
            damaged[i] = byte;
            exercise(&damaged);
            exercise(&body[..cut.index(body.len())]);
        }
    }
}
