//! `evident serve` (API + workers) and `evident worker` (workers only): open the stores, run,
//! and shut down cleanly on SIGTERM — stop accepting requests and claims, let in-flight
//! requests and tasks finish (tasks within `queue.drain_secs`, then their leases are
//! released), save the vector index.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use evident_ai::Priority;
use evident_kb::Document;
use evident_runtime::Config;
use evident_store::queue::{Clock, SystemClock};

use crate::cli::{ServeArgs, WorkerArgs};

fn load(
    config: Option<&std::path::Path>,
    data: Option<std::path::PathBuf>,
) -> anyhow::Result<Config> {
    let mut cfg = Config::from_env(config)?;
    if let Some(d) = data {
        cfg.store.data_dir = d;
    }
    evident_runtime::init_tracing(&cfg.log);
    Ok(cfg)
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let cfg = serve_config(&args)?;
    let metrics = evident_runtime::metrics_handle();
    let cancel = evident_runtime::shutdown_on_signals();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);

    // Refuse an unsafe listen address before anything is opened.
    let egress = cfg
        .egress
        .policy()
        .map_err(|e| anyhow::anyhow!("[egress]: {e}"))?;
    let auth = crate::access::auth_config(&cfg.auth, cfg.server.listen, &egress, &cancel).await?;
    let opened = evident_runtime::open(&cfg)
        .await
        .context("opening the store")?;
    let local_token = crate::access::provision(
        &cfg.auth,
        cfg.server.listen,
        &cfg.store.data_dir,
        &opened.kb.stores().access,
        clock.now_ms(),
    )
    .await?;
    let listener = tokio::net::TcpListener::bind(cfg.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.server.listen))?;
    let addr = listener.local_addr()?;
    let app = evident_api::App {
        kb: opened.kb.clone(),
        tasks: opened.tasks.clone(),
        clock: clock.clone(),
    };
    let router = evident_api::router(
        app,
        Some(metrics),
        evident_api::ApiConfig {
            max_body_bytes: cfg.server.max_body_bytes,
            request_timeout: std::time::Duration::from_secs(cfg.server.request_timeout_secs),
            auth,
            cors_origins: cfg.server.cors_origins.clone(),
            ui_secure_cookie: cfg.server.ui_secure_cookie,
        },
    );
    announce(local_token.as_deref(), addr, &cfg, &opened);
    let server = tokio::spawn(evident_api::serve(listener, router, cancel.clone()));
    let (workers, pruner) = spawn_workers(&opened, &cfg, &clock, &cancel);
    opened.register_config_sources(&cfg, clock.now_ms()).await;
    for repo in &args.index_git {
        register_local_repo(&opened, repo, &args.client, clock.now_ms()).await;
    }
    let indexers = (!args.no_indexers).then(|| {
        let ctx = opened.poll_context(clock.clone());
        tokio::spawn(opened.pollers(&cfg, &ctx).run(
            ctx,
            cancel.clone(),
            std::time::Duration::from_secs(cfg.indexers.poll_tick_secs),
        ))
    });

    if !args.ingest.is_empty() {
        ingest_local(&opened.kb, &args.ingest, &args.client, &cancel).await;
        eprintln!(
            "try: evident search \"your question\" --client {}",
            args.client
        );
    }

    server.await.context("server task")?.context("serving")?;
    workers.await.context("worker pool")?;
    pruner.await.context("pruner")?;
    if let Some(i) = indexers {
        i.await.context("indexers")?;
    }
    opened.close();
    eprintln!("evident stopped");
    Ok(())
}

/// The configuration with the command line's overrides: listen address, no workers, and
/// what the operator names to index or ingest as readable source roots.
fn serve_config(args: &ServeArgs) -> anyhow::Result<Config> {
    let mut cfg = load(args.config.as_deref(), args.data.clone())?;
    if let Some(l) = args.listen {
        cfg.server.listen = l;
    }
    if args.no_workers {
        cfg.queue.interactive_workers = 0;
        cfg.queue.bulk_workers = 0;
    }
    // What the operator names on the command line may be read by sources ([sources] roots).
    cfg.sources.roots.extend(args.index_git.iter().cloned());
    cfg.sources.roots.extend(args.ingest.iter().cloned());
    Ok(cfg)
}

