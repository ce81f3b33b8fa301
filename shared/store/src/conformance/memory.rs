//! Memory store cases: entries expire, sessions clear.

use super::*;

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
