//! Memory store cases: entries expire, sessions clear.

use super::*;

/// Memory entries: put, replace (creation kept, expiry moved), expire (invisible at once),
/// purge, clear a session. Long because it is one session's story under one paused clock:
/// each step reads what the step before left.
pub async fn memory_entries_expire_and_sessions_clear(h: &Harness) {
    use crate::memory::MemoryEntry;
    let m = &h.stores.memory;
    let entry =
        |session: &str, key: &str, value: serde_json::Value, at: i64, ttl: i64| MemoryEntry {
            client_id: "c1".into(),
            session_id: session.into(),
            key: key.into(),
            value,
            created_at: at,
            updated_at: at,
            expires_at: at + ttl,
        };
    let now = 1_000_000;
    m.put(entry(
        "s1",
        "goal",
        serde_json::json!({"text": "ship the importer"}),
        now,
        60_000,
    ))
    .await
    .expect("put");
    m.put(entry("s1", "step", serde_json::json!(3), now, 1_000))
        .await
        .expect("put");
    m.put(entry(
        "s2",
        "goal",
        serde_json::json!("other session"),
        now,
        60_000,
    ))
    .await
    .expect("put");
    let got = m
        .get("c1", "s1", "goal", now + 10)
        .await
        .expect("get")
        .expect("live");
    assert_eq!(got.value["text"], "ship the importer");
    assert!(
        m.get("c2", "s1", "goal", now).await.expect("get").is_none(),
        "clients are apart"
    );
    // Replacing keeps the creation time and moves the expiry.
    let replaced = m
        .put(entry(
            "s1",
            "goal",
            serde_json::json!("changed"),
            now + 500,
            60_000,
        ))
        .await
        .expect("replace");
    assert_eq!(replaced.created_at, now);
    assert_eq!(replaced.expires_at, now + 500 + 60_000);
    // Expired entries are invisible at once, purged or not.
    let live: Vec<String> = m
        .list("c1", "s1", now + 1_000)
        .await
        .expect("list")
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(live, vec!["goal"]);
    assert!(
        m.get("c1", "s1", "step", now + 1_000)
            .await
            .expect("get")
            .is_none()
    );
    m.purge_expired(now + 1_000).await.expect("purge");
    assert!(
        !m.delete("c1", "s1", "step").await.expect("delete"),
        "purged"
    );
    assert_eq!(m.delete_session("c1", "s1").await.expect("clear"), 1);
    assert!(m.list("c1", "s1", now).await.expect("list").is_empty());
    assert_eq!(
        m.list("c1", "s2", now).await.expect("list").len(),
        1,
        "other sessions stay"
    );
}

/// The session log: newest first, one log per (client, project), the oldest evicted beyond
/// the limit, expired entries invisible at once and purged.
/// Long because it is one log's story under one paused clock: eviction and expiry are read
/// from what the appends before left.
pub async fn session_log_evicts_expires_and_keeps_logs_apart(h: &Harness) {
    use crate::memory::{SessionEntry, SessionSource};
    let m = &h.stores.memory;
    let entry = |client: &str, project: Option<&str>, at: i64, summary: &str| SessionEntry {
        client_id: client.into(),
        project_id: project.map(str::to_string),
        timestamp: at,
        source: SessionSource::Chat,
        summary: summary.into(),
        details: Some(serde_json::json!({"at": at})),
        task_id: Some(format!("T-{at}")),
        expires_at: at + 10_000,
    };
    let now = 1_000_000;
    let mut evicted = 0;
    for i in 0..6 {
        evicted += m
            .session_append(entry("c1", Some("p1"), now + i, &format!("e{i}")), 4)
            .await
            .expect("append");
    }
    assert_eq!(evicted, 2, "the 5th and 6th entries evict the two oldest");
    // Two entries in the same millisecond keep their append order.
    for (client, project, summary) in [
        ("c1", Some("p2"), "first"),
        ("c1", Some("p2"), "second"),
        ("c1", None, "client level"),
        ("c2", Some("p1"), "other client"),
    ] {
        m.session_append(entry(client, project, now, summary), 4)
            .await
            .expect("append");
    }

    let p1 = m
        .session_recent("c1", Some("p1"), now + 10, 50)
        .await
        .expect("recent");
    assert_eq!(p1[0].details, Some(serde_json::json!({"at": now + 5})));
    assert_eq!(p1[0].task_id.as_deref(), Some("T-1000005"));
    assert_eq!(p1[0].project_id.as_deref(), Some("p1"));
    let summaries = |v: Vec<SessionEntry>| v.into_iter().map(|e| e.summary).collect::<Vec<_>>();
    assert_eq!(summaries(p1), ["e5", "e4", "e3", "e2"]);
    for (client, project, limit, want, why) in [
        ("c1", Some("p1"), 2, &["e5", "e4"][..], "limit"),
        (
            "c1",
            Some("p2"),
            50,
            &["second", "first"],
            "same millisecond",
        ),
        (
            "c1",
            None,
            50,
            &["client level"],
            "the client's own log holds no project's entries",
        ),
        ("c2", Some("p1"), 50, &["other client"], "other client"),
    ] {
        let got = m.session_recent(client, project, now + 10, limit).await;
        assert_eq!(summaries(got.expect("recent")), want, "{why}");
    }
    // Past their expiry: invisible at once, then purged.
    let later = now + 10_003;
    assert_eq!(
        summaries(
            m.session_recent("c1", Some("p1"), later, 50)
                .await
                .expect("recent")
        ),
        ["e5", "e4"]
    );
    let purged = m.purge_expired(now + 20_000).await.expect("purge");
    assert!(purged >= 8, "every log entry expired: {purged}");
    assert!(
        m.session_recent("c1", Some("p1"), now, 50)
            .await
            .expect("recent")
            .is_empty(),
        "purged entries are gone"
    );
}
