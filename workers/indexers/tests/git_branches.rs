//! The git indexer end to end over the embedded store: merges, force-pushes and deleted
//! branches leave the graph as the branches are.

use std::collections::BTreeSet;

use evident_core::keys;
use git2::Signature;

mod support;

use support::git::{cfg_path, checkout, commit, harness, init_repo};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merges_force_pushes_and_deleted_branches_leave_the_graph_as_the_branches_are() {
    let h = harness().await;
    let work = h.dir.path().join("repo");
    let repo = init_repo(&work);
    let me = ("Ada", "ada@example.com");
    let base = commit(
        &repo,
        &[("a.py", Some(b"def a():\n    return 1\n"))],
        "base",
        me,
    );
    // A feature branch with its own commit, merged back.
    repo.branch("feature", &repo.find_commit(base).expect("c"), false)
        .expect("branch");
    checkout(&repo, "feature");
    let feat = commit(
        &repo,
        &[("b.py", Some(b"def b():\n    return 2\n"))],
        "feature work",
        me,
    );
    checkout(&repo, "main");
    let on_main = commit(
        &repo,
        &[("c.py", Some(b"def c():\n    return 3\n"))],
        "main work",
        me,
    );
    let sig = Signature::now(me.0, me.1).expect("sig");
    let mut idx = repo
        .merge_commits(
            &repo.find_commit(on_main).expect("c"),
            &repo.find_commit(feat).expect("c"),
            None,
        )
        .expect("merge");
    let tree = repo
        .find_tree(idx.write_tree_to(&repo).expect("tree"))
        .expect("tree");
    let merge = repo
        .commit(
            Some("HEAD"),
            &sig,
            &sig,
            "Merge feature",
            &tree,
            &[
                &repo.find_commit(on_main).expect("c"),
                &repo.find_commit(feat).expect("c"),
            ],
        )
        .expect("merge commit");
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .expect("checkout");
    // A throwaway branch that will be deleted.
    repo.branch("spike", &repo.find_commit(merge).expect("c"), false)
        .expect("branch");
    checkout(&repo, "spike");
    let spike = commit(
        &repo,
        &[("spike.py", Some(b"def spike():\n    pass\n"))],
        "spike",
        me,
    );
    checkout(&repo, "main");

    h.register("r", cfg_path("r", &work, &["**"])).await;
    let report = h.poll("r").await;
    assert_eq!(report.branches, 3);
    h.drain().await;
    let main = keys::branch("r", "main");
    let links = |set: &BTreeSet<(String, String)>| -> BTreeSet<String> {
        set.iter()
            .filter(|(t, _)| t == "has_commit")
            .map(|(_, to)| to.clone())
            .collect()
    };
    let main_commits = links(&h.out_edges(&main).await);
    for c in [base, feat, on_main, merge] {
        assert!(
            main_commits.contains(keys::commit(&c.to_string()).as_str()),
            "{c} on main"
        );
    }
    // The merge's changes are against its first parent (what main gained: b.py).
    let m = h.out_edges(&keys::commit(&merge.to_string())).await;
    assert!(
        m.contains(&("creates".into(), keys::file("r", "b.py").as_str().into())),
        "{m:?}"
    );
    assert!(m.contains(&(
        "parent".into(),
        keys::commit(&feat.to_string()).as_str().into()
    )));

    // Force-push: main drops the merge and gains another commit.
    let mut main_ref = repo.find_reference("refs/heads/main").expect("main");
    main_ref.set_target(on_main, "force-push").expect("reset");
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .expect("checkout");
    let redo = commit(
        &repo,
        &[("d.py", Some(b"def d():\n    return 4\n"))],
        "redo",
        me,
    );
    // Delete the spike branch.
    repo.find_branch("spike", git2::BranchType::Local)
        .expect("spike")
        .delete()
        .expect("delete");

    let report = h.poll("r").await;
    // The merge and the feature commit it brought in are no longer on main.
    assert_eq!(
        (report.removed_commits, report.deleted_branches),
        (2, 1),
        "{report:?}"
    );
    h.drain().await;
    let main_commits = links(&h.out_edges(&main).await);
    assert!(
        !main_commits.contains(keys::commit(&merge.to_string()).as_str()),
        "the merge left main"
    );
    assert!(
        !main_commits.contains(keys::commit(&feat.to_string()).as_str()),
        "so did what it merged"
    );
    let feature_commits = links(&h.out_edges(&keys::branch("r", "feature")).await);
    assert!(
        feature_commits.contains(keys::commit(&feat.to_string()).as_str()),
        "still on feature"
    );
    assert!(main_commits.contains(keys::commit(&redo.to_string()).as_str()));
    // b.py came with the merge, which main no longer has: gone from main's files.
    assert!(h.source_urns("git:r:blob:main:b.py").await.is_empty());
    assert_eq!(h.source_urns("git:r:blob:main:d.py").await.len(), 1);
    // The merge is on no followed branch any more (spike is gone): purged, node and all.
    assert!(
        h.source_urns(&format!("git:r:commit:{merge}"))
            .await
            .is_empty()
    );
    assert!(!h.node_exists(&keys::commit(&merge.to_string())).await);
    // The spike's own commit and files are gone; shared history stays for main and feature.
    assert!(
        h.source_urns(&format!("git:r:commit:{spike}"))
            .await
            .is_empty()
    );
    assert!(h.source_urns("git:r:blob:spike:").await.is_empty());
    assert!(h.source_urns("git:r:overview:spike").await.is_empty());
    assert!(
        h.node_exists(&keys::commit(&feat.to_string())).await,
        "feature still holds it"
    );
    let report = h.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
}
