//! `queue`: the qualification queue on the embedded store.
//!
//! 1. Throughput: `--tasks N` (default 20,000) tasks enqueued by 32 concurrent producers
//!    while `--workers N` (default 16) claim and complete them, then the same phases apart: enqueue alone,
//!    claim + complete alone. Every operation is durable (group-committed SQLite).
//! 2. Interactive latency: `--probes N` (default 200) priority-1 synchronous ingests, first on
//!    an idle service, then while the qualifier works through a backlog of `--backlog N`
//!    (default 50,000) queued priority-4 ingests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, Priority, StaticEmbedder};
use evident_kb::{Document, Kb, PoolConfig, TaskSubmitter};
use evident_qualifier::{Qualifier, QueueConfig};
use evident_store::VectorSpace;
use evident_store::queue::{Clock, NewTask, PriorityBand, SystemClock, TaskQueue, TaskState};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};
use tokio_util::sync::CancellationToken;

use crate::{Args, Corpus, Rng, percentile, rss_mib};

const PRODUCERS: usize = 32;

fn open(dir: &std::path::Path, embedder: &dyn Embedder) -> EmbeddedStore {
    EmbeddedStore::open(EmbeddedOptions {
        dir: dir.to_path_buf(),
        vector_space: VectorSpace {
            embedder: embedder.identity().to_string(),
            dim: embedder.dim(),
        },
        background_indexer: true,
    })
    .expect("open store")
}

fn task(i: usize) -> NewTask {
    NewTask {
        kind: "ingest".into(),
        scope: evident_core::Scope::client("bench"),
        source_urn: format!("bench:task/{i}"),
        priority: 4,
        payload: serde_json::json!({"type": "ingest", "v": 1, "n": i}),
    }
}

async fn enqueue_all(queue: &Arc<dyn TaskQueue>, range: std::ops::Range<usize>) {
    let clock = SystemClock;
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(range.start));
    let mut producers = tokio::task::JoinSet::new();
    for _ in 0..PRODUCERS {
        let (queue, next, end) = (queue.clone(), next.clone(), range.end);
        producers.spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= end {
                    break;
                }
                queue
                    .enqueue(task(i), clock.now_ms())
                    .await
                    .expect("enqueue");
            }
        });
    }
    while producers.join_next().await.is_some() {}
}

