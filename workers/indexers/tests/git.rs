//! The git indexer end to end over the embedded store: repositories built with libgit2 for
//! exact cases (renames, deletes, merges, force-push, deleted branches, bad files), and this
//! project's own history, cloned through the mirror path and checked against
//! `git show --name-status`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use evident_ai::Priority;
use evident_code::chunks::CodeChunking;
use evident_core::{Locator, NodeKey, Scope, Visibility, keys};
use evident_indexers::access::Access;
use evident_indexers::git::{GitPoller, GitSourceConfig, GitTasks, PollReport};
use evident_kb::{Kb, TaskHandlers, TaskSubmitter};
use evident_qualifier::{Qualifier, QueueConfig};
use evident_store::indexers::{IndexerSource, PollStatus};
use evident_store::queue::{Clock, ManualClock, PriorityBand};
use evident_store::{Direction, TraverseOptions};
use evident_store_embedded::EmbeddedStore;
use git2::{Repository, Signature};

mod support;

struct Harness {
    store: EmbeddedStore,
    kb: Kb,
    poller: GitPoller,
    qualifier: Qualifier,
    clock: Arc<ManualClock>,
    dir: tempfile::TempDir,
}

/// Repositories of these tests live in temporary folders (some outside the harness's own) and,
/// for one, in this checkout; fake remotes listen on loopback.
fn test_access() -> Access {
    let mut access = Access::for_tests(&std::env::temp_dir());
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    access.roots = access.roots.with([checkout]);
    access
}

async fn harness_in(dir: tempfile::TempDir) -> Harness {
    let (store, kb) = support::open_kb(dir.path()).await;
    let clock = Arc::new(ManualClock::new(1_000_000));
    let mirrors = dir.path().join("mirrors");
    let mut handlers = TaskHandlers::new(&kb);
    GitTasks {
        kb: kb.clone(),
        indexers: kb.stores().indexers.clone(),
        mirrors: mirrors.clone(),
        code_chunking: CodeChunking::default(),
        doc_chunking: Default::default(),
        parallel: 4,
        access: test_access(),
    }
    .register(&mut handlers);
    let queue = kb.stores().queue.clone();
    let poller = GitPoller {
        ctx: evident_indexers::poll::PollContext {
            indexers: kb.stores().indexers.clone(),
            tasks: TaskSubmitter::new(kb.stores().queue.clone()),
            owner: "test-poller".into(),
            clock: clock.clone(),
            priority: Priority::DEFAULT,
            access: test_access(),
        },
        mirrors,
        batches: Default::default(),
    };
    let qualifier = Qualifier {
        queue,
        handlers,
        clock: clock.clone(),
        config: QueueConfig::default(),
        worker_id: "test-worker".into(),
        band: PriorityBand::ALL,
    };
    Harness {
        store,
        kb,
        poller,
        qualifier,
        clock,
        dir,
    }
}

async fn harness() -> Harness {
    harness_in(tempfile::tempdir().expect("tmp")).await
}

impl Harness {
    async fn register(&self, id: &str, cfg: GitSourceConfig) -> IndexerSource {
        let s = IndexerSource {
            id: id.into(),
            kind: "git".into(),
            scope: Scope::client("acme"),
            config: serde_json::to_value(cfg).expect("config"),
            interval_secs: 60,
            enabled: true,
            created_at: 0,
            updated_at: 0,
            status: PollStatus::default(),
        };
        self.kb
            .stores()
            .indexers
            .put_source(&s, self.clock.now_ms())
            .await
            .expect("register")
    }

    async fn poll(&self, id: &str) -> PollReport {
        let s = self
            .kb
            .stores()
            .indexers
            .get_source(id)
            .await
            .expect("get")
            .expect("registered");
        self.poller.poll(&s).await.expect("poll").expect("lease")
    }

    /// Runs every queued task; panics on a task that does not end `done`.
    async fn drain(&self) -> usize {
        let d = support::drain(&self.qualifier, &self.kb).await;
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        d.done
    }

    fn vis(&self) -> Visibility {
        Visibility::of(Scope::client("acme"))
    }

    async fn node_exists(&self, key: &NodeKey) -> bool {
        !self
            .kb
            .stores()
            .graph
            .get_nodes(&self.vis(), std::slice::from_ref(key))
            .await
            .expect("get")
            .is_empty()
    }

