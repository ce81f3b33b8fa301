//! Command builders, and the queue against the in-memory fake: a model-based property test of
//! the state machine (the embedded store's model, plus the head-marker invariant) and a
//! property test of concurrent claimers, completers and enqueuers interleaved at command
//! boundaries.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use evident_core::Scope;
use proptest::prelude::*;

use super::*;
use crate::client::Transport;
use crate::fake::FakeMongo;

const LEASE: i64 = 30_000;

use evident_store::queue_model::task as new_task;

fn token(id: &str, epoch: i64) -> LeaseToken {
    LeaseToken {
        task_id: id.into(),
        epoch,
    }
}

#[test]
fn ids_sort_in_creation_order() {
    assert_eq!(task_id(1), "t000000000001");
    assert!(task_id(9) < task_id(10) && task_id(99_999) < task_id(100_000));
}

#[test]
fn claim_command_for_the_interactive_band() {
    assert_eq!(
        claim_command("w1", PriorityBand::INTERACTIVE, 60_000, 10, &[]),
        doc! {
            "findAndModify": "tasks",
            "query": {
                "head": true,
                "priority": {"$gte": 0, "$lte": 2},
                "$or": [
                    {"state": "queued"},
                    {"state": "retry_wait", "nextRetryAt": {"$lte": 10i64}},
                    {"state": "processing", "leaseExpiresAt": {"$lte": 10i64}},
                ],
            },
            "sort": {"priority": 1, "posUnset": 1, "queuePosition": 1, "seq": 1},
            "hint": "tasks_claim_order",
            "update": {
                "$set": {
                    "state": "processing",
                    "leaseOwner": "w1",
                    "leaseExpiresAt": 60_010i64,
                    "wakeAt": 60_010i64,
                    "updatedAt": 10i64,
                },
                "$inc": {"epoch": 1i64, "attempts": 1i64},
                "$unset": {"nextRetryAt": ""},
            },
            "new": false,
        }
    );
}

#[test]
fn claim_filter_for_the_bulk_band_skips_blocked_candidates() {
    let f = claim_filter(PriorityBand::BULK, 5, &["t000000000003".to_string()]);
    assert_eq!(
        f.get_document("priority").expect("band"),
        &doc! {"$gte": 3, "$lte": 9}
    );
    assert_eq!(
        f.get_document("_id").expect("skip"),
        &doc! {"$nin": ["t000000000003"]}
    );
    assert_eq!(f.get_bool("head"), Ok(true), "only heads are claimable");
    // The sort walks tasks_claim_order: same keys, same order.
    let index = crate::schema::index_commands()[0]
        .get_array("indexes")
        .expect("indexes")[0]
        .as_document()
        .expect("spec")
        .get_document("key")
        .expect("key")
        .clone();
    assert!(claim_sort().keys().eq(index.keys()));
}

#[test]
fn undo_restores_the_pre_image_exactly() {
    let pre = TaskDoc {
        record: TaskRecord {
            task_id: "t000000000007".into(),
            kind: "ingest".into(),
            source_urn: "urn:a".into(),
            scope: Scope::client("c"),
            state: TaskState::RetryWait,
            priority: 4,
            queue_position: None,
            retries: 2,
            attempts: 3,
            next_retry_at: Some(900),
            last_error: Some("busy".into()),
            lease_owner: None,
            lease_expires_at: None,
            created_at: 1,
            updated_at: 800,
        },
        seq: 7,
        epoch: 3,
        partition: "c".into(),
        payload_hash: "sha256:x".into(),
        head: true,
    };
    assert_eq!(
        undo_claim_command(&pre, true, 1_000),
        doc! {
            "update": "tasks",
            "updates": [{
                "q": {"_id": "t000000000007", "epoch": 4i64, "state": "processing"},
                "u": {
                    "$set": {
                        "state": "retry_wait",
                        "attempts": 3i64,
                        "epoch": 3i64,
                        "updatedAt": 800i64,
                        "nextRetryAt": 900i64,
                        "wakeAt": 900i64,
                        "head": false,
                        "fixAt": 1_000i64,
                    },
                    "$unset": {"leaseOwner": "", "leaseExpiresAt": ""},
                },
            }],
        }
    );
    let claimed = pre.claimed("w", 100, 1_000);
    assert_eq!(
        (
            claimed.epoch,
            claimed.record.attempts,
            claimed.record.next_retry_at
        ),
        (4, 4, None)
    );
}

