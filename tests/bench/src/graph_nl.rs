//! `evident-bench graph-nl [--repo PATH] [--at COMMIT] [--dir DIR] [--per N]`: does the
//! graph answer natural language (issue 31)? This repository, cloned at the quality sets'
//! pinned commit and indexed by the git indexer, asked as a new user would:
//!
//! - **people by name**: every commit author whose name has two words or more — "what did
//!   {name} change"; hit when the person's node is in the pack's graph;
//! - **types in words**: structs, enums, traits and classes whose name has two camel-case
//!   parts or more, every k-th in key order — "how does the {words} work" (`RetrieveQuery` →
//!   "retrieve query"); hit when the type's node is in the pack's graph;
//! - **agent edges by relation**: `--per` agent edges `service:{a} -depends_on->
//!   service:{b}` written citing a file chunk each — "what does {a} depend on"; hit when the
//!   edge is in the pack's graph.
//!
//! Each question is asked twice in the same run: with the patterns only (`link_entities:
//! false`, before) and with the entity index (after); recall@graph per set, the entity in
//! the pack's `entities`, and retrieve latency p50 / p99 per mode.

use std::path::Path;
use std::time::{Duration, Instant};

use evident_core::Visibility;
use evident_core::refs::NodeKey;
use evident_kb::agent_graph::{EdgeAssertion, EvidenceInput, Provenance};
use evident_kb::retrieve::{EvidencePack, RetrieveQuery, Tuning};
use evident_store::gaps::GapPhase;
use serde_json::{Value, json};

use crate::Args;

struct Question {
    set: &'static str,
    text: String,
    /// The node that must be in the graph, or the edge `(from, type, to)`.
    node: Option<String>,
    edge: Option<(String, String, String)>,
}

fn words_of(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    evident_analysis::camel_parts(name, |p| out.push(p.to_lowercase()));
    out
}

/// People, types and agent edges asked about (see the module documentation).
async fn questions(kb: &evident_kb::Kb, per: usize) -> Vec<Question> {
    let vis = Visibility::of(evident_core::Scope::client("bench"));
    let graph = &kb.stores().graph;
    let mut out = Vec::new();
    let all = |t: &'static str| {
        let graph = graph.clone();
        let vis = vis.clone();
        async move {
            let mut nodes = Vec::new();
            let mut after: Option<NodeKey> = None;
            loop {
                let page = graph
                    .list_nodes(&vis, Some(t), after.as_ref(), 500)
                    .await
                    .expect("list");
                nodes.extend(page.nodes);
                match page.next_after {
                    Some(a) => after = Some(a),
                    None => break,
                }
            }
            nodes
        }
    };
    for p in all("person").await {
        if p.label.split_whitespace().count() >= 2 && !p.label.contains('@') {
            out.push(Question {
                set: "people",
                text: format!("what did {} change", p.label),
                node: Some(p.key.as_str().to_string()),
                edge: None,
            });
        }
    }
    let mut types = Vec::new();
    for t in ["struct", "enum", "trait", "class", "interface"] {
        for n in all(t).await {
            if words_of(&n.label).len() >= 2 && n.label.chars().all(|c| c.is_alphanumeric()) {
                types.push(n);
            }
        }
    }
    types.sort_by(|a, b| a.key.cmp(&b.key));
    let step = (types.len() / per.max(1)).max(1);
    for n in types.iter().step_by(step).take(per) {
        out.push(Question {
            set: "types",
            text: format!("how does the {} work", words_of(&n.label).join(" ")),
            node: Some(n.key.as_str().to_string()),
            edge: None,
        });
    }
    out
}

