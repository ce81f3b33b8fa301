//! Issue trackers: GitHub, GitLab and Jira, polled over REST for issues updated since the
//! source's cursor (`updated`), page by page in update order, each issue with its comments
//! and its history (state, assignee, label changes), queued as a prepared issue.
//!
//! The cursor moves after each issue is queued (or skipped on purpose), so a poll cut short
//! by a rate limit or a server error resumes where it stopped; the trackers' "updated since"
//! is inclusive, so the boundary issue is read again and recognised as unchanged (the
//! fingerprint of what was queued is kept per issue, and its comment and history lists are
//! asked for with their ETags, so an unchanged issue costs 304s only). The cursor belongs to
//! a plan — the settings that decide what is read ([`state`]) —: changing them (switching
//! `includePullRequests` on) reads from the start again. Rate limits ([`limits`]) stop the
//! poll before its next request with the wait the source asked for, which the loop honours
//! (`retryAt` in the source's status); 5xx and timeouts are retried at the next interval. A
//! tracker answering with something other than JSON (a proxy's sign-in page) is an error
//! naming what came back.

pub mod http;
pub mod limits;
pub mod state;

use async_trait::async_trait;
use evident_core::chunking::ChunkingConfig;
use evident_extract::tracker::{
    Issue, IssueChange, IssueComment, TrackerContext, TrackerError, github_comments, github_events,
    github_issues, gitlab_issues, gitlab_notes, gitlab_state_events, issue_source, issue_urn,
    jira_search,
};
use evident_store::indexers::IndexerSource;
use serde::{Deserialize, Serialize};

use crate::poll::{PollContext, PollError, PollReport, SourcePoller};
use crate::report::TrackerReport;
use crate::sources::config_of;
pub use evident_sources::kinds::tracker::{
    GithubConfig, GitlabConfig, JiraConfig, JiraSearchApi, check_base_url,
};
use http::{Api, Credentials, TokenStyle, Validators};
use state::{IssueState, SourceState};

/// A tracker's answer was not what its API returns.
fn shape(what: &str, e: TrackerError) -> PollError {
    PollError::malformed(what, e)
}

/// Where a poll starts: the newest `updated` seen.
const CURSOR: &str = "updated";
const EPOCH: &str = "1970-01-01T00:00:00Z";
/// Bump when what a plan reads changes for the same settings (v2: pull requests told apart
/// in the old API shape, which skipped every issue of some repositories).
const PLAN_VERSION: &str = "v2";
/// Items per page of an issue's comment and history lists.
const LIST_PAGE: usize = 100;
const JIRA_FIELDS: &str = "summary,description,status,assignee,reporter,labels,comment,issuelinks,created,updated,issuetype,priority,fixVersions";

/// Polls one kind of tracker (`github`, `gitlab`, `jira`).
pub struct TrackerPoller {
    pub ctx: PollContext,
    pub chunking: ChunkingConfig,
    pub kind: &'static str,
}

#[derive(Default)]
struct Tally {
    /// Issues queued.
    issues: u64,
    /// Issues read again and found as they were queued last time.
    unchanged: u64,
    /// Answers 304 to a conditional request (lists that cost nothing).
    not_modified: u64,
    pull_requests_skipped: u64,
    pages: u64,
    /// The budget the poll's last answer left spent: the next poll waits.
    pause: Option<limits::Wait>,
}

/// A GitLab note: a comment, or a system note as history.
#[derive(Serialize, Deserialize)]
enum Note {
    Comment(IssueComment),
    Change(IssueChange),
}

fn gitlab_note_items(body: &[u8]) -> Result<Vec<Note>, TrackerError> {
    let (comments, changes) = gitlab_notes(body)?;
    Ok(comments
        .into_iter()
        .map(Note::Comment)
        .chain(changes.into_iter().map(Note::Change))
        .collect())
}

impl TrackerPoller {
    pub fn all(ctx: &PollContext, chunking: ChunkingConfig) -> Vec<TrackerPoller> {
        ["github", "gitlab", "jira"]
            .into_iter()
            .map(|kind| TrackerPoller {
                ctx: ctx.clone(),
                chunking,
                kind,
            })
            .collect()
    }

