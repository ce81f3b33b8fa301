//! Indexer store cases: sources, leases and cursors.

use super::*;

/// Sources, leases and cursors of one indexer store: register and list, one lease holder at
/// a time, cursors only by the holder, new settings keep status and cursors. Long because it
/// is one story against one store: each step reads the state the step before left.
pub async fn indexer_sources_leases_and_cursors(h: &Harness) {
    use crate::indexers::{IndexerSource, PollStatus};
    let ix = &h.stores.indexers;
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
    assert!(ix.acquire("acme.repo", "a", 1_000, 2_000).await.expect("a"));
    assert!(
        !ix.acquire("acme.repo", "b", 1_000, 2_500)
            .await
            .expect("b refused")
    );
    assert!(
        ix.acquire("acme.repo", "a", 1_000, 2_600)
            .await
            .expect("a renews")
    );
    assert!(
        !ix.acquire("missing", "a", 1_000, 2_600)
            .await
            .expect("missing")
    );
    assert!(
        ix.put_cursor("acme.repo", "a", "main", &serde_json::json!({"tip": "c1"}))
            .await
            .expect("cursor")
    );
    assert!(
        ix.acquire("acme.repo", "b", 1_000, 3_600)
            .await
            .expect("b takes over after expiry")
    );
    assert!(
        !ix.put_cursor("acme.repo", "a", "main", &serde_json::json!({"tip": "old"}))
            .await
            .expect("stale")
    );
    assert!(
        !ix.record_poll("acme.repo", "a", 3_700, None, &serde_json::json!({}))
            .await
            .expect("stale")
    );
    assert!(
        ix.put_cursor("acme.repo", "b", "main", &serde_json::json!({"tip": "c2"}))
            .await
            .expect("cursor")
    );
    assert!(
        ix.put_cursor("acme.repo", "b", "dev", &serde_json::json!({"tip": "d1"}))
            .await
            .expect("cursor")
    );
    assert_eq!(
        ix.get_cursor("acme.repo", "main").await.expect("get"),
        Some(serde_json::json!({"tip": "c2"}))
    );
    // A failed poll, then a successful one.
    for (at, error, commits) in [(3_800, Some("fetch failed"), 0), (3_900, None, 7)] {
        let stats = serde_json::json!({ "commits": commits });
        let polled = ix.record_poll("acme.repo", "b", at, error, &stats).await;
        assert!(polled.expect("poll"), "{at}");
    }
    let now = ix
        .get_source("acme.repo")
        .await
        .expect("get")
        .expect("exists");
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
        ix.delete_cursor("acme.repo", "b", "dev")
            .await
            .expect("delete cursor")
    );
    let keys: Vec<String> = ix
        .list_cursors("acme.repo")
        .await
        .expect("cursors")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, vec!["main"]);

    ix.release("acme.repo", "a")
        .await
        .expect("not the holder: nothing happens");
    assert!(
        !ix.acquire("acme.repo", "a", 1_000, 4_100)
            .await
            .expect("still b's")
    );
    ix.release("acme.repo", "b").await.expect("release");
    assert!(
        ix.acquire("acme.repo", "a", 1_000, 4_100)
            .await
            .expect("free again")
    );

    assert!(ix.delete_source("acme.repo").await.expect("delete"));
    assert!(!ix.delete_source("acme.repo").await.expect("gone"));
    assert!(ix.get_source("acme.repo").await.expect("get").is_none());
    assert!(
        ix.list_cursors("acme.repo")
            .await
            .expect("cursors")
            .is_empty()
    );
}
