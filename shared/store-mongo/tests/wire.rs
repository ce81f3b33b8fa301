//! Wire tests: the exact commands each operation sends and how it reads the replies, against
//! recorded (command → reply) pairs in `tests/fixtures/*.json` (shapes from the MongoDB
//! manual's command reference, see `tests/fixtures/SOURCE.txt`). No server, no driver.

use std::sync::Arc;

use evident_core::{Scope, Visibility};
use evident_store::conformance::assert_error;
use evident_store::indexers::{IndexerSource, IndexerStore, PollStatus, SourceKey};
use evident_store::memory::{MemoryEntry, MemoryStore, SessionEntry, SessionSource};
use evident_store::queue::*;
use evident_store::{
    ErrorKind, Health, SourceRecord, SourceRecordWriter, SourceRegistry, SourceStatus,
};
use evident_store_mongo::{MongoStore, RecordedTransport};

const HASH: &str = "sha256:59ee5766c3d461e6d7c08ead0786f174229e6a3575ad6c9b324775fa2504318d";

fn fixture(file: &str, scenario: &str) -> (Arc<RecordedTransport>, MongoStore) {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture file");
    let transport =
        Arc::new(RecordedTransport::from_fixture(&text, scenario).expect("fixture scenario"));
    let store = MongoStore::new(transport.clone(), "evident");
    (transport, store)
}

fn payload() -> serde_json::Value {
    // Keys in sorted order: the same JSON text whether or not serde_json keeps insertion order.
    serde_json::json!({"type": "ingest", "urn": "urn:a", "v": 1})
}

fn new_task() -> NewTask {
    NewTask {
        kind: "ingest".into(),
        scope: Scope::client("c1"),
        source_urn: "urn:a".into(),
        priority: 4,
        payload: payload(),
    }
}

fn token(id: &str, epoch: i64) -> LeaseToken {
    LeaseToken {
        task_id: id.into(),
        epoch,
    }
}

/// The source the indexer scenarios use.
fn repo() -> SourceKey {
    SourceKey::new("acme", "acme.repo")
}

const T1: &str = "t000000000001";
const T2: &str = "t000000000002";
const T3: &str = "t000000000003";

// ---------------------------------------------------------------------------------------
// connect and health

#[tokio::test]
async fn open_pings_and_creates_every_index() {
    for scenario in [
        "open_pings_and_creates_indexes",
        "open_again_finds_the_indexes",
    ] {
        let (t, _) = fixture("connect.json", scenario);
        let store = MongoStore::open(t.clone(), "evident").await.expect("open");
        assert_eq!(store.database(), "evident");
        t.assert_done();
        assert!(t.databases().iter().all(|db| db == "evident"));
    }
}

#[tokio::test]
async fn refused_credentials_are_unavailable_with_a_hint() {
    let (t, _) = fixture("connect.json", "open_with_refused_credentials");
    let e = MongoStore::open(t.clone(), "evident")
        .await
        .err()
        .expect("refused");
    assert_error(&e, ErrorKind::Unavailable, "user and password");
    t.assert_done();
}

#[tokio::test]
async fn a_conflicting_index_is_incompatible() {
    let (t, _) = fixture("connect.json", "open_over_a_conflicting_index");
    let e = MongoStore::open(t.clone(), "evident")
        .await
        .err()
        .expect("conflict");
    assert_eq!(e.kind, ErrorKind::Incompatible);
    t.assert_done();
}

#[tokio::test]
async fn health_pings() {
    let (t, store) = fixture("connect.json", "health_ready");
    let r = store.check().await;
    assert_eq!(
        (r.backend.as_str(), r.ready, r.roles.clone()),
        (
            "mongo",
            true,
            vec![
                "queue".to_string(),
                "sources".into(),
                "indexers".into(),
                "memory".into(),
                "access".into(),
                "claims".into(),
                "procedures".into(),
                "gaps".into()
            ]
        )
    );
    t.assert_done();
    let (t, store) = fixture("connect.json", "health_down");
    let r = store.check().await;
    assert!(!r.ready);
    assert!(r.detail.is_some_and(|d| d.contains("no answer")));
    t.assert_done();
}

// ---------------------------------------------------------------------------------------
// queue