    /// Queues `issue` unless it is what was queued last time, keeps its state, and moves the
    /// cursor past it.
    async fn finish(
        &self,
        st: &mut SourceState<'_>,
        issue: &Issue,
        before: &IssueState,
        mut state: IssueState,
        tally: &mut Tally,
    ) -> Result<(), PollError> {
        let source = st.source;
        let prepared = issue_source(
            issue,
            &TrackerContext {
                scope: &source.scope,
                source_id: &source.id,
                chunking: &self.chunking,
            },
        );
        if state.fingerprint.as_deref() == Some(prepared.fingerprint.as_str()) {
            tally.unchanged += 1;
        } else {
            state.fingerprint = Some(prepared.fingerprint.clone());
            self.ctx
                .tasks
                .enqueue_prepared(
                    prepared,
                    &issue_urn(&source.id, issue),
                    self.ctx.priority,
                    self.ctx.clock.now_ms(),
                )
                .await?;
            tally.issues += 1;
        }
        if state != *before {
            st.put_issue(&issue.key, &state).await?;
        }
        st.advance(issue.updated.as_deref()).await
    }

    async fn poll_github(&self, source: &IndexerSource) -> Result<Tally, PollError> {
        let cfg: GithubConfig = config_of(source).map_err(PollError::Config)?;
        let api = Api::of(
            &self.ctx,
            "github",
            &cfg.base_url,
            &cfg.credentials(),
            TokenStyle::Bearer,
            &[
                ("accept", "application/vnd.github+json"),
                ("x-github-api-version", "2022-11-28"),
            ],
        )?;
        let plan = format!(
            "github/{PLAN_VERSION}/{}/pullRequests={}",
            cfg.repo, cfg.include_pull_requests
        );
        let mut st = SourceState::open(&self.ctx, source, &plan).await?;
        let list = format!("/repos/{}/issues", cfg.repo);
        let query = [
            ("state", "all".to_string()),
            ("per_page", cfg.per_page.to_string()),
            ("sort", "updated".to_string()),
            ("direction", "asc".to_string()),
            ("since", st.since().unwrap_or(EPOCH).to_string()),
        ];
        let forge = Forge::Github {
            repo: &cfg.repo,
            include_pull_requests: cfg.include_pull_requests,
        };
        self.walk_pages(forge, &api, &mut st, &list, &query).await
    }

    async fn poll_gitlab(&self, source: &IndexerSource) -> Result<Tally, PollError> {
        let cfg: GitlabConfig = config_of(source).map_err(PollError::Config)?;
        let api = Api::of(
            &self.ctx,
            "gitlab",
            &cfg.base_url,
            &Credentials {
                token_env: cfg.token_env.clone(),
                email_env: None,
            },
            TokenStyle::GitlabPrivateToken,
            &[],
        )?;
        let plan = format!("gitlab/{PLAN_VERSION}/{}", cfg.project);
        let mut st = SourceState::open(&self.ctx, source, &plan).await?;
        let project = cfg.project.replace('/', "%2F");
        let list = format!("/api/v4/projects/{project}/issues");
        let query = [
            ("scope", "all".to_string()),
            ("order_by", "updated_at".to_string()),
            ("sort", "asc".to_string()),
            ("updated_after", st.since().unwrap_or(EPOCH).to_string()),
            ("per_page", cfg.per_page.to_string()),
            ("page", "1".to_string()),
        ];
        let forge = Forge::Gitlab {
            project: &cfg.project,
        };
        self.walk_pages(forge, &api, &mut st, &list, &query).await
    }

    /// Walks an issue list of `forge` page by page along its `next` links, from the first
    /// page (not fetched again while it is unchanged), each issue read with its lists and
    /// finished.
    async fn walk_pages(
        &self,
        forge: Forge<'_>,
        api: &Api,
        st: &mut SourceState<'_>,
        list: &str,
        query: &[(&str, String)],
    ) -> Result<Tally, PollError> {
        let mut tally = Tally::default();
        let Some(mut reply) = st.first_page(api, list, query).await? else {
            tally.not_modified += 1;
            tally.pause = api.pause();
            return Ok(tally);
        };
        let whole = reply
            .next
            .is_none()
            .then(|| Validators::of(&reply))
            .flatten();
        loop {
            tally.pages += 1;
            for mut issue in forge.issues(&reply.body)? {
                if forge.skips(&issue) {
                    tally.pull_requests_skipped += 1;
                    st.advance(issue.updated.as_deref()).await?;
                    continue;
                }
                let before = st.issue(&issue.key).await?;
                let mut state = before.clone();
                let base = format!("{list}/{}", issue.key);
                forge
                    .read_lists(api, &base, &mut issue, &mut state, &mut tally)
                    .await?;
                self.finish(st, &issue, &before, state, &mut tally).await?;
            }
            match reply.next.take() {
                Some(next) => reply = api.get(&next, &[]).await?,
                None => break,
            }
        }
        st.keep_first_page(list, query, whole).await?;
        tally.pause = api.pause();
        Ok(tally)
    }

