//! Keys and an issue as a prepared source.

use super::*;

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
    let ada_login =
        keys::person(Some("712020:51a3f0b2-6c4d-4e8f-9a1b-2c3d4e5f6a7b"), None).expect("login key");
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
