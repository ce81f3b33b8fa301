//! Indexer store cases: sources, leases and cursors.

use super::*;

/// Sources, leases and cursors of one indexer store: register and list, one lease holder at
/// a time, cursors only by the holder, new settings keep status and cursors. Long because it
/// is one story against one store: each step reads the state the step before left.
pub async fn indexer_sources_leases_and_cursors(h: &Harness) {
    use crate::indexers::{IndexerSource, PollStatus};
    let ix = &h.stores.indexers;
    let repo = crate::indexers::SourceKey::new("acme", "acme.repo");
    let mut src = IndexerSource {
        id: "acme.repo".into(),
        kind: "git".into(),
        scope: Scope::client("acme"),
        config: serde_json::json!({"url": "https://example.com/r.git", "branches": ["main"]}),
        interval_secs: 60,
        enabled: true,
        created_at: 0,
        updated_at: 0,
        status: PollStatus::default(),
    };
    let stored = ix.put_source(&src, 1_000).await.expect("register");
    assert_eq!(
        (stored.created_at, stored.config["branches"][0].as_str()),
        (1_000, Some("main"))
    );
    let other = IndexerSource {
        id: "acme.mail".into(),
        kind: "mbox".into(),
        ..src.clone()
    };
    ix.put_source(&other, 1_000).await.expect("register");
    let git: Vec<String> = ix
        .list_sources(Some("git"))
        .await
        .expect("list")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(git, vec!["acme.repo"]);
    assert_eq!(ix.list_sources(None).await.expect("all").len(), 2);

    // One holder at a time; an expired lease moves; only the holder writes.
    assert!(ix.acquire(&repo, "a", 1_000, 2_000).await.expect("a"));
    assert!(
        !ix.acquire(&repo, "b", 1_000, 2_500)
            .await
            .expect("b refused")
    );
    assert!(
        ix.acquire(&repo, "a", 1_000, 2_600)
            .await
            .expect("a renews")
    );
    assert!(
        !ix.acquire(
            &crate::indexers::SourceKey::new("acme", "missing"),
            "a",
            1_000,
            2_600
        )
        .await
        .expect("missing")
    );
    assert!(
        ix.put_cursor(&repo, "a", "main", &serde_json::json!({"tip": "c1"}))
            .await
            .expect("cursor")
    );
    assert!(
        ix.acquire(&repo, "b", 1_000, 3_600)
            .await
            .expect("b takes over after expiry")
    );
    assert!(
        !ix.put_cursor(&repo, "a", "main", &serde_json::json!({"tip": "old"}))
            .await
            .expect("stale")
    );
    assert!(
        !ix.record_poll(&repo, "a", 3_700, None, &serde_json::json!({}))
            .await
            .expect("stale")
    );
    assert!(
        ix.put_cursor(&repo, "b", "main", &serde_json::json!({"tip": "c2"}))
            .await
            .expect("cursor")
    );
    assert!(
        ix.put_cursor(&repo, "b", "dev", &serde_json::json!({"tip": "d1"}))
            .await
            .expect("cursor")
    );
    assert_eq!(
        ix.get_cursor(&repo, "main").await.expect("get"),
        Some(serde_json::json!({"tip": "c2"}))
    );
    // A failed poll, then a successful one.
    for (at, error, commits) in [(3_800, Some("fetch failed"), 0), (3_900, None, 7)] {
        let stats = serde_json::json!({ "commits": commits });
        let polled = ix.record_poll(&repo, "b", at, error, &stats).await;
        assert!(polled.expect("poll"), "{at}");
    }
    let now = ix.get_source(&repo).await.expect("get").expect("exists");
    assert_eq!(now.status.last_poll_at, Some(3_900));
    assert_eq!(now.status.last_success_at, Some(3_900));
    assert_eq!(now.status.last_error, None);
    assert_eq!(now.status.stats["commits"], 7);
    assert_eq!(now.status.owner.as_deref(), Some("b"));

    // New settings keep status and cursors.
    src.interval_secs = 5;
    let updated = ix.put_source(&src, 4_000).await.expect("update");
    assert_eq!(
        (
            updated.interval_secs,
            updated.created_at,
            updated.updated_at
        ),
        (5, 1_000, 4_000)
    );
    assert_eq!(updated.status.stats["commits"], 7);
    assert!(
        ix.delete_cursor(&repo, "b", "dev")
            .await
            .expect("delete cursor")
    );
    let keys: Vec<String> = ix
        .list_cursors(&repo)
        .await
        .expect("cursors")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, vec!["main"]);

    ix.release(&repo, "a")
        .await
        .expect("not the holder: nothing happens");
    assert!(
        !ix.acquire(&repo, "a", 1_000, 4_100)
            .await
            .expect("still b's")
    );
    ix.release(&repo, "b").await.expect("release");
    assert!(
        ix.acquire(&repo, "a", 1_000, 4_100)
            .await
            .expect("free again")
    );

    assert!(ix.delete_source(&repo).await.expect("delete"));
    assert!(!ix.delete_source(&repo).await.expect("gone"));
    assert!(ix.get_source(&repo).await.expect("get").is_none());
    assert!(ix.list_cursors(&repo).await.expect("cursors").is_empty());
}