    async fn poll_jira(&self, source: &IndexerSource) -> Result<Tally, PollError> {
        let cfg: JiraConfig = config_of(source).map_err(PollError::Config)?;
        let api = Api::of(
            &self.ctx,
            "jira",
            &cfg.base_url,
            &cfg.credentials(),
            TokenStyle::Bearer,
            &[],
        )?;
        let plan = format!("jira/{PLAN_VERSION}/{}/{JIRA_FIELDS}", cfg.project);
        let mut st = SourceState::open(&self.ctx, source, &plan).await?;
        let jql = format!(
            "project = {} AND updated >= \"{}\" ORDER BY updated ASC",
            cfg.project,
            jql_minute(st.since().unwrap_or(EPOCH))
        );
        let mut tally = Tally::default();
        let mut start_at: u64 = 0;
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![("jql", jql.clone())];
            let path = match cfg.search_api {
                JiraSearchApi::Search => {
                    query.push(("startAt", start_at.to_string()));
                    "/rest/api/2/search"
                }
                JiraSearchApi::Jql => {
                    if let Some(t) = &token {
                        query.push(("nextPageToken", t.clone()));
                    }
                    "/rest/api/2/search/jql"
                }
            };
            query.push(("maxResults", cfg.per_page.to_string()));
            query.push(("fields", JIRA_FIELDS.to_string()));
            query.push(("expand", "changelog".to_string()));
            let reply = match api.get(path, &query).await {
                Err(e @ PollError::Status { status: 410, .. }) => {
                    return Err(PollError::Config(format!(
                        "{e}: this Jira no longer offers /rest/api/2/search (Jira Cloud since 2025); set `searchApi` to \"jql\""
                    )));
                }
                other => other?,
            };
            tally.pages += 1;
            let page = jira_search(&reply.body).map_err(|e| shape("jira search", e))?;
            for issue in &page.issues {
                let before = st.issue(&issue.key).await?;
                self.finish(&mut st, issue, &before, before.clone(), &mut tally)
                    .await?;
            }
            let fetched = page.issues.len() as u64;
            let more = match cfg.search_api {
                JiraSearchApi::Search => {
                    start_at = page.start_at + fetched;
                    fetched > 0 && page.total.is_some_and(|t| start_at < t)
                }
                JiraSearchApi::Jql => {
                    token = page.next_page_token.clone();
                    fetched > 0 && token.is_some() && page.is_last != Some(true)
                }
            };
            if !more {
                tally.pause = api.pause();
                return Ok(tally);
            }
        }
    }
}

/// A GitHub issue's comments and events (each conditional on what was kept of it).
/// The trackers whose issue lists page along `next` links: GitHub and GitLab.
#[derive(Clone, Copy)]
enum Forge<'a> {
    Github {
        repo: &'a str,
        include_pull_requests: bool,
    },
    Gitlab {
        project: &'a str,
    },
}

impl Forge<'_> {
    /// The issues of one page.
    fn issues(&self, body: &[u8]) -> Result<Vec<Issue>, PollError> {
        match self {
            Forge::Github { repo, .. } => {
                github_issues(body, repo).map_err(|e| shape("github issues", e))
            }
            Forge::Gitlab { project } => {
                gitlab_issues(body, project).map_err(|e| shape("gitlab issues", e))
            }
        }
    }

    /// A pull request the source does not follow.
    fn skips(&self, issue: &Issue) -> bool {
        matches!(
            self,
            Forge::Github {
                include_pull_requests: false,
                ..
            }
        ) && issue.is_pull_request
    }

    /// Reads an issue's comments and other lists under `base` (its API path).
    async fn read_lists(
        &self,
        api: &Api,
        base: &str,
        issue: &mut Issue,
        state: &mut IssueState,
        tally: &mut Tally,
    ) -> Result<(), PollError> {
        match self {
            Forge::Github { .. } => read_github_lists(api, base, issue, state, tally).await,
            Forge::Gitlab { .. } => read_gitlab_lists(api, base, issue, state, tally).await,
        }
    }
}