    /// Edges `(type, to)` out of `from` (one hop).
    async fn out_edges(&self, from: &NodeKey) -> BTreeSet<(String, String)> {
        let sub = self
            .kb
            .stores()
            .graph
            .traverse(
                &self.vis(),
                std::slice::from_ref(from),
                &TraverseOptions {
                    max_depth: 1,
                    direction: Direction::Out,
                    edge_types: vec![],
                    max_nodes: 100_000,
                },
            )
            .await
            .expect("traverse");
        sub.edges
            .into_iter()
            .map(|e| (e.edge_type, e.to.as_str().to_string()))
            .collect()
    }

    async fn source_urns(&self, prefix: &str) -> Vec<String> {
        self.kb
            .stores()
            .sources
            .list_prefix("acme", prefix, None, 100_000)
            .await
            .expect("list")
            .into_iter()
            .map(|r| r.source_urn)
            .collect()
    }
}

fn cfg_path(name: &str, path: &Path, branches: &[&str]) -> GitSourceConfig {
    GitSourceConfig {
        name: name.into(),
        url: None,
        path: Some(path.to_path_buf()),
        branches: branches.iter().map(|b| b.to_string()).collect(),
        username_env: None,
        token_env: None,
        issue_tracker: Some("github:acme/shop".into()),
        max_file_bytes: 1024 * 1024,
    }
}

/// Writes `files` (path → content; `None` deletes) into the work tree and commits them on HEAD.
fn commit(
    repo: &Repository,
    files: &[(&str, Option<&[u8]>)],
    message: &str,
    who: (&str, &str),
) -> git2::Oid {
    let root = repo.workdir().expect("workdir");
    let mut index = repo.index().expect("index");
    for (path, content) in files {
        let full = root.join(path);
        match content {
            Some(bytes) => {
                std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
                std::fs::write(&full, bytes).expect("write");
                index.add_path(Path::new(path)).expect("add");
            }
            None => {
                std::fs::remove_file(&full).expect("rm");
                index.remove_path(Path::new(path)).expect("rm from index");
            }
        }
    }
    index.write().expect("index write");
    let tree = repo
        .find_tree(index.write_tree().expect("tree"))
        .expect("tree");
    let sig = Signature::now(who.0, who.1).expect("sig");
    let parents: Vec<git2::Commit<'_>> = repo
        .head()
        .ok()
        .and_then(|h| h.peel_to_commit().ok())
        .into_iter()
        .collect();
    let parent_refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parent_refs)
        .expect("commit")
}

const LIB_RS: &str = "//! Shop.\nuse std::collections::HashMap;\n\npub struct Cart {\n    items: HashMap<String, u32>,\n}\n\nimpl Cart {\n    pub fn total(&self) -> u32 {\n        self.items.values().sum()\n    }\n}\n";

