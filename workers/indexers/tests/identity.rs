//! Cross-source identity: Jan Novák speaks in a meeting (by name only), then writes mail, is
//! assigned Jira issues and commits to a repository (as `jan.novak@example.com`). Whatever the
//! order, the graph ends with one person node, keyed by the e-mail address, that every
//! source's edges point at — the name and the tracker account are its aliases.

mod support;

use std::path::Path;

use evident_core::{NodeKey, Visibility};
use evident_store::{Direction, TraverseOptions};
use git2::{Repository, Signature};
use serde_json::json;
use support::{Replay, harness};

fn commit(repo: &Repository, path: &str, content: &str, message: &str) {
    commit_as(
        repo,
        ("Jan Novák", "jan.novak@example.com"),
        path,
        content,
        message,
    );
}

fn commit_as(
    repo: &Repository,
    (name, email): (&str, &str),
    path: &str,
    content: &str,
    message: &str,
) {
    let root = repo.workdir().expect("workdir");
    std::fs::write(root.join(path), content).expect("write");
    let mut index = repo.index().expect("index");
    index.add_path(Path::new(path)).expect("add");
    index.write().expect("index");
    let tree = repo
        .find_tree(index.write_tree().expect("tree"))
        .expect("tree");
    let who = Signature::now(name, email).expect("sig");
    let parent = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .map(|oid| repo.find_commit(oid).expect("parent"));
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(Some("HEAD"), &who, &who, message, &tree, &parents)
        .expect("commit");
}

