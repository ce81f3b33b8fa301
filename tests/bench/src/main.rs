//! Benchmark suites. Each prints readable figures and ends with one JSON line.
//!
//! `retrieve`: ingest a generated corpus (default 100,000 chunks) through the real ingest
//! path with the built-in static embedder, then measure retrieval with graph expansion,
//! by-kind listing, memory, and — as a floor — the same queries run directly against the raw
//! BM25 and vector indexes.
//!
//! Usage: `cargo run --release -p evident-bench -- retrieve [--chunks N] [--queries N] [--dir PATH]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, Priority, StaticEmbedder};
use evident_kb::{IngestRequest, Kb, PoolConfig, RetrieveRequest};
use evident_store::{ChunkFilter, VectorSpace};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

/// xorshift64*: deterministic corpus and queries without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Zipf-like rank in 0..n (s ≈ 1), so some words are common and most are rare.
    fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) - 1.0) as usize % n
    }
}

struct Corpus {
    words: Vec<String>,
}

impl Corpus {
    fn new() -> Corpus {
        // Real English word pieces from the embedder's vocabulary, so tokenisation and
        // embedding costs are those of real text.
        let vocab = include_str!("../../../shared/ai/assets/minilm-vocab.txt");
        let words: Vec<String> = vocab
            .lines()
            .filter(|w| w.len() >= 3 && w.chars().all(|c| c.is_ascii_lowercase()))
            .map(str::to_string)
            .collect();
        Corpus { words }
    }