fn init_repo(dir: &Path) -> Repository {
    let repo = Repository::init(dir).expect("init");
    // HEAD → main, whatever the system default.
    repo.set_head("refs/heads/main").expect("head");
    repo
}

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
    assert_eq!(report.skipped.get("vendored"), Some(&1), "{report:?}");
    assert_eq!(report.skipped.get("oversized"), Some(&1), "{report:?}");
    assert_eq!(report.skipped.get("binary"), Some(&1), "{report:?}");
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
            .get_source("acme.shop")
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
    repo.set_head("refs/heads/feature").expect("head");
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .expect("checkout");
    let feat = commit(
        &repo,
        &[("b.py", Some(b"def b():\n    return 2\n"))],
        "feature work",
        me,
    );
    repo.set_head("refs/heads/main").expect("head");
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .expect("checkout");
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
    repo.set_head("refs/heads/spike").expect("head");
    let spike = commit(
        &repo,
        &[("spike.py", Some(b"def spike():\n    pass\n"))],
        "spike",
        me,
    );
    repo.set_head("refs/heads/main").expect("head");
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .expect("checkout");

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_mid_way_loses_nothing_and_duplicates_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let work = dir.path().join("repo");
    let repo = init_repo(&work);
    for i in 0..30 {
        let body = format!("def f{i}():\n    return {i}\n");
        commit(
            &repo,
            &[(&format!("m{}.py", i % 7), Some(body.as_bytes()))],
            &format!("change {i}"),
            ("Bo", "bo@example.com"),
        );
    }
    let reference = {
        // The same history indexed without interruption, for comparison.
        let h = harness().await;
        h.register("r", cfg_path("r", &work, &[])).await;
        h.poll("r").await;
        h.drain().await;
        h.store.check_integrity().await.expect("integrity")
    };

    let h = harness_in(dir).await;
    let mut batches = h.poller.batches;
    batches.commits = 5;
    let poller = GitPoller {
        batches,
        ..h.poller.clone()
    };
    h.register("r", cfg_path("r", &work, &[])).await;
    let s =
        h.kb.stores()
            .indexers
            .get_source("r")
            .await
            .expect("get")
            .expect("source");
    poller.poll(&s).await.expect("poll").expect("lease");
    for _ in 0..3 {
        h.qualifier.process_next().await.expect("process");
    }
    // "Crash": drop everything, reopen the same data directory.
    let Harness { store, dir, .. } = h;
    store.close().expect("close");
    drop(store);
    let h = harness_in(dir).await;
    // The cursor had moved: nothing is planned twice, and the queue finishes the rest.
    let again = h.poll("r").await;
    assert_eq!(again.tasks, 0);
    h.drain().await;
    // A crash before the cursor moved re-plans everything: absorbed by idempotent handlers.
    h.kb.stores()
        .indexers
        .delete_cursor("r", "test-poller", "branch:main")
        .await
        .expect("forget cursor");
    let replanned = h.poll("r").await;
    assert!(replanned.tasks > 0);
    h.drain().await;
    let report = h.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(
        (report.chunks, report.nodes, report.edges),
        (reference.chunks, reference.nodes, reference.edges)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_repositories_are_clear_per_source_errors() {
    let h = harness().await;
    let not_a_repo = h.dir.path().join("nothing");
    std::fs::create_dir_all(&not_a_repo).expect("dir");
    h.register("bad", cfg_path("bad", &not_a_repo, &[])).await;
    let mut unreachable = cfg_path("far", Path::new("/x"), &[]);
    unreachable.path = None;
    unreachable.url = Some("https://127.0.0.1:9/nothing.git".into());
    h.register("far", unreachable).await;
    let work = h.dir.path().join("ok");
    let repo = init_repo(&work);
    commit(
        &repo,
        &[("ok.go", Some(b"package ok\n\nfunc Fine() {}\n"))],
        "ok",
        ("Cy", "cy@example.com"),
    );
    h.register("ok", cfg_path("ok", &work, &[])).await;

    assert_eq!(
        {
            let mut pollers = evident_indexers::poll::Pollers::default();
            pollers.add(Arc::new(h.poller.clone()));
            pollers
                .poll_due(h.kb.stores().indexers.as_ref(), h.clock.now_ms())
                .await
        },
        3,
        "every source polled; failures recorded, not fatal"
    );
    h.drain().await;
    let ix = h.kb.stores().indexers.clone();
    let get = |id: &'static str| {
        let ix = ix.clone();
        async move { ix.get_source(id).await.expect("get").expect("source") }
    };
    let bad = get("bad").await;
    assert!(
        bad.status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("nothing")),
        "{:?}",
        bad.status
    );
    let far = get("far").await;
    assert!(far.status.last_error.is_some(), "{:?}", far.status);
    assert!(get("ok").await.status.last_error.is_none());
    assert!(h.node_exists(&keys::callable("ok", "ok.Fine")).await);
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

/// Another replica polled: the tasks name a commit this worker's mirror does not have yet.
/// The worker fetches it before reading, through the same repository handle it reads with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_a_stale_mirror_fetches_the_commits_a_task_names() {
    let h = harness().await;
    let upstream = h.dir.path().join("upstream");
    let repo = init_repo(&upstream);
    let me = ("Ada Lovelace", "ada@example.com");
    commit(
        &repo,
        &[("src/lib.rs", Some(LIB_RS.as_bytes()))],
        "Start",
        me,
    );
    let mut cfg = cfg_path("shop", Path::new("/x"), &["main"]);
    cfg.path = None;
    cfg.url = Some(format!(
        "file://{}",
        upstream.canonicalize().expect("upstream").display()
    ));
    h.register("shop", cfg).await;
    h.poll("shop").await;
    h.drain().await;

    // Upstream moves on; a replica with its own mirror polls and queues the new commit.
    let newer = commit(
        &repo,
        &[(
            "src/pay.rs",
            Some(b"pub fn pay() -> u32 {\n    42\n}\n".as_slice()),
        )],
        "Add payments",
        me,
    );
    let mut replica = h.poller.clone();
    replica.mirrors = h.dir.path().join("replica-mirrors");
    let s =
        h.kb.stores()
            .indexers
            .get_source("shop")
            .await
            .expect("get")
            .expect("registered");
    let report = replica.poll(&s).await.expect("poll").expect("lease");
    assert_eq!(report.new_commits, 1, "{report:?}");
    h.drain().await;
    assert!(
        h.node_exists(&evident_core::keys::commit(&newer.to_string()))
            .await
    );
    assert!(
        h.node_exists(&evident_core::keys::file("shop", "src/pay.rs"))
            .await
    );
}