#[tokio::test]
async fn enqueue_stores_the_payload_once_and_marks_the_first_task_of_a_source() {
    let (t, store) = fixture("queue.json", "enqueue_on_a_new_source");
    let q: &dyn TaskQueue = &store;
    let rec = q.enqueue(new_task(), 1_000).await.expect("enqueue");
    assert_eq!(rec.task_id, T1);
    assert_eq!(
        (rec.state, rec.priority, rec.created_at, rec.attempts),
        (TaskState::Queued, 4, 1_000, 0)
    );
    assert_eq!(rec.scope, Scope::client("c1"));
    t.assert_done();
}

#[tokio::test]
async fn enqueue_survives_a_duplicate_key_on_the_payload() {
    let (t, store) = fixture("queue.json", "enqueue_after_a_duplicate_payload_race");
    let q: &dyn TaskQueue = &store;
    let rec = q.enqueue(new_task(), 1_001).await.expect("enqueue");
    assert_eq!(rec.task_id, T2);
    t.assert_done();
}

#[tokio::test]
async fn enqueue_promotes_itself_when_the_source_drained_meanwhile() {
    let (t, store) = fixture("queue.json", "enqueue_when_the_source_drained_meanwhile");
    let q: &dyn TaskQueue = &store;
    assert_eq!(
        q.enqueue(new_task(), 1_001).await.expect("enqueue").task_id,
        T2
    );
    t.assert_done();
}

#[tokio::test]
async fn claim_takes_the_first_eligible_head_with_its_payload() {
    let (t, store) = fixture("queue.json", "claim_takes_the_first_head");
    let q: &dyn TaskQueue = &store;
    let c = q
        .claim("w1", PriorityBand::ALL, 60_000, 2_000)
        .await
        .expect("claim")
        .expect("a task");
    assert_eq!(c.token, token(T1, 1));
    assert_eq!(
        (
            c.task.state,
            c.task.attempts,
            c.task.lease_owner.as_deref(),
            c.task.lease_expires_at
        ),
        (TaskState::Processing, 1, Some("w1"), Some(62_000))
    );
    assert_eq!(c.payload, payload());
    t.assert_done();
    let sent = t.sent();
    assert_eq!(
        sent[2]
            .get_document("filter")
            .ok()
            .map(|f| f.contains_key("$or")),
        Some(true),
        "the claim was verified"
    );
}

/// Nothing eligible, and a head task with an older unfinished one (undone): both claims
/// answer none.
#[tokio::test]
async fn claim_returns_none_with_nothing_eligible_or_an_older_unfinished_task() {
    for (case, band, now) in [
        ("claim_finds_nothing", PriorityBand::INTERACTIVE, 2_000),
        ("claim_undoes_a_stray_head", PriorityBand::ALL, 5_000),
    ] {
        let (t, store) = fixture("queue.json", case);
        let q: &dyn TaskQueue = &store;
        assert!(
            q.claim("w1", band, 60_000, now)
                .await
                .expect("claim")
                .is_none(),
            "{case}"
        );
        t.assert_done();
    }
}

#[tokio::test]
async fn a_write_conflict_is_a_retryable_conflict() {
    let (t, store) = fixture("queue.json", "claim_write_conflict_is_retryable");
    let q: &dyn TaskQueue = &store;
    let e = q
        .claim("w1", PriorityBand::ALL, 60_000, 2_000)
        .await
        .expect_err("conflict");
    assert_eq!(e.kind, ErrorKind::Conflict);
    assert!(e.is_retryable());
    t.assert_done();
}

#[tokio::test]
async fn heartbeat_extends_only_the_current_lease() {
    let (t, store) = fixture("queue.json", "heartbeat_current_then_stale");
    let q: &dyn TaskQueue = &store;
    assert!(
        q.heartbeat(&token(T1, 1), 60_000, 50_000)
            .await
            .expect("hb")
    );
    assert!(
        !q.heartbeat(&token(T1, 0), 60_000, 50_000)
            .await
            .expect("hb")
    );
    t.assert_done();
}

#[tokio::test]
async fn not_primary_is_unavailable() {
    let (t, store) = fixture("queue.json", "heartbeat_on_a_stepped_down_primary");
    let q: &dyn TaskQueue = &store;
    let e = q
        .heartbeat(&token(T1, 1), 60_000, 50_000)
        .await
        .expect_err("not primary");
    assert_error(&e, ErrorKind::Unavailable, "NotWritablePrimary");
    t.assert_done();
}

