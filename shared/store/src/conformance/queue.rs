//! Qualification queue cases: claim order, bands, one task per source, leases, failures, release, list, prune.

use super::*;

use crate::queue::{
    BackoffPolicy, Claim, Failure, NewTask, PriorityBand, TaskFilter, TaskQueue, TaskState,
};

pub(super) fn task(urn: &str, priority: u8) -> NewTask {
    NewTask {
        kind: "ingest".into(),
        scope: Scope::client("c1"),
        source_urn: urn.into(),
        priority,
        payload: serde_json::json!({"type": "ingest", "v": 1, "urn": urn}),
    }
}

pub(super) const LEASE: i64 = 60_000;

pub(super) async fn claim_id(q: &dyn TaskQueue, now: i64) -> Option<String> {
    claim_next(q, "w", PriorityBand::ALL, now)
        .await
        .map(|c| c.task.task_id)
}

/// Enqueues `t`, returning its id.
async fn enqueue_id(q: &dyn TaskQueue, t: NewTask, now: i64) -> String {
    q.enqueue(t, now).await.expect("enqueue").task_id
}

/// `worker` claims the next task of `band` for [`LEASE`].
async fn claim_next(
    q: &dyn TaskQueue,
    worker: &str,
    band: PriorityBand,
    now: i64,
) -> Option<Claim> {
    q.claim(worker, band, LEASE, now).await.expect("claim")
}

pub async fn queue_claims_by_priority_position_then_creation(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let a = enqueue_id(q, task("urn:a", 4), 0).await;
    let b = enqueue_id(q, task("urn:b", 4), 1).await;
    let c = enqueue_id(q, task("urn:c", 1), 2).await;
    let d = enqueue_id(q, task("urn:d", 4), 3).await;
    q.reorder(&d, 1, 4).await.expect("reorder").expect("exists");
    let order: Vec<String> = [
        claim_id(q, 10).await,
        claim_id(q, 10).await,
        claim_id(q, 10).await,
        claim_id(q, 10).await,
    ]
    .into_iter()
    .flatten()
    .collect();
    assert_eq!(
        order,
        vec![c, d, a, b],
        "priority, then explicit position, then creation"
    );
    assert_eq!(claim_id(q, 10).await, None);
    let counts = q.counts(None).await.expect("counts");
    assert_eq!(counts.state(TaskState::Processing), 4);
    let mut other = task("urn:other-client", 4);
    other.scope = Scope::client("c2");
    q.enqueue(other, 11).await.expect("enqueue");
    let c1 = q.counts(Some("c1")).await.expect("counts");
    assert_eq!(
        (c1.state(TaskState::Processing), c1.state(TaskState::Queued)),
        (4, 0),
        "one client's counts"
    );
    let c2 = q.counts(Some("c2")).await.expect("counts");
    assert_eq!(
        (c2.state(TaskState::Processing), c2.state(TaskState::Queued)),
        (0, 1)
    );
    assert_eq!(
        q.counts(None)
            .await
            .expect("counts")
            .state(TaskState::Queued),
        1
    );
}

pub async fn queue_bands_separate_interactive_from_bulk(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let bulk = enqueue_id(q, task("urn:bulk", 6), 0).await;
    assert!(
        claim_next(q, "w", PriorityBand::INTERACTIVE, 1)
            .await
            .is_none(),
        "interactive workers skip bulk work"
    );
    let urgent = enqueue_id(q, task("urn:urgent", 1), 2).await;
    assert_eq!(
        claim_next(q, "w", PriorityBand::INTERACTIVE, 3)
            .await
            .map(|c| c.task.task_id),
        Some(urgent)
    );
    assert_eq!(
        claim_next(q, "w", PriorityBand::BULK, 3)
            .await
            .map(|c| c.task.task_id),
        Some(bulk)
    );
}

pub async fn queue_same_source_runs_one_at_a_time_in_order(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let first = enqueue_id(q, task("urn:s", 4), 0).await;
    let second = enqueue_id(q, task("urn:s", 1), 1).await;
    let other = enqueue_id(q, task("urn:o", 4), 2).await;
    let c1 = claim_next(q, "w1", PriorityBand::ALL, 5)
        .await
        .expect("task");
    assert_eq!(
        c1.task.task_id, first,
        "the older task of a source goes first, whatever the priority"
    );
    let c2 = claim_next(q, "w2", PriorityBand::ALL, 5)
        .await
        .expect("task");
    assert_eq!(
        c2.task.task_id, other,
        "the same source's next task waits for the running one"
    );
    assert!(claim_next(q, "w3", PriorityBand::ALL, 5).await.is_none());
    assert!(q.complete(&c1.token, 6).await.expect("complete"));
    assert_eq!(claim_id(q, 7).await, Some(second));
}

