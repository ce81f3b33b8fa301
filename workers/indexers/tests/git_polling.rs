//! The git indexer end to end over the embedded store: a restart mid-way, unusable
//! repositories as per-source errors, and a replica whose mirror is behind the tasks it runs.

use std::path::Path;
use std::sync::Arc;

use evident_core::keys;
use evident_indexers::git::GitPoller;
use evident_store::queue::Clock;

mod support;

use support::git::{Harness, LIB_RS, cfg_path, commit, harness, harness_in, init_repo};

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
            .get_source(&evident_store::indexers::SourceKey::new("acme", "r"))
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
        .delete_cursor(
            &evident_store::indexers::SourceKey::new("acme", "r"),
            "test-poller",
            "branch:main",
        )
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
        async move {
            ix.get_source(&evident_store::indexers::SourceKey::new("acme", id))
                .await
                .expect("get")
                .expect("source")
        }
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
            .get_source(&evident_store::indexers::SourceKey::new("acme", "shop"))
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
