//! The embedder comparison of `quality`: the repository question sets indexed and asked once
//! per embedder, in one run — the built-in static table and/or an Ollama-compatible server.
//!
//! `quality --embedders static,ollama --ollama-url URL --ollama-model NAME --ollama-dim N`
//! (`--ollama-url` alone means `--embedders ollama`). Each embedder gets its own store
//! created with its identity and dimension, the pinned repository indexed through it (ingest
//! time), its query-embedding latency on every question text (p50 / p99), then the vector
//! channel alone, hybrid, hybrid + graph and hybrid + graph + rerank with the shipped weights
//! (top-1 / top-5 on the code-and-docs questions, top-3 on the history questions, all and
//! the held-out odd half), the same with fusion chosen on the even half for this embedder,
//! and quality per millisecond: top-5 of a request mode over its retrieve p50 (the query
//! embedding included, since retrieval embeds the query itself).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, OllamaConfig, OllamaEmbedder, Priority, StaticEmbedder};
use evident_kb::retrieve::Tuning;
use serde_json::{Value, json};

use super::repo::{self, Question};
use super::{Asker, Mode};

/// An embedder to compare.
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    /// The built-in static table (what a default server runs).
    Static,
    /// An Ollama-compatible server (`tools/embed-server`, or Ollama itself).
    Ollama(OllamaConfig),
}

/// The flags of the comparison, as given on the command line.
#[derive(Debug, Default, Clone, Copy)]
pub struct Flags<'a> {
    pub embedders: Option<&'a str>,
    pub url: Option<&'a str>,
    pub model: Option<&'a str>,
    pub dim: Option<&'a str>,
}

impl Flags<'_> {
    /// The embedders to compare, in order; `None` when no flag asks for a comparison (the
    /// plain `quality` run with the built-in embedder).
    pub fn specs(&self) -> Result<Option<Vec<Spec>>, String> {
        let list = match (self.embedders, self.url) {
            (None, None) => return Ok(None),
            (Some(list), _) => list,
            (None, Some(_)) => "ollama",
        };
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let spec = match name {
                "static" => Spec::Static,
                "ollama" => Spec::Ollama(self.ollama()?),
                other => {
                    return Err(format!(
                        "--embedders: unknown embedder `{other}` (static, ollama)"
                    ));
                }
            };
            if out.contains(&spec) {
                return Err(format!("--embedders: `{name}` named twice"));
            }
            out.push(spec);
        }
        if out.is_empty() {
            return Err("--embedders: name at least one of static, ollama".into());
        }
        Ok(Some(out))
    }

    fn ollama(&self) -> Result<OllamaConfig, String> {
        let url = self.url.ok_or("--embedders ollama needs --ollama-url")?;
        let model = self
            .model
            .ok_or("--embedders ollama needs --ollama-model")?;
        let dim = self
            .dim
            .ok_or("--embedders ollama needs --ollama-dim (e.g. 384 for all-minilm)")?;
        let dim: usize = dim
            .parse()
            .ok()
            .filter(|d| *d > 0)
            .ok_or(format!("--ollama-dim: `{dim}` is not a positive number"))?;
        Ok(OllamaConfig {
            url: url.to_string(),
            model: model.to_string(),
            dim,
            batch_size: 32,
            // Ingest queues many batches on a CPU server: a batch may wait for all the others.
            timeout_secs: 3600,
        })
    }
}

fn build(spec: &Spec) -> Arc<dyn Embedder> {
    match spec {
        Spec::Static => Arc::new(StaticEmbedder::builtin()),
        Spec::Ollama(cfg) => Arc::new(OllamaEmbedder::new(cfg.clone()).expect("ollama embedder")),
    }
}

/// p50 and p99 in milliseconds.
fn p50_p99(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    (
        crate::percentile(&times, 0.5),
        crate::percentile(&times, 0.99),
    )
}

