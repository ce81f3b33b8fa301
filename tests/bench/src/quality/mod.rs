//! `quality`: how good retrieval's answers are, next to a plain Okapi BM25 baseline.
//!
//! `quality [--repo PATH] [--at COMMIT] [--collections NAME=DIR,…] [--sets S,…] [--dir PATH]`
//! (`--sets`: any of `questions`, `idents`, `readme`, `judged`; all by default; the judged
//! collections default to CISI, shipped in `data/ir/cisi`):
//! - the code-and-docs questions of `data/quality/repo-questions.json` over this repository
//!   cloned at the commit they were written against ([`repo::PINNED`], the last one before
//!   they were added) and indexed as the quickstart does (the git indexer: every file and
//!   every commit): top-1 / top-5 hit rate of a current chunk of the right file;
//! - the history questions of `data/quality/history-questions.json`: the right commit
//!   (a `git-commit` or `git-diff` chunk of it) in the top 3;
//! - the code-identifier set ([`idents`]): every public definition's name, and the name
//!   split into words, answered by its defining chunk in the top 1 / top 3;
//! - the README's worked examples ([`readme`]) in the top 3;
//! - each judged collection named (BEIR layout — `corpus.jsonl`, `queries.jsonl`,
//!   `qrels/test.tsv` — or the Glasgow layout — `*.ALL`, `*.QRY`, `*.REL`): nDCG@10,
//!   recall@100, MAP beside a stemmed and an unstemmed Okapi BM25 ([`judged`]).
//!
//! Every set is measured for BM25 alone, the vector channel alone, hybrid (fusion, no
//! graph), hybrid + graph (the default request) and hybrid + graph + rerank, with the
//! fusion weights chosen on the even-numbered questions and reported on the odd ones
//! (plain RRF beside them), and ends with one JSON line.
//!
//! `--embedders static,ollama --ollama-url URL --ollama-model NAME --ollama-dim N` replaces
//! the repository sets' run by the embedder comparison of [`embedders`].

mod embedders;
mod idents;
pub(crate) mod judged;
mod okapi;
mod readme;
pub(crate) mod repo;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, Priority};
use evident_core::{Chunk, Locator, Visibility};
use evident_kb::Kb;
use evident_kb::retrieve::{FusionParams, RetrieveQuery, Tuning};
use evident_store::ChunkFilter;

use crate::{Args, percentile};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    Bm25,
    Vector,
    Hybrid,
    HybridGraph,
    Rerank,
}

pub const MODES: [Mode; 5] = [
    Mode::Bm25,
    Mode::Vector,
    Mode::Hybrid,
    Mode::HybridGraph,
    Mode::Rerank,
];

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Bm25 => "bm25",
            Mode::Vector => "vector",
            Mode::Hybrid => "hybrid",
            Mode::HybridGraph => "hybrid+graph",
            Mode::Rerank => "hybrid+graph+rerank",
        }
    }
}

/// One ranked answer: the source it came from, its file (current chunks only), the commit
/// it belongs to (history chunks only).
#[derive(Debug, Clone)]
pub struct Hit {
    pub kind: String,
    pub source_urn: String,
    pub path: Option<String>,
    /// The lines of a current file chunk.
    pub lines: Option<(usize, usize)>,
    pub commit: Option<String>,
    /// For a retrieval mode: the item's score and channel scores (printed with the misses).
    pub note: String,
}

fn is_history(kind: &str) -> bool {
    kind == "git-commit" || kind == "git-diff"
}

fn hit_of(c: &Chunk) -> Hit {
    let commit = c
        .graph_refs
        .iter()
        .find_map(|k| k.as_str().strip_prefix("commit:").map(str::to_string))
        .filter(|_| is_history(&c.kind));
    let path = match &c.locator {
        Locator::File { path, .. } if !is_history(&c.kind) => Some(path.clone()),
        Locator::Document { uri, .. } => Some(uri.clone()),
        _ => None,
    };
    let lines = match &c.locator {
        Locator::File {
            line_start,
            line_end,
            ..
        } if !is_history(&c.kind) => Some((*line_start, *line_end)),
        _ => None,
    };
    Hit {
        kind: c.kind.clone(),
        source_urn: c.source_urn.clone(),
        path,
        lines,
        commit,
        note: String::new(),
    }
}

/// What a run asks retrieval with: the knowledge base, the reader and the embedder (for
/// the vector channel alone).
pub struct Asker<'a> {
    pub kb: &'a Kb,
    pub embedder: &'a Arc<dyn Embedder>,
    pub client: &'a str,
}

