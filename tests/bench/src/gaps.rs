//! `graph-writes`: agent graph writes and gap claims on the embedded store, through
//! `evident-kb` as the API calls them.
//!
//! - Edge writes with evidence: `--edges` edges (default 20,000) in batches of `--batch`
//!   (default 500), each edge citing an existing chunk (checked visible to the writer), new
//!   endpoints every time, `--writers` batches in flight (default 4). Target ≥ 2,000 edges/s.
//! - Gap claims: `--gaps` open gaps (default 10,000) of one client, then `--claims` claims
//!   (default 1,000), each followed by a move out of `acquiring` (so the next claim is not held
//!   by the one-per-client rule). Target p99 ≤ 10 ms.

use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, HashingEmbedder, Priority};
use evident_core::{Scope, Visibility};
use evident_kb::agent_graph::{EdgeAssertion, EvidenceInput, Provenance};
use evident_kb::{Document, PoolConfig};
use evident_store::gaps::{Acquirer, GapMove, GapPhase, GapState, NewGap};
use serde_json::json;

use crate::{Args, Corpus, Rng, percentile};

pub async fn run(args: &Args) {
    let edges = args.usize("edges", 20_000);
    let batch = args.usize("batch", 500).max(1);
    let writers = args.usize("writers", 4).max(1);
    let gaps = args.usize("gaps", 10_000);
    let claims = args.usize("claims", 1_000).min(gaps);
    let tmp = tempfile::tempdir().expect("temp dir");
    let embedder: Arc<dyn Embedder> = Arc::new(HashingEmbedder::new(64).expect("dim"));
    let (store, kb) = crate::git::open_kb_with(
        tmp.path(),
        embedder,
        PoolConfig {
            interactive: writers,
            bulk: 4,
        },
    )
    .await;
    let scope = Scope::client("bench");
    let corpus = Corpus::new();
    let mut rng = Rng(0x6a9);
    for d in 0..100 {
        kb.ingest(
            Document {
                client_id: Some("bench".into()),
                source_urn: format!("doc:{d}"),
                kind: "doc".into(),
                content: (0..8)
                    .map(|_| corpus.sentence(&mut rng, 60))
                    .collect::<Vec<_>>()
                    .join("\n\n"),
                ..Default::default()
            },
            Priority::DEFAULT,
        )
        .await
        .expect("ingest");
    }
    let mut chunks = Vec::new();
    for d in 0..100 {
        chunks.extend(
            kb.stores()
                .chunks
                .source_chunks("bench", &format!("doc:{d}"))
                .await
                .expect("chunks")
                .into_iter()
                .map(|(id, _)| id),
        );
    }
    let chunks = Arc::new(chunks);

    // Edge writes.
    let started = Instant::now();
    let mut in_flight = tokio::task::JoinSet::new();
    let mut t_batch: Vec<Duration> = Vec::new();
    for b in 0..edges.div_ceil(batch) {
        let n = batch.min(edges - b * batch);
        let list: Vec<EdgeAssertion> = (0..n)
            .map(|i| EdgeAssertion {
                from: format!("service:s{b}_{i}"),
                edge_type: "depends_on".into(),
                to: format!("service:t{}", rng.below(5_000)),
                props: Default::default(),
                evidence: Some(EvidenceInput {
                    chunk_ids: vec![chunks[rng.below(chunks.len())].clone()],
                    text: None,
                }),
            })
            .collect();
        let (kb, scope) = (kb.clone(), scope.clone());
        in_flight.spawn(async move {
            let prov = Provenance {
                actor: "bench".into(),
                gap_id: None,
                phase: GapPhase::Construction,
                at: "2026-01-01T00:00:00Z".into(),
            };
            let t = Instant::now();
            kb.assert_graph(&scope, &prov, &[], &list)
                .await
                .expect("write");
            t.elapsed()
        });
        if in_flight.len() >= writers
            && let Some(d) = in_flight.join_next().await
        {
            t_batch.push(d.expect("task"));
        }
    }
    while let Some(d) = in_flight.join_next().await {
        t_batch.push(d.expect("task"));
    }
    let secs = started.elapsed().as_secs_f64();
    let rate = edges as f64 / secs;
    t_batch.sort();
    println!(
        "agent edge writes: {edges} edges with evidence in batches of {batch} ({writers} in flight): {rate:.0} edges/s, batch p50 {:.1} ms, p99 {:.1} ms (target ≥ 2,000/s)",
        percentile(&t_batch, 0.5),
        percentile(&t_batch, 0.99)
    );
    let integrity = store.check_integrity().await.expect("integrity");
    assert!(integrity.is_ok(), "{integrity:?}");

    // Gap claims with many open gaps.
    let g = kb.stores().gaps.clone();
    let now = 1_700_000_000_000i64;
    for start in (0..gaps).step_by(500) {
        let list = (start..(start + 500).min(gaps))
            .map(|i| NewGap {
                scope: scope.clone(),
                question: format!("question {i}: {}", corpus.sentence(&mut rng, 8)),
                context: None,
                priority: (i % 10) as u8,
                about: Vec::new(),
                acquirer: Acquirer::Agent,
                actor: "bench".into(),
                phase: GapPhase::Detection,
            })
            .collect();
        g.create_gaps(list, now).await.expect("create");
    }
    let vis = Visibility::of(scope.clone());
    let mut t_claim: Vec<Duration> = Vec::with_capacity(claims);
    for i in 0..claims {
        let at = now + i as i64;
        let t = Instant::now();
        let c = g
            .claim_gap("bench", &vis, Acquirer::Agent, "w", 60_000, at)
            .await
            .expect("claim")
            .expect("an open gap");
        t_claim.push(t.elapsed());
        g.advance_gap(
            "bench",
            &c.gap.gap_id,
            GapMove {
                to: GapState::Failed,
                epoch: Some(c.epoch),
                actor: "w".into(),
                kind: "failed".into(),
                phase: Some(GapPhase::Acquisition),
                detail: json!({}),
                failure: Some("bench".into()),
                findings_urn: None,
                not_before: None,
            },
            at,
        )
        .await
        .expect("advance");
    }
    t_claim.sort();
    let (c50, c99) = (percentile(&t_claim, 0.5), percentile(&t_claim, 0.99));
    println!(
        "gap claim with {gaps} open gaps: p50 {c50:.3} ms, p99 {c99:.3} ms over {claims} claims (target p99 ≤ 10 ms)"
    );
    println!(
        "{}",
        json!({
            "suite": "graph-writes", "edges": edges, "batch": batch, "writers": writers,
            "edgesPerSec": rate, "gaps": gaps, "claims": claims,
            "claimP50Ms": c50, "claimP99Ms": c99,
        })
    );
}