#[test]
fn the_blocker_query_looks_for_older_open_tasks_and_other_live_leases() {
    let t = TaskDoc {
        record: TaskRecord {
            task_id: "t000000000005".into(),
            kind: "ingest".into(),
            source_urn: "urn:a".into(),
            scope: Scope::client("c"),
            state: TaskState::Processing,
            priority: 4,
            queue_position: None,
            retries: 0,
            attempts: 1,
            next_retry_at: None,
            last_error: None,
            lease_owner: Some("w".into()),
            lease_expires_at: Some(70),
            created_at: 1,
            updated_at: 10,
        },
        seq: 5,
        epoch: 1,
        partition: "c".into(),
        payload_hash: "sha256:x".into(),
        head: true,
    };
    assert_eq!(
        blocker_command(&t, 10)
            .get_document("filter")
            .expect("filter"),
        &doc! {"$or": [
            {"partition": "c", "sourceUrn": "urn:a", "open": true, "seq": {"$lt": 5i64}},
            {"partition": "c", "sourceUrn": "urn:a", "state": "processing", "leaseExpiresAt": {"$gt": 10i64}, "_id": {"$ne": "t000000000005"}},
        ]}
    );
    assert_eq!(
        finish_command(
            &token("t000000000005", 1),
            TaskState::Error,
            Some("bad"),
            20
        )
        .get_document("update")
        .expect("update"),
        &doc! {
            "$set": {"state": "error", "open": false, "head": false, "updatedAt": 20i64, "fixAt": 20i64, "lastError": "bad"},
            "$unset": {"leaseOwner": "", "leaseExpiresAt": "", "wakeAt": ""},
        }
    );
}

/// Open tasks per source (partition, sourceUrn): (seq, head, state).
type OpenBySource = HashMap<(String, String), Vec<(i64, bool, String)>>;

/// Per source (partition, sourceUrn): open tasks by seq with their head flags.
fn open_by_source(fake: &FakeMongo) -> OpenBySource {
    let mut by: OpenBySource = HashMap::new();
    for d in fake.collection("tasks") {
        if opt_bool(&d, "open") != Some(true) {
            continue;
        }
        let key = (
            opt_str(&d, "partition").unwrap_or_default(),
            opt_str(&d, "sourceUrn").unwrap_or_default(),
        );
        by.entry(key).or_default().push((
            opt_i64(&d, "seq").unwrap_or(0),
            opt_bool(&d, "head").unwrap_or(false),
            opt_str(&d, "state").unwrap_or_default(),
        ));
    }
    for v in by.values_mut() {
        v.sort();
    }
    by
}

#[tokio::test]
async fn one_source_runs_in_order_and_error_tasks_do_not_block() {
    let fake = Arc::new(FakeMongo::new());
    let q = MongoStore::new(fake.clone(), "evident");
    let first = q.enqueue(new_task(1, 4), 0).await.expect("enqueue").task_id;
    let second = q.enqueue(new_task(1, 1), 1).await.expect("enqueue").task_id;
    let heads: Vec<bool> = open_by_source(&fake)[&("c".to_string(), "urn:1".to_string())]
        .iter()
        .map(|t| t.1)
        .collect();
    assert_eq!(
        heads,
        vec![true, false],
        "only the oldest carries the marker"
    );
    let c = q
        .claim("w", PriorityBand::ALL, LEASE, 2)
        .await
        .expect("claim")
        .expect("task");
    assert_eq!(c.task.task_id, first);
    assert!(
        q.claim("w", PriorityBand::ALL, LEASE, 2)
            .await
            .expect("claim")
            .is_none()
    );
    assert!(
        q.fail(
            &c.token,
            Failure::Permanent("bad".into()),
            &BackoffPolicy::default(),
            3
        )
        .await
        .expect("fail")
    );
    let c2 = q
        .claim("w", PriorityBand::ALL, LEASE, 4)
        .await
        .expect("claim")
        .expect("the error task does not block");
    assert_eq!(c2.task.task_id, second);
    // Retrying the older error task while the newer runs: it becomes the head, but waits for
    // the running task instead of running beside it.
    q.retry(&first, 5).await.expect("retry").expect("task");
    assert!(
        q.claim("w", PriorityBand::ALL, LEASE, 6)
            .await
            .expect("claim")
            .is_none()
    );
    assert!(q.complete(&c2.token, 7).await.expect("complete"));
    assert_eq!(
        q.claim("w", PriorityBand::ALL, LEASE, 8)
            .await
            .expect("claim")
            .map(|c| c.task.task_id),
        Some(first)
    );
}