impl Asker<'_> {
    fn vis(&self) -> Visibility {
        evident_kb::visibility(Some(self.client), None, None).expect("visibility")
    }

    /// The top `k` answers of `mode` for `query`, and the time retrieval took.
    pub async fn ask(
        &self,
        mode: Mode,
        query: &str,
        k: usize,
        tuning: Tuning,
    ) -> (Vec<Hit>, Duration) {
        self.ask_kinds(mode, query, &[], k, tuning).await
    }

    /// [`Asker::ask`] for chunks of `kinds` only (every kind when empty).
    pub async fn ask_kinds(
        &self,
        mode: Mode,
        query: &str,
        kinds: &[&str],
        k: usize,
        tuning: Tuning,
    ) -> (Vec<Hit>, Duration) {
        let vis = self.vis();
        let chunks = &self.kb.stores().chunks;
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        let filter = ChunkFilter {
            kinds: kinds.clone(),
            ..Default::default()
        };
        let t = Instant::now();
        let ids = match mode {
            Mode::Bm25 => chunks
                .search_text(&vis, query, &filter, k)
                .await
                .expect("bm25"),
            Mode::Vector => {
                let v = self
                    .embedder
                    .embed(&[query.to_string()], Priority::INTERACTIVE)
                    .await
                    .expect("embed");
                chunks
                    .search_vector(&vis, &v[0], &filter, k)
                    .await
                    .expect("vector")
            }
            _ => {
                let mut req = RetrieveQuery::new(query, Some(self.client));
                req.max_results = k;
                req.kinds = kinds;
                req.expand_graph = mode != Mode::Hybrid;
                req.rerank = mode == Mode::Rerank;
                req.tuning = tuning;
                let pack = self.kb.retrieve(&req).await.expect("retrieve");
                let took = t.elapsed();
                let ids: Vec<String> = pack.items.iter().map(|i| i.chunk_id.clone()).collect();
                let got = chunks.get(&vis, &ids).await.expect("get");
                let hits = got
                    .iter()
                    .zip(&pack.items)
                    .map(|(c, i)| Hit {
                        note: note_of(i),
                        ..hit_of(c)
                    })
                    .collect();
                return (hits, took);
            }
        };
        let took = t.elapsed();
        let ids: Vec<String> = ids.into_iter().map(|h| h.chunk_id).collect();
        let got = chunks.get(&vis, &ids).await.expect("get");
        (got.iter().map(hit_of).collect(), took)
    }
}

/// An item's score and channel scores, as printed beside a miss.
fn note_of(i: &evident_kb::retrieve::EvidenceItem) -> String {
    let s = &i.scores;
    let f = |v: Option<f32>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    format!(
        "{:.4} [bm25 {} vec {} graph {} ent {}]",
        i.score,
        f(s.bm25),
        f(s.vector),
        f(s.graph),
        f(s.entity)
    )
}

/// The fusion weights tried on the tuning half (λ, BM25/vector weights, entity weight).
pub fn fusion_grid() -> Vec<FusionParams> {
    let mut out = vec![FusionParams::rrf()];
    for lambda in [0.0, 0.25, 0.5, 0.75, 1.0] {
        // The vector channel down to nothing: on a collection where it helps little (CISI's
        // abstracts for the static table), its weight is chosen on the tuning half too.
        for (bm25, vector) in [
            (0.3, 0.3),
            (0.45, 0.15),
            (0.15, 0.45),
            (0.45, 0.05),
            (0.45, 0.0),
        ] {
            for entity in [0.05, 0.10] {
                out.push(FusionParams {
                    lambda,
                    bm25,
                    vector,
                    graph: 0.30,
                    entity,
                });
            }
        }
    }
    out
}

pub fn p50(times: &mut [Duration]) -> f64 {
    times.sort();
    percentile(times, 0.5)
}

fn default_repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `EVIDENT_ANALYSIS=nostem,noexact,nostop,exact=0.3`: an analysis variant for this run
/// (measured against the shipped one; see `evident_analysis::Options`).
fn analysis_variant() {
    let Ok(spec) = std::env::var("EVIDENT_ANALYSIS") else {
        return;
    };
    let mut o = evident_analysis::Options::default();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        match part {
            "nostem" => o.stem = false,
            "noexact" => o.exact = false,
            "nostop" => o.stopwords = false,
            _ => match part.strip_prefix("exact=").and_then(|w| w.parse().ok()) {
                Some(w) => o.exact_weight = w,
                None => panic!("EVIDENT_ANALYSIS: unknown {part:?}"),
            },
        }
    }
    assert!(
        evident_analysis::set_options(o),
        "analysis options already in use"
    );
    println!("analysis variant: {o:?}");
}

pub async fn run(args: &Args) {
    analysis_variant();
    let started = Instant::now();
    let scratch = tempfile::tempdir_in(args.path("dir").unwrap_or_else(std::env::temp_dir))
        .expect("scratch dir");
    let repo_path = args.path("repo").unwrap_or_else(default_repo);
    let mut json = serde_json::Map::new();
    let sets: Vec<&str> = args
        .value("sets")
        .unwrap_or("questions,idents,readme,judged")
        .split(',')
        .collect();
    let flags = embedders::Flags {
        embedders: args.value("embedders"),
        url: args.value("ollama-url"),
        model: args.value("ollama-model"),
        dim: args.value("ollama-dim"),
    };
    match flags.specs() {
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2)
        }
        Ok(Some(specs)) => {
            let figures =
                embedders::compare(&specs, &repo_path, args.value("at"), scratch.path()).await;
            json.insert("embedders".into(), figures);
        }
        Ok(None)
            if sets
                .iter()
                .any(|s| ["questions", "idents", "readme"].contains(s)) =>
        {
            let repo_figures = repo::run(&repo_path, args.value("at"), scratch.path(), &sets).await;
            json.insert("repo".into(), repo_figures);
        }
        Ok(None) => {}
    }
    let mut judged_json = serde_json::Map::new();
    let cisi = format!("cisi={}/data/ir/cisi", env!("CARGO_MANIFEST_DIR"));
    let collections = match args.value("collections") {
        Some(c) => c,
        None if sets.contains(&"judged") => cisi.as_str(),
        None => "",
    };
    for spec in collections.split(',').filter(|s| !s.is_empty()) {
        let (name, data) = spec.split_once('=').unwrap_or((spec, spec));
        let dir = scratch.path().join(format!("judged-{name}"));
        let figures = judged::run(name, Path::new(data), &dir).await;
        judged_json.insert(name.to_string(), figures);
    }

    json.insert("judged".into(), judged_json.into());
    json.insert(
        "wall_s".into(),
        serde_json::json!(started.elapsed().as_secs_f64()),
    );
    println!("quality: done in {:.0} s", started.elapsed().as_secs_f64());
    println!("{}", serde_json::Value::Object(json));
}