/// Every question text embedded alone, as retrieval embeds a query (after one warm-up).
async fn query_latency(embedder: &Arc<dyn Embedder>, qs: &[&Question]) -> (f64, f64) {
    let embed = |q: &str| {
        let text = [q.to_string()];
        let e = embedder.clone();
        async move {
            let t = Instant::now();
            e.embed(&text, Priority::INTERACTIVE).await.expect("embed");
            t.elapsed()
        }
    };
    embed("warm up").await;
    let mut times = Vec::new();
    for q in qs {
        times.push(embed(&q.q).await);
    }
    p50_p99(times)
}

/// One row: top-1 / top-5 of the file questions and top-3 of the history questions, and
/// the retrieve times of both.
async fn row(
    asker: &Asker<'_>,
    mode: Mode,
    tuning: Tuning,
    files: &[&Question],
    commits: &[&Question],
) -> (Value, Vec<Duration>) {
    let (f, mut times) = repo::ranks(asker, mode, tuning, files).await;
    let (c, ct) = repo::ranks(asker, mode, tuning, commits).await;
    times.extend(ct);
    let (t1, t5, h3) = (repo::rate(&f, 1), repo::rate(&f, 5), repo::rate(&c, 3));
    (json!({"top1": t1, "top5": t5, "history_top3": h3}), times)
}

const COMPARED: [Mode; 4] = [Mode::Vector, Mode::Hybrid, Mode::HybridGraph, Mode::Rerank];

/// Indexes the repository through `spec` and measures it; the store is removed after.
async fn measure(spec: &Spec, repo_dir: &Path, dir: &Path, qs: &[Vec<&Question>; 2]) -> Value {
    let embedder = build(spec);
    let name = embedder.identity().to_string();
    let indexer = crate::git::indexer_embedding(
        dir,
        evident_kb::PoolConfig::default().bulk,
        embedder.clone(),
    )
    .await;
    let t = Instant::now();
    indexer.index("evident", repo_dir).await;
    let ingest_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    indexer.store.drain_vector_index().expect("drain");
    let drain_s = t.elapsed().as_secs_f64();
    let chunks = indexer.store.chunk_count();
    println!(
        "{name} ({}-d): {chunks} chunks indexed in {ingest_s:.1} s ({:.0} chunks/s), HNSW drain {drain_s:.1} s",
        embedder.dim(),
        chunks as f64 / ingest_s
    );
    let [files, commits] = qs;
    let every: Vec<&Question> = files.iter().chain(commits).copied().collect();
    let (e50, e99) = query_latency(&embedder, &every).await;
    println!("{name}: query embedding p50 {e50:.3} ms, p99 {e99:.3} ms");
    let asker = Asker {
        kb: &indexer.kb,
        embedder: &embedder,
        client: "bench",
    };
    let (odd_files, odd_commits) = (repo::half(files, 1), repo::half(commits, 1));
    let mut out = serde_json::Map::new();
    for mode in COMPARED {
        let (all, times) = row(&asker, mode, Tuning::default(), files, commits).await;
        let (odd, _) = row(&asker, mode, Tuning::default(), &odd_files, &odd_commits).await;
        let (r50, r99) = p50_p99(times);
        let per_ms = all["top5"].as_f64().unwrap_or(0.0) / r50.max(1e-3);
        println!(
            "{name} {:<20} all {all} · odd {odd}; retrieve p50 {r50:.2} ms p99 {r99:.2} ms; top-5 per ms {per_ms:.3}",
            mode.name()
        );
        out.insert(
            mode.name().into(),
            json!({"all": all, "odd": odd, "retrieve_ms": {"p50": r50, "p99": r99}, "top5_per_ms": per_ms}),
        );
    }
    let chosen = repo::choose(&asker, files, commits).await;
    for mode in [Mode::HybridGraph, Mode::Rerank] {
        let (odd, _) = row(&asker, mode, chosen, &odd_files, &odd_commits).await;
        println!("{name} chosen {:<20} odd {odd}", mode.name());
        out.insert(format!("chosen/{}", mode.name()), json!({"odd": odd}));
    }
    out.insert("dim".into(), json!(embedder.dim()));
    out.insert("chunks".into(), json!(chunks));
    out.insert("ingest_s".into(), json!(ingest_s));
    out.insert("drain_s".into(), json!(drain_s));
    out.insert("query_embed_ms".into(), json!({"p50": e50, "p99": e99}));
    indexer.store.close().expect("close");
    drop(indexer);
    std::fs::remove_dir_all(dir).expect("remove the store");
    out.insert("embedder".into(), json!(name));
    Value::Object(out)
}

