//! Tracker fidelity against recorded exchanges: pull requests in the old API shape, the plan
//! that brings skipped pull requests back, conditional requests answered 304, mentions and
//! milestones in the graph, and every documented rate-limit signal of GitHub, GitLab and
//! Jira — mid-poll as well as between polls.

mod support;

use evident_indexers::poll::{PollError, RETRY_AT, RETRY_REASON, is_due};
use evident_store::queue::Clock;
use serde_json::{Value, json};
use support::{Harness, Replay, harness};

const PREFIX: &str = "tracker:acme.shop-issues:";

/// Registers `acme/shop`, pull requests included or not, polled every five minutes.
async fn github(h: &Harness, replay: &Replay, prs: bool) -> String {
    let settings = json!({"includePullRequests": prs, "intervalSecs": 300});
    h.register_github(replay, settings).await
}

async fn cursor(h: &Harness, id: &str) -> Option<Value> {
    h.ctx
        .cursor(
            &evident_store::indexers::SourceKey::new("acme", id),
            "updated",
        )
        .await
        .expect("cursor")
}

/// A milestone's key: `milestone:{tracker}/{project}/{title}` as a normalised ref, like labels.
fn milestone(raw: &str) -> String {
    evident_core::refs::normalize_ref(raw)
        .expect("key")
        .to_string()
}

fn wait_of(e: &PollError) -> (i64, String) {
    match e {
        PollError::RateLimited {
            retry_after_ms,
            message,
        } => (*retry_after_ms, message.clone()),
        other => panic!("not a rate limit: {other}"),
    }
}

#[tokio::test]
async fn old_api_shape_plans_and_conditional_requests() {
    let h = harness().await;

    // 2014: every plain issue carries `pull_request` with null links. Only #4 is a PR.
    let first = Replay::start(&["github-old-shape.json"]).await;
    let id = github(&h, &first, false).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(
        (&report["issues"], &report["pullRequestsSkipped"]),
        (&json!(2), &json!(1)),
        "{report}"
    );
    first.server_exhausted();
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(
        h.urns(PREFIX).await,
        vec![format!("{PREFIX}3"), format!("{PREFIX}5")]
    );
    // Mentions are edges evidenced by their chunks; UTF-8 and SHA-256 are not issues.
    assert_eq!(
        h.incoming("github:acme_api_12", "references").await,
        vec!["github:acme_shop_3"]
    );
    assert_eq!(
        h.incoming("jira:ops-12", "references").await,
        vec!["github:acme_shop_3"]
    );
    assert_eq!(
        h.incoming("github:acme_shop_3", "references").await,
        vec!["github:acme_shop_5"],
        "#5's comment says 'Duplicate of #3'"
    );
    assert!(h.incoming("jira:utf-8", "references").await.is_empty());
    // The milestone, its title exact.
    let milestone = h
        .incoming(
            &milestone("milestone:github/acme/shop/1.0 "),
            "in_milestone",
        )
        .await;
    assert_eq!(milestone, vec!["github:acme_shop_3"], "{milestone:?}");

    // includePullRequests switched on: the plan changed, the list is read from the start;
    // #3 and #5's lists answer 304 to their ETags and the issues are not queued again; #4
    // comes back.
    let second = Replay::start(&["github-old-shape-with-prs.json"]).await;
    github(&h, &second, true).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(report["issues"], 1, "{report}");
    assert_eq!(report["unchanged"], 2, "{report}");
    assert_eq!(report["notModified"], 4, "{report}");
    assert_eq!(report["pullRequestsSkipped"], 0, "{report}");
    second.server_exhausted();
    assert_eq!(h.drain().await.done, 1, "only the pull request is ingested");
    assert_eq!(h.urns(PREFIX).await.len(), 3);
    assert_eq!(
        h.incoming("github:acme_shop_3", "fixes").await,
        vec!["github:acme_shop_4"]
    );
    assert_eq!(cursor(&h, &id).await, Some(json!("2014-03-03T08:00:00Z")));

    // Nothing changed: the boundary issue's lists answer 304 and nothing is queued; the
    // next poll's list itself answers 304.
    let third = Replay::start(&["github-old-shape-unchanged.json"]).await;
    github(&h, &third, true).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(
        (
            &report["issues"],
            &report["unchanged"],
            &report["notModified"]
        ),
        (&json!(0), &json!(1), &json!(2)),
        "{report}"
    );
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(
        (&report["issues"], &report["notModified"], &report["pages"]),
        (&json!(0), &json!(1), &json!(0)),
        "{report}"
    );
    third.server_exhausted();
    assert_eq!(h.drain().await.done, 0, "nothing new ingested");
}

