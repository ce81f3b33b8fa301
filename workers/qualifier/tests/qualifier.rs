//! The qualifier against the embedded store with an injected clock: an embedder outage turns
//! into retries with the expected backoff (never into errors) and heals when the endpoint
//! comes back; bad tasks end in `error` without blocking the queue and can be retried.

use std::sync::Arc;

use evident_ai::{Embedder, OllamaConfig, OllamaEmbedder, Priority};
use evident_kb::{Document, Kb, TaskSubmitter};
use evident_qualifier::{Outcome, Qualifier, QueueConfig};
use evident_store::VectorSpace;
use evident_store::queue::{Clock, ManualClock, NewTask, PriorityBand, TaskQueue, TaskState};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

struct Setup {
    qualifier: Qualifier,
    tasks: TaskSubmitter,
    clock: Arc<ManualClock>,
    store: EmbeddedStore,
    _dir: tempfile::TempDir,
}

async fn setup(embedder: Arc<dyn Embedder>) -> Setup {
    let dir = tempfile::tempdir().expect("tmp");
    let store = EmbeddedStore::open(EmbeddedOptions {
        dir: dir.path().to_path_buf(),
        vector_space: VectorSpace {
            embedder: embedder.identity().to_string(),
            dim: embedder.dim(),
        },
        background_indexer: false,
    })
    .expect("store");
    let kb = Kb::new(store.stores(), embedder, Default::default())
        .await
        .expect("kb");
    let clock = Arc::new(ManualClock::new(1_000_000));
    let queue: Arc<dyn TaskQueue> = store.stores().queue;
    let qualifier = Qualifier {
        queue: queue.clone(),
        handlers: evident_kb::TaskHandlers::new(&kb),
        clock: clock.clone(),
        config: QueueConfig::default(),
        worker_id: "test".into(),
        band: PriorityBand::ALL,
    };
    Setup {
        qualifier,
        tasks: TaskSubmitter::new(queue),
        clock,
        store,
        _dir: dir,
    }
}

fn doc(i: usize) -> Document {
    Document {
        client_id: Some("acme".into()),
        source_urn: format!("doc:{i}"),
        kind: "doc".into(),
        content: format!("Document number {i} describes the rollout plan for service {i}."),
        ..Default::default()
    }
}