const CART_JAVA: &str = "package com.acme;\n\nimport java.util.List;\n\npublic class Cart {\n    private List<Integer> items;\n\n    public static Builder builder() {\n        return new Builder();\n    }\n\n    public int total() {\n        int sum = 0;\n        for (int i : items) { sum += i; }\n        return sum;\n    }\n\n    public static class Builder {\n        Cart build() { return new Cart(); }\n    }\n}\n";

/// The keys the README documents in its vocabulary section (the shop examples).
fn readme_example_keys() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README");
    let section = readme
        .split_once("Node types:")
        .and_then(|(_, rest)| rest.split_once("Edge types:"))
        .map(|(s, _)| s)
        .expect("vocabulary section");
    section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            ["repository:", "branch:", "file:", "symbol:", "import:"]
                .iter()
                .any(|ns| t.starts_with(ns))
        })
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distinct_paths_and_names_are_distinct_nodes_under_the_documented_keys() {
    let h = harness().await;
    let work = h.dir.path().join("shop");
    let repo = init_repo(&work);
    commit(
        &repo,
        &[
            ("a/b_c.rs", Some(b"pub fn one() {}\n")),
            ("a_b/c.rs", Some(b"pub fn two() {}\n")),
            ("src/Cart.java", Some(CART_JAVA.as_bytes())),
            (
                "src/cart.java",
                Some(b"package com.acme;\n\nclass cart {}\n"),
            ),
            (
                "src/lib.rs",
                Some(b"use std::sync::Arc;\n\npub fn f() {}\n"),
            ),
        ],
        "Two of each",
        ("Jan", "jan@example.com"),
    );
    h.register("acme.shop", cfg_path("shop", &work, &[])).await;
    h.poll("acme.shop").await;
    h.drain().await;

    let vis = h.vis();
    let documented = readme_example_keys();
    assert!(
        documented.len() >= 5 && documented.contains(&"file:shop/src/Cart.java".to_string()),
        "{documented:?}"
    );
    let mut expected: Vec<String> = documented;
    expected.extend(
        [
            "file:shop/a/b_c.rs",
            "file:shop/a_b/c.rs",
            "file:shop/src/cart.java",
            "symbol:shop/com.acme.Cart",
            "symbol:shop/com.acme.Cart.builder()",
            "symbol:shop/com.acme.Cart.Builder",
            "symbol:shop/com.acme.cart",
        ]
        .map(String::from),
    );
    for k in &expected {
        let found = h.kb.node(&vis, k).await.expect("node").key;
        if evident_core::refs::normalize_ref(k).is_some_and(|n| n.as_str() != k) {
            // An exact key is in the store as written, and names exactly that node.
            assert!(
                h.node_exists(&NodeKey::from_canonical(k.as_str())).await,
                "{k} is in the store"
            );
            assert_eq!(found.as_str(), k);
        }
    }
    // The old folded spellings still resolve (registered as aliases).
    for (old, now) in [
        ("import:java_util_list", "import:java.util.List"),
        (
            "symbol:shop_com_acme_cart_total",
            "symbol:shop/com.acme.Cart.total()",
        ),
        ("file:shop_a_b_c_rs", "file:shop/a/b_c.rs"),
    ] {
        let got = h.kb.node(&vis, old).await.expect("node").key;
        if old.starts_with("file:") {
            // Two files fold alike: the spelling names one of them.
            assert!(
                ["file:shop/a/b_c.rs", "file:shop/a_b/c.rs"].contains(&got.as_str()),
                "{got}"
            );
        } else {
            assert_eq!(got.as_str(), now);
        }
    }
    let report = h.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_indexed_under_the_old_keys_reindexes_itself() {
    let h = harness().await;
    let work = h.dir.path().join("shop");
    let repo = init_repo(&work);
    commit(
        &repo,
        &[("src/Cart.java", Some(CART_JAVA.as_bytes()))],
        "Cart",
        ("Jan", "jan@example.com"),
    );
    h.register("acme.shop", cfg_path("shop", &work, &[])).await;
    let first = h.poll("acme.shop").await;
    assert!(!first.reindexed, "a new source has nothing to re-read");
    h.drain().await;
    let reference = h.store.check_integrity().await.expect("integrity");

    // What an older data directory holds: the file under folded keys (scheme 1), and no
    // record of the key scheme.
    let ctx = evident_code::structure::RepoContext {
        source_id: "acme.shop".into(),
        repository: "shop".into(),
        scope: Scope::client("acme"),
    };
    let f = evident_code::structure::FileVersion {
        branch: "main",
        commit: None,
        path: "src/Cart.java",
        content: CART_JAVA,
    };
    let s = evident_code::structure::analyse(f.path, CART_JAVA).expect("parse");
    let mut old = evident_code::structure::file_source(&ctx, &f, &s, &CodeChunking::default())
        .expect("source");
    let fold = |k: &NodeKey| evident_core::refs::normalize_ref(k.as_str()).expect("folds");
    for n in &mut old.nodes {
        n.key = fold(&n.key);
    }
    for e in &mut old.edges {
        (e.from, e.to) = (fold(&e.from), fold(&e.to));
    }
    for c in &mut old.chunks {
        c.refs = c.refs.iter().map(fold).collect();
    }
    old.fingerprint = "scheme-1".into();
    h.kb.ingest_prepared(old, Priority::DEFAULT)
        .await
        .expect("old write");
    let old_file = NodeKey::from_canonical("file:shop_src_cart_java");
    assert!(h.node_exists(&old_file).await);
    h.kb.stores()
        .indexers
        .delete_cursor("acme.shop", "test-poller", "keys-version")
        .await
        .expect("forget the scheme");

    let again = h.poll("acme.shop").await;
    assert!(again.reindexed, "{again:?}");
    assert_eq!(again.files_queued, 1, "{again:?}");
    h.drain().await;
    assert!(!h.node_exists(&old_file).await, "old keys are gone");
    assert!(h.node_exists(&keys::file("shop", "src/Cart.java")).await);
    let after = h.store.check_integrity().await.expect("integrity");
    assert!(after.is_ok(), "{after:?}");
    assert_eq!(
        (after.chunks, after.nodes, after.edges),
        (reference.chunks, reference.nodes, reference.edges)
    );
    // Recorded: the next poll has nothing to do.
    assert_eq!(h.poll("acme.shop").await.tasks, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_without_a_known_extension_are_indexed_when_their_content_is_text() {
    let h = harness().await;
    let work = h.dir.path().join("r");
    let repo = init_repo(&work);
    commit(
        &repo,
        &[
            (".ci/run", Some(b"#!/bin/sh\nset -eu\ncargo nextest run\n")),
            ("tests/ui/parse.expected", Some(b"error: expected `;`\n")),
            (
                "LICENSE-MIT",
                Some(b"Permission is hereby granted, free of charge\n"),
            ),
            ("assets/logo.png", Some(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")),
            ("data/latin1", Some(b"caf\xe9 cr\xe8me\n")),
            ("src/main.rs", Some(b"fn main() {}\n")),
        ],
        "Scripts, outputs, licence and two non-text files",
        ("Jan", "jan@example.com"),
    );
    h.register("r", cfg_path("r", &work, &[])).await;
    let report = h.poll("r").await;
    assert_eq!(report.skipped.get("binary"), Some(&1), "{report:?}");
    assert_eq!(report.skipped.get("not_text"), Some(&1), "{report:?}");
    assert_eq!(report.files_queued, 4, "{report:?}");
    for example in ["assets/logo.png (binary)", "data/latin1 (not_text)"] {
        assert!(
            report.skipped_examples.iter().any(|e| e == example),
            "{example} in {:?}",
            report.skipped_examples
        );
    }
    h.drain().await;
    for path in [
        ".ci/run",
        "tests/ui/parse.expected",
        "LICENSE-MIT",
        "src/main.rs",
    ] {
        assert!(h.node_exists(&keys::file("r", path)).await, "{path}");
    }
    // Not indexed as files (their nodes exist only as what the commit created).
    for path in ["assets/logo.png", "data/latin1"] {
        assert!(
            h.source_urns(&format!("git:r:blob:main:{path}"))
                .await
                .is_empty(),
            "{path}"
        );
    }
    assert_eq!(h.source_urns("git:r:blob:main:").await.len(), 4);
}