/// Claims and completes until `target` tasks are done.
async fn drain(queue: &Arc<dyn TaskQueue>, target: usize, consumers: usize) -> usize {
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut running = tokio::task::JoinSet::new();
    for w in 0..consumers {
        let (queue, done) = (queue.clone(), done.clone());
        running.spawn(async move {
            let clock = SystemClock;
            let id = format!("bench-{w}");
            while done.load(std::sync::atomic::Ordering::Relaxed) < target {
                match queue
                    .claim(&id, PriorityBand::ALL, 60_000, clock.now_ms())
                    .await
                    .expect("claim")
                {
                    Some(c) => {
                        assert!(
                            queue
                                .complete(&c.token, clock.now_ms())
                                .await
                                .expect("complete"),
                            "lease held"
                        );
                        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    // Like an idle qualifier (which waits for an enqueue's wake-up), don't spin.
                    None => tokio::time::sleep(Duration::from_millis(1)).await,
                }
            }
        });
    }
    while running.join_next().await.is_some() {}
    done.load(std::sync::atomic::Ordering::Relaxed)
}

fn small_doc(corpus: &Corpus, rng: &mut Rng, n: usize) -> String {
    let mut text = format!("Note {n}. ");
    for _ in 0..8 {
        let len = 12 + rng.below(8);
        text.push_str(&corpus.sentence(rng, len));
        text.push(' ');
    }
    text
}

fn ingest_request(urn: String, content: String) -> Document {
    Document {
        client_id: Some("bench".into()),
        source_urn: urn,
        kind: "note".into(),
        content,
        ..Default::default()
    }
}

/// `count` priority-1 synchronous ingests, one after another with a short pause between
/// (so a probe never queues behind the previous probe), returning sorted latencies.
async fn probe(kb: &Kb, corpus: &Corpus, tag: &str, count: usize) -> Vec<Duration> {
    let mut rng = Rng(0xbeef);
    let mut times = Vec::with_capacity(count);
    for i in 0..count {
        let req = ingest_request(
            format!("bench:probe/{tag}/{i}"),
            small_doc(corpus, &mut rng, i),
        );
        let t = Instant::now();
        kb.ingest(req, Priority::INTERACTIVE)
            .await
            .expect("probe ingest");
        times.push(t.elapsed());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    times.sort();
    times
}

pub async fn run(args: &Args) {
    let tasks = args.usize("tasks", 20_000);
    let workers = args.usize("workers", 16);
    let backlog = args.usize("backlog", 50_000);
    let probes = args.usize("probes", 200);
    let embedder: Arc<dyn Embedder> = Arc::new(StaticEmbedder::builtin());
    println!(
        "queue suite: {tasks} tasks for throughput, {probes} priority-1 probes, backlog {backlog}"
    );

    // 1. Throughput.
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = open(tmp.path(), embedder.as_ref());
    let queue = store.stores().queue;
    let t = Instant::now();
    let (_, done) = tokio::join!(enqueue_all(&queue, 0..tasks), drain(&queue, tasks, workers));
    let mixed_rate = done as f64 / t.elapsed().as_secs_f64();
    println!(
        "enqueue + claim + complete, concurrently ({PRODUCERS} producers, {workers} workers): {done} tasks, {mixed_rate:.0} tasks/s"
    );
    let t = Instant::now();
    enqueue_all(&queue, tasks..2 * tasks).await;
    let enqueue_rate = tasks as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    let drained = drain(&queue, tasks, workers).await;
    let claim_rate = drained as f64 / t.elapsed().as_secs_f64();
    println!(
        "enqueue alone: {enqueue_rate:.0} tasks/s; claim + complete alone (from a {tasks}-task backlog): {claim_rate:.0} tasks/s"
    );
    let counts = queue.counts(None).await.expect("counts");
    assert_eq!(
        counts.state(TaskState::Done) as usize,
        2 * tasks,
        "every task done once"
    );
    store.close().expect("close");
    drop(tmp);

    // 2. Interactive ingest latency, idle and under a bulk backlog.
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = open(tmp.path(), embedder.as_ref());
    let kb = Kb::new(store.stores(), embedder.clone(), PoolConfig::default())
        .await
        .expect("kb");
    let corpus = Corpus::new();
    let idle = probe(&kb, &corpus, "idle", probes).await;
    println!(
        "priority-1 ingest, idle: p50 {:.2} ms, p99 {:.2} ms",
        percentile(&idle, 0.5),
        percentile(&idle, 0.99)
    );

    let submitter = TaskSubmitter::new(kb.stores().queue.clone());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let t = Instant::now();
    let mut rng = Rng(0xb01c);
    let mut enqueues = tokio::task::JoinSet::new();
    for i in 0..backlog {
        let req = ingest_request(format!("bench:bulk/{i}"), small_doc(&corpus, &mut rng, i));
        let (submitter, now) = (submitter.clone(), clock.now_ms());
        enqueues.spawn(async move {
            submitter
                .enqueue_ingest(req, Priority::DEFAULT, now)
                .await
                .expect("enqueue bulk")
        });
        if enqueues.len() >= PRODUCERS {
            enqueues.join_next().await.expect("enqueue").expect("join");
        }
    }
    while let Some(r) = enqueues.join_next().await {
        r.expect("join");
    }
    println!(
        "backlog: {backlog} bulk ingests enqueued in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let cancel = CancellationToken::new();
    let config = QueueConfig::default();
    let pool = tokio::spawn(evident_qualifier::run_pool(
        Qualifier {
            queue: kb.stores().queue.clone(),
            handlers: evident_kb::TaskHandlers::new(&kb),
            clock: clock.clone(),
            config: config.clone(),
            worker_id: "bench".into(),
            band: PriorityBand::ALL,
        },
        cancel.clone(),
        submitter.wake_signal(),
    ));
    // Let the bulk workers get going before measuring.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = kb.stores().queue.counts(None).await.expect("counts");
    let t = Instant::now();
    let busy = probe(&kb, &corpus, "busy", probes).await;
    let window = t.elapsed().as_secs_f64();
    let after = kb.stores().queue.counts(None).await.expect("counts");
    let bulk_done = after.state(TaskState::Done) - before.state(TaskState::Done);
    let bulk_rate = bulk_done as f64 / window;
    println!(
        "priority-1 ingest, with backlog: p50 {:.2} ms, p99 {:.2} ms ({bulk_done} bulk ingests done meanwhile, {bulk_rate:.0}/s; {} still queued)",
        percentile(&busy, 0.5),
        percentile(&busy, 0.99),
        after.state(TaskState::Queued)
    );
    cancel.cancel();
    pool.await.expect("worker pool");
    let (rss, peak) = rss_mib();
    println!("memory: RSS {rss:.0} MiB, peak {peak:.0} MiB");
    store.close().expect("close");

    let json = serde_json::json!({
        "suite": "queue",
        "tasks": tasks,
        "workers": workers,
        "enqueue_claim_complete_tasks_per_s": mixed_rate.round(),
        "enqueue_tasks_per_s": enqueue_rate.round(),
        "claim_complete_tasks_per_s": claim_rate.round(),
        "backlog": backlog,
        "p1_ingest_idle_p50_ms": percentile(&idle, 0.5),
        "p1_ingest_idle_p99_ms": percentile(&idle, 0.99),
        "p1_ingest_backlog_p50_ms": percentile(&busy, 0.5),
        "p1_ingest_backlog_p99_ms": percentile(&busy, 0.99),
        "bulk_ingests_per_s_during_probes": bulk_rate.round(),
        "peak_rss_mib": peak,
    });
    println!("{json}");
}
