//! `mcp`: what MCP adds to a search. The same queries, scope and token through the real
//! router as `POST /api/v1/retrieve` and as an MCP `tools/call` of `search` on `POST /mcp`
//! (JSON-RPC parsing, the per-call grant check, rendering the cited passages), alternating
//! which goes first so both see the same machine state.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use evident_ai::{Embedder, StaticEmbedder};
use evident_core::access::{Grant, Role};
use serde_json::json;
use tower::ServiceExt;

use crate::{Args, Corpus, Rng, percentile};

pub async fn run(args: &Args) {
    let chunks = args.usize("chunks", 20_000);
    let query_count = args.usize("queries", 300);
    const PARAGRAPHS: usize = 10;
    let tmp = tempfile::tempdir().expect("temp dir");
    let embedder: Arc<dyn Embedder> = Arc::new(StaticEmbedder::builtin());
    let (_store, kb) = crate::setup::open_kb(tmp.path(), embedder).await;
    let corpus = Corpus::new();
    let mut rng = Rng(0x5eed);
    let docs = chunks.div_ceil(PARAGRAPHS);
    println!(
        "mcp suite: {docs} documents (~{} chunks)",
        docs * PARAGRAPHS
    );
    crate::setup::ingest_notes(&kb, &corpus, &mut rng, docs, PARAGRAPHS, |_, note| note).await;
    let secret = "evd_bench_token_0123456789abcdef0123456789abcdef";
    crate::auth::mint(&kb, "tok_bench", secret, Grant::client("bench", Role::Read)).await;
    let router = evident_api::router(evident_api::App::new(kb.clone()), None, Default::default());
    let queries: Vec<String> = (0..query_count)
        .map(|_| corpus.sentence(&mut rng, 4))
        .collect();

    let send = |path: &'static str, body: serde_json::Value| {
        let req = Request::builder()
            .method("POST")
            .uri(path)
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {secret}"))
            .body(Body::from(body.to_string()))
            .expect("request");
        let router = router.clone();
        async move {
            let t = Instant::now();
            let resp = router.oneshot(req).await.expect("answer");
            assert!(resp.status().is_success(), "{path}: {}", resp.status());
            let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
                .await
                .expect("body");
            let elapsed = t.elapsed();
            let v: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON answer");
            assert!(v.get("error").is_none(), "{path} failed: {v}");
            elapsed
        }
    };
    let rest = |q: &str| send("/api/v1/retrieve", json!({ "query": q, "maxResults": 10 }));
    let mcp = |q: &str, id: usize| {
        send(
            "/mcp",
            json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "search", "arguments": { "query": q, "maxResults": 10 } }
            }),
        )
    };
    for q in queries.iter().take(20) {
        rest(q).await;
        mcp(q, 0).await;
    }
    let (mut t_rest, mut t_mcp, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    for (i, q) in queries.iter().enumerate() {
        let (a, b): (Duration, Duration) = if i % 2 == 0 {
            let a = rest(q).await;
            (a, mcp(q, i).await)
        } else {
            let b = mcp(q, i).await;
            (rest(q).await, b)
        };
        t_rest.push(a);
        t_mcp.push(b);
        diff.push(b.as_secs_f64() * 1e3 - a.as_secs_f64() * 1e3);
    }
    t_rest.sort();
    t_mcp.sort();
    diff.sort_by(f64::total_cmp);
    let (p_rest, p_mcp) = (percentile(&t_rest, 0.5), percentile(&t_mcp, 0.5));
    let d50 = diff[diff.len() / 2];
    println!(
        "search over the router: REST retrieve p50 {p_rest:.3} ms, MCP tools/call search p50 \
         {p_mcp:.3} ms; median per-request difference {d50:.3} ms (target ≤ 1 ms)"
    );
    println!(
        "{}",
        json!({
            "suite": "mcp", "chunks": docs * PARAGRAPHS, "queries": query_count,
            "restP50Ms": p_rest, "mcpP50Ms": p_mcp, "medianDiffMs": d50,
        })
    );
}