/// Starts the worker pool (claims and runs queued tasks) and the pruner of finished tasks.
fn spawn_workers(
    opened: &evident_runtime::Opened,
    cfg: &Config,
    clock: &Arc<dyn Clock>,
    cancel: &tokio_util::sync::CancellationToken,
) -> (tokio::task::JoinHandle<()>, tokio::task::JoinHandle<()>) {
    let workers = tokio::spawn(evident_qualifier::run_pool(
        opened.qualifier(cfg, clock.clone()),
        cancel.clone(),
        opened.tasks.wake_signal(),
    ));
    let pruner = tokio::spawn(evident_qualifier::prune_loop(
        opened.kb.stores().queue.clone(),
        opened.kb.stores().memory.clone(),
        clock.clone(),
        cfg.queue.retention_hours,
        cancel.clone(),
    ));
    (workers, pruner)
}

/// Tells the operator where the local token is and what is listening, with what.
fn announce(
    local_token: Option<&std::path::Path>,
    addr: std::net::SocketAddr,
    cfg: &Config,
    opened: &evident_runtime::Opened,
) {
    if let Some(path) = local_token {
        eprintln!(
            "local operator token in {} (the CLI reads it; curl: -H \"authorization: Bearer $(cat {})\")",
            path.display(),
            path.display()
        );
    }
    eprintln!(
        "evident listening on http://{addr} (data: {}, embedder: {}, workers: {} interactive + {} bulk)",
        cfg.store.data_dir.display(),
        opened.kb.embedder().identity(),
        cfg.queue.interactive_workers,
        cfg.queue.bulk_workers
    );
}

/// What a scale-out process (`worker`, `indexer`) runs with: its configuration, the shutdown
/// token, the clock and the opened stores.
async fn start(
    args: WorkerArgs,
) -> anyhow::Result<(
    Config,
    tokio_util::sync::CancellationToken,
    Arc<dyn Clock>,
    evident_runtime::Opened,
)> {
    let cfg = load(args.config.as_deref(), args.data)?;
    let cancel = evident_runtime::shutdown_on_signals();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let opened = evident_runtime::open(&cfg)
        .await
        .context("opening the store")?;
    Ok((cfg, cancel, clock, opened))
}

/// Workers only (no HTTP API), for scale-out deployments.
pub async fn run_workers(args: WorkerArgs) -> anyhow::Result<()> {
    let (cfg, cancel, clock, opened) = start(args).await?;
    eprintln!(
        "evident worker running ({} interactive + {} bulk loops)",
        cfg.queue.interactive_workers, cfg.queue.bulk_workers
    );
    evident_qualifier::run_pool(
        opened.qualifier(&cfg, clock),
        cancel,
        opened.tasks.wake_signal(),
    )
    .await;
    opened.close();
    eprintln!("evident stopped");
    Ok(())
}

/// Source indexers only (no HTTP API, no queue workers), for scale-out deployments.
pub async fn run_indexers(args: WorkerArgs) -> anyhow::Result<()> {
    let (cfg, cancel, clock, opened) = start(args).await?;
    opened.register_config_sources(&cfg, clock.now_ms()).await;
    eprintln!(
        "evident indexer running (looking for due sources every {} s)",
        cfg.indexers.poll_tick_secs
    );
    let ctx = opened.poll_context(clock);
    opened
        .pollers(&cfg, &ctx)
        .run(
            ctx,
            cancel,
            std::time::Duration::from_secs(cfg.indexers.poll_tick_secs),
        )
        .await;
    opened.close();
    eprintln!("evident stopped");
    Ok(())
}

/// `--index-git REPO`: follows a local repository for `client`, polled every 30 s.
async fn register_local_repo(
    opened: &evident_runtime::Opened,
    repo: &std::path::Path,
    client: &str,
    now: i64,
) {
    let path = match repo.canonicalize() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("not following {}: {e}", repo.display());
            return;
        }
    };
    let req = evident_sources::git::service::GitSourceRequest {
        client_id: Some(client.to_string()),
        path: Some(path.clone()),
        interval_secs: Some(30),
        ..Default::default()
    };
    match evident_sources::git::service::register(&opened.kb, &req, now).await {
        Ok(s) => eprintln!(
            "following git repository {} as `{}`: every file and commit, re-polled every {} s",
            path.display(),
            s.id,
            s.interval_secs
        ),
        Err(e) => eprintln!("not following {}: {e}", path.display()),
    }
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
            let req = Document {
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
