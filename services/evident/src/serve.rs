//! `evident serve`: open the stores, serve the API, optionally ingest local documents, and
//! shut down cleanly on SIGTERM (stop accepting, finish in-flight requests, save the index).

use std::time::Instant;

use anyhow::Context;
use evident_ai::Priority;
use evident_kb::IngestRequest;
use evident_runtime::Config;

use crate::cli::ServeArgs;

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let mut cfg = Config::from_env(args.config.as_deref())?;
    if let Some(d) = args.data {
        cfg.store.data_dir = d;
    }
    if let Some(l) = args.listen {
        cfg.server.listen = l;
    }
    evident_runtime::init_tracing(&cfg.log);
    let metrics = evident_runtime::metrics_handle();
    let cancel = evident_runtime::shutdown_on_signals();

    let opened = evident_runtime::open(&cfg)
        .await
        .context("opening the store")?;
    let listener = tokio::net::TcpListener::bind(cfg.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.server.listen))?;
    let addr = listener.local_addr()?;
    let router = evident_api::router(
        opened.kb.clone(),
        Some(metrics),
        evident_api::ApiConfig {
            max_body_bytes: cfg.server.max_body_bytes,
            request_timeout: std::time::Duration::from_secs(cfg.server.request_timeout_secs),
        },
    );
    eprintln!(
        "evident listening on http://{addr} (data: {}, embedder: {})",
        cfg.store.data_dir.display(),
        opened.kb.embedder().identity()
    );
    let server = tokio::spawn(evident_api::serve(listener, router, cancel.clone()));

    if !args.ingest.is_empty() {
        ingest_local(&opened.kb, &args.ingest, &args.client, &cancel).await;
        eprintln!(
            "try: evident search \"your question\" --client {}",
            args.client
        );
    }

    server.await.context("server task")?.context("serving")?;
    opened.close();
    eprintln!("evident stopped");
    Ok(())
}

async fn ingest_local(
    kb: &evident_kb::Kb,
    roots: &[std::path::PathBuf],
    client: &str,
    cancel: &tokio_util::sync::CancellationToken,
) {
    let started = Instant::now();
    let (mut done, mut chunks, mut failed) = (0usize, 0usize, 0usize);
    for root in roots {
        let files = match crate::local_files::collect(root) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("skipping {}: {e:#}", root.display());
                continue;
            }
        };
        eprintln!(
            "ingesting {} document(s) from {}",
            files.len(),
            root.display()
        );
        for f in files {
            if cancel.is_cancelled() {
                return;
            }
            let content = match std::fs::read_to_string(&f.path) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("  skipped {}: {e}", f.display);
                    continue;
                }
            };
            let req = IngestRequest {
                client_id: Some(client.to_string()),
                source_urn: f.urn.clone(),
                kind: "doc".into(),
                title: Some(f.display.clone()),
                content,
                locator: Some(evident_core::Locator::Document {
                    uri: f.display.clone(),
                    char_start: 0,
                    char_end: 0,
                    page: None,
                    section: None,
                }),
                ..Default::default()
            };
            match kb.ingest(req, Priority::DEFAULT).await {
                Ok(out) => {
                    done += 1;
                    chunks += out.chunks.total;
                    eprintln!(
                        "  {:<18} {} ({} chunks)",
                        format!("{:?}", out.status).to_lowercase(),
                        f.display,
                        out.chunks.total
                    );
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("  failed             {}: {e}", f.display);
                }
            }
        }
    }
    eprintln!(
        "ingested {done} document(s), {chunks} chunks, {failed} failed, in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
