//! Scale-out correctness on shared stores: several worker and indexer replicas (distinct
//! identities over the same stores, as separate processes would be against shared backends).
//! Each task is run by one worker, each source polled by one indexer at a time, and the work
//! of a replica that dies is taken over once its lease expires — never before.

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use evident_ai::Priority;
use evident_indexers::documents::DocumentsPoller;
use evident_indexers::poll::{PollContext, PollError, SourcePoller};
use evident_kb::{TaskError, TaskHandler, TaskHandlers, TaskSubmitter};
use evident_qualifier::{Outcome, Qualifier, QueueConfig};
use evident_store::queue::{Clock, ManualClock, PriorityBand, TaskState};
use parking_lot::Mutex;
use serde_json::json;
use support::open_kb;

/// Counts executions per task body `n`; replica "a" hangs on the body it is told to, as a
/// process that died mid-task would.
struct Recorder {
    runs: Mutex<HashMap<u64, usize>>,
    hang_on: Option<u64>,
    started: tokio::sync::mpsc::UnboundedSender<u64>,
}

#[async_trait::async_trait]
impl TaskHandler for Recorder {
    async fn execute(
        &self,
        payload: &serde_json::Value,
        _scope: &evident_core::Scope,
        _p: Priority,
    ) -> Result<(), TaskError> {
        let n = payload["n"].as_u64().unwrap_or(0);
        *self.runs.lock().entry(n).or_default() += 1;
        let _ = self.started.send(n);
        if self.hang_on == Some(n) {
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

fn worker(
    kb: &evident_kb::Kb,
    clock: Arc<ManualClock>,
    id: &str,
    recorder: Arc<Recorder>,
) -> Qualifier {
    let mut handlers = TaskHandlers::new(kb);
    handlers.register("test-step", recorder);
    Qualifier {
        queue: kb.stores().queue.clone(),
        handlers,
        clock,
        config: QueueConfig::default(),
        worker_id: id.into(),
        band: PriorityBand::ALL,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_task_runs_on_one_worker_and_a_dead_workers_task_is_taken_over_after_its_lease() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_store, kb) = open_kb(dir.path()).await;
    let clock = Arc::new(ManualClock::new(1_000_000));
    let tasks = TaskSubmitter::new(kb.stores().queue.clone());
    let total = 60u64;
    for n in 0..total {
        tasks
            .enqueue_body(
                evident_core::Scope::client("acme"),
                &format!("test:{n}"),
                Priority::DEFAULT,
                json!({"type": "test-step", "v": 1, "n": n}),
                clock.now_ms(),
            )
            .await
            .expect("enqueue");
    }
    let (tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let recorder = |hang_on| {
        Arc::new(Recorder {
            runs: Mutex::default(),
            hang_on,
            started: tx.clone(),
        })
    };
    let (rec_a, rec_b, rec_c) = (recorder(Some(0)), recorder(None), recorder(None));

    // Replica a claims the first task and dies in the middle of it.
    let a = worker(&kb, clock.clone(), "replica-a", rec_a.clone());
    let dying = tokio::spawn(async move { a.process_next().await });
    assert_eq!(started.recv().await, Some(0));
    dying.abort();
    let _ = dying.await;

    // Replicas b and c drain the rest concurrently.
    let drain = |q: Qualifier| {
        tokio::spawn(async move {
            let mut done = 0;
            while let Outcome::Processed { state, .. } = q.process_next().await.expect("process") {
                assert_eq!(state, TaskState::Done);
                done += 1;
            }
            done
        })
    };
    let b = drain(worker(&kb, clock.clone(), "replica-b", rec_b.clone()));
    let c = drain(worker(&kb, clock.clone(), "replica-c", rec_c.clone()));
    let (b_done, c_done) = (b.await.expect("b"), c.await.expect("c"));
    assert_eq!(
        b_done + c_done,
        total as usize - 1,
        "all but the dead replica's task"
    );

    // Task 0 is still leased to the dead replica: not taken before the lease expires…
    let t0 = kb
        .stores()
        .queue
        .list(&evident_store::queue::TaskFilter {
            source_urn: Some("test:0".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(t0[0].state, TaskState::Processing);
    assert_eq!(t0[0].lease_owner.as_deref(), Some("replica-a"));
    let b = worker(&kb, clock.clone(), "replica-b", rec_b.clone());
    assert!(matches!(
        b.process_next().await.expect("process"),
        Outcome::Empty
    ));
    // …and taken over after it.
    clock.advance(QueueConfig::default().lease_secs as i64 * 1000 + 1);
    assert!(matches!(
        b.process_next().await.expect("process"),
        Outcome::Processed {
            state: TaskState::Done,
            ..
        }
    ));

    // Every task ran exactly once to completion; task 0 twice (the dead attempt and the
    // takeover), never concurrently.
    let mut runs: HashMap<u64, usize> = HashMap::new();
    for r in [&rec_a, &rec_b, &rec_c] {
        for (n, k) in r.runs.lock().iter() {
            *runs.entry(*n).or_default() += k;
        }
    }
    for n in 1..total {
        assert_eq!(runs.get(&n), Some(&1), "task {n}");
    }
    assert_eq!(runs.get(&0), Some(&2));
    assert!(
        b_done > 0 && c_done > 0,
        "both live replicas took work: {b_done}/{c_done}"
    );
    let counts = kb.stores().queue.counts(None).await.expect("counts");
    assert_eq!(counts.state(TaskState::Done), total);
}

fn indexer(kb: &evident_kb::Kb, clock: Arc<ManualClock>, owner: &str) -> DocumentsPoller {
    DocumentsPoller {
        ctx: PollContext {
            indexers: kb.stores().indexers.clone(),
            tasks: TaskSubmitter::new(kb.stores().queue.clone()),
            owner: owner.into(),
            clock,
            priority: Priority::DEFAULT,
            access: evident_indexers::access::Access::for_tests(&std::env::temp_dir()),
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_source_is_polled_by_one_indexer_and_taken_over_when_its_holder_dies() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_store, kb) = open_kb(dir.path()).await;
    let clock = Arc::new(ManualClock::new(1_000_000));
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    std::fs::write(docs.join("a.md"), "# A\n\nFirst.\n").expect("w");
    let req = evident_indexers::sources::SourceRequest::from_json(
        json!({"clientId": "acme", "path": docs, "intervalSecs": 60}),
    )
    .expect("req");
    let access = evident_indexers::access::Access::for_tests(dir.path());
    let source =
        evident_indexers::sources::register_with(&kb, &access, "documents", &req, clock.now_ms())
            .await
            .expect("register");

    // Three replicas race for the same source: exactly one polls it.
    let replicas: Vec<DocumentsPoller> = ["x", "y", "z"]
        .iter()
        .map(|o| indexer(&kb, clock.clone(), o))
        .collect();
    let polled = AtomicUsize::new(0);
    let results = futures_util::future::join_all(replicas.iter().map(|r| r.poll(&source))).await;
    for r in results {
        if r.expect("poll").is_some() {
            polled.fetch_add(1, Ordering::SeqCst);
        }
    }
    assert_eq!(
        polled.load(Ordering::SeqCst),
        1,
        "one replica holds the source"
    );
    let holder = kb
        .stores()
        .indexers
        .get_source(&source.key())
        .await
        .expect("get")
        .expect("source")
        .status
        .owner
        .expect("owner");

    // The holder dies (no release). Until its lease expires nobody else polls…
    std::fs::write(docs.join("b.md"), "# B\n\nSecond.\n").expect("w");
    let others: Vec<&DocumentsPoller> = replicas.iter().filter(|r| r.ctx.owner != holder).collect();
    clock.advance(60_000);
    assert!(others[0].poll(&source).await.expect("poll").is_none());
    // …then one of the others takes it over, and the dead holder can no longer move a cursor.
    clock.advance(120_000);
    let report = others[0]
        .poll(&source)
        .await
        .expect("takeover")
        .expect("lease")
        .to_json();
    assert_eq!(
        report["documents"], 1,
        "only the new file: the cursors survived: {report}"
    );
    let dead = replicas
        .iter()
        .find(|r| r.ctx.owner == holder)
        .expect("holder");
    match dead
        .ctx
        .set_cursor(&source.key(), "file:x.md", &json!({}))
        .await
    {
        Err(PollError::LeaseLost) => {}
        other => panic!("a dead holder's write must be refused: {other:?}"),
    }
}
