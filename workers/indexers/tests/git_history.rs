//! The git indexer end to end over the embedded store: history, structure and identities of
//! a repository built with libgit2, and this project's own history, cloned through the mirror
//! path and checked against `git show --name-status`.

use std::collections::BTreeSet;
use std::path::Path;

use evident_code::skip::SkipReason;
use evident_core::{Locator, keys};
use git2::Repository;

mod support;

use support::git::{LIB_RS, cfg_path, commit, harness, init_repo};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_structure_and_identities_are_indexed_exactly() {
    let h = harness().await;
    let work = h.dir.path().join("shop");
    let repo = init_repo(&work);
    let jan = ("Jan Novák", "jan@example.com");
    let big = vec![b'x'; 2 * 1024 * 1024];
    let c1 = commit(
        &repo,
        &[
            ("src/lib.rs", Some(LIB_RS.as_bytes())),
            ("README.md", Some(b"# Shop\n\nSells things.\n")),
            ("vendor/lib/jquery.js", Some(b"var $ = 1;\n")),
            ("assets/big.txt", Some(&big)),
            ("assets/logo.bin", Some(b"\x89PNG\0\0\0")),
            (
                "src/legacy.py",
                Some(b"# caf\xe9 = coffee\ndef brew():\n    return 1\n"),
            ),
            ("src/broken.rs", Some(b"pub fn ok() {}\npub fn broken( {\n")),
        ],
        "Initial import",
        jan,
    );
    let c2 = commit(
        &repo,
        &[
            (
                "src/lib.rs",
                Some(
                    LIB_RS
                        .replace("values().sum()", "values().copied().sum()")
                        .as_bytes(),
                ),
            ),
            ("README.md", None),
            ("docs/README.md", Some(b"# Shop\n\nSells things.\n")),
        ],
        "Fix totals, fixes #12 and refs SHOP-7",
        jan,
    );
    h.register("acme.shop", cfg_path("shop", &work, &[])).await;
    let report = h.poll("acme.shop").await;
    assert_eq!(report.new_commits, 2);
    assert_eq!(
        report.skipped.get(&SkipReason::Vendored),
        Some(&1),
        "{report:?}"
    );
    assert_eq!(
        report.skipped.get(&SkipReason::Oversized),
        Some(&1),
        "{report:?}"
    );
    assert_eq!(
        report.skipped.get(&SkipReason::Binary),
        Some(&1),
        "{report:?}"
    );
    assert!(h.drain().await >= 3);

    // Structure: repository → branch → file → class → method, imports.
    let file = keys::file("shop", "src/lib.rs");
    let cart = keys::symbol("shop", "Cart");
    assert!(h.out_edges(&keys::repository("shop")).await.contains(&(
        "has_branch".into(),
        keys::branch("shop", "main").as_str().into()
    )));
    assert!(
        h.out_edges(&keys::branch("shop", "main"))
            .await
            .contains(&("contains_file".into(), file.as_str().into()))
    );
    let file_edges = h.out_edges(&file).await;
    assert!(
        file_edges.contains(&("contains".into(), cart.as_str().into())),
        "{file_edges:?}"
    );
    assert!(
        file_edges.contains(&("imports".into(), "import:std.collections.HashMap".into())),
        "{file_edges:?}"
    );
    assert!(h.out_edges(&cart).await.contains(&(
        "has_method".into(),
        keys::callable("shop", "Cart::total").as_str().into()
    )));
    // The Latin-1 file and the broken file are indexed anyway; the rules' skips are not.
    assert!(h.node_exists(&keys::callable("shop", "legacy.brew")).await);
    assert!(h.node_exists(&keys::callable("shop", "broken::ok")).await);
    assert!(
        h.source_urns("git:acme.shop:blob:main:vendor")
            .await
            .is_empty()
    );
    assert!(
        h.source_urns("git:acme.shop:blob:main:assets")
            .await
            .is_empty()
    );
    assert_eq!(
        h.source_urns("git:acme.shop:blob:main:README.md")
            .await
            .len(),
        0,
        "moved away"
    );
    assert_eq!(
        h.source_urns("git:acme.shop:blob:main:docs/README.md")
            .await
            .len(),
        1
    );

    // History: commits, parents, file changes with status, people, issues, branch links.
    let (k1, k2) = (keys::commit(&c1.to_string()), keys::commit(&c2.to_string()));
    let e2 = h.out_edges(&k2).await;
    for want in [
        ("parent", k1.as_str().to_string()),
        (
            "modifies",
            keys::file("shop", "src/lib.rs").as_str().to_string(),
        ),
        (
            "renames",
            keys::file("shop", "docs/README.md").as_str().to_string(),
        ),
        ("authored_by", "user:jan_example_com".to_string()),
        ("fixes", "github:acme_shop_12".to_string()),
        ("references", "jira:shop-7".to_string()),
    ] {
        assert!(
            e2.contains(&(want.0.to_string(), want.1.clone())),
            "{want:?} in {e2:?}"
        );
    }
    let e1 = h.out_edges(&k1).await;
    assert!(e1.contains(&(
        "creates".into(),
        keys::file("shop", "src/lib.rs").as_str().into()
    )));
    let main = h.out_edges(&keys::branch("shop", "main")).await;
    assert!(
        main.contains(&("has_commit".into(), k1.as_str().into()))
            && main.contains(&("has_commit".into(), k2.as_str().into()))
    );
    // The author's name resolves to their e-mail identity.
    let resolved =
        h.kb.stores()
            .aliases
            .resolve(
                "acme",
                &[evident_core::refs::normalize_ref("user:Jan Novák").expect("key")],
            )
            .await
            .expect("resolve");
    assert_eq!(resolved[0].as_str(), "user:jan_example_com");
    // Graph search finds a commit by hash.
    let found =
        h.kb.stores()
            .graph
            .search_nodes(&h.vis(), &c2.to_string()[..10], Some("commit"), 10)
            .await
            .expect("search");
    assert_eq!(found.len(), 1);

    // Diff chunks cite file, line span and commit.
    let hits =
        h.kb.retrieve(&{
            let mut r = evident_kb::RetrieveQuery::new("copied sum totals", Some("acme"));
            r.kinds = vec!["git-diff".into()];
            r
        })
        .await
        .expect("retrieve");
    let diff = hits
        .items
        .iter()
        .find(|i| i.content.contains("copied().sum()"))
        .expect("diff hit");
    match &diff.locator {
        Locator::File {
            path,
            commit,
            line_start,
            ..
        } => {
            assert_eq!(path, "src/lib.rs");
            assert_eq!(commit.as_deref(), Some(c2.to_string().as_str()));
            assert!(*line_start >= 7);
        }
        other => panic!("{other:?}"),
    }

    // Nothing new: the next poll queues nothing.
    let again = h.poll("acme.shop").await;
    assert_eq!((again.changed_branches, again.tasks), (0, 0));
    // What was skipped stays visible in the source's status after quiet polls.
    let status =
        h.kb.stores()
            .indexers
            .get_source(&evident_store::indexers::SourceKey::new(
                "acme",
                "acme.shop",
            ))
            .await
            .expect("get")
            .expect("source")
            .status;
    assert_eq!(
        status.stats["totals"]["skipped"]["vendored"], 1,
        "{}",
        status.stats
    );
    assert_eq!(status.stats["totals"]["newCommits"], 2);
    assert!(
        status.stats["totals"]["skippedExamples"]
            .as_array()
            .is_some_and(|a| a.iter().any(|e| e
                .as_str()
                .is_some_and(|e| e.contains("vendor/lib/jquery.js"))))
    );
    let report = h.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
}