/// Agent edges citing a file chunk each (every k-th source's first chunk), and their
/// questions.
async fn agent_edges(kb: &evident_kb::Kb, per: usize) -> Vec<Question> {
    let services = [
        "billing",
        "ledger",
        "invoicing",
        "payments",
        "shipping",
        "inventory",
        "catalog",
        "pricing",
        "notifications",
        "accounts",
        "reporting",
        "search",
    ];
    let vis = Visibility::of(evident_core::Scope::client("bench"));
    let sources = kb
        .stores()
        .sources
        .list(&vis, 100_000)
        .await
        .expect("sources");
    let files: Vec<_> = sources
        .iter()
        .filter(|s| s.source_urn.contains(":blob:"))
        .collect();
    let step = (files.len() / per.max(1)).max(1);
    let mut out = Vec::new();
    for (i, s) in files.iter().step_by(step).take(per).enumerate() {
        let chunks = kb
            .stores()
            .chunks
            .source_chunks(s.scope.partition(), &s.source_urn)
            .await
            .expect("chunks");
        let Some((chunk, _)) = chunks.first() else {
            continue;
        };
        let (a, b) = (
            services[i % services.len()],
            services[(i + 5) % services.len()],
        );
        let (from, to) = (format!("service:{a}_{i}"), format!("service:{b}_{i}"));
        let edge = EdgeAssertion {
            from: from.clone(),
            edge_type: "depends_on".into(),
            to: to.clone(),
            props: Default::default(),
            evidence: Some(EvidenceInput {
                chunk_ids: vec![chunk.clone()],
                text: None,
            }),
        };
        let prov = Provenance {
            actor: "bench-agent".into(),
            gap_id: None,
            phase: GapPhase::Construction,
            at: "2026-11-28T00:00:00Z".into(),
        };
        kb.assert_graph(&evident_core::Scope::client("bench"), &prov, &[], &[edge])
            .await
            .expect("agent edge");
        out.push(Question {
            set: "agent_edges",
            text: format!("what does {a} {i} depend on"),
            node: None,
            edge: Some((from, "depends_on".into(), to)),
        });
    }
    out
}

fn hit(q: &Question, pack: &EvidencePack) -> (bool, bool) {
    let in_graph = match (&q.node, &q.edge) {
        (Some(k), _) => pack.graph.nodes.iter().any(|n| n.key.as_str() == k),
        (_, Some((f, t, to))) => pack
            .graph
            .edges
            .iter()
            .any(|e| e.from.as_str() == f && &e.edge_type == t && e.to.as_str() == to),
        _ => false,
    };
    let linked = match (&q.node, &q.edge) {
        (Some(k), _) => pack.entities.iter().any(|e| e.key.as_str() == k),
        (_, Some((f, _, _))) => pack.entities.iter().any(|e| e.key.as_str() == f),
        _ => false,
    };
    (in_graph, linked)
}

async fn ask(kb: &evident_kb::Kb, q: &Question, link: bool) -> (EvidencePack, Duration) {
    let mut req = RetrieveQuery::new(q.text.as_str(), Some("bench"));
    req.tuning = Tuning {
        link_entities: link,
        ..Default::default()
    };
    let t = Instant::now();
    let pack = kb.retrieve(&req).await.expect("retrieve");
    (pack, t.elapsed())
}

/// Recall@graph and linked share per set, and latency, for one mode.
async fn measure(kb: &evident_kb::Kb, qs: &[Question], link: bool) -> Value {
    let mut out = serde_json::Map::new();
    let mut times = Vec::new();
    for set in ["people", "types", "agent_edges"] {
        let mine: Vec<&Question> = qs.iter().filter(|q| q.set == set).collect();
        let (mut in_graph, mut linked) = (0usize, 0usize);
        let mut misses = Vec::new();
        for q in &mine {
            let (pack, took) = ask(kb, q, link).await;
            times.push(took);
            let (g, l) = hit(q, &pack);
            in_graph += usize::from(g);
            linked += usize::from(l);
            if !g && misses.len() < 5 {
                misses.push(q.text.clone());
            }
        }
        let n = mine.len().max(1) as f64;
        out.insert(
            set.into(),
            json!({"questions": mine.len(), "recall_at_graph": in_graph as f64 / n,
                   "linked": linked as f64 / n, "misses": misses}),
        );
    }
    times.sort();
    out.insert(
        "retrieve_ms".into(),
        json!({"p50": crate::percentile(&times, 0.5), "p99": crate::percentile(&times, 0.99)}),
    );
    Value::Object(out)
}

pub async fn run(args: &Args) {
    let scratch = tempfile::tempdir_in(args.path("dir").unwrap_or_else(std::env::temp_dir))
        .expect("scratch dir");
    let repo_path = args
        .path("repo")
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    let at = args.value("at").unwrap_or(crate::quality::repo::PINNED);
    let per: usize = args.value("per").map_or(30, |v| v.parse().expect("--per"));
    let repo = crate::quality::repo::pinned_clone(&repo_path, at, scratch.path());
    let indexer = crate::git::indexer(scratch.path()).await;
    let t = Instant::now();
    indexer.index("evident", &repo).await;
    println!(
        "graph-nl: indexed {} in {:.1} s",
        repo.display(),
        t.elapsed().as_secs_f64()
    );
    let kb = &indexer.kb;
    let mut qs = questions(kb, per).await;
    qs.extend(agent_edges(kb, per).await);
    let before = measure(kb, &qs, false).await;
    let after = measure(kb, &qs, true).await;
    let report = json!({"commit": at, "before_patterns_only": before, "after_entity_index": after});
    println!("{}", serde_json::to_string_pretty(&report).expect("json"));
}
