//! Issue trackers: GitHub, GitLab and Jira, polled over REST for issues updated since the
//! source's cursor (`updated`), page by page in update order, each issue with its comments
//! and its history (state, assignee, label changes), queued as a prepared issue.
//!
//! The cursor moves after each page's issues are queued, so a poll cut short by a rate limit
//! or a server error resumes where it stopped; the trackers' "updated since" is inclusive,
//! so the boundary issue is read again and recognised as unchanged. Rate limits (429 with
//! `Retry-After`, an exhausted `X-RateLimit-Remaining`) end the poll with a wait the loop
//! honours; 5xx and timeouts are retried at the next interval. A tracker answering with
//! something other than JSON (a proxy's sign-in page) is an error naming what came back.

pub mod http;

use async_trait::async_trait;
use evident_core::chunking::ChunkingConfig;
use evident_extract::tracker::{
    Issue, TrackerContext, TrackerError, github_comments, github_events, github_issues,
    gitlab_issues, gitlab_notes, gitlab_state_events, issue_source, issue_urn, jira_search,
};
use evident_store::indexers::IndexerSource;
use serde_json::json;

use crate::poll::{PollContext, PollError, PollReport, SourcePoller};
use crate::report::TrackerReport;
use crate::sources::config_of;
pub use evident_sources::kinds::tracker::{
    GithubConfig, GitlabConfig, JiraConfig, JiraSearchApi, check_base_url,
};
use http::{Api, Credentials, TokenStyle};

/// A tracker's answer was not what its API returns.
fn shape(what: &str, e: TrackerError) -> PollError {
    PollError::malformed(what, e)
}

/// Where a poll starts: the newest `updated` seen.
const CURSOR: &str = "updated";
const EPOCH: &str = "1970-01-01T00:00:00Z";

/// Polls one kind of tracker (`github`, `gitlab`, `jira`).
pub struct TrackerPoller {
    pub ctx: PollContext,
    pub chunking: ChunkingConfig,
    pub kind: &'static str,
}

#[derive(Default)]
struct Tally {
    issues: u64,
    pull_requests_skipped: u64,
    pages: u64,
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

    async fn emit(&self, source: &IndexerSource, issue: &Issue) -> Result<(), PollError> {
        let prepared = issue_source(
            issue,
            &TrackerContext {
                scope: &source.scope,
                source_id: &source.id,
                chunking: &self.chunking,
            },
        );
        self.ctx
            .tasks
            .enqueue_prepared(
                prepared,
                &issue_urn(&source.id, issue),
                self.ctx.priority,
                self.ctx.clock.now_ms(),
            )
            .await?;
        Ok(())
    }

    async fn cursor(&self, source: &IndexerSource) -> Result<Option<String>, PollError> {
        Ok(self
            .ctx
            .cursor(&source.id, CURSOR)
            .await?
            .and_then(|v| v.as_str().map(str::to_string)))
    }

    /// Moves the cursor to the newest `updated` of `issues` (after they are queued).
    async fn advance(&self, source: &IndexerSource, issues: &[Issue]) -> Result<(), PollError> {
        let newest = issues.iter().filter_map(|i| i.updated.as_deref()).max();
        let current = self.cursor(source).await?;
        if let Some(n) = newest
            && current.as_deref().is_none_or(|c| n > c)
        {
            self.ctx.set_cursor(&source.id, CURSOR, &json!(n)).await?;
        }
        Ok(())
    }

    /// Every page of a list endpoint (following `Link: rel="next"`), parsed by `parse`.
    async fn all_pages<T>(
        api: &Api,
        path: &str,
        query: &[(&str, String)],
        parse: impl Fn(&[u8]) -> Result<Vec<T>, TrackerError>,
        what: &str,
    ) -> Result<Vec<T>, PollError> {
        let mut out = Vec::new();
        let mut reply = api.get(path, query).await?;
        loop {
            out.extend(parse(&reply.body).map_err(|e| shape(what, e))?);
            match reply.next.take() {
                Some(next) => reply = api.get(&next, &[]).await?,
                None => return Ok(out),
            }
        }
    }

