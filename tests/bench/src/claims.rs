//! `claims`: claims on the embedded store with the built-in embedder. Loads `--claims`
//! claims (default 100,000), each citing a chunk of a generated corpus, then measures `learn`
//! (evidence checked, text indexed through the write path, claim + event stored; target
//! p99 ≤ 10 ms) and `recall` (hybrid search over claim texts, filters, evidence resolved;
//! target p50 ≤ 5 ms), both through `evident-kb` as the API calls it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, Priority, StaticEmbedder};
use evident_core::claims::{Actor, ActorType, ClaimStatus, EvidenceKind, EvidenceRef};
use evident_core::{Scope, Visibility};
use evident_kb::Document;
use evident_kb::claims::{NewClaim, Recall};
use serde_json::json;

use crate::{Args, Corpus, Rng, percentile};

fn claim(text: String, chunk: &str) -> NewClaim {
    NewClaim {
        text,
        evidence: vec![EvidenceRef::new(EvidenceKind::Chunk, chunk)],
        status: ClaimStatus::Observed,
        confidence: 0.9,
        subject: None,
        actor: Actor {
            actor_type: ActorType::Agent,
            id: "bench".into(),
        },
        session_id: None,
        domain: Some("codebase".into()),
        tags: vec!["bench".into()],
        about: Vec::new(),
        supersedes: None,
    }
}

pub async fn run(args: &Args) {
    let claims = args.usize("claims", 100_000);
    let learns = args.usize("learns", 1_000);
    let queries = args.usize("queries", 300);
    let docs = args.usize("docs", 2_000);
    let tmp = tempfile::tempdir().expect("temp dir");
    let embedder: Arc<dyn Embedder> = Arc::new(StaticEmbedder::builtin());
    let (store, kb) = crate::setup::open_kb(tmp.path(), embedder).await;
    let scope = Scope::client("bench");
    let vis = Visibility::of(scope.clone());
    let corpus = Corpus::new();
    let mut rng = Rng(0xc1a1);

    // Evidence: one chunk per document.
    let mut chunk_ids = Vec::with_capacity(docs);
    for i in 0..docs {
        let doc = Document {
            client_id: Some("bench".into()),
            source_urn: format!("doc:{i}"),
            kind: "doc".into(),
            content: corpus.sentence(&mut rng, 30),
            ..Default::default()
        };
        kb.ingest(doc, Priority::DEFAULT).await.expect("ingest");
        let (id, _) = kb
            .stores()
            .chunks
            .source_chunks("bench", &format!("doc:{i}"))
            .await
            .expect("chunks")
            .remove(0);
        chunk_ids.push(id);
    }

    let started = Instant::now();
    let mut in_flight = tokio::task::JoinSet::new();
    for i in 0..claims {
        let words = 8 + rng.below(10);
        let text = corpus.sentence(&mut rng, words);
        let (kb, scope, chunk) = (kb.clone(), scope.clone(), chunk_ids[i % docs].clone());
        in_flight.spawn(async move {
            kb.learn(
                scope,
                claim(text, &chunk),
                None,
                1_700_000_000_000,
                Priority::DEFAULT,
            )
            .await
            .expect("learn");
        });
        if in_flight.len() >= 32 {
            in_flight.join_next().await;
        }
    }
    while in_flight.join_next().await.is_some() {}
    let load = started.elapsed().as_secs_f64();
    store.drain_vector_index().expect("drain");
    println!(
        "claims suite: {claims} claims learned in {load:.1} s ({:.0}/s, 32 in flight)",
        claims as f64 / load
    );

    let mut t_learn: Vec<Duration> = Vec::with_capacity(learns);
    for i in 0..learns {
        let text = corpus.sentence(&mut rng, 12);
        let t = Instant::now();
        kb.learn(
            scope.clone(),
            claim(text, &chunk_ids[i % docs]),
            None,
            1_700_000_000_000,
            Priority::INTERACTIVE,
        )
        .await
        .expect("learn");
        t_learn.push(t.elapsed());
    }
    t_learn.sort();
    let (l50, l99) = (percentile(&t_learn, 0.5), percentile(&t_learn, 0.99));
    println!(
        "learn (one at a time, durable): p50 {l50:.3} ms, p99 {l99:.3} ms (target p99 ≤ 10 ms)"
    );

    let mut t_recall: Vec<Duration> = Vec::with_capacity(queries);
    let mut found = 0;
    for _ in 0..queries {
        let question = corpus.sentence(&mut rng, 4);
        let t = Instant::now();
        let hits = kb
            .recall(
                &vis,
                Recall {
                    question,
                    limit: 10,
                    ..Default::default()
                },
            )
            .await
            .expect("recall");
        t_recall.push(t.elapsed());
        found += hits.len();
    }
    t_recall.sort();
    let (r50, r99) = (percentile(&t_recall, 0.5), percentile(&t_recall, 0.99));
    println!(
        "recall (10 results, evidence resolved; {:.1} hits per query): p50 {r50:.3} ms, p99 {r99:.3} ms (target p50 ≤ 5 ms)",
        found as f64 / queries.max(1) as f64
    );
    println!(
        "{}",
        json!({
            "suite": "claims", "claims": claims, "learns": learns, "queries": queries,
            "loadSecs": load, "learnP50Ms": l50, "learnP99Ms": l99,
            "recallP50Ms": r50, "recallP99Ms": r99,
        })
    );
}