#[tokio::test]
async fn complete_hands_the_head_to_the_next_task() {
    let (t, store) = fixture("queue.json", "complete_hands_the_head_over");
    let q: &dyn TaskQueue = &store;
    assert!(q.complete(&token(T1, 1), 3_000).await.expect("complete"));
    t.assert_done();
    let (t, store) = fixture("queue.json", "complete_with_a_stale_token");
    let q: &dyn TaskQueue = &store;
    assert!(!q.complete(&token(T1, 1), 3_000).await.expect("complete"));
    t.assert_done();
}

#[tokio::test]
async fn fail_backs_off_or_ends_in_error() {
    let policy = BackoffPolicy {
        initial_ms: 5_000,
        cap_ms: 300_000,
        jitter: 0.0,
    };
    let (t, store) = fixture("queue.json", "fail_retryable_backs_off");
    let q: &dyn TaskQueue = &store;
    assert!(
        q.fail(
            &token(T1, 3),
            Failure::Retryable("connection refused".into()),
            &policy,
            10_000
        )
        .await
        .expect("fail")
    );
    t.assert_done();
    let (t, store) = fixture("queue.json", "fail_permanent_goes_to_error");
    let q: &dyn TaskQueue = &store;
    assert!(
        q.fail(
            &token(T1, 1),
            Failure::Permanent("invalid_field: bad kind".into()),
            &policy,
            4_000
        )
        .await
        .expect("fail")
    );
    t.assert_done();
}

#[tokio::test]
async fn release_requeues_and_write_concern_errors_are_unavailable() {
    let (t, store) = fixture("queue.json", "release_requeues");
    let q: &dyn TaskQueue = &store;
    assert!(q.release(&token(T1, 1), 1_500).await.expect("release"));
    t.assert_done();
    let (t, store) = fixture("queue.json", "release_with_a_write_concern_error");
    let q: &dyn TaskQueue = &store;
    let e = q
        .release(&token(T1, 1), 1_500)
        .await
        .expect_err("write concern");
    assert_error(&e, ErrorKind::Unavailable, "write concern");
    t.assert_done();
}