#[tokio::test]
async fn a_stray_head_is_undone_by_verification_and_repaired() {
    let fake = Arc::new(FakeMongo::new());
    let q = MongoStore::new(fake.clone(), "evident");
    let older = q.enqueue(new_task(1, 4), 0).await.expect("enqueue").task_id;
    let newer = q.enqueue(new_task(1, 0), 1).await.expect("enqueue").task_id;
    // As if a concurrent enqueue had also seen the source empty: the newer (and more urgent)
    // task carries a head too.
    fake.run("evident", set_head_command(&newer))
        .await
        .expect("stray head");
    let c = q
        .claim("w", PriorityBand::ALL, LEASE, 2)
        .await
        .expect("claim")
        .expect("task");
    assert_eq!(
        c.task.task_id, older,
        "the stray head was claimed, refused and undone"
    );
    let newer_doc = q.get(&newer).await.expect("get").expect("task");
    assert_eq!(
        (newer_doc.state, newer_doc.attempts),
        (TaskState::Queued, 0),
        "undo is exact"
    );
    let heads: Vec<bool> = open_by_source(&fake)[&("c".to_string(), "urn:1".to_string())]
        .iter()
        .map(|t| t.1)
        .collect();
    assert_eq!(heads, vec![true, false]);
    assert!(
        fake.collection("tasks")
            .iter()
            .all(|d| !d.contains_key("fixAt")),
        "hand-overs finished"
    );
}

#[tokio::test]
async fn an_interrupted_hand_over_is_finished_by_the_sweep() {
    let fake = Arc::new(FakeMongo::new());
    let q = MongoStore::new(fake.clone(), "evident");
    let a = q.enqueue(new_task(1, 4), 0).await.expect("enqueue").task_id;
    let b = q.enqueue(new_task(1, 4), 1).await.expect("enqueue").task_id;
    let c = q
        .claim("w", PriorityBand::ALL, LEASE, 2)
        .await
        .expect("claim")
        .expect("task");
    assert_eq!(c.task.task_id, a);
    // The worker's process dies between the state change and the promotion.
    fake.run(
        "evident",
        finish_command(&c.token, TaskState::Done, None, 3),
    )
    .await
    .expect("finish only");
    assert!(
        q.claim("w", PriorityBand::ALL, LEASE, 4)
            .await
            .expect("claim")
            .is_none(),
        "headless"
    );
    let later = 3 + REPAIR_GRACE_MS + REPAIR_EVERY_MS;
    assert_eq!(
        q.claim("w", PriorityBand::ALL, LEASE, later)
            .await
            .expect("claim")
            .map(|c| c.task.task_id),
        Some(b),
        "the sweep handed the marker over"
    );
}

// ---------------------------------------------------------------------------------------
// Model-based: the shared state machine model, plus the head-marker invariant.

struct Fake {
    fake: Arc<FakeMongo>,
    store: MongoStore,
}

impl evident_store::queue_model::Subject for Fake {
    fn queue(&self) -> &dyn TaskQueue {
        &self.store
    }

    fn restart(&mut self) {
        self.store = MongoStore::new(self.fake.clone(), "evident");
    }

