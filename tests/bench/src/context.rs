//! `context`: prompt context (`Kb::context`) on the embedded store with the built-in static
//! embedder. `--chunks` (default 100,000) of generated documents through the real ingest path,
//! plus `--entities` (default 500) entities, each with a profile, five typed pieces about it
//! (one per info type, and one linked to a technique by a relationship). Then `--reads`
//! requests (default 300) of each shape, p50 / p99: with a query and an active entity (target
//! p50 ≤ 10 ms), and the active entity alone (target p50 ≤ 3 ms).

use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, Priority, StaticEmbedder};
use evident_core::{KnowledgeType, Scope};
use evident_kb::Document;
use evident_kb::context::ContextQuery;
use evident_kb::profile::ProfileWrite;
use serde_json::{Map, json};

use crate::{Args, Corpus, Rng, percentile};

const INFO_TYPES: [&str; 4] = ["user_profile", "instructions", "context", "skills"];
const KINDS: [KnowledgeType; 4] = [
    KnowledgeType::Preference,
    KnowledgeType::Instruction,
    KnowledgeType::Fact,
    KnowledgeType::Procedure,
];

pub async fn run(args: &Args) {
    let chunks = args.usize("chunks", 100_000);
    let entities = args.usize("entities", 500);
    let reads = args.usize("reads", 300);
    const PARAGRAPHS: usize = 10;
    let tmp = tempfile::tempdir().expect("temp dir");
    let embedder: Arc<dyn Embedder> = Arc::new(StaticEmbedder::builtin());
    let (store, kb) = crate::setup::open_kb(tmp.path(), embedder).await;
    let corpus = Corpus::new();
    let mut rng = Rng(0xc0e7);
    let started = Instant::now();
    let docs = chunks.div_ceil(PARAGRAPHS);
    crate::setup::ingest_notes(&kb, &corpus, &mut rng, docs, PARAGRAPHS, |_, note| note).await;
    let mut in_flight = tokio::task::JoinSet::new();
    for e in 0..entities {
        for (i, it) in INFO_TYPES.iter().enumerate() {
            let words = 14 + rng.below(10);
            let mut d = Document {
                client_id: Some("bench".into()),
                source_urn: format!("bench:piece/{e}/{i}"),
                kind: "piece".into(),
                content: corpus.sentence(&mut rng, words),
                knowledge_type: Some(KINDS[i]),
                info_type: Some(it.to_string()),
                tags: vec![format!("t{}", e % 20)],
                entity: Some(format!("user:u{e}")),
                ..Default::default()
            };
            if i == 2 {
                d.relationships = Some(vec![format!(
                    "user:u{e}|specializes_in|technique:t{}",
                    e % 50
                )]);
            }
            let kb = kb.clone();
            in_flight.spawn(async move {
                kb.ingest(d, Priority::DEFAULT).await.expect("piece");
            });
            if in_flight.len() >= 4 {
                in_flight.join_next().await;
            }
        }
        let mut props = Map::new();
        props.insert("team".into(), json!(format!("team {}", e % 7)));
        props.insert("role".into(), json!("engineer"));
        kb.put_profile(
            Scope::client("bench"),
            ProfileWrite {
                key: format!("user:u{e}"),
                properties: props,
                ..Default::default()
            },
            Priority::DEFAULT,
        )
        .await
        .expect("profile");
    }
    while in_flight.join_next().await.is_some() {}
    store.drain_vector_index().expect("drain");
    println!(
        "context suite: {docs} documents (~{} chunks) + {entities} entities ({} pieces, profiles) in {:.1} s",
        docs * PARAGRAPHS,
        entities * INFO_TYPES.len(),
        started.elapsed().as_secs_f64()
    );

    let request = |i: usize, query: Option<String>| ContextQuery {
        query,
        active_entity: Some(format!("user:u{}", i % entities.max(1))),
        client_id: Some("bench".into()),
        now_ms: 1_790_000_000_000,
        ..Default::default()
    };
    let mut qrng = Rng(0xfeed);
    let mut measure = |with_query: bool| {
        let reqs: Vec<ContextQuery> = (0..reads)
            .map(|i| {
                let q = with_query.then(|| {
                    let mut q = corpus.sentence(&mut qrng, 3 + i % 3);
                    q.pop();
                    q
                });
                request(i * 7, q)
            })
            .collect();
        reqs
    };
    let with_query = measure(true);
    let entity_only = measure(false);
    let mut figures = Vec::new();
    let mut lines = 0usize;
    for (name, reqs) in [("query+entity", &with_query), ("entity only", &entity_only)] {
        for q in reqs.iter().take(20) {
            kb.context(q).await.expect("warm-up");
        }
        let mut times: Vec<Duration> = Vec::with_capacity(reads);
        for q in reqs {
            let t = Instant::now();
            let a = kb.context(q).await.expect("context");
            times.push(t.elapsed());
            lines += a.items.values().map(Vec::len).sum::<usize>();
        }
        times.sort();
        let (p50, p99) = (percentile(&times, 0.5), percentile(&times, 0.99));
        println!("context {name}: p50 {p50:.2} ms, p99 {p99:.2} ms");
        figures.push((name, p50, p99));
    }
    println!(
        "{}",
        json!({
            "suite": "context",
            "chunks": docs * PARAGRAPHS,
            "entities": entities,
            "reads": reads,
            "avgLines": lines as f64 / (2 * reads).max(1) as f64,
            "queryP50Ms": figures[0].1, "queryP99Ms": figures[0].2,
            "entityP50Ms": figures[1].1, "entityP99Ms": figures[1].2,
        })
    );
}