pub async fn queue_leases_expire_and_stale_holders_are_refused(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let id = enqueue_id(q, task("urn:l", 4), 0).await;
    let first = claim_next(q, "w1", PriorityBand::ALL, 0)
        .await
        .expect("task");
    assert_eq!(
        first.payload["urn"], "urn:l",
        "payload comes with the claim"
    );
    assert!(
        claim_next(q, "w2", PriorityBand::ALL, LEASE - 1)
            .await
            .is_none(),
        "a live lease is never taken"
    );
    assert!(
        q.heartbeat(&first.token, LEASE, LEASE - 1)
            .await
            .expect("heartbeat")
    );
    assert!(
        claim_next(q, "w2", PriorityBand::ALL, 2 * LEASE - 2)
            .await
            .is_none(),
        "heartbeat extended the lease"
    );
    let second = claim_next(q, "w2", PriorityBand::ALL, 2 * LEASE)
        .await
        .expect("expired lease returns to the queue");
    assert_eq!(second.task.task_id, id);
    assert_eq!(second.task.attempts, 2);
    assert!(
        !q.complete(&first.token, 2 * LEASE + 1)
            .await
            .expect("complete"),
        "the stale holder cannot complete"
    );
    assert!(
        !q.heartbeat(&first.token, LEASE, 2 * LEASE + 1)
            .await
            .expect("heartbeat")
    );
    assert!(
        q.complete(&second.token, 2 * LEASE + 2)
            .await
            .expect("complete")
    );
    assert_eq!(
        q.get(&id).await.expect("get").expect("task").state,
        TaskState::Done
    );
}

/// Failed tasks back off and run again, forever for retry-forever kinds, else until their
/// attempts run out and they end in error. Long because it is one task's life under one
/// clock: each failure's backoff depends on the attempts before it.
pub async fn queue_failures_back_off_forever_or_end_in_error(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let policy = BackoffPolicy {
        initial_ms: 5_000,
        cap_ms: 300_000,
        jitter: 0.0,
    };
    let id = enqueue_id(q, task("urn:f", 4), 0).await;
    let mut now = 0;
    let mut delays = Vec::new();
    for _ in 0..9 {
        let c = claim_next(q, "w", PriorityBand::ALL, now)
            .await
            .expect("claimable once due");
        assert!(
            q.fail(
                &c.token,
                Failure::Retryable("connection refused".into()),
                &policy,
                now
            )
            .await
            .expect("fail")
        );
        let t = q.get(&id).await.expect("get").expect("task");
        assert_eq!(t.state, TaskState::RetryWait);
        let due = t.next_retry_at.expect("next retry");
        assert!(
            claim_next(q, "w", PriorityBand::ALL, due - 1)
                .await
                .is_none(),
            "not before nextRetryAt"
        );
        delays.push(due - now);
        now = due;
    }
    assert_eq!(
        delays,
        vec![
            5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000
        ]
    );
    assert_eq!(q.get(&id).await.expect("get").expect("task").retries, 9);
    let c = claim_next(q, "w", PriorityBand::ALL, now)
        .await
        .expect("task");
    assert!(
        q.fail(
            &c.token,
            Failure::Permanent("invalid_field: bad kind".into()),
            &policy,
            now
        )
        .await
        .expect("fail")
    );
    let t = q.get(&id).await.expect("get").expect("task");
    assert_eq!(
        (t.state, t.last_error.as_deref()),
        (TaskState::Error, Some("invalid_field: bad kind"))
    );
    assert!(
        claim_next(q, "w", PriorityBand::ALL, now + 1_000_000)
            .await
            .is_none(),
        "error tasks are not retried by themselves"
    );
    let later = enqueue_id(q, task("urn:f", 4), now).await;
    assert_eq!(
        claim_id(q, now).await,
        Some(later.clone()),
        "an error task does not block its source"
    );
    let t = q.retry(&id, now).await.expect("retry").expect("task");
    assert_eq!(t.state, TaskState::Queued);
    assert!(
        q.retry(&later, now).await.is_err(),
        "only error tasks can be retried"
    );
}

pub async fn queue_release_list_prune(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let id = enqueue_id(q, task("urn:r", 4), 0).await;
    let c = claim_next(q, "w", PriorityBand::ALL, 0)
        .await
        .expect("task");
    assert!(q.release(&c.token, 1).await.expect("release"));
    let t = q.get(&id).await.expect("get").expect("task");
    assert_eq!(
        (t.state, t.retries),
        (TaskState::Queued, 0),
        "release counts no retry"
    );
    let c = claim_next(q, "w", PriorityBand::ALL, 2)
        .await
        .expect("task");
    assert!(q.complete(&c.token, 3).await.expect("complete"));
    let other = enqueue_id(q, task("urn:r2", 4), 4).await;
    let done = q
        .list(&TaskFilter {
            state: Some(TaskState::Done),
            limit: 10,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(
        done.iter().map(|t| t.task_id.clone()).collect::<Vec<_>>(),
        vec![id.clone()]
    );
    // The task finished at 3: a window from 3 holds it, one from 4 does not.
    for (since, expected) in [(3, vec![id.clone()]), (4, vec![])] {
        let recent = q
            .list(&TaskFilter {
                state: Some(TaskState::Done),
                updated_since: Some(since),
                limit: 10,
                ..Default::default()
            })
            .await
            .expect("list");
        assert_eq!(
            recent.iter().map(|t| t.task_id.clone()).collect::<Vec<_>>(),
            expected,
            "done since {since}"
        );
    }
    let page = q
        .list(&TaskFilter {
            after: Some(id.clone()),
            limit: 10,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(
        page.iter().map(|t| t.task_id.clone()).collect::<Vec<_>>(),
        vec![other]
    );
    assert_eq!(
        q.prune_done(3).await.expect("prune"),
        0,
        "kept for the retention"
    );
    assert_eq!(q.prune_done(4).await.expect("prune"), 1);
    assert!(q.get(&id).await.expect("get").is_none());
    assert_eq!(q.next_wakeup(5).await.expect("wakeup"), None);
}