/// This repository's own history, fetched through the mirror path (a `file://` URL), checked
/// commit by commit against `git show --name-status`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn this_projects_history_matches_git_name_status() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Ok(own) = Repository::open(&root) else {
        eprintln!(
            "NOTICE: {} is not a git repository (a source tarball?); the real-history check cannot run here",
            root.display()
        );
        return;
    };
    let head = own.head().expect("head").peel_to_commit().expect("commit");
    let h = harness().await;
    let mut cfg = cfg_path("evident", Path::new("/x"), &[]);
    cfg.path = None;
    cfg.url = Some(format!(
        "file://{}",
        root.canonicalize().expect("root").display()
    ));
    cfg.branches = vec![];
    // Follow whatever HEAD's branch is (CI may check out a detached or differently named head).
    let branch_name = own
        .head()
        .ok()
        .and_then(|h| h.shorthand().map(str::to_string))
        .unwrap_or_else(|| "main".into());
    if branch_name != "HEAD" {
        cfg.branches = vec![branch_name.clone()];
    } else {
        eprintln!("NOTICE: detached HEAD; following the remote's default branch");
    }
    h.register("self", cfg).await;
    let report = h.poll("self").await;
    assert!(report.new_commits >= 1, "{report:?}");
    h.drain().await;

    // Sample commits across the history (all of them when there are few).
    let mut walk = own.revwalk().expect("walk");
    walk.push(head.id()).expect("push");
    walk.simplify_first_parent().expect("first parent");
    let all: Vec<git2::Oid> = walk.map(|o| o.expect("oid")).collect();
    let step = (all.len() / 12).max(1);
    let mut checked = 0;
    for oid in all.iter().step_by(step) {
        let out = std::process::Command::new("git")
            .current_dir(&root)
            .args([
                "show",
                "--first-parent",
                "-m",
                "-M",
                "--name-status",
                "--format=",
                &oid.to_string(),
            ])
            .output()
            .expect("git show");
        assert!(out.status.success());
        let mut expected: BTreeSet<(String, String)> = BTreeSet::new();
        for line in String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
        {
            let parts: Vec<&str> = line.split('\t').collect();
            let status = &parts[0][..1];
            let (edge, path) = match status {
                "A" | "C" => ("creates", parts[parts.len() - 1]),
                "D" => ("deletes", parts[1]),
                "R" => ("renames", parts[2]),
                _ => ("modifies", parts[1]),
            };
            expected.insert((
                edge.to_string(),
                keys::file("evident", path).as_str().to_string(),
            ));
        }
        let got: BTreeSet<(String, String)> = h
            .out_edges(&keys::commit(&oid.to_string()))
            .await
            .into_iter()
            .filter(|(t, _)| ["creates", "deletes", "renames", "modifies"].contains(&t.as_str()))
            .collect();
        assert_eq!(got, expected, "commit {oid}");
        checked += 1;
    }
    assert!(checked >= 1);
    eprintln!(
        "checked {checked} of {} commits against git show --name-status",
        all.len()
    );
}