/// Source ids belong to their client: the same id registered by two clients is two sources,
/// with their own settings, scope, lease and cursors; one's removal leaves the other. Long
/// because it is one story against one store.
pub async fn indexer_source_ids_are_per_client(h: &Harness) {
    use crate::indexers::{IndexerSource, PollStatus, SourceKey};
    let ix = &h.stores.indexers;
    let source = |client: &str, path: &str| IndexerSource {
        id: "docs".into(),
        kind: "documents".into(),
        scope: Scope::client(client),
        config: serde_json::json!({ "path": path }),
        interval_secs: 60,
        enabled: true,
        created_at: 0,
        updated_at: 0,
        status: PollStatus::default(),
    };
    let (a, b) = (
        SourceKey::new("acme", "docs"),
        SourceKey::new("beta", "docs"),
    );
    ix.put_source(&source("acme", "/srv/a"), 1_000)
        .await
        .expect("acme registers");
    ix.put_source(&source("beta", "/srv/b"), 1_100)
        .await
        .expect("beta registers the same id");
    let (got_a, got_b) = (
        ix.get_source(&a).await.expect("get").expect("acme's"),
        ix.get_source(&b).await.expect("get").expect("beta's"),
    );
    assert_eq!(got_a.config["path"], "/srv/a");
    assert_eq!(got_b.config["path"], "/srv/b");
    assert_eq!(got_b.scope, Scope::client("beta"));
    assert_eq!(got_b.created_at, 1_100);
    assert_eq!(
        ix.list_sources(Some("documents"))
            .await
            .expect("list")
            .len(),
        2
    );
    // Leases and cursors apart.
    assert!(ix.acquire(&a, "r1", 1_000, 2_000).await.expect("a"));
    assert!(
        ix.acquire(&b, "r2", 1_000, 2_000)
            .await
            .expect("b is its own")
    );
    assert!(
        ix.put_cursor(&a, "r1", "file:x", &serde_json::json!("a"))
            .await
            .expect("a's cursor")
    );
    assert!(
        !ix.put_cursor(&b, "r1", "file:x", &serde_json::json!("a"))
            .await
            .expect("r1 does not hold b")
    );
    assert!(
        ix.put_cursor(&b, "r2", "file:x", &serde_json::json!("b"))
            .await
            .expect("b's cursor")
    );
    assert_eq!(
        ix.get_cursor(&a, "file:x").await.expect("get"),
        Some(serde_json::json!("a"))
    );
    assert_eq!(
        ix.get_cursor(&b, "file:x").await.expect("get"),
        Some(serde_json::json!("b"))
    );
    // One client's new settings and removal leave the other's source alone.
    ix.put_source(&source("acme", "/srv/a2"), 1_200)
        .await
        .expect("update");
    assert_eq!(
        ix.get_source(&b)
            .await
            .expect("get")
            .expect("beta's")
            .config["path"],
        "/srv/b"
    );
    assert!(ix.delete_source(&a).await.expect("delete"));
    assert!(ix.get_source(&a).await.expect("get").is_none());
    assert_eq!(
        ix.list_cursors(&b).await.expect("cursors").len(),
        1,
        "beta's cursors stay"
    );
    assert!(ix.get_source(&b).await.expect("get").is_some());
}
