//! The repository question sets: code-and-docs questions answered by a file, history
//! questions answered by a commit, over this repository indexed by the git indexer.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, StaticEmbedder};
use evident_kb::retrieve::{FusionParams, Tuning};
use serde_json::{Value, json};

use super::okapi::Okapi;
use super::{Asker, Hit, MODES, Mode, fusion_grid, p50};

/// A question and what answers it: a file among `files`, or `commit`.
pub struct Question {
    pub id: u64,
    pub q: String,
    pub files: Vec<String>,
    pub commit: Option<String>,
}

pub(super) fn questions(text: &str) -> Vec<Question> {
    let all: Vec<Value> = serde_json::from_str(text).expect("question file");
    all.iter()
        .map(|v| Question {
            id: v["id"].as_u64().expect("id"),
            q: v["q"].as_str().expect("q").to_string(),
            files: v["files"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            commit: v["commit"].as_str().map(str::to_string),
        })
        .collect()
}

impl Question {
    /// Where the first right answer is among `hits` (0-based).
    fn rank(&self, hits: &[Hit]) -> Option<usize> {
        hits.iter().position(|h| match &self.commit {
            Some(c) => h.commit.as_deref() == Some(c.as_str()),
            None => h.path.as_ref().is_some_and(|p| self.files.contains(p)),
        })
    }
}

/// Ranks of the right answer for `qs` under `mode` and `tuning`, with the retrieve times.
pub(super) async fn ranks(
    asker: &Asker<'_>,
    mode: Mode,
    tuning: Tuning,
    qs: &[&Question],
) -> (Vec<Option<usize>>, Vec<Duration>) {
    let (mut out, mut times) = (Vec::new(), Vec::new());
    let show = std::env::var("EVIDENT_QUALITY_MISSES").is_ok_and(|m| m == mode.name());
    for q in qs {
        let (hits, took) = asker.ask(mode, &q.q, 10, tuning).await;
        let rank = q.rank(&hits);
        let wanted = if q.commit.is_some() { 3 } else { 5 };
        if show && rank.is_none_or(|r| r >= wanted) {
            let top: Vec<String> = hits
                .iter()
                .take(wanted + 1)
                .map(|h| {
                    format!(
                        "{} {} {}",
                        h.note,
                        h.kind,
                        h.path
                            .as_deref()
                            .or(h.commit.as_deref())
                            .unwrap_or(&h.source_urn)
                    )
                })
                .collect();
            println!(
                "  miss #{} {:?} at {rank:?} (want {:?}):\n    {}",
                q.id,
                q.q,
                q.files,
                top.join("\n    ")
            );
            // Where the answer is in a deeper page, with its scores.
            let (deep, _) = asker.ask(mode, &q.q, 50, tuning).await;
            if let Some(r) = q.rank(&deep) {
                println!("    answer at {r} of 50: {}", deep[r].note);
            }
        }
        out.push(rank);
        times.push(took);
    }
    (out, times)
}

pub(super) fn rate(ranks: &[Option<usize>], within: usize) -> f64 {
    ranks
        .iter()
        .filter(|r| r.is_some_and(|r| r < within))
        .count() as f64
        / ranks.len().max(1) as f64
}

/// The questions whose id has parity `parity` (0: the tuning half, 1: the reported half).
pub(super) fn half<'a>(qs: &[&'a Question], parity: u64) -> Vec<&'a Question> {
    qs.iter().copied().filter(|q| q.id % 2 == parity).collect()
}

/// The tuning objective on a set of questions: top-5 for files, top-3 for commits.
async fn objective(
    asker: &Asker<'_>,
    mode: Mode,
    tuning: Tuning,
    files: &[&Question],
    commits: &[&Question],
) -> f64 {
    let (f, _) = ranks(asker, mode, tuning, files).await;
    let (c, _) = ranks(asker, mode, tuning, commits).await;
    rate(&f, 5) + rate(&c, 3)
}

