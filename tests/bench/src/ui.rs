//! `ui`: the web console's pages rendered server-side over a store of `--chunks` chunks
//! (default 100,000): each page requested through the real router with a bearer token (the
//! guard, the page's kb calls and the HTML rendering; no network), time per page (p50 / p99)
//! and its weight (the HTML plus the stylesheet and script every page loads). Targets
//! (issue 21): every page within 100 ms server-side, the heaviest page under 300 KB.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use evident_ai::{Embedder, StaticEmbedder};
use evident_core::access::{Grant, Role};
use evident_kb::Document;
use serde_json::json;
use tower::ServiceExt;

use crate::{Args, Corpus, Rng, percentile};

const SECRET: &str = "evd_bench_token_ui_0123456789abcdef0123456789abcdef";
const PARAGRAPHS: usize = 10;

/// A page's path for round `i` (search and node pages vary by round).
type PagePath<'a> = Box<dyn Fn(usize) -> String + 'a>;

/// Ingests `docs` documents of the client `bench`, each its own node, linked in a chain so
/// node pages have edges and neighbourhoods.
async fn ingest(kb: &evident_kb::Kb, docs: usize) {
    let mut rng = Rng(0x5eed);
    let corpus = Corpus::new();
    crate::setup::ingest_notes(kb, &corpus, &mut rng, docs, PARAGRAPHS, |doc, note| {
        Document {
            main_node_key: Some(format!("note:{doc}")),
            relationships: (doc > 0)
                .then(|| vec![format!("note:{doc}|references|note:{}", doc - 1)]),
            ..note
        }
    })
    .await;
}

/// GET `path` through the router as a script would (bearer token, asking for HTML): the time
/// until the whole body is read, and the body.
async fn fetch(router: &axum::Router, path: &str) -> (Duration, Vec<u8>) {
    let req = Request::builder()
        .uri(path)
        .header("host", "localhost")
        .header("accept", "text/html")
        .header("authorization", format!("Bearer {SECRET}"))
        .body(Body::empty())
        .expect("request");
    let t = Instant::now();
    let resp = router.clone().oneshot(req).await.expect("answer");
    let status = resp.status();
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .expect("body");
    assert!(status.is_success(), "{path}: {status}");
    (t.elapsed(), body.to_vec())
}

/// The first citation link of a search page (`/ui/chunk/…`), to time the chunk page.
fn first_citation(html: &str) -> Option<String> {
    let start = html.find("/ui/chunk/")?;
    let end = html[start..].find(['"', '\''])? + start;
    Some(html[start..end].replace("&amp;", "&"))
}

pub async fn run(args: &Args) {
    let chunks = args.usize("chunks", 100_000);
    let rounds = args.usize("queries", 30);
    let tmp = tempfile::tempdir().expect("temp dir");
    let embedder: Arc<dyn Embedder> = Arc::new(StaticEmbedder::builtin());
    let (store, kb) = crate::setup::open_kb(tmp.path(), embedder).await;
    let docs = chunks.div_ceil(PARAGRAPHS);
    println!("ui suite: {docs} documents (~{} chunks)", docs * PARAGRAPHS);
    let started = Instant::now();
    ingest(&kb, docs).await;
    println!("ingested in {:.1} s", started.elapsed().as_secs_f64());
    // Pages are timed on a settled store: the background HNSW indexer otherwise holds both
    // cores for a while after a bulk ingest (the `retrieve` suite measures that drain).
    let settle = Instant::now();
    while store.vector_index_status().1 > 0 && settle.elapsed() < Duration::from_secs(600) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "vector backlog drained in {:.1} s",
        settle.elapsed().as_secs_f64()
    );
    crate::auth::mint(
        &kb,
        "tok_bench_ui",
        SECRET,
        Grant::client("bench", Role::Admin),
    )
    .await;
    let router = evident_api::router(evident_api::App::new(kb.clone()), None, Default::default());

    let corpus = Corpus::new();
    let mut rng = Rng(0xc0de);
    let searches: Vec<String> = (0..rounds).map(|_| corpus.sentence(&mut rng, 3)).collect();
    let (_, first) = fetch(&router, &search_path(&searches[0])).await;
    let chunk_page =
        first_citation(&String::from_utf8_lossy(&first)).expect("the search page cites a chunk");
    let mid = docs / 2;
    let pages: Vec<(&str, PagePath)> = vec![
        ("overview", Box::new(|_| "/ui?clientId=bench".to_string())),
        (
            "sources",
            Box::new(|_| "/ui/sources?clientId=bench".to_string()),
        ),
        (
            "queue",
            Box::new(|_| "/ui/queue?clientId=bench".to_string()),
        ),
        (
            "search",
            Box::new(|i| search_path(&searches[i % searches.len()])),
        ),
        ("chunk", Box::new(move |_| chunk_page.clone())),
        (
            "node",
            Box::new(move |i| format!("/ui/node/note:{}?clientId=bench", (mid + i) % docs)),
        ),
    ];
    let (_, css) = fetch(&router, "/ui/assets/ui.css").await;
    let (_, js) = fetch(&router, "/ui/assets/ui.js").await;
    let assets = css.len() + js.len();
    println!(
        "{:<10} {:>9} {:>9} {:>10}",
        "page", "p50 ms", "p99 ms", "weight KB"
    );
    let mut report = serde_json::Map::new();
    let (mut worst_ms, mut heaviest) = (0f64, 0usize);
    for (name, path) in &pages {
        fetch(&router, &path(0)).await; // warm
        let (mut times, mut weight) = (Vec::with_capacity(rounds), 0);
        for i in 0..rounds {
            let (t, body) = fetch(&router, &path(i)).await;
            times.push(t);
            weight = weight.max(body.len() + assets);
        }
        times.sort();
        let (p50, p99) = (percentile(&times, 0.5), percentile(&times, 0.99));
        println!(
            "{name:<10} {p50:>9.2} {p99:>9.2} {:>10.1}",
            weight as f64 / 1024.0
        );
        worst_ms = worst_ms.max(p99);
        heaviest = heaviest.max(weight);
        report.insert(
            (*name).into(),
            json!({"p50Ms": p50, "p99Ms": p99, "weightBytes": weight}),
        );
    }
    println!(
        "slowest page p99 {worst_ms:.2} ms (target ≤ 100 ms); heaviest page {:.1} KB with its \
         stylesheet and script (target < 300 KB)",
        heaviest as f64 / 1024.0
    );
    println!(
        "{}",
        json!({"suite": "ui", "chunks": docs * PARAGRAPHS, "rounds": rounds, "pages": report,
               "worstP99Ms": worst_ms, "heaviestBytes": heaviest})
    );
}

fn search_path(q: &str) -> String {
    let q: String = q
        .chars()
        .map(|c| if c == ' ' { '+' } else { c })
        .filter(|c| c.is_ascii_alphanumeric() || *c == '+')
        .collect();
    format!("/ui/search?q={q}&clientId=bench")
}