/// The comparison over the repository cloned at `at` (default: the pinned commit).
pub async fn compare(specs: &[Spec], repo_dir: &Path, at: Option<&str>, scratch: &Path) -> Value {
    let files = repo::questions(include_str!("../../data/quality/repo-questions.json"));
    let commits = repo::questions(include_str!("../../data/quality/history-questions.json"));
    let qs = [files.iter().collect(), commits.iter().collect()];
    let pinned = repo::pinned_clone(repo_dir, at.unwrap_or(repo::PINNED), scratch);
    let mut out = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let dir = scratch.join(format!("embedder-{i}"));
        out.push(measure(spec, &pinned, &dir, &qs).await);
    }
    Value::Array(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags<'a>(
        embedders: Option<&'a str>,
        url: Option<&'a str>,
        model: Option<&'a str>,
        dim: Option<&'a str>,
    ) -> Flags<'a> {
        Flags {
            embedders,
            url,
            model,
            dim,
        }
    }

    fn ollama(dim: usize) -> Spec {
        Spec::Ollama(OllamaConfig {
            url: "http://127.0.0.1:11435".into(),
            model: "all-minilm".into(),
            dim,
            batch_size: 32,
            timeout_secs: 3600,
        })
    }

    /// The specs a case should parse to, or a part of its error message.
    type Want = Result<Option<Vec<Spec>>, &'static str>;

    #[test]
    fn specs_from_flags() {
        let url = Some("http://127.0.0.1:11435");
        let m = Some("all-minilm");
        let cases: Vec<(Flags, Want)> = vec![
            (flags(None, None, None, None), Ok(None)),
            (
                flags(Some("static"), None, None, None),
                Ok(Some(vec![Spec::Static])),
            ),
            (
                flags(None, url, m, Some("384")),
                Ok(Some(vec![ollama(384)])),
            ),
            (
                flags(Some("static, ollama"), url, m, Some("384")),
                Ok(Some(vec![Spec::Static, ollama(384)])),
            ),
            (
                flags(Some("ollama,static"), url, m, Some("768")),
                Ok(Some(vec![ollama(768), Spec::Static])),
            ),
            (
                flags(Some("static,onnx"), None, None, None),
                Err("unknown embedder `onnx`"),
            ),
            (
                flags(Some("static,static"), None, None, None),
                Err("named twice"),
            ),
            (flags(Some(" , "), None, None, None), Err("at least one")),
            (
                flags(Some("ollama"), None, m, Some("384")),
                Err("needs --ollama-url"),
            ),
            (
                flags(None, url, None, Some("384")),
                Err("needs --ollama-model"),
            ),
            (flags(None, url, m, None), Err("needs --ollama-dim")),
            (flags(None, url, m, Some("0")), Err("not a positive number")),
            (flags(None, url, m, Some("x")), Err("not a positive number")),
        ];
        for (f, want) in cases {
            match (f.specs(), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{f:?}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{f:?}: {got}"),
                (got, want) => panic!("{f:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn built_embedders_carry_their_dimension_into_the_store_identity() {
        let s = build(&Spec::Static);
        assert_eq!(s.dim(), 256);
        let o = build(&ollama(384));
        assert_eq!((o.dim(), o.identity()), (384, "ollama:all-minilm:384"));
    }
}