    async fn poll_github(&self, source: &IndexerSource) -> Result<Tally, PollError> {
        let cfg: GithubConfig = config_of(source).map_err(PollError::Config)?;
        let api = Api::new(
            "github",
            &self.ctx.access.egress,
            &cfg.base_url,
            &cfg.credentials(),
            TokenStyle::Bearer,
            &[
                ("accept", "application/vnd.github+json"),
                ("x-github-api-version", "2022-11-28"),
            ],
        )?;
        let since = self.cursor(source).await?.unwrap_or_else(|| EPOCH.into());
        let list = format!("/repos/{}/issues", cfg.repo);
        let query = [
            ("state", "all".to_string()),
            ("per_page", cfg.per_page.to_string()),
            ("sort", "updated".to_string()),
            ("direction", "asc".to_string()),
            ("since", since),
        ];
        let mut tally = Tally::default();
        let mut reply = api.get(&list, &query).await?;
        loop {
            tally.pages += 1;
            let issues =
                github_issues(&reply.body, &cfg.repo).map_err(|e| shape("github issues", e))?;
            let mut done = Vec::with_capacity(issues.len());
            for mut issue in issues {
                if issue.is_pull_request && !cfg.include_pull_requests {
                    tally.pull_requests_skipped += 1;
                    done.push(issue);
                    continue;
                }
                let base = format!("{list}/{}", issue.key);
                let per = [("per_page", "100".to_string())];
                issue.comments = Self::all_pages(
                    &api,
                    &format!("{base}/comments"),
                    &per,
                    github_comments,
                    "github comments",
                )
                .await?;
                issue.history = Self::all_pages(
                    &api,
                    &format!("{base}/events"),
                    &per,
                    github_events,
                    "github events",
                )
                .await?;
                self.emit(source, &issue).await?;
                tally.issues += 1;
                done.push(issue);
            }
            self.advance(source, &done).await?;
            match reply.next.take() {
                Some(next) => reply = api.get(&next, &[]).await?,
                None => return Ok(tally),
            }
        }
    }

    async fn poll_gitlab(&self, source: &IndexerSource) -> Result<Tally, PollError> {
        let cfg: GitlabConfig = config_of(source).map_err(PollError::Config)?;
        let api = Api::new(
            "gitlab",
            &self.ctx.access.egress,
            &cfg.base_url,
            &Credentials {
                token_env: cfg.token_env.clone(),
                email_env: None,
            },
            TokenStyle::GitlabPrivateToken,
            &[],
        )?;
        let project = cfg.project.replace('/', "%2F");
        let since = self.cursor(source).await?.unwrap_or_else(|| EPOCH.into());
        let list = format!("/api/v4/projects/{project}/issues");
        let query = [
            ("scope", "all".to_string()),
            ("order_by", "updated_at".to_string()),
            ("sort", "asc".to_string()),
            ("updated_after", since),
            ("per_page", cfg.per_page.to_string()),
            ("page", "1".to_string()),
        ];
        let mut tally = Tally::default();
        let mut reply = api.get(&list, &query).await?;
        loop {
            tally.pages += 1;
            let mut issues =
                gitlab_issues(&reply.body, &cfg.project).map_err(|e| shape("gitlab issues", e))?;
            for issue in issues.iter_mut() {
                let base = format!("{list}/{}", issue.key);
                let mut notes_reply = api
                    .get(
                        &format!("{base}/notes"),
                        &[("per_page", "100".to_string()), ("sort", "asc".to_string())],
                    )
                    .await?;
                loop {
                    let (comments, changes) =
                        gitlab_notes(&notes_reply.body).map_err(|e| shape("gitlab notes", e))?;
                    issue.comments.extend(comments);
                    issue.history.extend(changes);
                    match notes_reply.next.take() {
                        Some(next) => notes_reply = api.get(&next, &[]).await?,
                        None => break,
                    }
                }
                issue.history.extend(
                    Self::all_pages(
                        &api,
                        &format!("{base}/resource_state_events"),
                        &[],
                        gitlab_state_events,
                        "gitlab state events",
                    )
                    .await?,
                );
                self.emit(source, issue).await?;
                tally.issues += 1;
            }
            self.advance(source, &issues).await?;
            match reply.next.take() {
                Some(next) => reply = api.get(&next, &[]).await?,
                None => return Ok(tally),
            }
        }
    }

    async fn poll_jira(&self, source: &IndexerSource) -> Result<Tally, PollError> {
        let cfg: JiraConfig = config_of(source).map_err(PollError::Config)?;
        let api = Api::new(
            "jira",
            &self.ctx.access.egress,
            &cfg.base_url,
            &cfg.credentials(),
            TokenStyle::Bearer,
            &[],
        )?;
        let since = self.cursor(source).await?.unwrap_or_else(|| EPOCH.into());
        let jql = format!(
            "project = {} AND updated >= \"{}\" ORDER BY updated ASC",
            cfg.project,
            jql_minute(&since)
        );
        let fields = "summary,description,status,assignee,reporter,labels,comment,issuelinks,created,updated,issuetype,priority";
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
            query.push(("fields", fields.to_string()));
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
                self.emit(source, issue).await?;
                tally.issues += 1;
            }
            self.advance(source, &page.issues).await?;
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
                return Ok(tally);
            }
        }
    }
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
                    pages: tally.pages,
                    pull_requests_skipped: tally.pull_requests_skipped,
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