async fn read_github_lists(
    api: &Api,
    base: &str,
    issue: &mut Issue,
    state: &mut IssueState,
    tally: &mut Tally,
) -> Result<(), PollError> {
    let per = [("per_page", LIST_PAGE.to_string())];
    let comments = state
        .read(
            "comments",
            api,
            &format!("{base}/comments"),
            &per,
            LIST_PAGE,
            github_comments,
            "github comments",
        )
        .await?;
    let events = state
        .read(
            "events",
            api,
            &format!("{base}/events"),
            &per,
            LIST_PAGE,
            github_events,
            "github events",
        )
        .await?;
    tally.not_modified += u64::from(comments.not_modified) + u64::from(events.not_modified);
    issue.comments = comments.items;
    issue.history = events.items;
    Ok(())
}

/// A GitLab issue's notes (comments, and system notes as history) and state events.
async fn read_gitlab_lists(
    api: &Api,
    base: &str,
    issue: &mut Issue,
    state: &mut IssueState,
    tally: &mut Tally,
) -> Result<(), PollError> {
    let notes = state
        .read(
            "notes",
            api,
            &format!("{base}/notes"),
            &[
                ("per_page", LIST_PAGE.to_string()),
                ("sort", "asc".to_string()),
            ],
            LIST_PAGE,
            gitlab_note_items,
            "gitlab notes",
        )
        .await?;
    let events = state
        .read(
            "stateEvents",
            api,
            &format!("{base}/resource_state_events"),
            &[("per_page", LIST_PAGE.to_string())],
            LIST_PAGE,
            gitlab_state_events,
            "gitlab state events",
        )
        .await?;
    tally.not_modified += u64::from(notes.not_modified) + u64::from(events.not_modified);
    for note in notes.items {
        match note {
            Note::Comment(c) => issue.comments.push(c),
            Note::Change(c) => issue.history.push(c),
        }
    }
    issue.history.extend(events.items);
    Ok(())
}

/// JQL and CQL compare dates to the minute: `2026-01-16T08:15:42.000+0000` →
/// `2026-01-16 08:15`.
pub(crate) fn jql_minute(updated: &str) -> String {
    let t: String = updated.chars().take(16).collect();
    t.replacen('T', " ", 1)
}

#[async_trait]
impl SourcePoller for TrackerPoller {
    fn kind(&self) -> &'static str {
        self.kind
    }

    async fn poll(&self, source: &IndexerSource) -> Result<Option<PollReport>, PollError> {
        self.ctx
            .with_lease(source, || async {
                let tally = match self.kind {
                    "github" => self.poll_github(source).await?,
                    "gitlab" => self.poll_gitlab(source).await?,
                    _ => self.poll_jira(source).await?,
                };
                Ok(TrackerReport {
                    issues: tally.issues,
                    queued: tally.issues,
                    unchanged: tally.unchanged,
                    not_modified: tally.not_modified,
                    pages: tally.pages,
                    pull_requests_skipped: tally.pull_requests_skipped,
                    budget_spent: tally.pause.map(|wait| (wait.ms, wait.reason)),
                })
            })
            .await
            .map(|r| r.map(Into::into))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::SourceConfig;
    use serde_json::json;

    #[test]
    fn jql_dates_are_minutes() {
        assert_eq!(
            jql_minute("2026-01-16T08:15:42.000+0000"),
            "2026-01-16 08:15"
        );
        assert_eq!(jql_minute(EPOCH), "1970-01-01 00:00");
    }

    #[test]
    fn settings_are_checked() {
        let gh: GithubConfig =
            serde_json::from_value(json!({"repo": "acme/shop", "tokenEnv": "GITHUB_TOKEN"}))
                .expect("config");
        assert!(gh.validate().is_ok());
        assert_eq!(gh.name(), "acme-shop");
        let bad: GithubConfig = serde_json::from_value(json!({"repo": "shop"})).expect("parses");
        assert!(bad.validate().is_err());
        let leaky: JiraConfig = serde_json::from_value(
            json!({"project": "SHOP", "baseUrl": "https://me:pw@x.atlassian.net"}),
        )
        .expect("parses");
        assert!(leaky.validate().expect_err("creds").contains("tokenEnv"));
        assert!(
            serde_json::from_value::<GitlabConfig>(json!({"project": "42", "token": "x"})).is_err()
        );
    }
}
