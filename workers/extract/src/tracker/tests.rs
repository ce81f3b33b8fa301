//! Tests of the tracker parsers and prepared sources: fixtures and helpers shared by the
//! topic modules below.

use super::*;

const GITHUB_PAGED: &str =
    include_str!("../../../indexers/tests/fixtures/rest/github-issues-paged.json");
const GITHUB_INCREMENTAL: &str =
    include_str!("../../../indexers/tests/fixtures/rest/github-incremental.json");
const GITHUB_HTML: &str =
    include_str!("../../../indexers/tests/fixtures/rest/github-html-instead-of-json.json");
const GITHUB_RATE_LIMITED: &str =
    include_str!("../../../indexers/tests/fixtures/rest/github-rate-limited.json");
const GITHUB_OLD_SHAPE: &str =
    include_str!("../../../indexers/tests/fixtures/rest/github-old-shape.json");
const GITLAB_PAGED: &str =
    include_str!("../../../indexers/tests/fixtures/rest/gitlab-issues-paged.json");
const JIRA_PAGED: &str =
    include_str!("../../../indexers/tests/fixtures/rest/jira-search-paged.json");
const JIRA_RATE_LIMITED: &str =
    include_str!("../../../indexers/tests/fixtures/rest/jira-rate-limited.json");
const JIRA_GONE: &str = include_str!("../../../indexers/tests/fixtures/rest/jira-search-gone.json");

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
    with_thread(issues.remove(0), GITHUB_INCREMENTAL, 12)
}

/// `issue` (acme/shop #`number`) with its comments and events from the recording `fixture`.
fn with_thread(mut issue: Issue, fixture: &str, number: u64) -> Issue {
    let path = format!("/repos/acme/shop/issues/{number}");
    issue.comments =
        github_comments(&ok_body(fixture, &format!("{path}/comments"), 0)).expect("comments");
    issue.history = github_events(&ok_body(fixture, &format!("{path}/events"), 0)).expect("events");
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

mod graph;
mod hostile;
mod parse;
mod source;
