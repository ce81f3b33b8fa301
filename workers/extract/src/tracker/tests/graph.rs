//! Mentions as `references` edges, milestones, exact titles, pull requests in old and current
//! API shapes — on recorded exchanges.

use serde_json::json;

use super::*;

/// #3 and #4 of the old-shape recording, #3 with its comment and events.
fn old_shape() -> (Issue, Issue) {
    let mut issues = github_issues(
        &ok_body(GITHUB_OLD_SHAPE, "/repos/acme/shop/issues", 0),
        "acme/shop",
    )
    .expect("issues");
    let pr = issues.remove(1);
    (with_thread(issues.remove(0), GITHUB_OLD_SHAPE, 3), pr)
}

#[test]
fn pull_requests_in_old_and_current_shapes() {
    // Old shape: every issue carries `pull_request`, with null links on plain issues.
    let (issue, pr) = old_shape();
    assert!(!issue.is_pull_request, "{:?}", at_pr(GITHUB_OLD_SHAPE, 0));
    assert!(pr.is_pull_request);
    // Current shape: the key only on pull requests (#11 of the paged recording).
    let current = github_issues(
        &ok_body(GITHUB_PAGED, "/repos/acme/shop/issues", 0),
        "acme/shop",
    )
    .expect("issues");
    let prs: Vec<&str> = current
        .iter()
        .filter(|i| i.is_pull_request)
        .map(|i| i.key.as_str())
        .collect();
    assert!(prs.iter().all(|k| *k == "11"), "{prs:?}");
    assert!(!github_is_pull_request(&Value::Null));
    assert!(!github_is_pull_request(&json!({})));
    assert!(github_is_pull_request(
        &json!({"url": "https://api.github.com/repos/a/b/pulls/1", "merged_at": null})
    ));
}

/// The recorded `pull_request` value of the first issue of the first page.
fn at_pr(fixture: &str, i: usize) -> Value {
    let all: Value = serde_json::from_str(fixture).expect("json");
    all[0]["response"]["body"][i]["pull_request"].clone()
}

#[test]
fn mentions_become_references_evidenced_by_their_chunks() {
    let scope = Scope::client("acme");
    let chunking = ChunkingConfig::default();
    let (issue, pr) = old_shape();
    let src = issue_source(&issue, &ctx(&scope, &chunking, "acme.shop"));
    let refs: Vec<(&str, &str, &str)> = edges_of(&src)
        .into_iter()
        .filter(|(_, t, _)| *t == "references")
        .collect();
    assert_eq!(
        refs,
        vec![
            ("github:acme_shop_3", "references", "jira:ops-12"),
            ("github:acme_shop_3", "references", "github:acme_shop_2"),
            ("github:acme_shop_3", "references", "github:acme_api_12"),
        ],
        "never UTF-8, SHA-256, C#7 or page#4"
    );
    let comment = comment_ids(&src)[0].0;
    let api12 = src
        .edges
        .iter()
        .find(|e| e.to.as_str() == "github:acme_api_12")
        .expect("edge");
    assert_eq!(
        api12.evidence,
        EvidenceSpec::Chunks(vec![0, comment]),
        "the description and the comment both mention it"
    );
    let ops = src
        .edges
        .iter()
        .find(|e| e.to.as_str() == "jira:ops-12")
        .expect("edge");
    assert_eq!(ops.evidence, EvidenceSpec::Chunks(vec![0]));

    // A pull request's `Fixes #3` fixes it, as the tracker reads it.
    let src = issue_source(&pr, &ctx(&scope, &chunking, "acme.shop"));
    assert!(
        edges_of(&src).contains(&("github:acme_shop_4", "fixes", "github:acme_shop_3")),
        "{:?}",
        edges_of(&src)
    );
    // An issue saying "this fixes #12" (comment of #12 itself, recorded) only mentions.
    let src = issue_source(&github_12(), &ctx(&scope, &chunking, "acme.shop"));
    assert!(
        edges_of(&src)
            .iter()
            .all(|(_, t, to)| *t != "fixes" && *to != "github:acme_shop_12"),
        "{:?}",
        edges_of(&src)
    );
}

#[test]
fn jira_comments_reference_other_keys() {
    let scope = Scope::client("acme");
    let chunking = ChunkingConfig::default();
    let issues = jira_issues();
    let shop12 = issues.iter().find(|i| i.key == "SHOP-12").expect("SHOP-12");
    let src = issue_source(shop12, &ctx(&scope, &chunking, "acme.jira"));
    let comment = comment_ids(&src)[0].0;
    let e = src
        .edges
        .iter()
        .find(|e| e.edge_type == "references")
        .expect("references");
    assert_eq!(
        (e.from.as_str(), e.to.as_str()),
        ("jira:shop-12", "jira:shop-8")
    );
    assert_eq!(e.evidence, EvidenceSpec::Chunks(vec![comment]));
}

#[test]
fn milestones_and_fix_versions_keep_their_titles_exactly() {
    let scope = Scope::client("acme");
    let chunking = ChunkingConfig::default();
    let (issue, _) = old_shape();
    assert_eq!(issue.title, "Checkout crashes on an empty cart  ");
    let src = issue_source(&issue, &ctx(&scope, &chunking, "acme.shop"));
    assert_eq!(
        src.title.as_deref(),
        Some("#3: Checkout crashes on an empty cart  "),
        "trailing spaces kept"
    );
    let node = &src.nodes[0];
    assert_eq!(node.label, "Checkout crashes on an empty cart  ");
    assert_eq!(node.props["title"], "Checkout crashes on an empty cart  ");
    let m = src
        .nodes
        .iter()
        .find(|n| n.node_type == "milestone")
        .expect("milestone node");
    assert_eq!(m.label, "1.0 ");
    assert_eq!(m.props["title"], "1.0 ");
    assert_eq!(m.props["id"], "2");
    assert_eq!(m.props["due"], "2014-03-31T07:00:00Z");
    assert_eq!(Some(m.key.clone()), milestone_key(&issue, "1.0 "));
    assert!(
        src.edges
            .iter()
            .any(|e| e.edge_type == "in_milestone" && e.to == m.key && e.from == node.key)
    );
    assert!(src.chunks[0].text.contains("Milestone: 1.0"));

    let issues = jira_issues();
    let shop12 = issues.iter().find(|i| i.key == "SHOP-12").expect("SHOP-12");
    assert_eq!(shop12.milestones[0].title, "2026.02");
    assert_eq!(shop12.milestones[0].state.as_deref(), Some("unreleased"));
    let src = issue_source(shop12, &ctx(&scope, &chunking, "acme.jira"));
    assert!(
        edges_of(&src)
            .iter()
            .any(|(from, t, _)| *from == "jira:shop-12" && *t == "in_milestone")
    );
}