#[tokio::test]
async fn a_secondary_rate_limit_waits_as_asked_and_is_not_a_credentials_error() {
    let h = harness().await;
    let replay = Replay::start(&["github-secondary-rate-limit.json"]).await;
    let id = github(&h, &replay, false).await;

    // 403 with retry-after: 60 s, said to be a secondary limit.
    let err = h.poll(&id).await.expect_err("secondary limit");
    let (ms, why) = wait_of(&err);
    assert_eq!(ms, 60_000);
    assert!(why.contains("secondary rate limit"), "{why}");
    let s = h.source(&id).await;
    let now = h.clock.now_ms();
    assert_eq!(s.status.stats[RETRY_AT], json!(now + 60_000));
    assert!(
        s.status.stats[RETRY_REASON]
            .as_str()
            .is_some_and(|r| r.contains("secondary")),
        "{}",
        s.status.stats
    );
    let last = s.status.last_error.clone().expect("recorded");
    assert!(!last.contains("credentials"), "{last}");
    assert!(!is_due(&s, now + 59_000) && is_due(&s, now + 60_000));
    assert_eq!(cursor(&h, &id).await, None, "nothing done, nothing moved");

    // 403 with only the message: a minute, as GitHub asks; #7 done before it stays done.
    h.clock.advance(60_000);
    let (ms, why) = wait_of(&h.poll(&id).await.expect_err("secondary limit"));
    assert_eq!(ms, 60_000, "{why}");
    assert_eq!(cursor(&h, &id).await, Some(json!("2026-01-06T14:20:05Z")));

    // After the wait: #7 costs two 304s, #9 is read.
    h.clock.advance(60_000);
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(
        (
            &report["issues"],
            &report["unchanged"],
            &report["notModified"]
        ),
        (&json!(1), &json!(1), &json!(2)),
        "{report}"
    );
    replay.server_exhausted();
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns(PREFIX).await.len(), 2);
    assert!(h.source(&id).await.status.stats.get(RETRY_AT).is_none());
}

#[tokio::test]
async fn a_spent_budget_on_a_successful_answer_pauses_the_requests_that_follow() {
    let h = harness().await;
    let replay = Replay::start(&["github-budget-spent.json"]).await;
    let id = github(&h, &replay, false).await;
    // #7's events answer 200 with x-ratelimit-remaining 0 (reset 600 s from the harness
    // clock): #9's comments are not asked for.
    let (ms, why) = wait_of(&h.poll(&id).await.expect_err("budget spent"));
    assert_eq!(ms, 600_000, "{why}");
    assert!(why.contains("remaining 0"), "{why}");
    let asked: Vec<String> = replay.received().into_iter().map(|r| r.path).collect();
    assert_eq!(
        asked,
        vec![
            "/repos/acme/shop/issues",
            "/repos/acme/shop/issues/7/comments",
            "/repos/acme/shop/issues/7/events"
        ]
    );
    assert_eq!(cursor(&h, &id).await, Some(json!("2026-01-06T14:20:05Z")));
    let s = h.source(&id).await;
    let now = h.clock.now_ms();
    assert!(!is_due(&s, now + 599_000) && is_due(&s, now + 600_000));

    h.clock.advance(600_000);
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(report["issues"], 1, "{report}");
    replay.server_exhausted();
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns(PREFIX).await.len(), 2);
}

#[tokio::test]
async fn gitlab_429_and_a_spent_budget_delay_the_next_poll() {
    let h = harness().await;
    let replay = Replay::start(&["gitlab-rate-limited.json"]).await;
    let id = h
        .register_paged(
            "gitlab",
            &replay,
            json!({"id": "acme.shop-gl", "project": "42", "intervalSecs": 60}),
        )
        .await;
    let (ms, why) = wait_of(&h.poll(&id).await.expect_err("429"));
    assert_eq!(ms, 30_000, "retry-after wins over the reset: {why}");
    assert!(why.contains("throttle_authenticated_api"), "{why}");
    h.clock.advance(30_000);
    // A successful poll whose answer left ratelimit-remaining 0 (reset 150 s from the
    // harness clock, i.e. 120 s from now): the next poll waits for the reset, not only the
    // interval.
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(report["issues"], 0, "{report}");
    assert!(
        report.get("retryAfterMs").is_none(),
        "kept out of the report"
    );
    let s = h.source(&id).await;
    assert!(s.status.last_error.is_none());
    let now = h.clock.now_ms();
    assert_eq!(s.status.stats[RETRY_AT], json!(now + 120_000));
    assert!(
        !is_due(&s, now + 60_000),
        "the interval passed, the budget is still spent"
    );
    assert!(is_due(&s, now + 120_000));
    replay.server_exhausted();
}

#[tokio::test]
async fn jira_near_its_limit_stops_before_the_next_page() {
    let h = harness().await;
    let replay = Replay::start(&["jira-near-limit.json"]).await;
    let id = h.register_jira(&replay, json!({})).await;
    let (ms, why) = wait_of(&h.poll(&id).await.expect_err("near limit"));
    assert_eq!(ms, 60_000);
    assert!(why.contains("nearlimit"), "{why}");
    assert_eq!(replay.received().len(), 1, "the second page waits");
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns("tracker:acme.shop-jira:").await.len(), 2);

    h.clock.advance(60_000);
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(
        (&report["issues"], &report["unchanged"]),
        (&json!(1), &json!(1)),
        "SHOP-8 again, as it was; SHOP-12 new: {report}"
    );
    replay.server_exhausted();
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns("tracker:acme.shop-jira:").await.len(), 3);
    assert_eq!(
        h.incoming("jira:shop-8", "references").await,
        vec!["jira:shop-12"],
        "SHOP-12's comment names SHOP-8"
    );
    assert_eq!(
        h.incoming(&milestone("milestone:jira/SHOP/2026.02"), "in_milestone")
            .await,
        vec!["jira:shop-12"]
    );
}