/// The fusion parameters of the grid that do best on the even-numbered questions (hybrid +
/// graph), then the reranker's weights that do best with them (hybrid + graph + rerank).
pub(super) async fn choose(
    asker: &Asker<'_>,
    files: &[&Question],
    commits: &[&Question],
) -> Tuning {
    let (files, commits) = (half(files, 0), half(commits, 0));
    let mut best = (f64::MIN, Tuning::default());
    for fusion in fusion_grid() {
        let tuning = Tuning {
            fusion,
            ..Default::default()
        };
        let score = objective(asker, Mode::HybridGraph, tuning, &files, &commits).await;
        if score > best.0 + 1e-9 {
            best = (score, tuning);
        }
    }
    let fusion = best.1.fusion;
    best.0 = f64::MIN;
    for rerank in rerank_grid() {
        let tuning = Tuning {
            fusion,
            rerank,
            ..Default::default()
        };
        let score = objective(asker, Mode::Rerank, tuning, &files, &commits).await;
        if score > best.0 + 1e-9 {
            best = (score, tuning);
        }
    }
    // The pack's per-source diversity, on both requests (with and without the reranker).
    let chosen = best.1;
    best.0 = f64::MIN;
    for diversity in DIVERSITY_GRID {
        let tuning = Tuning {
            diversity,
            ..chosen
        };
        let mut score = 0.0;
        for mode in [Mode::HybridGraph, Mode::Rerank] {
            score += objective(asker, mode, tuning, &files, &commits).await;
        }
        if score > best.0 + 1e-9 {
            best = (score, tuning);
        }
    }
    // The reranker's file-name weight and depth (the request without the reranker does not
    // change with them).
    let plain = objective(asker, Mode::HybridGraph, best.1, &files, &commits).await;
    for name in NAME_GRID {
        for rerank_depth in DEPTH_GRID {
            let tuning = Tuning {
                rerank: evident_kb::retrieve::RerankWeights {
                    name,
                    ..best.1.rerank
                },
                rerank_depth,
                ..best.1
            };
            if tuning == best.1 {
                continue;
            }
            let score = plain + objective(asker, Mode::Rerank, tuning, &files, &commits).await;
            if score > best.0 + 1e-9 {
                best = (score, tuning);
            }
        }
    }
    println!(
        "chosen on the even half: {:?} (objective {:.3})",
        best.1, best.0
    );
    best.1
}

/// The reranker's file-name weights and depths tried on the tuning half.
const NAME_GRID: [f32; 4] = [0.0, 0.5, 1.0, 2.0];
const DEPTH_GRID: [usize; 3] = [30, 50, 80];

/// The pack's per-source diversity factors tried on the tuning half (1: none).
const DIVERSITY_GRID: [f32; 6] = [1.0, 0.85, 0.7, 0.55, 0.4, 0.25];

/// The shipped tuning, with the fields named in `EVIDENT_QUALITY_SET` (`diversity=0.5,
/// fields=2`…) changed: for trying a weight before choosing it on the even half.
fn shipped() -> Tuning {
    let mut t = Tuning::default();
    let set = std::env::var("EVIDENT_QUALITY_SET").unwrap_or_default();
    for (k, v) in set.split(',').filter_map(|kv| kv.split_once('=')) {
        let v: f32 = v.parse().expect("EVIDENT_QUALITY_SET value");
        let w = &mut t.rerank;
        match k {
            "diversity" => t.diversity = v,
            "lambda" => t.fusion.lambda = v,
            "bm25" => t.fusion.bm25 = v,
            "vector" => t.fusion.vector = v,
            "graph" => t.fusion.graph = v,
            "entity" => t.fusion.entity = v,
            "fields" => w.fields = v,
            "coverage" => w.coverage = v,
            "proximity" => w.proximity = v,
            "lexical" => w.bm25 = v,
            "linked" => w.graph = v,
            "name" => w.name = v,
            "depth" => t.rerank_depth = v as usize,
            _ => panic!("EVIDENT_QUALITY_SET: unknown {k}"),
        }
    }
    t
}

/// The reranker weights tried on the tuning half.
fn rerank_grid() -> Vec<evident_kb::retrieve::RerankWeights> {
    let mut out = Vec::new();
    for fields in [0.5, 1.0, 2.0, 3.0] {
        for coverage in [0.0, 0.5, 1.0] {
            for bm25 in [0.0, 0.5, 1.0] {
                out.push(evident_kb::retrieve::RerankWeights {
                    fields,
                    coverage,
                    proximity: 0.5,
                    bm25,
                    graph: 0.2,
                    name: evident_kb::retrieve::rerank::NAME_WEIGHT,
                });
            }
        }
    }
    out
}

