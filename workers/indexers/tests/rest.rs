//! Trackers and Confluence against recorded REST exchanges replayed by a local server:
//! pagination, incremental cursors, a 429 with `Retry-After`, a 500, an HTML page where JSON
//! belongs, a removed endpoint — nothing lost, nothing duplicated.

mod support;

use evident_core::{NodeKey, Visibility};
use evident_indexers::poll::{PollError, is_due};
use evident_store::queue::Clock;
use serde_json::json;
use support::{Replay, harness, locator_json};

#[tokio::test]
async fn github_pages_skip_pull_requests_and_the_cursor_makes_the_next_poll_incremental() {
    let h = harness().await;
    let first = Replay::start(&["github-issues-paged.json"]).await;
    let id = h.register_github(&first, json!({})).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(report["issues"], 3, "{report}");
    assert_eq!(report["pages"], 2);
    assert_eq!(report["pullRequestsSkipped"], 1);
    first.server_exhausted();
    assert!(h.drain().await.errors.is_empty());
    let prefix = "tracker:acme.shop-issues:";
    assert_eq!(h.urns(prefix).await.len(), 3);
    assert_eq!(
        h.ctx
            .cursor(
                &evident_store::indexers::SourceKey::new("acme", &id),
                "updated"
            )
            .await
            .expect("cursor")
            .expect("set"),
        json!("2026-01-20T16:45:00Z")
    );

    // Second poll, against the recording made two days later: only #12, with its new comment.
    let second = Replay::start(&["github-incremental.json"]).await;
    h.register_github(&second, json!({})).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(report["issues"], 1, "{report}");
    assert!(second.unmatched().is_empty(), "{:?}", second.unmatched());
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns(prefix).await.len(), 3, "updated, not duplicated");

    // The new comment is searchable and cites the issue and the comment.
    let pack = h
        .retrieve("Verified on staging with a 25 EUR gift card", &[])
        .await;
    let hit = pack
        .items
        .iter()
        .map(|i| locator_json(&i.locator))
        .find(|l| l["commentId"] == "3791201203")
        .expect("the new comment is found");
    assert_eq!(hit["tracker"], "github", "{hit}");
    assert_eq!(hit["issueKey"], "acme/shop#12", "{hit}");

    // The issue node is the key the git indexer gives `fixes #12` in acme/shop.
    let vis = Visibility::of(h.scope());
    let node =
        h.kb.stores()
            .graph
            .get_nodes(&vis, &[NodeKey::from_canonical("github:acme_shop_12")])
            .await
            .expect("get");
    assert_eq!(node.len(), 1);
    assert_eq!(node[0].node_type, "issue");
}

#[tokio::test]
async fn a_429_waits_as_asked_and_a_500_retries_without_losing_or_duplicating() {
    let h = harness().await;
    let limited = Replay::start(&["github-rate-limited.json"]).await;
    let id = h.register_github(&limited, json!({})).await;
    let err = h.poll(&id).await.expect_err("rate limited");
    match &err {
        PollError::RateLimited { retry_after_ms, .. } => assert_eq!(*retry_after_ms, 7000),
        other => panic!("{other}"),
    }
    let s = h.source(&id).await;
    let now = h.clock.now_ms();
    assert!(!is_due(&s, now + 6_000), "not before the wait");
    assert!(is_due(&s, now + 7_000), "not a whole interval later either");
    h.clock.advance(7_000);
    let report = h.poll(&id).await.expect("after the wait");
    assert_eq!(report["issues"], 2);
    limited.server_exhausted();
    let d = h.drain().await;
    assert!(d.errors.is_empty());
    assert_eq!(d.done, 2);

    let h = harness().await;
    let failing = Replay::start(&["github-server-error.json"]).await;
    let id = h.register_github(&failing, json!({})).await;
    let err = h.poll(&id).await.expect_err("500").to_string();
    assert!(
        err.contains("HTTP 500") && err.contains("Server Error"),
        "{err}"
    );
    assert!(h.source(&id).await.status.last_error.is_some());
    let report = h.poll(&id).await.expect("retried");
    assert_eq!(report["issues"], 2);
    assert!(h.source(&id).await.status.last_error.is_none());
    assert!(failing.unused(&[]).is_empty());
    h.drain().await;
    assert_eq!(h.urns("tracker:acme.shop-issues:").await.len(), 2);
}

