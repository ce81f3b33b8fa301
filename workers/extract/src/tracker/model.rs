//! The model: trackers, people, issues, comments, changes, links, and the parse error.

use super::*;

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
    pub(super) fn display_name(self) -> &'static str {
        match self {
            TrackerKind::Github => "GitHub",
            TrackerKind::Gitlab => "GitLab",
            TrackerKind::Jira => "Jira",
        }
    }

    /// Whether issues are numbered per project (`#12`) rather than keyed (`SHOP-12`).
    pub(super) fn numbered(self) -> bool {
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
    pub(super) fn fill(&mut self, other: &TrackerPerson) {
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
pub(super) fn is_handle(login: &str) -> bool {
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

/// A milestone (GitHub, GitLab) or fix version (Jira) an issue is planned for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Milestone {
    /// Exactly as the tracker writes it (trailing spaces included): the milestone's identity
    /// within its project.
    pub title: String,
    /// GitHub's milestone number, GitLab's milestone iid, Jira's version id.
    pub id: Option<String>,
    /// `open` / `closed` (GitHub, GitLab: `active` / `closed`), `released` / `unreleased` (Jira).
    pub state: Option<String>,
    /// Due date (GitHub `due_on`, GitLab `due_date`, Jira `releaseDate`).
    pub due: Option<String>,
    pub url: Option<String>,
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
    /// GitHub lists pull requests among issues; the poller skips them unless asked not to.
    pub is_pull_request: bool,
    /// The milestone (GitHub, GitLab) or fix versions (Jira).
    #[serde(default)]
    pub milestones: Vec<Milestone>,
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