/// Every edge pointing at `key` (one hop in).
async fn edges_into(h: &support::Harness, key: &NodeKey) -> Vec<evident_core::Edge> {
    h.kb.stores()
        .graph
        .traverse(
            &Visibility::of(h.scope()),
            std::slice::from_ref(key),
            &TraverseOptions {
                max_depth: 1,
                direction: Direction::In,
                ..Default::default()
            },
        )
        .await
        .expect("traverse")
        .edges
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_person_across_git_mail_tracker_and_meetings() {
    let h = harness().await;

    // 1. The meeting: Jan is only a speaker's name here.
    let meetings = h.dir.path().join("meetings");
    std::fs::create_dir_all(&meetings).expect("mkdir");
    std::fs::write(
        meetings.join("sdk-sync.vtt"),
        "WEBVTT\n\n00:00:00.000 --> 00:00:06.000\n<v Jan Novák>The payment SDK upgrade to version five is blocked on the sandbox credentials from the provider.\n\n00:00:06.000 --> 00:00:12.000\n<v Ada Lovelace>I will chase the provider today and report back in the channel before the end of the week.\n",
    )
    .expect("w");
    let m = h.register("transcripts", json!({"path": meetings})).await;
    h.poll(&m.id).await.expect("poll");
    assert!(h.drain().await.errors.is_empty());
    let vis = Visibility::of(h.scope());
    let by_name = NodeKey::from_canonical("user:jan_novák");
    assert_eq!(
        h.kb.stores()
            .graph
            .get_nodes(&vis, std::slice::from_ref(&by_name))
            .await
            .expect("get")
            .len(),
        1,
        "before anything else, the speaker is a node of their own"
    );

    // 2. Mail from Jan: `Jan Novák <jan.novak@example.com>` ties the name to the address.
    let mbox = h.dir.path().join("team.mbox");
    std::fs::write(
        &mbox,
        "From jan@example.com Mon Jan  5 10:00:00 2026\nMessage-ID: <sdk@example.com>\nFrom: =?UTF-8?Q?Jan_Nov=C3=A1k?= <jan.novak@example.com>\nTo: team@example.com\nSubject: SDK upgrade\n\nThe sandbox credentials arrived; the upgrade can start.\n",
    )
    .expect("w");
    let mail = h.register("mbox", json!({"path": mbox})).await;
    h.poll(&mail.id).await.expect("poll");
    assert!(h.drain().await.errors.is_empty());

    // 3. Jira: Jan is the assignee of SHOP-7 and SHOP-8.
    let jira = Replay::start(&["jira-search-paged.json"]).await;
    let j = h.register_jira(&jira, json!({})).await;
    h.poll(&j).await.expect("poll");
    assert!(h.drain().await.errors.is_empty());

    // 4. Git: Jan's commits.
    let repo_dir = h.dir.path().join("shop");
    let repo = Repository::init(&repo_dir).expect("init");
    commit(&repo, "README.md", "# Shop\n", "Start the shop");
    commit(
        &repo,
        "pay.rs",
        "fn pay() {}\n",
        "Upgrade the payment SDK (SHOP-8)",
    );
    let g = h
        .register("git", json!({"name": "shop", "path": repo_dir}))
        .await;
    h.poll(&g.id).await.expect("poll");
    assert!(h.drain().await.errors.is_empty());

    // One node for Jan, under the address; the name now resolves to it.
    let canonical = evident_core::keys::person(None, Some("jan.novak@example.com")).expect("key");
    let graph = &h.kb.stores().graph;
    assert_eq!(
        graph
            .get_nodes(&vis, std::slice::from_ref(&canonical))
            .await
            .expect("get")
            .len(),
        1
    );
    assert!(
        graph
            .get_nodes(&vis, std::slice::from_ref(&by_name))
            .await
            .expect("get")
            .is_empty(),
        "the speaker's node was folded into the canonical one"
    );
    let (_, resolved) =
        h.kb.alias_resolve("acme", "user:jan_novák")
            .await
            .expect("resolve");
    assert_eq!(resolved, canonical);
    let aliases: Vec<String> =
        h.kb.alias_list("acme", canonical.as_str())
            .await
            .expect("aliases")
            .into_iter()
            .map(|a| a.alias.to_string())
            .collect();
    assert!(
        aliases.contains(&"user:jan_novák".to_string()),
        "{aliases:?}"
    );

    // Every source's edges meet at it.
    let edges = edges_into(&h, &canonical).await;
    let mut kinds: Vec<String> = edges.iter().map(|e| e.edge_type.clone()).collect();
    kinds.sort();
    kinds.dedup();
    for want in ["has_participant", "sent_by", "assigned_to", "authored_by"] {
        assert!(
            kinds.contains(&want.to_string()),
            "{want} missing from {kinds:?}"
        );
    }
    let froms: Vec<String> = edges.iter().map(|e| e.from.to_string()).collect();
    assert!(froms.iter().any(|f| f.starts_with("meeting:")), "{froms:?}");
    assert!(froms.iter().any(|f| f == "jira:shop-8"), "{froms:?}");
    assert!(froms.iter().any(|f| f.starts_with("commit:")), "{froms:?}");
}

/// A GitHub user without a public e-mail is only a login to the tracker; their commits carry
/// the private no-reply address with that login inside. The login becomes an alias of the
/// address, so the tracker's node folds into the committer's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_login_meets_its_no_reply_commit_address() {
    let h = harness().await;
    let issues = Replay::start(&["github-issues-paged.json"]).await;
    let gh = h.register_github(&issues, json!({})).await;
    h.poll(&gh).await.expect("poll");
    assert!(h.drain().await.errors.is_empty());
    let vis = Visibility::of(h.scope());
    let login = NodeKey::from_canonical("user:ghopper");
    let graph = &h.kb.stores().graph;
    assert_eq!(
        graph
            .get_nodes(&vis, std::slice::from_ref(&login))
            .await
            .expect("get")
            .len(),
        1
    );

    let repo_dir = h.dir.path().join("shop");
    let repo = Repository::init(&repo_dir).expect("init");
    let private = "49699333+ghopper@users.noreply.github.com";
    commit_as(
        &repo,
        ("Grace Hopper", private),
        "cart.rs",
        "fn total() {}\n",
        "Fix the cart total (#7)",
    );
    let g = h
        .register("git", json!({"name": "shop", "path": repo_dir}))
        .await;
    h.poll(&g.id).await.expect("poll");
    assert!(h.drain().await.errors.is_empty());

    let canonical = evident_core::keys::person(None, Some(private)).expect("key");
    let (_, resolved) =
        h.kb.alias_resolve("acme", "user:ghopper")
            .await
            .expect("resolve");
    assert_eq!(resolved, canonical);
    assert!(
        graph
            .get_nodes(&vis, &[login])
            .await
            .expect("get")
            .is_empty(),
        "the login's node was folded into the committer's"
    );
    // The issues Grace opened and her commit now meet at one node.
    let edges = edges_into(&h, &canonical).await;
    let from: Vec<&str> = edges.iter().map(|e| e.from.as_str()).collect();
    assert!(from.iter().any(|k| k.starts_with("commit:")), "{from:?}");
    assert!(from.iter().any(|k| k.starts_with("github:")), "{from:?}");
}