#[tokio::test]
async fn get_and_list_follow_the_cursor_with_get_more() {
    let (t, store) = fixture("queue.json", "get_and_list_follow_the_cursor");
    let q: &dyn TaskQueue = &store;
    let one = q.get(T1).await.expect("get").expect("task");
    assert_eq!(
        (one.state, one.attempts, one.updated_at),
        (TaskState::Done, 1, 3_000)
    );
    let page = q
        .list(&TaskFilter {
            client_id: Some("c1".into()),
            after: Some(T1.into()),
            limit: 3,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(
        page.iter().map(|t| t.task_id.as_str()).collect::<Vec<_>>(),
        vec![T2, T3, "t000000000004"]
    );
    assert_eq!(page[2].priority, 1);
    t.assert_done();
}

#[tokio::test]
async fn a_network_error_is_unavailable() {
    let (t, store) = fixture("queue.json", "get_without_an_answer");
    let q: &dyn TaskQueue = &store;
    let e = q.get(T1).await.expect_err("network");
    assert_error(&e, ErrorKind::Unavailable, "connection reset");
    t.assert_done();
}

#[tokio::test]
async fn bad_value_is_invalid() {
    let (t, store) = fixture("queue.json", "list_refused_as_bad_value");
    let q: &dyn TaskQueue = &store;
    let e = q
        .list(&TaskFilter {
            limit: 10,
            ..Default::default()
        })
        .await
        .expect_err("bad value");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(!e.is_retryable());
    t.assert_done();
}

#[tokio::test]
async fn reorder_makes_room_then_places_the_task() {
    let (t, store) = fixture("queue.json", "reorder_makes_room");
    let q: &dyn TaskQueue = &store;
    let rec = q.reorder(T3, 1, 4).await.expect("reorder").expect("task");
    assert_eq!(rec.queue_position, Some(1));
    t.assert_done();
}

#[tokio::test]
async fn retry_requeues_error_tasks_only() {
    let (t, store) = fixture("queue.json", "retry_an_error_task");
    let q: &dyn TaskQueue = &store;
    let rec = q.retry(T1, 9_000).await.expect("retry").expect("task");
    assert_eq!(
        (rec.state, rec.last_error.as_deref()),
        (TaskState::Queued, Some("invalid_field: bad kind"))
    );
    t.assert_done();
    let (t, store) = fixture("queue.json", "retry_refuses_a_running_task");
    let q: &dyn TaskQueue = &store;
    let e = q.retry(T2, 9_000).await.expect_err("not an error task");
    assert_eq!(e.kind, ErrorKind::Conflict);
    t.assert_done();
}

#[tokio::test]
async fn prune_deletes_done_tasks_and_orphaned_payloads() {
    let (t, store) = fixture("queue.json", "prune_done_and_orphaned_payloads");
    let q: &dyn TaskQueue = &store;
    assert_eq!(q.prune_done(4).await.expect("prune"), 1);
    t.assert_done();
    assert_eq!(
        t.sent()[2]
            .get_array("deletes")
            .ok()
            .and_then(|d| d[0].as_document())
            .and_then(|d| d.get_document("q").ok())
            .and_then(|q| q.get_document("_id").ok())
            .and_then(|id| id.get_array("$in").ok())
            .map(|a| a[0].as_str() == Some(HASH)),
        Some(true)
    );
}

#[tokio::test]
async fn counts_group_by_state_and_priority() {
    let (t, store) = fixture("queue.json", "counts_by_state_and_priority");
    let q: &dyn TaskQueue = &store;
    let c = q.counts(None).await.expect("counts");
    assert_eq!(
        c.by_state_priority,
        vec![(TaskState::Done, 4, 3), (TaskState::Queued, 1, 2)]
    );
    t.assert_done();
    let (t, store) = fixture("queue.json", "counts_while_shutting_down");
    let q: &dyn TaskQueue = &store;
    assert_eq!(
        q.counts(None).await.expect_err("shutdown").kind,
        ErrorKind::Unavailable
    );
    t.assert_done();
}

#[tokio::test]
async fn next_wakeup_reads_the_earliest_wake_time() {
    let (t, store) = fixture("queue.json", "next_wakeup_is_the_earliest_retry_or_expiry");
    let q: &dyn TaskQueue = &store;
    assert_eq!(q.next_wakeup(5).await.expect("wakeup"), Some(65_000));
    t.assert_done();
}

#[tokio::test]
async fn a_missing_role_is_unavailable_with_a_hint() {
    let (t, store) = fixture("queue.json", "enqueue_without_the_readwrite_role");
    let q: &dyn TaskQueue = &store;
    let e = q
        .enqueue(new_task(), 1_000)
        .await
        .expect_err("unauthorized");
    assert_error(&e, ErrorKind::Unavailable, "readWrite");
    t.assert_done();
}

// ---------------------------------------------------------------------------------------
// indexer sources

fn indexer_source() -> IndexerSource {
    IndexerSource {
        id: "acme.repo".into(),
        kind: "git".into(),
        scope: Scope::client("acme"),
        config: serde_json::json!({"branches": ["main"], "url": "https://example.com/r.git"}),
        interval_secs: 60,
        enabled: true,
        created_at: 0,
        updated_at: 0,
        status: PollStatus::default(),
    }
}

#[tokio::test]
async fn put_source_upserts_and_returns_it_as_stored() {
    for scenario in [
        "put_source_registers_it",
        "put_source_after_a_duplicate_key_race",
    ] {
        let (t, store) = fixture("indexers.json", scenario);
        let ix: &dyn IndexerStore = &store;
        let s = ix.put_source(&indexer_source(), 1_000).await.expect("put");
        assert_eq!(
            (
                s.created_at,
                s.config["branches"][0].as_str(),
                s.status.stats.clone()
            ),
            (1_000, Some("main"), serde_json::json!({}))
        );
        t.assert_done();
    }
}

#[tokio::test]
async fn get_and_list_sources() {
    let (t, store) = fixture("indexers.json", "get_and_list_sources");
    let ix: &dyn IndexerStore = &store;
    let s = ix.get_source(&repo()).await.expect("get").expect("source");
    assert_eq!(s.status.last_success_at, Some(3_900));
    assert_eq!(s.status.owner.as_deref(), Some("b"));
    assert_eq!(s.status.stats["commits"], 7);
    assert_eq!(ix.list_sources(Some("git")).await.expect("list").len(), 1);
    assert_eq!(
        ix.list_sources(None)
            .await
            .expect("list")
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        vec!["acme.repo", "acme.mail"]
    );
    t.assert_done();
}

#[tokio::test]
async fn delete_source_removes_its_cursors_first() {
    let (t, store) = fixture("indexers.json", "delete_source_and_its_cursors");
    let ix: &dyn IndexerStore = &store;
    assert!(ix.delete_source(&repo()).await.expect("delete"));
    t.assert_done();
}

#[tokio::test]
async fn acquire_is_one_conditional_update() {
    let (t, store) = fixture("indexers.json", "acquire_then_refused");
    let ix: &dyn IndexerStore = &store;
    assert!(ix.acquire(&repo(), "a", 1_000, 2_000).await.expect("a"));
    assert!(!ix.acquire(&repo(), "b", 1_000, 2_500).await.expect("b"));
    t.assert_done();
}

#[tokio::test]
async fn release_and_polls_by_the_holder() {
    let (t, store) = fixture("indexers.json", "release_and_record_polls");
    let ix: &dyn IndexerStore = &store;
    ix.release(&repo(), "b").await.expect("release");
    // A failed poll, then a successful one.
    for (at, error, commits) in [(3_800, Some("fetch failed"), 0), (3_900, None, 7)] {
        let stats = serde_json::json!({ "commits": commits });
        let polled = ix.record_poll(&repo(), "b", at, error, &stats).await;
        assert!(polled.expect("poll"), "{at}");
    }
    assert!(
        !ix.record_poll(&repo(), "a", 3_950, None, &serde_json::json!({}))
            .await
            .expect("stale")
    );
    t.assert_done();
}

#[tokio::test]
async fn cursors_are_written_by_the_holder_and_fenced_by_its_epoch() {
    let (t, store) = fixture("indexers.json", "cursors_by_the_holder_only");
    let ix: &dyn IndexerStore = &store;
    assert!(
        ix.put_cursor(&repo(), "b", "main", &serde_json::json!({"tip": "c2"}))
            .await
            .expect("holder")
    );
    assert!(
        !ix.put_cursor(&repo(), "a", "main", &serde_json::json!({"tip": "old"}))
            .await
            .expect("not the holder")
    );
    // `a` still looked like the holder (an old epoch), but `b` wrote first: refused.
    assert!(
        !ix.put_cursor(&repo(), "a", "main", &serde_json::json!({"tip": "old"}))
            .await
            .expect("fenced")
    );
    assert_eq!(
        ix.get_cursor(&repo(), "main").await.expect("get"),
        Some(serde_json::json!({"tip": "c2"}))
    );
    assert_eq!(
        ix.list_cursors(&repo())
            .await
            .expect("list")
            .into_iter()
            .map(|(k, _)| k)
            .collect::<Vec<_>>(),
        vec!["dev", "main"]
    );
    assert!(ix.delete_cursor(&repo(), "b", "dev").await.expect("delete"));
    t.assert_done();
}

// ---------------------------------------------------------------------------------------
// source registry

fn record(urn: &str) -> SourceRecord {
    SourceRecord {
        scope: Scope::client("c1"),
        source_urn: urn.into(),
        kind: "doc".into(),
        title: Some("W".into()),
        content_hash: "sha256:w".into(),
        status: SourceStatus::Indexed,
        chunk_count: 2,
        last_indexed_at: "2026-11-22T00:00:00Z".into(),
        last_error: None,
    }
}

#[tokio::test]
async fn registry_get_list_and_prefix_pages() {
    let (t, store) = fixture("sources.json", "get_a_record");
    let r: &dyn SourceRegistry = &store;
    let rec = r.get("c1", "urn:a").await.expect("get").expect("record");
    assert_eq!((rec.chunk_count, rec.title.as_deref()), (2, Some("A")));
    t.assert_done();

    let (t, store) = fixture("sources.json", "list_applies_visibility");
    let r: &dyn SourceRegistry = &store;
    let reader = Visibility::of(Scope::client("c1").with_project("p1").with_group("g1"));
    let listed = r.list(&reader, 100).await.expect("list");
    assert_eq!(
        listed[0].scope,
        Scope::client("c1").with_project("p1").with_group("g1")
    );
    t.assert_done();

    let (t, store) = fixture("sources.json", "list_prefix_pages_in_urn_order");
    let r: &dyn SourceRegistry = &store;
    let p1 = r
        .list_prefix("c1", "git:s:blob:main:", None, 1)
        .await
        .expect("page 1");
    let p2 = r
        .list_prefix("c1", "git:s:blob:main:", Some(&p1[0].source_urn), 1)
        .await
        .expect("page 2");
    assert_eq!(
        (p1[0].source_urn.as_str(), p2[0].source_urn.as_str()),
        ("git:s:blob:main:a.rs", "git:s:blob:main:b.rs")
    );
    t.assert_done();
}

#[tokio::test]
async fn registry_writes_replace_and_remove() {
    for scenario in ["put_replaces_the_record", "put_after_a_duplicate_key_race"] {
        let (t, store) = fixture("sources.json", scenario);
        let w: &dyn SourceRecordWriter = &store;
        w.put(&record("urn:w")).await.expect("put");
        t.assert_done();
    }
    let (t, store) = fixture("sources.json", "remove_deletes_it");
    let w: &dyn SourceRecordWriter = &store;
    w.remove("c1", "urn:w").await.expect("remove");
    t.assert_done();
}

// ---------------------------------------------------------------------------------------
// memory

#[tokio::test]
async fn memory_put_is_one_pipeline_upsert() {
    let (t, store) = fixture("memory.json", "put_upserts_with_a_pipeline");
    let m: &dyn MemoryStore = &store;
    let stored = m
        .put(MemoryEntry {
            client_id: "c1".into(),
            session_id: "s1".into(),
            key: "goal".into(),
            value: serde_json::json!({"text": "ship the importer"}),
            created_at: 1_000_000,
            updated_at: 1_000_000,
            expires_at: 1_060_000,
        })
        .await
        .expect("put");
    assert_eq!(stored.expires_at, 1_060_000);
    assert_eq!(stored.value["text"], "ship the importer");
    t.assert_done();
}

#[tokio::test]
async fn memory_reads_hide_expired_entries_and_deletes_count() {
    let (t, store) = fixture("memory.json", "get_list_and_delete");
    let m: &dyn MemoryStore = &store;
    assert!(
        m.get("c1", "s1", "goal", 1_000_010)
            .await
            .expect("get")
            .is_some()
    );
    assert_eq!(m.list("c1", "s1", 1_001_000).await.expect("list").len(), 1);
    assert!(!m.delete("c1", "s1", "step").await.expect("delete"));
    assert_eq!(m.delete_session("c1", "s1").await.expect("clear"), 1);
    assert_eq!(m.purge_expired(1_001_000).await.expect("purge"), 1);
    t.assert_done();
}

fn session_entry(summary: &str, at: i64) -> SessionEntry {
    SessionEntry {
        client_id: "c1".into(),
        project_id: Some("p1".into()),
        timestamp: at,
        source: SessionSource::OrchestratorDecision,
        summary: summary.into(),
        details: Some(serde_json::json!({"pr": 42})),
        task_id: Some("T-9".into()),
        expires_at: at + 604_800_000,
    }
}

#[tokio::test]
async fn session_append_inserts_then_evicts_the_oldest_beyond_the_limit() {
    let (t, store) = fixture("memory.json", "session_append_evicts_beyond_the_limit");
    let m: &dyn MemoryStore = &store;
    let evicted = m
        .session_append(session_entry("merged the importer", 1_000_003), 2)
        .await
        .expect("append");
    assert_eq!(evicted, 1);
    t.assert_done();
}

#[tokio::test]
async fn session_recent_reads_one_log_live_and_newest_first() {
    let (t, store) = fixture(
        "memory.json",
        "session_recent_reads_live_entries_newest_first",
    );
    let m: &dyn MemoryStore = &store;
    let recent = m
        .session_recent("c1", Some("p1"), 2_000_000, 50)
        .await
        .expect("recent");
    let summaries: Vec<&str> = recent.iter().map(|e| e.summary.as_str()).collect();
    assert_eq!(
        summaries,
        ["chose the staged importer", "asked about the deadline"]
    );
    assert_eq!(recent[0].project_id.as_deref(), Some("p1"));
    assert_eq!(recent[0].source, SessionSource::OrchestratorDecision);
    t.assert_done();
}
