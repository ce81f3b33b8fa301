//! `restart --dir DATA_DIR`: what opening a data directory costs (made by `retrieve --dir`,
//! built-in static embedder), with the text index rebuilt from SQLite versus loaded from the
//! saved `text.index` — each open in a fresh process (`restart-open`), so its RSS is its own:
//! open time, the text index's share of it, the first BM25 queries, RSS, memory by structure,
//! the save, and the data directory's size per chunk. The data directory is kept.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use evident_ai::{Embedder, StaticEmbedder};
use evident_core::{Scope, Visibility};
use evident_store::{ChunkFilter, ChunkStore, VectorSpace};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};
use serde_json::{Value, json};

use crate::{Args, rss_mib};

const QUERIES: [&str; 5] = [
    "release schedule for the payment service",
    "who reviewed the database migration",
    "latency budget retrieval",
    "incident report storage",
    "configuration of the queue workers",
];

pub async fn run(args: &Args) {
    let dir = args
        .path("dir")
        .expect("--dir DATA_DIR (a data dir made by `evident-bench retrieve --dir`)");
    let exe = std::env::current_exe().expect("own path");
    let _ = std::fs::remove_file(dir.join("text.index"));
    let rebuilt = child(&exe, &dir);
    let loaded = child(&exe, &dir);
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0);
    println!(
        "restart suite: {} chunks in {}",
        loaded["chunks"],
        dir.display()
    );
    for (name, v) in [
        ("rebuilt from SQLite", &rebuilt),
        ("loaded from text.index", &loaded),
    ] {
        println!(
            "{name}: open {:.2} s (text index + row map {:.2} s), first BM25 query {:.2} ms (next {:.2} ms p50), RSS {:.0} MiB",
            f(v, "open_s"),
            f(v, "text_open_s"),
            f(v, "first_query_ms"),
            f(v, "next_query_ms"),
            f(v, "rss_mib"),
        );
    }
    println!("memory by structure (MiB): {}", loaded["memory_mib"]);
    println!(
        "save {:.2} s, text.index {:.0} MiB; data dir {:.0} bytes/chunk",
        f(&rebuilt, "save_s"),
        f(&rebuilt, "text_index_mib"),
        f(&loaded, "dir_bytes_per_chunk"),
    );
    println!(
        "{}",
        json!({"suite": "restart", "rebuilt": rebuilt, "loaded": loaded})
    );
}

/// Runs `restart-open` in a fresh process; its last line is a JSON object.
fn child(exe: &Path, dir: &Path) -> Value {
    let out = Command::new(exe)
        .args(["restart-open", "--dir"])
        .arg(dir)
        .output()
        .expect("run restart-open");
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|_| {
        panic!(
            "restart-open failed: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// One open of the data dir: measured, queried, saved, closed.
pub async fn open_once(args: &Args) {
    let dir = args.path("dir").expect("--dir");
    let embedder: Arc<dyn Embedder> = Arc::new(StaticEmbedder::builtin());
    let started = Instant::now();
    let store = EmbeddedStore::open(EmbeddedOptions {
        dir: dir.clone(),
        vector_space: VectorSpace {
            embedder: embedder.identity().to_string(),
            dim: embedder.dim(),
        },
        background_indexer: false,
    })
    .expect("open store");
    let open_s = started.elapsed().as_secs_f64();
    let (rss, _) = rss_mib();
    let vis = Visibility::of(Scope {
        client_id: Some("bench".into()),
        project_id: Some("p1".into()),
        group_id: None,
    });
    let mut times = Vec::new();
    for q in QUERIES.iter().chain(QUERIES.iter()) {
        let t = Instant::now();
        store
            .search_text(&vis, q, &ChunkFilter::default(), 50)
            .await
            .expect("search");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let first = times[0];
    times.sort_by(f64::total_cmp);
    let usage = store.memory_usage();
    let mib = |b: u64| (b as f64 / 1048576.0 * 10.0).round() / 10.0;
    let t = Instant::now();
    store.save_text_index().await.expect("save");
    let save_s = t.elapsed().as_secs_f64();
    let chunks = store.chunk_count();
    let origin = format!("{:?}", store.text_index_origin());
    let text_open_s = store.text_index_open_time().as_secs_f64();
    store.close().expect("close");
    let index_bytes = std::fs::metadata(dir.join("text.index")).map_or(0, |m| m.len());
    println!(
        "{}",
        json!({
            "origin": origin,
            "chunks": chunks,
            "open_s": open_s,
            "text_open_s": text_open_s,
            "first_query_ms": first,
            "next_query_ms": times[times.len() / 2],
            "rss_mib": rss,
            "memory_mib": {
                "text_postings": mib(usage.text_postings),
                "text_rows": mib(usage.text_rows),
                "row_map": mib(usage.row_map),
                "vectors": mib(usage.vectors),
                "sqlite_cache": mib(usage.sqlite_cache),
                "total": mib(usage.total()),
            },
            "bytes_per_chunk": {
                "text_postings": usage.text_postings as f64 / chunks.max(1) as f64,
                "text_rows": usage.text_rows as f64 / chunks.max(1) as f64,
                "row_map": usage.row_map as f64 / chunks.max(1) as f64,
                "vectors": usage.vectors as f64 / chunks.max(1) as f64,
            },
            "save_s": save_s,
            "text_index_mib": index_bytes as f64 / 1048576.0,
            "dir_bytes_per_chunk": dir_bytes(&dir) as f64 / chunks.max(1) as f64,
        })
    );
}