/// A deterministic Ollama-compatible embedder endpoint on `listener`.
fn serve_embedder(listener: std::net::TcpListener, dim: usize) {
    use axum::{Json, Router, routing::post};
    listener.set_nonblocking(true).expect("nonblocking");
    let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
    let router = Router::new().route(
        "/api/embed",
        post(move |Json(body): Json<serde_json::Value>| async move {
            let n = body["input"].as_array().map(Vec::len).unwrap_or(0);
            let vectors: Vec<Vec<f32>> = (0..n)
                .map(|i| (0..dim).map(|j| ((i + j) % 7) as f32 + 1.0).collect())
                .collect();
            Json(serde_json::json!({ "embeddings": vectors }))
        }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedder_outage_backs_off_forever_and_heals_when_the_endpoint_returns() {
    // Reserve a loopback port, then close it: nothing listens there during the outage.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let embedder = Arc::new(
        OllamaEmbedder::new(OllamaConfig {
            url: format!("http://127.0.0.1:{port}"),
            model: "m".into(),
            dim: 8,
            batch_size: 16,
            timeout_secs: 5,
        })
        .expect("client"),
    );
    let s = setup(embedder).await;
    for i in 0..3 {
        s.tasks
            .enqueue_ingest(doc(i), Priority::DEFAULT, s.clock.now_ms())
            .await
            .expect("enqueue");
    }
    let q = s.qualifier.queue.clone();
    let policy = s.qualifier.config.backoff();
    let expected_bases = [
        5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000,
    ];
    for (round, base) in expected_bases.iter().enumerate() {
        for _ in 0..3 {
            match s.qualifier.process_next().await.expect("process") {
                Outcome::Processed { state, .. } => {
                    assert_eq!(state, TaskState::RetryWait, "round {round}")
                }
                Outcome::Empty => panic!("round {round}: a due task was not claimable"),
            }
        }
        assert_eq!(
            s.qualifier.process_next().await.expect("process"),
            Outcome::Empty,
            "nothing is due before its backoff"
        );
        let waiting = q
            .list(&evident_store::queue::TaskFilter {
                limit: 10,
                ..Default::default()
            })
            .await
            .expect("list");
        let now = s.clock.now_ms();
        for t in &waiting {
            assert_eq!(t.state, TaskState::RetryWait);
            assert_eq!(t.retries as usize, round + 1);
            let delay = t.next_retry_at.expect("next retry") - now;
            assert!(
                delay >= *base && delay <= base + base / 10,
                "round {round}: delay {delay} for base {base}"
            );
            assert_eq!(delay, policy.delay(&t.task_id, t.retries));
            assert!(
                t.last_error
                    .as_deref()
                    .is_some_and(|e| e.contains("embedder_unavailable")),
                "{:?}",
                t.last_error
            );
        }
        let latest = waiting
            .iter()
            .filter_map(|t| t.next_retry_at)
            .max()
            .expect("due");
        s.clock.set(latest);
    }
    assert_eq!(
        q.counts(None)
            .await
            .expect("counts")
            .state(TaskState::Error),
        0,
        "an outage never turns into failed tasks"
    );

    // The endpoint comes back: a real HTTP server on the same port.
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("rebind the port");
    serve_embedder(listener, 8);
    let mut done = 0;
    while let Outcome::Processed { state, .. } = s.qualifier.process_next().await.expect("process")
    {
        assert_eq!(state, TaskState::Done);
        done += 1;
    }
    assert_eq!(done, 3);
    let counts = q.counts(None).await.expect("counts");
    assert_eq!(counts.state(TaskState::Done), 3);
    let report = s.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.chunks, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tasks_end_in_error_without_blocking_and_can_be_retried() {
    let s = setup(Arc::new(evident_ai::HashingEmbedder::new(16).expect("dim"))).await;
    let q = s.qualifier.queue.clone();
    let now = s.clock.now_ms();
    let garbage = q
        .enqueue(
            NewTask {
                kind: "ingest".into(),
                scope: evident_core::Scope::client("acme"),
                source_urn: "doc:x".into(),
                priority: 1,
                payload: serde_json::json!({"type": "ingest", "v": 1, "request": {"bogus": true}}),
            },
            now,
        )
        .await
        .expect("enqueue")
        .task_id;
    let mut with_secret = doc(7);
    with_secret.content = "the key is AKIAZ3MHQ7RT2LQKXW5P".into();
    let invalid = q
        .enqueue(
            NewTask {
                kind: "ingest".into(),
                scope: evident_core::Scope::client("acme"),
                source_urn: "doc:7".into(),
                priority: 1,
                payload: serde_json::json!({"type": "ingest", "v": 1, "request": with_secret}),
            },
            now,
        )
        .await
        .expect("enqueue")
        .task_id;
    let good = s
        .tasks
        .enqueue_ingest(doc(1), Priority::DEFAULT, now)
        .await
        .expect("enqueue")
        .task_id;

    let mut states = std::collections::HashMap::new();
    while let Outcome::Processed { task_id, state } =
        s.qualifier.process_next().await.expect("process")
    {
        states.insert(task_id, state);
    }
    assert_eq!(states.get(&garbage), Some(&TaskState::Error));
    assert_eq!(states.get(&invalid), Some(&TaskState::Error));
    assert_eq!(
        states.get(&good),
        Some(&TaskState::Done),
        "bad tasks do not block the queue"
    );
    let g = q.get(&garbage).await.expect("get").expect("task");
    assert!(
        g.last_error
            .as_deref()
            .is_some_and(|e| e.contains("unreadable task body")),
        "{:?}",
        g.last_error
    );
    let v = q.get(&invalid).await.expect("get").expect("task");
    assert!(
        v.last_error
            .as_deref()
            .is_some_and(|e| e.contains("credential_detected")),
        "{:?}",
        v.last_error
    );

    // Retried after "fixing the cause" — here the cause is in the payload, so it fails again,
    // but it was genuinely re-run (attempts counted) and ends in error again.
    assert_eq!(
        q.retry(&garbage, s.clock.now_ms())
            .await
            .expect("retry")
            .expect("task")
            .state,
        TaskState::Queued
    );
    assert_eq!(
        s.qualifier.process_next().await.expect("process"),
        Outcome::Processed {
            task_id: garbage.clone(),
            state: TaskState::Error
        }
    );
    assert_eq!(
        q.get(&garbage).await.expect("get").expect("task").attempts,
        2
    );

    // Idempotent handler: processing the same ingest twice leaves the state of once.
    let again = s
        .tasks
        .enqueue_ingest(doc(1), Priority::DEFAULT, s.clock.now_ms())
        .await
        .expect("enqueue")
        .task_id;
    assert_eq!(
        s.qualifier.process_next().await.expect("process"),
        Outcome::Processed {
            task_id: again,
            state: TaskState::Done
        }
    );
    let report = s.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.chunks, 1);
}