#[tokio::test]
async fn html_where_json_belongs_is_an_error_that_says_what_came_back() {
    let h = harness().await;
    let proxy = Replay::start(&["github-html-instead-of-json.json"]).await;
    let id = h.register_github(&proxy, json!({})).await;
    let err = h.poll(&id).await.expect_err("html").to_string();
    assert!(err.to_lowercase().contains("html"), "{err}");
    assert!(
        h.ctx
            .cursor(
                &evident_store::indexers::SourceKey::new("acme", &id),
                "updated"
            )
            .await
            .expect("cursor")
            .is_none(),
        "nothing moved"
    );
    assert_eq!(h.drain().await.done, 0, "nothing half-written");
}

#[tokio::test]
async fn gitlab_issues_bring_notes_and_state_events() {
    let h = harness().await;
    let replay = Replay::start(&["gitlab-issues-paged.json"]).await;
    let id = h
        .register_paged(
            "gitlab",
            &replay,
            json!({"id": "acme.shop-gl", "project": "42"}),
        )
        .await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(report["issues"], 3, "{report}");
    replay.server_exhausted();
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns("tracker:acme.shop-gl:").await.len(), 3);
    let pack = h.retrieve("variant rows are filtered out", &[]).await;
    let loc = locator_json(&pack.items[0].locator);
    assert_eq!(loc["tracker"], "gitlab", "{loc}");
    assert_eq!(loc["commentId"], "2290100502", "{loc}");
}

#[tokio::test]
async fn jira_pages_by_start_at_links_issues_and_honours_its_rate_limit() {
    let h = harness().await;
    let replay = Replay::start(&["jira-search-paged.json"]).await;
    let id = h.register_jira(&replay, json!({})).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(report["issues"], 3, "{report}");
    assert_eq!(report["pages"], 2);
    assert!(replay.unmatched().is_empty(), "{:?}", replay.unmatched());
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns("tracker:acme.shop-jira:").await.len(), 3);
    // SHOP-12 is blocked by SHOP-8: one edge, from the blocker.
    assert_eq!(
        h.incoming("jira:shop-12", "blocks").await,
        vec!["jira:shop-8"]
    );

    let h = harness().await;
    let limited = Replay::start(&["jira-rate-limited.json"]).await;
    let id = h.register_jira(&limited, json!({})).await;
    match h.poll(&id).await.expect_err("429") {
        PollError::RateLimited { retry_after_ms, .. } => assert_eq!(retry_after_ms, 3000),
        other => panic!("{other}"),
    }
    h.clock.advance(3_000);
    assert_eq!(h.poll(&id).await.expect("poll")["issues"], 2);
    assert!(limited.unused(&[]).is_empty());
}

#[tokio::test]
async fn a_jira_without_the_classic_search_says_which_setting_to_change() {
    let h = harness().await;
    let replay = Replay::start(&["jira-search-gone.json"]).await;
    let id = h
        .register_paged("jira", &replay, json!({"project": "SHOP"}))
        .await;
    let err = h.poll(&id).await.expect_err("gone").to_string();
    assert!(err.contains("searchApi"), "{err}");
}

/// CQL never returns a deleted page: a later poll lists every page id and purges the known
/// page that is gone, with its chunks and graph, keeping the rest.
#[tokio::test]
async fn a_confluence_page_deleted_upstream_is_purged() {
    let h = harness().await;
    let first = Replay::start(&["confluence-pages-paged.json"]).await;
    let settings = json!({"deletionCheckHours": 0});
    let id = h.register_confluence(&first, settings.clone()).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(
        (report["pages"].as_u64(), report["deleted"].as_u64()),
        (Some(3), Some(0)),
        "{report}"
    );
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns("wiki:acme.eng:").await.len(), 4);

    let second = Replay::start(&["confluence-deleted.json"]).await;
    h.register_confluence(&second, settings).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(
        (report["pages"].as_u64(), report["deleted"].as_u64()),
        (Some(0), Some(1)),
        "{report}"
    );
    second.server_exhausted();
    assert!(h.drain().await.errors.is_empty());
    let urns = h.urns("wiki:acme.eng:").await;
    assert_eq!(urns.len(), 3, "the rota is gone, the rest stays: {urns:?}");
    assert!(urns.iter().all(|u| !u.ends_with(":65544")), "{urns:?}");
    assert!(
        h.retrieve("On-call rota", &["wiki"])
            .await
            .items
            .iter()
            .all(|i| !i.source_urn.ends_with(":65544"))
    );
}

