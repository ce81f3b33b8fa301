//! `memory`: agent memory on the embedded store. The user-context prefetch over `--items`
//! knowledge items (default 10,000, spread over the six categories; target p50 ≤ 2 ms) and
//! session-log appends (target p99 ≤ 10 ms), each an evidence-free read or a durable write
//! through `evident-kb` as the API calls it; then procedure match (`procedures`, target
//! p50 ≤ 5 ms at 10,000 procedures).

use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, HashingEmbedder, Priority};
use evident_core::{Scope, Visibility};
use evident_kb::session_log::NewSessionEntry;
use evident_kb::user_knowledge::DEFAULT_CONTEXT_BYTES;
use evident_kb::{KnowledgeCategory, KnowledgeItem};
use serde_json::json;

use crate::{Args, Corpus, Rng, percentile};

pub async fn run(args: &Args) {
    let items = args.usize("items", 10_000);
    let reads = args.usize("reads", 500);
    let appends = args.usize("appends", 2_000);
    let tmp = tempfile::tempdir().expect("temp dir");
    // The prefetch embeds nothing; the hashing embedder keeps set-up short.
    let embedder: Arc<dyn Embedder> = Arc::new(HashingEmbedder::new(64).expect("dim"));
    let (_store, kb) = crate::setup::open_kb(tmp.path(), embedder).await;

    let corpus = Corpus::new();
    let mut rng = Rng(0x3e3);
    let started = Instant::now();
    let mut in_flight = tokio::task::JoinSet::new();
    for i in 0..items {
        let words = 12 + rng.below(12);
        let item = KnowledgeItem {
            subject: format!("subject {i}"),
            content: corpus.sentence(&mut rng, words),
            category: KnowledgeCategory::ALL[i % KnowledgeCategory::ALL.len()],
        };
        let kb = kb.clone();
        in_flight.spawn(async move {
            kb.store_user_knowledge(Scope::client("bench"), item, Priority::DEFAULT)
                .await
                .expect("store");
        });
        if in_flight.len() >= 32 {
            in_flight.join_next().await;
        }
    }
    while in_flight.join_next().await.is_some() {}
    println!(
        "memory suite: {items} knowledge items stored in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let vis = Visibility::of(Scope::client("bench"));
    let mut t_prefetch: Vec<Duration> = Vec::with_capacity(reads);
    let mut bytes = 0;
    for _ in 0..reads {
        let t = Instant::now();
        let ctx = kb
            .user_context(&vis, DEFAULT_CONTEXT_BYTES)
            .await
            .expect("prefetch");
        t_prefetch.push(t.elapsed());
        bytes = ctx.markdown.len();
    }
    t_prefetch.sort();
    let (pre50, pre99) = (percentile(&t_prefetch, 0.5), percentile(&t_prefetch, 0.99));
    println!(
        "user-context prefetch ({bytes} bytes of Markdown): p50 {pre50:.3} ms, p99 {pre99:.3} ms (target p50 ≤ 2 ms)"
    );

    let mut t_append: Vec<Duration> = Vec::with_capacity(appends);
    let now = 1_700_000_000_000i64;
    for i in 0..appends {
        let entry = NewSessionEntry {
            source: "orchestrator_decision".into(),
            summary: corpus.sentence(&mut rng, 12),
            details: Some(json!({"step": i})),
            task_id: Some(format!("T-{i}")),
            timestamp: None,
        };
        let project = format!("p{}", i % 20);
        let t = Instant::now();
        kb.session_append("bench", Some(&project), entry, now + i as i64)
            .await
            .expect("append");
        t_append.push(t.elapsed());
    }
    t_append.sort();
    let (app50, app99) = (percentile(&t_append, 0.5), percentile(&t_append, 0.99));
    println!(
        "session-log append (20 logs at the 50-entry limit after the first 1,000): p50 {app50:.3} ms, p99 {app99:.3} ms (target p99 ≤ 10 ms)"
    );
    let procedures = crate::procedures::run(args).await;
    println!(
        "{}",
        json!({
            "suite": "memory", "items": items, "reads": reads, "appends": appends,
            "prefetchP50Ms": pre50, "prefetchP99Ms": pre99,
            "appendP50Ms": app50, "appendP99Ms": app99,
            "procedures": procedures,
        })
    );
}