    fn sentence(&self, rng: &mut Rng, n: usize) -> String {
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&self.words[rng.zipf(self.words.len())]);
        }
        s.push('.');
        s
    }

    /// A document of `paragraphs` paragraphs of ~170 words (≈ one chunk each), mentioning an
    /// issue and a person, with one relationship line.
    fn document(&self, rng: &mut Rng, doc: usize, paragraphs: usize) -> String {
        let mut text = format!("# Design note {doc}\n\n");
        for p in 0..paragraphs {
            for _ in 0..10 {
                let len = 12 + rng.below(10);
                text.push_str(&self.sentence(rng, len));
                text.push(' ');
            }
            if p == 0 {
                text.push_str(&format!(
                    "Tracked in jira:PRJ-{} by user:dev{}.",
                    doc % 5000,
                    doc % 300
                ));
            }
            text.push_str("\n\n");
        }
        text.push_str(&format!(
            "jira:PRJ-{}|assigned_to|user:dev{}\n",
            doc % 5000,
            doc % 300
        ));
        text
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn rss_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

struct Args {
    suite: String,
    chunks: usize,
    queries: usize,
    dir: Option<std::path::PathBuf>,
    /// Build the HNSW graph after ingest instead of during it (bulk-load mode).
    index_after: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let suite = it.next().ok_or(
        "usage: evident-bench retrieve [--chunks N] [--queries N] [--dir PATH] [--index-after]",
    )?;
    let mut args = Args {
        suite,
        chunks: 100_000,
        queries: 500,
        dir: None,
        index_after: false,
    };
    while let Some(flag) = it.next() {
        if flag == "--index-after" {
            args.index_after = true;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--chunks" => args.chunks = value.parse().map_err(|e| format!("--chunks: {e}"))?,
            "--queries" => args.queries = value.parse().map_err(|e| format!("--queries: {e}"))?,
            "--dir" => args.dir = Some(value.into()),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match args.suite.as_str() {
        "retrieve" => rt.block_on(retrieve_suite(&args)),
        other => {
            eprintln!("unknown suite `{other}`; suites: retrieve");
            std::process::exit(2);
        }
    }
}

async fn retrieve_suite(args: &Args) {
    const PARAGRAPHS: usize = 10;
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let embedder: Arc<dyn Embedder> = Arc::new(StaticEmbedder::builtin());
    let store = EmbeddedStore::open(EmbeddedOptions {
        dir: dir.clone(),
        vector_space: VectorSpace {
            embedder: embedder.identity().to_string(),
            dim: embedder.dim(),
        },
        background_indexer: !args.index_after,
    })
    .expect("open store");
    let kb = Kb::new(
        store.stores(),
        embedder.clone(),
        PoolConfig {
            interactive: 4,
            bulk: 4,
        },
    )
    .await
    .expect("kb");
    let corpus = Corpus::new();

    // Ingest: documents of ~10 chunks through the real pipeline, 4 in flight.
    let docs = args.chunks.div_ceil(PARAGRAPHS);
    println!(
        "retrieve suite: {docs} documents (~{} chunks), embedder {}",
        docs * PARAGRAPHS,
        embedder.identity()
    );
    let started = Instant::now();
    let mut total_chunks = 0usize;
    let mut rng = Rng(0x5eed);
    let mut in_flight = tokio::task::JoinSet::new();
    for doc in 0..docs {
        let content = corpus.document(&mut rng, doc, PARAGRAPHS);
        let kb = kb.clone();
        in_flight.spawn(async move {
            let req = IngestRequest {
                client_id: Some("bench".into()),
                project_id: Some(format!("p{}", doc % 4)),
                source_urn: format!("bench:doc/{doc}"),
                kind: if doc % 10 == 1 {
                    "decision".into()
                } else {
                    "doc".into()
                },
                title: Some(format!("Design note {doc}")),
                content,
                ..Default::default()
            };
            kb.ingest(req, Priority::DEFAULT)
                .await
                .expect("ingest")
                .chunks
                .total
        });
        if in_flight.len() >= 4 {
            total_chunks += in_flight.join_next().await.expect("task").expect("join");
        }
        if doc > 0 && doc % 2000 == 0 {
            println!(
                "  {doc} docs, {:.0} chunks/s",
                (doc * PARAGRAPHS) as f64 / started.elapsed().as_secs_f64()
            );
        }
    }
    while let Some(r) = in_flight.join_next().await {
        total_chunks += r.expect("join");
    }
    let ingest_secs = started.elapsed().as_secs_f64();
    let ingest_rate = total_chunks as f64 / ingest_secs;
    println!(
        "ingest: {total_chunks} chunks in {ingest_secs:.1} s = {ingest_rate:.0} chunks/s (durable, searchable on return)"
    );

    let started = Instant::now();
    let (_, pending) = store.vector_index_status();
    store.drain_vector_index().expect("drain");
    let drain_secs = started.elapsed().as_secs_f64();
    println!("vector index: {pending} pending at end of ingest, drained in {drain_secs:.1} s");

    // Queries: 3–5 words, drawn like the corpus.
    let mut qrng = Rng(0xfeed);
    let queries: Vec<String> = (0..args.queries)
        .map(|i| {
            let mut q = corpus.sentence(&mut qrng, 3 + i % 3);
            q.pop();
            if i % 5 == 0 {
                q.push_str(&format!(" PRJ-{}", i % 5000));
            }
            q
        })
        .collect();
    let vis = evident_kb::visibility(Some("bench"), Some("p1"), None).expect("scope");

    // Warm-up (page cache, lazily built statics).
    for q in queries.iter().take(20) {
        let _ = kb
            .retrieve(&RetrieveRequest::new(q.clone(), Some("bench")))
            .await;
    }

    let mut retrieve_times = Vec::new();
    let mut empty = 0;
    for q in &queries {
        let mut req = RetrieveRequest::new(q.clone(), Some("bench"));
        req.project_id = Some("p1".into());
        let t = Instant::now();
        let pack = kb.retrieve(&req).await.expect("retrieve");
        retrieve_times.push(t.elapsed());
        if pack.items.is_empty() {
            empty += 1;
        }
    }
    retrieve_times.sort();

    // The same without graph expansion: splits the cost of the graph channel from fusion.
    let mut flat_times = Vec::new();
    for q in &queries {
        let mut req = RetrieveRequest::new(q.clone(), Some("bench"));
        req.project_id = Some("p1".into());
        req.expand_graph = false;
        let t = Instant::now();
        kb.retrieve(&req).await.expect("retrieve");
        flat_times.push(t.elapsed());
    }
    flat_times.sort();
    println!(
        "retrieve without expansion: p50 {:.2} ms, p99 {:.2} ms",
        percentile(&flat_times, 0.5),
        percentile(&flat_times, 0.99)
    );

    // Floor: the raw indexes alone, asked for the same candidate depths retrieval uses
    // (query embedding + BM25 + vector), each channel timed separately too.
    let (text_depth, vector_depth) = evident_kb::retrieve::channel_depths(10);
    let mut floor_times = Vec::new();
    let (mut embed_t, mut bm25_t, mut vector_t) = (Vec::new(), Vec::new(), Vec::new());
    for q in &queries {
        let t = Instant::now();
        let v = embedder
            .embed(std::slice::from_ref(q), Priority::INTERACTIVE)
            .await
            .expect("embed");
        let t1 = Instant::now();
        let _ = kb
            .stores()
            .chunks
            .search_text(&vis, q, &ChunkFilter::default(), text_depth)
            .await
            .expect("bm25");
        let t2 = Instant::now();
        let _ = kb
            .stores()
            .chunks
            .search_vector(&vis, &v[0], &ChunkFilter::default(), vector_depth)
            .await
            .expect("knn");
        let t3 = Instant::now();
        floor_times.push(t3 - t);
        embed_t.push(t1 - t);
        bm25_t.push(t2 - t1);
        vector_t.push(t3 - t2);
    }
    embed_t.sort();
    bm25_t.sort();
    vector_t.sort();
    println!(
        "channels p50/p99: embed {:.3}/{:.3} ms, bm25 {:.2}/{:.2} ms, vector {:.2}/{:.2} ms",
        percentile(&embed_t, 0.5),
        percentile(&embed_t, 0.99),
        percentile(&bm25_t, 0.5),
        percentile(&bm25_t, 0.99),
        percentile(&vector_t, 0.5),
        percentile(&vector_t, 0.99)
    );
    floor_times.sort();

    let mut by_kind_times = Vec::new();
    for i in 0..args.queries {
        let kinds = if i % 2 == 0 {
            vec!["decision".to_string()]
        } else {
            vec!["doc".to_string(), "decision".to_string()]
        };
        let t = Instant::now();
        let got = kb
            .stores()
            .chunks
            .by_kind(&vis, &ChunkFilter { kinds }, 100)
            .await
            .expect("by kind");
        by_kind_times.push(t.elapsed());
        assert!(!got.is_empty());
    }
    by_kind_times.sort();

    let (rss, peak) = rss_mib();
    let (p50, p99) = (
        percentile(&retrieve_times, 0.50),
        percentile(&retrieve_times, 0.99),
    );
    let (f50, f99) = (
        percentile(&floor_times, 0.50),
        percentile(&floor_times, 0.99),
    );
    let bk50 = percentile(&by_kind_times, 0.50);
    println!(
        "retrieve (hybrid + graph expansion, project reader): p50 {p50:.2} ms, p99 {p99:.2} ms ({empty} of {} empty)",
        queries.len()
    );
    println!("raw-index floor (embed + bm25 + vector):           p50 {f50:.2} ms, p99 {f99:.2} ms");
    println!(
        "ratio retrieve/floor: p50 {:.2}x, p99 {:.2}x",
        p50 / f50.max(1e-9),
        p99 / f99.max(1e-9)
    );
    println!("by-kind (limit 100): p50 {bk50:.3} ms");
    println!("memory: RSS {rss:.0} MiB, peak {peak:.0} MiB");
    let json = serde_json::json!({
        "suite": "retrieve",
        "chunks": total_chunks,
        "ingest_chunks_per_s": ingest_rate.round(),
        "vector_drain_s": drain_secs,
        "retrieve_p50_ms": p50,
        "retrieve_p99_ms": p99,
        "retrieve_no_expansion_p50_ms": percentile(&flat_times, 0.5),
        "retrieve_no_expansion_p99_ms": percentile(&flat_times, 0.99),
        "floor_p50_ms": f50,
        "floor_p99_ms": f99,
        "ratio_p50": p50 / f50.max(1e-9),
        "ratio_p99": p99 / f99.max(1e-9),
        "by_kind_p50_ms": bk50,
        "rss_mib": rss,
        "peak_rss_mib": peak,
    });
    if let Err(e) = store.close() {
        eprintln!("close: {e}");
    }
    println!("{json}");
}
