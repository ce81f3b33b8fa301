//! `retrieve`: ingest a generated corpus through the real ingest path with the built-in static
//! embedder, then measure retrieval with graph expansion, by-kind listing, memory, and — as a
//! floor — the same queries run directly against the raw BM25 and vector indexes.

use std::sync::Arc;
use std::time::Instant;

use evident_ai::{Embedder, Priority, StaticEmbedder};
use evident_kb::{Document, Kb, PoolConfig, RetrieveQuery};
use evident_store::{ChunkFilter, VectorSpace};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

use crate::{Args, Corpus, Rng, percentile, rss_mib};

pub async fn run(args: &Args) {
    let chunks = args.usize("chunks", 100_000);
    let query_count = args.usize("queries", 500);
    let index_after = args.flag("index-after");
    const PARAGRAPHS: usize = 10;
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = args.path("dir").unwrap_or_else(|| tmp.path().to_path_buf());
    let embedder: Arc<dyn Embedder> = Arc::new(StaticEmbedder::builtin());
    let store = EmbeddedStore::open(EmbeddedOptions {
        dir: dir.clone(),
        vector_space: VectorSpace {
            embedder: embedder.identity().to_string(),
            dim: embedder.dim(),
        },
        background_indexer: !index_after,
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
    let docs = chunks.div_ceil(PARAGRAPHS);
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
            let req = Document {
                client_id: Some(crate::retrieve_scale::client_of(doc, docs).into()),
                // The small tenants' documents are client-wide (their reader sees them all).
                project_id: (crate::retrieve_scale::client_of(doc, docs) == "bench")
                    .then(|| format!("p{}", doc % 4)),
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

    // Queries: 3–5 words, drawn like the corpus.
    let mut qrng = Rng(0xfeed);
    let queries: Vec<String> = (0..query_count)
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
    let drain = crate::retrieve_scale::during_drain(&kb, &store, &queries).await;
    let drain_secs = drain["drain_s"].as_f64().unwrap_or(0.0);

    // Warm-up (page cache, lazily built statics).
    for q in queries.iter().take(20) {
        let _ = kb
            .retrieve(&RetrieveQuery::new(q.clone(), Some("bench")))
            .await;
    }

    let mut retrieve_times = Vec::new();
    let mut empty = 0;
    for q in &queries {
        let mut req = RetrieveQuery::new(q.clone(), Some("bench"));
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
        let mut req = RetrieveQuery::new(q.clone(), Some("bench"));
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
    for i in 0..query_count {
        let kinds = if i % 2 == 0 {
            vec!["decision".to_string()]
        } else {
            vec!["doc".to_string(), "decision".to_string()]
        };
        let t = Instant::now();
        let got = kb
            .stores()
            .chunks
            .by_kind(
                &vis,
                &ChunkFilter {
                    kinds,
                    ..Default::default()
                },
                100,
            )
            .await
            .expect("by kind");
        by_kind_times.push(t.elapsed());
        assert!(!got.is_empty());
    }
    by_kind_times.sort();

    let tenants = crate::retrieve_scale::tenants(&kb, &store, &embedder, &queries).await;
    let memory = crate::retrieve_scale::memory_and_disk(&store, total_chunks);
    let phrases = exact_phrases(&kb, &vis).await;
    let (auth_off, auth_on, auth_overhead) =
        crate::auth::overhead(&kb, &queries[..queries.len().min(300)]).await;
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
        "router_auth_off_p50_ms": auth_off,
        "router_auth_on_p50_ms": auth_on,
        "auth_overhead_p50_ms": auth_overhead,
        "phrase_p50_ms": phrases.p50,
        "phrase_p99_ms": phrases.p99,
        "quoted_phrase_p50_ms": phrases.quoted_p50,
        "quoted_phrase_p99_ms": phrases.quoted_p99,
        "phrase_first": phrases.first,
        "phrase_top3": phrases.top3,
        "phrase_queries": phrases.queries,
        "rss_mib": rss,
        "peak_rss_mib": peak,
        "drain": drain,
        "tenants": tenants,
        "memory": memory,
    });
    if let Err(e) = store.close() {
        eprintln!("close: {e}");
    }
    drop(kb);
    let restart = crate::retrieve_scale::restart(&dir, &queries, p99);
    let mut json = json;
    json["restart"] = restart;
    println!("{json}");
}

/// What [`exact_phrases`] measured.
struct PhraseFigures {
    p50: f64,
    p99: f64,
    quoted_p50: f64,
    quoted_p99: f64,
    /// Queries (unquoted and quoted) whose source chunk came first / in the top 3.
    first: usize,
    top3: usize,
    queries: usize,
}

/// Exact phrases: 10 consecutive words from the middle of stored chunks, asked as they are
/// (a verbatim query) and quoted inside a question; latency and where the chunk they were
/// copied from ranks.
async fn exact_phrases(kb: &Kb, vis: &evident_core::Visibility) -> PhraseFigures {
    let filter = ChunkFilter {
        kinds: vec!["doc".into()],
        ..Default::default()
    };
    let sample = kb
        .stores()
        .chunks
        .by_kind(vis, &filter, 200)
        .await
        .expect("by kind");
    let (mut plain, mut quoted) = (Vec::new(), Vec::new());
    let (mut first, mut top3, mut queries) = (0, 0, 0);
    for chunk in &sample {
        let words: Vec<&str> = chunk.content.split_whitespace().collect();
        if words.len() < 14 {
            continue;
        }
        let mid = words.len() / 2 - 5;
        let phrase = words[mid..mid + 10].join(" ");
        for (times, query) in [
            (&mut plain, phrase.clone()),
            (&mut quoted, format!("where is \"{phrase}\" written")),
        ] {
            let mut req = RetrieveQuery::new(query, Some("bench"));
            req.project_id = Some("p1".into());
            let t = Instant::now();
            let pack = kb.retrieve(&req).await.expect("retrieve");
            times.push(t.elapsed());
            let rank = pack.items.iter().position(|i| i.chunk_id == chunk.id);
            queries += 1;
            first += usize::from(rank == Some(0));
            top3 += usize::from(rank.is_some_and(|r| r < 3));
        }
    }
    plain.sort();
    quoted.sort();
    let figures = PhraseFigures {
        p50: percentile(&plain, 0.5),
        p99: percentile(&plain, 0.99),
        quoted_p50: percentile(&quoted, 0.5),
        quoted_p99: percentile(&quoted, 0.99),
        first,
        top3,
        queries,
    };
    println!(
        "exact phrases ({} chunks, 10 words): verbatim p50 {:.2} ms, p99 {:.2} ms; quoted p50 {:.2} ms, p99 {:.2} ms; source chunk first {first}/{queries}, top 3 {top3}/{queries}",
        plain.len(),
        figures.p50,
        figures.p99,
        figures.quoted_p50,
        figures.quoted_p99,
    );
    figures
}