/// A file attached without a page edit leaves the page's version as it was: the incremental
/// poll finds the attachment by CQL, reads its page again and queues both.
#[tokio::test]
async fn a_confluence_attachment_added_without_a_page_edit_is_indexed() {
    let h = harness().await;
    let first = Replay::start(&["confluence-pages-paged.json"]).await;
    let id = h.register_confluence(&first, json!({})).await;
    h.poll(&id).await.expect("poll");
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns("wiki:acme.eng:").await.len(), 4);

    let second = Replay::start(&["confluence-attachment-added.json"]).await;
    h.register_confluence(&second, json!({})).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(
        (report["pages"].as_u64(), report["attachments"].as_u64()),
        (Some(1), Some(1)),
        "{report}"
    );
    second.server_exhausted();
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns("wiki:acme.eng:").await.len(), 5);
    let pack = h
        .retrieve("pager handover silenced alerts", &["wiki-attachment"])
        .await;
    assert!(
        pack.items[0]
            .source_urn
            .ends_with(":65538:attachment:att65602"),
        "{:?}",
        pack.items[0]
    );
    // The handbook's re-read version links the new file.
    assert_eq!(
        h.incoming("attachment:confluence_65538_att65602", "has_attachment")
            .await,
        vec!["confluence:65538"]
    );

    // The next poll sees the same attachment (CQL is by the minute) and leaves it alone.
    let third = Replay::start(&["confluence-attachment-seen.json"]).await;
    h.register_confluence(&third, json!({})).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(
        (report["pages"].as_u64(), report["attachments"].as_u64()),
        (Some(0), Some(0)),
        "{report}"
    );
    third.server_exhausted();
}

#[tokio::test]
async fn confluence_pages_hierarchy_attachments_and_an_incremental_poll() {
    let h = harness().await;
    let first = Replay::start(&["confluence-pages-paged.json"]).await;
    let id = h.register_confluence(&first, json!({})).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(report["pages"], 3, "{report}");
    assert_eq!(report["attachments"], 1);
    first.server_exhausted();
    let d = h.drain().await;
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let urns = h.urns("wiki:acme.eng:").await;
    assert_eq!(urns.len(), 4, "three pages and the attachment: {urns:?}");

    // Hierarchy: both pages are children of the handbook.
    assert_eq!(
        h.incoming("confluence:65538", "child_of").await,
        vec!["confluence:65541", "confluence:65544"]
    );

    // The attachment's text is searchable and cites its download.
    let pack = h
        .retrieve(
            "ROLLBACK CHECKLIST announce the rollback",
            &["wiki-attachment"],
        )
        .await;
    assert!(
        pack.items[0].source_urn.ends_with(":attachment:att65601"),
        "{:?}",
        pack.items[0]
    );
    assert!(
        locator_json(&pack.items[0].locator)["uri"]
            .as_str()
            .unwrap_or("")
            .contains("/wiki/download/attachments/65541/runbook.txt"),
        "{:?}",
        pack.items[0].locator
    );
    let page_hit = h.retrieve("Deploying the shop", &["wiki"]).await;
    let loc = locator_json(&page_hit.items[0].locator);
    assert_eq!(loc["version"], 4, "{loc}");

    // Later: CQL since the newest version seen; the unchanged rota is recognised.
    let second = Replay::start(&["confluence-incremental.json"]).await;
    h.register_confluence(&second, json!({})).await;
    let report = h.poll(&id).await.expect("poll");
    assert_eq!(report["pages"], 1, "{report}");
    assert_eq!(report["unchanged"], 1);
    assert_eq!(report["attachments"], 0);
    assert!(second.unmatched().is_empty(), "{:?}", second.unmatched());
    assert!(h.drain().await.errors.is_empty());
    let page_hit = h.retrieve("Deploying the shop", &["wiki"]).await;
    let loc = locator_json(&page_hit.items[0].locator);
    assert_eq!(loc["version"], 5, "{loc}");
    assert_eq!(h.urns("wiki:acme.eng:").await.len(), 4);
}
