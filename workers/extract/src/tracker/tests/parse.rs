//! The REST parsers: GitHub, GitLab and Jira bodies as issues, comments, history and links.

use super::*;

/// A history line as (field, from, to, actor login).
type HistoryRow<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<&'a str>);

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
    let got: Vec<HistoryRow<'_>> = h
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