    /// Exactly the oldest open task of a source carries the head marker, and every hand-over
    /// finished.
    fn check(&self) -> Result<(), String> {
        for (source, open) in open_by_source(&self.fake) {
            let heads: Vec<bool> = open.iter().map(|t| t.1).collect();
            let mut want = vec![false; heads.len()];
            want[0] = true;
            if heads != want {
                return Err(format!("head markers of {source:?}: {heads:?}"));
            }
        }
        if self
            .fake
            .collection("tasks")
            .iter()
            .any(|d| d.contains_key("fixAt"))
        {
            return Err("a hand-over did not finish".into());
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn queue_state_machine_matches_the_model(ops in evident_store::queue_model::ops()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let fake = Arc::new(FakeMongo::new());
        let mut subject = Fake { store: MongoStore::new(fake.clone(), "evident"), fake };
        rt.block_on(evident_store::queue_model::run(&mut subject, ops))?;
    }
}

// ---------------------------------------------------------------------------------------
// Concurrency: claimers, completers and enqueuers interleaved at command boundaries.

enum Done {
    Claimed(Result<Option<Claim>>),
    Completed(Result<bool>),
    Enqueued(Result<TaskRecord>),
}

async fn concurrent(seed: u64, rounds: usize) -> Result<(), TestCaseError> {
    let fake = Arc::new(FakeMongo::interleaved(seed));
    let store = MongoStore::new(fake.clone(), "evident");
    for (source, n) in [(0u8, 3), (1, 2), (2, 1)] {
        for _ in 0..n {
            store
                .enqueue(new_task(source, 4), 0)
                .await
                .expect("enqueue");
        }
    }
    let mut held: Vec<LeaseToken> = Vec::new();
    let mut completed: HashSet<String> = HashSet::new();
    for (now, _) in (10..).zip(0..rounds) {
        let mut set = tokio::task::JoinSet::new();
        for w in 0..3 {
            let s = store.clone();
            set.spawn(async move {
                Done::Claimed(
                    s.claim(&format!("w{w}"), PriorityBand::ALL, LEASE, now)
                        .await,
                )
            });
        }
        for tok in held.drain(..) {
            let s = store.clone();
            set.spawn(async move { Done::Completed(s.complete(&tok, now).await) });
        }
        for source in [0u8, 3] {
            let s = store.clone();
            set.spawn(async move { Done::Enqueued(s.enqueue(new_task(source, 4), now).await) });
        }
        let mut claimed_sources = HashSet::new();
        while let Some(done) = set.join_next().await {
            match done.expect("join") {
                Done::Claimed(r) => {
                    if let Some(c) = r.expect("claim") {
                        prop_assert!(
                            claimed_sources.insert(c.task.source_urn.clone()),
                            "two claims of {} in one round",
                            c.task.source_urn
                        );
                        prop_assert!(
                            !completed.contains(&c.task.task_id),
                            "a finished task claimed again"
                        );
                        held.push(c.token);
                    }
                }
                Done::Completed(r) => prop_assert!(r.expect("complete"), "a held lease completes"),
                Done::Enqueued(r) => {
                    r.expect("enqueue");
                }
            }
        }
        for t in &held {
            completed.insert(t.task_id.clone());
        }
        // Quiescent: at most one running task per source, and the oldest open task of every
        // source carries the head marker (nothing is stuck).
        for (source, open) in open_by_source(&fake) {
            let running = open.iter().filter(|t| t.2 == "processing").count();
            prop_assert!(running <= 1, "{} tasks of {:?} running", running, source);
            prop_assert!(
                open[0].1,
                "the oldest open task of {:?} has no head: {:?}",
                source,
                open
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn concurrent_claimers_never_run_one_source_twice(seed in any::<u64>(), rounds in 1usize..6) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(concurrent(seed, rounds))?;
    }
}

/// A window on finished tasks is a filter on `updatedAt`, answered by the store (the fake
/// evaluates it like the server), not a scan of every finished task.
#[tokio::test]
async fn tasks_finished_since_are_listed_from_the_window() {
    let fake = Arc::new(FakeMongo::new());
    let q = MongoStore::new(fake.clone(), "evident");
    for (source, ended) in [(1, 10), (2, 20)] {
        q.enqueue(new_task(source, 4), ended - 1)
            .await
            .expect("enqueue");
        let c = q
            .claim("w", PriorityBand::ALL, LEASE, ended)
            .await
            .expect("claim")
            .expect("task");
        assert!(q.complete(&c.token, ended).await.expect("complete"));
    }
    let filter = TaskFilter {
        state: Some(TaskState::Done),
        updated_since: Some(15),
        limit: 10,
        ..Default::default()
    };
    assert_eq!(
        list_command(&filter)
            .get_document("filter")
            .expect("filter"),
        &doc! {"state": "done", "updatedAt": {"$gte": 15_i64}}
    );
    let recent = q.list(&filter).await.expect("list");
    assert_eq!(
        recent
            .iter()
            .map(|t| t.source_urn.as_str())
            .collect::<Vec<_>>(),
        vec!["urn:2"]
    );
}
