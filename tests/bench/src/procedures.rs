//! `memory` (part): procedure match over `--procedures` procedures of one client (default
//! 10,000; target p50 ≤ 5 ms), with the built-in static embedder as the API uses it: the
//! task embedded, the client's vectors scanned in memory, the candidates ranked. Also times
//! saving (embedding + a durable write) and outcomes (one atomic UPDATE each).

use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, StaticEmbedder};
use evident_kb::procedures::{DEFAULT_MATCH_LIMIT, NewProcedure};
use evident_store::procedures::ProcedureStep;
use serde_json::{Value, json};

use crate::{Args, Corpus, Rng, percentile};

const AGENTS: [&str; 6] = [
    "Research",
    "Coding",
    "Test",
    "Git",
    "DevOps",
    "Communication",
];

fn steps(rng: &mut Rng) -> Vec<ProcedureStep> {
    (0..2 + rng.below(4))
        .map(|i| ProcedureStep {
            agent: AGENTS[rng.below(AGENTS.len())].to_string(),
            action: format!("step_{i}"),
            params: (i == 0).then(|| json!({"depth": 2})),
        })
        .collect()
}

/// Runs the procedure part of the memory suite; its figures as JSON fields.
pub async fn run(args: &Args) -> Value {
    let n = args.usize("procedures", 10_000);
    let matches = args.usize("matches", 500);
    let tmp = tempfile::tempdir().expect("temp dir");
    let embedder: Arc<dyn Embedder> = Arc::new(StaticEmbedder::builtin());
    let (_store, kb) = crate::setup::open_kb(tmp.path(), embedder).await;
    let corpus = Corpus::new();
    let mut rng = Rng(0x9e3);
    let now = 1_700_000_000_000i64;
    let started = Instant::now();
    let mut in_flight = tokio::task::JoinSet::new();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        // Triggers of 2-6 words; one in ten user-defined; a tenth in projects.
        let words = 2 + rng.below(5);
        let trigger = corpus.sentence(&mut rng, words);
        let def = NewProcedure {
            trigger_pattern: trigger.trim_end_matches('.').replace(' ', "_"),
            steps: steps(&mut rng),
            source: if i % 10 == 0 {
                "user_defined"
            } else {
                "learned"
            }
            .into(),
        };
        let project = (i % 10 == 5).then(|| format!("p{}", i % 7));
        let id = format!("bench-{i}");
        ids.push(id.clone());
        let kb = kb.clone();
        in_flight.spawn(async move {
            kb.save_procedure(
                "bench",
                project.as_deref(),
                Some(id),
                def,
                now - (i as i64) * 60_000,
            )
            .await
            .expect("save");
        });
        if in_flight.len() >= 32
            && let Some(r) = in_flight.join_next().await
        {
            r.expect("save task");
        }
    }
    while let Some(r) = in_flight.join_next().await {
        r.expect("save task");
    }
    let save_secs = started.elapsed().as_secs_f64();
    println!(
        "procedures: {n} saved in {save_secs:.1} s ({:.0}/s)",
        n as f64 / save_secs
    );

    // Outcomes on a fifth of them (statistics to rank by), timed one at a time.
    let mut t_outcome: Vec<Duration> = Vec::new();
    for i in 0..n / 5 {
        let id = &ids[rng.below(n)];
        let t = Instant::now();
        // Project procedures are invisible from the client level: those answer 404.
        let _ = kb
            .record_procedure_outcome("bench", None, id, rng.below(4) != 0, now + i as i64)
            .await;
        t_outcome.push(t.elapsed());
    }
    t_outcome.sort();

    let mut t_match: Vec<Duration> = Vec::with_capacity(matches);
    let (mut hits, mut candidates) = (0usize, 0usize);
    for _ in 0..matches {
        let words = 8 + rng.below(10);
        let task = corpus.sentence(&mut rng, words);
        let t = Instant::now();
        let m = kb
            .match_procedures("bench", Some("p3"), &task, DEFAULT_MATCH_LIMIT, now)
            .await
            .expect("match");
        t_match.push(t.elapsed());
        hits += usize::from(!m.procedures.is_empty());
        candidates += m.procedures.len() + m.closest.len();
    }
    t_match.sort();
    let (m50, m99) = (percentile(&t_match, 0.5), percentile(&t_match, 0.99));
    let (o50, o99) = (percentile(&t_outcome, 0.5), percentile(&t_outcome, 0.99));
    println!(
        "procedure match ({n} procedures, static embedder, {hits}/{matches} tasks matched, {:.1} answered per task): p50 {m50:.3} ms, p99 {m99:.3} ms (target p50 ≤ 5 ms)",
        candidates as f64 / matches.max(1) as f64
    );
    println!("procedure outcome (durable, atomic): p50 {o50:.3} ms, p99 {o99:.3} ms");
    json!({
        "procedures": n, "matches": matches, "saveSecs": save_secs,
        "matchP50Ms": m50, "matchP99Ms": m99, "outcomeP50Ms": o50, "outcomeP99Ms": o99,
        "tasksMatched": hits,
    })
}