/// The text files of HEAD under 1 MiB as baseline documents: (path, path and text).
pub(super) fn head_files(repo: &Path) -> Vec<(String, String)> {
    let git = git2::Repository::open(repo).expect("open repository");
    let tree = git
        .head()
        .and_then(|h| h.peel_to_tree())
        .expect("HEAD tree");
    let mut docs: Vec<(String, String)> = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if let Ok(blob) = entry.to_object(&git).and_then(|o| o.peel_to_blob())
            && let Ok(text) = std::str::from_utf8(blob.content())
            && blob.size() < 1 << 20
        {
            let path = format!("{dir}{}", entry.name().unwrap_or(""));
            docs.push((path.clone(), format!("{path}\n{text}")));
        }
        git2::TreeWalkResult::Ok
    })
    .expect("walk");
    docs
}

/// Okapi BM25 over the files of HEAD (path and text) and over commit messages.
fn baselines(repo: &Path, files: &[&Question], commits: &[&Question]) -> (f64, f64, f64) {
    let git = git2::Repository::open(repo).expect("open repository");
    let docs = head_files(repo);
    let idx = Okapi::new(docs.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    let file_ranks: Vec<Option<usize>> = files
        .iter()
        .map(|q| {
            idx.search(&q.q, 10)
                .iter()
                .position(|p| q.files.contains(p))
        })
        .collect();
    let mut walk = git.revwalk().expect("revwalk");
    walk.push_head().expect("head");
    let messages: Vec<(String, String)> = walk
        .flatten()
        .filter_map(|oid| git.find_commit(oid).ok())
        .map(|c| (c.id().to_string(), c.message().unwrap_or("").to_string()))
        .collect();
    let idx = Okapi::new(messages.iter().map(|(h, m)| (h.as_str(), m.as_str())));
    let commit_ranks: Vec<Option<usize>> = commits
        .iter()
        .map(|q| {
            let want = q.commit.as_deref().unwrap_or("");
            idx.search(&q.q, 10).iter().position(|h| h == want)
        })
        .collect();
    (
        rate(&file_ranks, 1),
        rate(&file_ranks, 5),
        rate(&commit_ranks, 3),
    )
}

/// The commit the question sets are written against: the last one before they were added
/// (a later tree holds the questions themselves, which would answer them verbatim).
pub const PINNED: &str = "f7b24f2010b77d9d1adb0c7fbc3fa9a31b94484c";

/// A clone of `repo` whose one branch is at `commit`.
pub(crate) fn pinned_clone(repo: &Path, commit: &str, scratch: &Path) -> std::path::PathBuf {
    let dest = scratch.join("pinned");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    };
    let d = dest.to_str().expect("utf-8 path");
    git(&["clone", "-q", repo.to_str().expect("utf-8 path"), d]);
    git(&["-C", d, "reset", "-q", "--hard", commit]);
    dest
}

/// The reranking step alone, timed on what it sees in a request: the 30 fused candidates of
/// a 10-item page, fetched, with the query's BM25 list. Returns per-question times.
async fn rerank_cost(asker: &Asker<'_>, qs: &[&Question]) -> Vec<Duration> {
    use evident_kb::retrieve::{RerankWeights, RetrieveQuery, rerank::rerank};
    let vis = evident_kb::visibility(Some(asker.client), None, None).expect("visibility");
    let chunks = &asker.kb.stores().chunks;
    let mut times = Vec::new();
    for q in qs {
        let mut req = RetrieveQuery::new(q.q.as_str(), Some(asker.client));
        req.max_results = 30;
        let pack = asker.kb.retrieve(&req).await.expect("retrieve");
        let mut fused: Vec<(String, f32)> = pack
            .items
            .iter()
            .map(|i| (i.chunk_id.clone(), i.score))
            .collect();
        let ids: Vec<String> = fused.iter().map(|(id, _)| id.clone()).collect();
        let got = chunks.get(&vis, &ids).await.expect("get");
        let bm25 = chunks
            .search_text(&vis, &q.q, &Default::default(), 50)
            .await
            .expect("bm25");
        let t = Instant::now();
        rerank(
            &q.q,
            &RerankWeights::default(),
            &mut fused,
            &got,
            &bm25,
            &[],
        );
        times.push(t.elapsed());
    }
    times
}

/// Every tuning × mode × split: files top-1 / top-5 and history top-3 printed and put in
/// `out`, then the retrieve p50 of each mode (shipped tuning, every question).
async fn report(
    asker: &Asker<'_>,
    tunings: &[(&str, Tuning)],
    splits: &[(&str, &[&Question], &[&Question])],
    out: &mut serde_json::Map<String, Value>,
) {
    let mut latency: Vec<(Mode, Vec<Duration>)> = Vec::new();
    for &(label, tuning) in tunings {
        for mode in MODES {
            if label != "default" && matches!(mode, Mode::Bm25 | Mode::Vector) {
                continue;
            }
            for &(split, fq, cq) in splits {
                let (f, mut ft) = ranks(asker, mode, tuning, fq).await;
                let (c, ct) = ranks(asker, mode, tuning, cq).await;
                let (t1, t5, h3) = (rate(&f, 1), rate(&f, 5), rate(&c, 3));
                println!(
                    "{label:>7} {:<20} {split:>3}: files top-1 {t1:.3} top-5 {t5:.3} ({} q); history top-3 {h3:.3} ({} q)",
                    mode.name(),
                    fq.len(),
                    cq.len()
                );
                out.insert(
                    format!("{label}/{}/{split}", mode.name()),
                    json!({"top1": t1, "top5": t5, "history_top3": h3}),
                );
                if label == "default" && split == "all" {
                    ft.extend(ct);
                    latency.push((mode, ft));
                }
            }
        }
    }
    for (mode, times) in latency.iter_mut() {
        let p = p50(times);
        println!("retrieve p50 {:<20} {p:.2} ms", mode.name());
        out.insert(format!("p50_ms/{}", mode.name()), json!(p));
    }
}

pub async fn run(repo: &Path, at: Option<&str>, scratch: &Path, sets: &[&str]) -> Value {
    let files = questions(include_str!("../../data/quality/repo-questions.json"));
    let commits = questions(include_str!("../../data/quality/history-questions.json"));
    let repo = &pinned_clone(repo, at.unwrap_or(PINNED), scratch);
    let indexer = crate::git::indexer(scratch).await;
    let t = Instant::now();
    indexer.index("evident", repo).await;
    let indexed_s = t.elapsed().as_secs_f64();
    println!("repository {} indexed in {indexed_s:.1} s", repo.display());
    let embedder: Arc<dyn Embedder> = Arc::new(StaticEmbedder::builtin());
    let asker = Asker {
        kb: &indexer.kb,
        embedder: &embedder,
        client: "bench",
    };
    let mut out = serde_json::Map::new();
    if sets.contains(&"idents") {
        out.insert("identifiers".into(), super::idents::run(&asker, repo).await);
    }
    if sets.contains(&"readme") {
        out.insert("readme".into(), super::readme::run(&asker, repo).await);
    }
    if !sets.contains(&"questions") {
        return Value::Object(out);
    }
    let all_files: Vec<&Question> = files.iter().collect();
    let all_commits: Vec<&Question> = commits.iter().collect();
    // EVIDENT_QUALITY_QUICK: the shipped weights only (no choice on the even half, no plain
    // RRF), for trying a change before the full run.
    let quick = std::env::var_os("EVIDENT_QUALITY_QUICK").is_some();
    let chosen = if quick {
        shipped()
    } else {
        choose(&asker, &all_files, &all_commits).await
    };
    let (test_files, test_commits) = (half(&all_files, 1), half(&all_commits, 1));
    let (b1, b5, bh) = baselines(repo, &all_files, &all_commits);
    println!("okapi baseline (all): files top-1 {b1:.3} top-5 {b5:.3}; history top-3 {bh:.3}");
    out.insert(
        "okapi".into(),
        json!({"top1": b1, "top5": b5, "history_top3": bh}),
    );
    let tunings = [
        (
            "rrf",
            Tuning {
                fusion: FusionParams::rrf(),
                ..Default::default()
            },
        ),
        ("default", Tuning::default()),
        ("chosen", chosen),
    ];
    let splits = [
        ("all", all_files.as_slice(), all_commits.as_slice()),
        ("odd", test_files.as_slice(), test_commits.as_slice()),
    ];
    let tunings = if quick { &tunings[2..] } else { &tunings[..] };
    report(&asker, tunings, &splits, &mut out).await;
    let mut cost = rerank_cost(&asker, &all_files).await;
    cost.sort();
    let (c50, c99) = (
        crate::percentile(&cost, 0.5),
        crate::percentile(&cost, 0.99),
    );
    println!("rerank step alone (30 candidates): p50 {c50:.3} ms, p99 {c99:.3} ms");
    out.insert("rerank_ms".into(), json!({"p50": c50, "p99": c99}));
    out.insert("indexed_s".into(), json!(indexed_s));
    out.insert(
        "chosen".into(),
        json!({"fusion": chosen.fusion, "rerank": chosen.rerank}),
    );
    out.insert(
        "questions".into(),
        json!({"files": files.len(), "history": commits.len()}),
    );
    Value::Object(out)
}
