//! Builds the knowledge base from configuration: embedder, stores, pools.

use std::sync::Arc;

use evident_kb::Kb;
use evident_store::{
    AliasRegistry, ChunkStore, GraphStore, Health, SequencedWriter, SourceRecordWriter,
    SourceRegistry, SourceWriter, StoreError, Stores, VectorSpace,
};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

use crate::Config;

/// Everything a process opened, to serve with and to close on shutdown.
pub struct Opened {
    pub kb: Kb,
    /// The embedded store, when some role uses it.
    pub embedded: Option<EmbeddedStore>,
    /// Enqueues tasks and wakes idle workers.
    pub tasks: evident_kb::TaskSubmitter,
    /// What workers run each task kind with.
    pub handlers: evident_kb::TaskHandlers,
    /// What sources may reach (`[egress]`, `[sources] roots`); also installed as the
    /// process's, for registrations through the API.
    pub access: evident_sources::access::Access,
}

impl Opened {
    /// A qualifier over this process's stores (band and id are set per loop by `run_pool`).
    pub fn qualifier(
        &self,
        cfg: &Config,
        clock: std::sync::Arc<dyn evident_store::queue::Clock>,
    ) -> evident_qualifier::Qualifier {
        evident_qualifier::Qualifier {
            queue: self.kb.stores().queue.clone(),
            handlers: self.handlers.clone(),
            clock,
            config: cfg.queue.clone(),
            worker_id: format!("{}-{}", hostname(), std::process::id()),
            band: evident_store::queue::PriorityBand::ALL,
        }
    }
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| "evident".into())
        })
}

impl Opened {
    /// What this process's pollers share (`owner` names this replica for source leases).
    pub fn poll_context(
        &self,
        clock: std::sync::Arc<dyn evident_store::queue::Clock>,
    ) -> evident_indexers::poll::PollContext {
        evident_indexers::poll::PollContext {
            indexers: self.kb.stores().indexers.clone(),
            tasks: self.tasks.clone(),
            owner: format!("{}-{}-indexer", hostname(), std::process::id()),
            clock,
            priority: evident_ai::Priority::DEFAULT,
            access: self.access.clone(),
        }
    }

    /// Every kind's poller, sharing `ctx`.
    pub fn pollers(
        &self,
        cfg: &Config,
        ctx: &evident_indexers::poll::PollContext,
    ) -> evident_indexers::poll::Pollers {
        use evident_indexers::{documents, mail, meetings, tracker, wiki};
        let mut pollers = evident_indexers::poll::Pollers::default()
            .with_concurrency(cfg.indexers.concurrent_polls);
        pollers.add(Arc::new(evident_indexers::git::GitPoller {
            ctx: ctx.clone(),
            mirrors: cfg.git.mirrors(&cfg.store.data_dir),
            batches: evident_indexers::git::poller::Batches {
                files: cfg.git.files_per_task,
                commits: cfg.git.commits_per_task,
            },
        }));
        let chunking = cfg.chunking.to_chunking();
        pollers.add(Arc::new(mail::MboxPoller { ctx: ctx.clone() }));
        pollers.add(Arc::new(mail::MaildirPoller { ctx: ctx.clone() }));
        pollers.add(Arc::new(mail::ImapPoller { ctx: ctx.clone() }));
        for t in tracker::TrackerPoller::all(ctx, chunking) {
            pollers.add(Arc::new(t));
        }
        pollers.add(Arc::new(wiki::ConfluencePoller {
            ctx: ctx.clone(),
            chunking,
        }));
        pollers.add(Arc::new(meetings::TranscriptsPoller::new(ctx.clone())));
        pollers.add(Arc::new(documents::DocumentsPoller { ctx: ctx.clone() }));
        match documents::WebPoller::new(ctx.clone()) {
            Ok(web) => pollers.add(Arc::new(web)),
            Err(e) => tracing::error!(error = %e, "web crawler unavailable"),
        }
        pollers
    }

    /// Registers the sources of `[sources]` (idempotent: settings are updated, status kept).
    pub async fn register_config_sources(&self, cfg: &Config, now: i64) {
        match cfg.sources.requests() {
            Ok(requests) => {
                for (kind, req) in requests {
                    match evident_sources::register_with(&self.kb, &self.access, kind, &req, now)
                        .await
                    {
                        Ok(s) => {
                            tracing::info!(source_id = %s.id, kind, "source from the configuration")
                        }
                        Err(e) => {
                            tracing::error!(kind, error = %e, "source from the configuration not registered")
                        }
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "sources in the configuration not registered"),
        }
        let git = match cfg.sources.git_requests() {
            Ok(git) => git,
            Err(e) => {
                tracing::error!(error = %e, "git sources in the configuration not registered");
                Vec::new()
            }
        };
        for g in &git {
            match evident_sources::git::service::register_with(&self.kb, &self.access, g, now).await
            {
                Ok(s) => tracing::info!(source_id = %s.id, "git source from the configuration"),
                Err(e) => {
                    tracing::error!(error = %e, "git source from the configuration not registered")
                }
            }
        }
    }

    /// Flushes counters and saves the vector index. Call once, at shutdown.
    pub fn close(&self) {
        let Some(embedded) = &self.embedded else {
            return;
        };
        if let Err(e) = embedded.close() {
            tracing::warn!(error = %e, "closing the store did not complete; the vector index will be rebuilt from the record store");
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Config(#[from] crate::ConfigError),
    #[error("embedder: {0}")]
    Embedder(#[from] evident_ai::EmbedError),
    #[error("store: {0}")]
    Store(#[from] evident_store::StoreError),
    #[error("{0}")]
    Kb(#[from] evident_kb::KbError),
    /// A configured backend is unreachable or misconfigured (named in the message).
    #[error("backend {0}")]
    Backend(String),
}

/// Opens the configured stores and embedder. Blocking work (opening SQLite, loading the
/// vector index) runs on the blocking pool.
pub async fn open(cfg: &Config) -> Result<Opened, OpenError> {
    let embedder = evident_ai::build(&cfg.embedder.to_embedder_config()?)?;
    let space = VectorSpace {
        embedder: embedder.identity().to_string(),
        dim: embedder.dim(),
    };
    let access = cfg.access()?;
    evident_sources::access::install(access.clone());
    let (stores, embedded) = open_stores(cfg, space).await?;
    let kb = Kb::new(stores, embedder, cfg.write_pools)
        .await?
        .with_chunking(cfg.chunking.to_chunking())
        .with_session_log_ttl(cfg.memory.session_log_ttl_secs()?)
        .with_procedure_half_life_days(cfg.memory.procedure_half_life_days()?);
    let tasks = evident_kb::TaskSubmitter::new(kb.stores().queue.clone());
    let mut handlers = evident_kb::TaskHandlers::new(&kb);
    evident_indexers::git::GitTasks {
        kb: kb.clone(),
        indexers: kb.stores().indexers.clone(),
        mirrors: cfg.git.mirrors(&cfg.store.data_dir),
        code_chunking: evident_code::chunks::CodeChunking {
            max_tokens: cfg.git.code_chunk_tokens,
            ..Default::default()
        },
        doc_chunking: cfg.chunking.to_chunking(),
        parallel: cfg.git.parallel_ingests,
        access: access.clone(),
        semantic: Some(Default::default()),
    }
    .register(&mut handlers);
    evident_indexers::items::ItemTasks {
        kb: kb.clone(),
        indexers: kb.stores().indexers.clone(),
        chunking: cfg.chunking.to_chunking(),
    }
    .register(&mut handlers);
    if cfg.gaps.fetch_urls {
        // The built-in acquirer with a fetcher: URLs a gap names, under the egress policy.
        let fetcher = crate::gap_fetch::WebFetcher::new(access.clone())
            .map_err(|e| OpenError::Backend(format!("gap fetcher: {e}")))?;
        handlers.register(
            evident_kb::gaps::acquire::KIND,
            Arc::new(evident_kb::gaps::acquire::GapAcquirer {
                kb: kb.clone(),
                fetcher: Some(Arc::new(fetcher)),
            }),
        );
    }
    Ok(Opened {
        kb,
        embedded,
        tasks,
        handlers,
        access,
    })
}

/// A backend that could not be reached names itself: the operator sees which one.
fn unreachable(backend: &str, url: &str, e: evident_store::StoreError) -> OpenError {
    OpenError::Backend(format!("{backend} at {url}: {e}"))
}

/// The stores of every role, from the backends `[store]` names. The embedded store is opened
/// only when some role uses it; production backends are connected (and their schema ensured)
/// now, so an unreachable one stops the start with its name.
async fn open_stores(
    cfg: &Config,
    space: VectorSpace,
) -> Result<(Stores, Option<EmbeddedStore>), OpenError> {
    use crate::config::{ChunkBackend, GraphBackend, QueueBackend};
    let embedded = open_embedded(cfg, space).await?;
    let local = embedded.as_ref().map(|e| Arc::new(e.clone()));
    let mut health: Vec<Arc<dyn Health>> = Vec::new();
    if let Some(l) = &local {
        health.push(embedded_health(cfg, l.clone()));
    }
    let (graph, aliases) = open_graph(cfg, &local, &mut health).await?;
    let chunks = open_chunks(cfg, &local, &mut health).await?;
    let queued: QueueRoles = match cfg.store.queue {
        QueueBackend::Embedded => QueueRoles::of(need_local(&local)?),
        QueueBackend::Mongo => {
            let m = connect_mongo(cfg).await?;
            health.push(m.clone());
            QueueRoles::of(m)
        }
    };
    let all_embedded = cfg.store.graph == GraphBackend::Embedded
        && cfg.store.chunks == ChunkBackend::Embedded
        && cfg.store.queue == QueueBackend::Embedded;
    // One transaction when every role is embedded; an ordered, idempotent sequence otherwise.
    let writer: Arc<dyn SourceWriter> = match (&local, all_embedded) {
        (Some(l), true) => l.clone(),
        _ => Arc::new(SequencedWriter {
            chunks: chunks.clone(),
            graph: graph.clone(),
            sources: queued.records,
            aliases: aliases.clone(),
        }),
    };
    Ok((
        Stores {
            graph,
            chunks,
            aliases,
            sources: queued.sources,
            writer,
            queue: queued.queue,
            indexers: queued.indexers,
            memory: queued.memory,
            access: queued.access,
            claims: queued.claims,
            procedures: queued.procedures,
            gaps: queued.gaps,
            health,
        },
        embedded,
    ))
}

/// The embedded store, opened only when some role uses it, with its memory budget and
/// vector backlog bound set.
async fn open_embedded(
    cfg: &Config,
    space: VectorSpace,
) -> Result<Option<EmbeddedStore>, OpenError> {
    if !cfg.store.uses_embedded() {
        return Ok(None);
    }
    let opts = EmbeddedOptions {
        dir: cfg.store.data_dir.clone(),
        vector_space: space,
        background_indexer: true,
    };
    let store = tokio::task::spawn_blocking(move || EmbeddedStore::open(opts))
        .await
        .map_err(|e| StoreError::unavailable(format!("opening store: {e}")))??;
    store.set_memory_budget(cfg.store.memory_budget)?;
    store
        .vector_index()
        .set_backlog_bound(cfg.store.vector_backlog);
    Ok(Some(store))
}

/// The embedded store of a role that `[store]` puts on it.
fn need_local(local: &Option<Arc<EmbeddedStore>>) -> Result<Arc<EmbeddedStore>, OpenError> {
    local
        .clone()
        .ok_or_else(|| OpenError::Backend("the embedded store is not open".into()))
}

/// The embedded store's health, reporting the roles it serves in this deployment, not all
/// it could.
fn embedded_health(cfg: &Config, local: Arc<EmbeddedStore>) -> Arc<dyn Health> {
    use crate::config::{ChunkBackend, GraphBackend, QueueBackend};
    let mut roles = Vec::new();
    if cfg.store.graph == GraphBackend::Embedded {
        roles.extend(["graph", "aliases"]);
    }
    if cfg.store.chunks == ChunkBackend::Embedded {
        roles.push("chunks");
    }
    if cfg.store.queue == QueueBackend::Embedded {
        roles.extend(evident_store::QUEUE_SIDE_ROLES);
    }
    Arc::new(evident_store::ServingRoles {
        backend: local,
        roles: roles.into_iter().map(String::from).collect(),
    })
}

/// The graph and alias roles: the embedded store, or ArangoDB (connected now, its health
/// added to `health`).
async fn open_graph(
    cfg: &Config,
    local: &Option<Arc<EmbeddedStore>>,
    health: &mut Vec<Arc<dyn Health>>,
) -> Result<(Arc<dyn GraphStore>, Arc<dyn AliasRegistry>), OpenError> {
    use crate::config::GraphBackend;
    Ok(match cfg.store.graph {
        GraphBackend::Embedded => {
            let l = need_local(local)?;
            (l.clone(), l)
        }
        GraphBackend::Arango => {
            let a_cfg = cfg.arango.as_ref().ok_or_else(|| {
                OpenError::Backend("store.graph = \"arango\" needs [arango]".into())
            })?;
            let a = Arc::new(
                evident_store_arango::ArangoStore::connect(a_cfg)
                    .await
                    .map_err(|e| unreachable("ArangoDB", &a_cfg.url, e))?,
            );
            health.push(a.clone());
            (a.clone(), a)
        }
    })
}

/// The chunk role: the embedded store, or Weaviate (connected now, its health added to
/// `health`).
async fn open_chunks(
    cfg: &Config,
    local: &Option<Arc<EmbeddedStore>>,
    health: &mut Vec<Arc<dyn Health>>,
) -> Result<Arc<dyn ChunkStore>, OpenError> {
    use crate::config::ChunkBackend;
    Ok(match cfg.store.chunks {
        ChunkBackend::Embedded => need_local(local)?,
        ChunkBackend::Weaviate => {
            let w_cfg = cfg.weaviate.as_ref().ok_or_else(|| {
                OpenError::Backend("store.chunks = \"weaviate\" needs [weaviate]".into())
            })?;
            let w = Arc::new(
                evident_store_weaviate::WeaviateStore::connect(w_cfg)
                    .await
                    .map_err(|e| unreachable("Weaviate", &w_cfg.url, e))?,
            );
            health.push(w.clone());
            w
        }
    })
}

/// The roles that live together (on MongoDB in production).
struct QueueRoles {
    queue: Arc<dyn evident_store::queue::TaskQueue>,
    sources: Arc<dyn SourceRegistry>,
    records: Arc<dyn SourceRecordWriter>,
    indexers: Arc<dyn evident_store::indexers::IndexerStore>,
    memory: Arc<dyn evident_store::memory::MemoryStore>,
    access: Arc<dyn evident_store::access::AccessStore>,
    claims: Arc<dyn evident_store::claims::ClaimStore>,
    procedures: Arc<dyn evident_store::procedures::ProcedureStore>,
    gaps: Arc<dyn evident_store::gaps::GapStore>,
}

impl QueueRoles {
    /// Every queue-side role served by one store.
    fn of<S>(store: Arc<S>) -> QueueRoles
    where
        S: evident_store::queue::TaskQueue
            + SourceRegistry
            + SourceRecordWriter
            + evident_store::indexers::IndexerStore
            + evident_store::memory::MemoryStore
            + evident_store::access::AccessStore
            + evident_store::claims::ClaimStore
            + evident_store::procedures::ProcedureStore
            + evident_store::gaps::GapStore
            + 'static,
    {
        QueueRoles {
            queue: store.clone(),
            sources: store.clone(),
            records: store.clone(),
            indexers: store.clone(),
            memory: store.clone(),
            claims: store.clone(),
            access: store.clone(),
            procedures: store.clone(),
            gaps: store,
        }
    }
}

#[cfg(feature = "mongo")]
async fn connect_mongo(cfg: &Config) -> Result<Arc<evident_store_mongo::MongoStore>, OpenError> {
    let m_cfg = cfg
        .mongo
        .as_ref()
        .ok_or_else(|| OpenError::Backend("store.queue = \"mongo\" needs [mongo]".into()))?;
    Ok(Arc::new(
        evident_store_mongo::MongoStore::connect(m_cfg)
            .await
            .map_err(|e| unreachable("MongoDB", &format!("${}", m_cfg.uri_env), e))?,
    ))
}

#[cfg(not(feature = "mongo"))]
async fn connect_mongo(_cfg: &Config) -> Result<Arc<evident_store_mongo::MongoStore>, OpenError> {
    Err(OpenError::Backend(
        "store.queue = \"mongo\": this build has no MongoDB driver; build with `--features mongo` (or `production`)".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pollers derive from nothing but this wiring: every kind a source can be registered
    /// as (`evident_sources::KINDS`, the one list) must have one, and no poller may poll a
    /// kind that cannot be registered.
    #[tokio::test]
    async fn a_poller_for_every_registrable_kind() {
        let dir = tempfile::tempdir().expect("tmp");
        let data = dir.path().display().to_string();
        let cfg = Config::load(
            None,
            [
                ("EVIDENT__STORE__DATA_DIR".to_string(), data),
                ("EVIDENT__EMBEDDER__KIND".to_string(), "hashing".to_string()),
                ("EVIDENT__EMBEDDER__DIM".to_string(), "16".to_string()),
            ],
        )
        .expect("config");
        let opened = open(&cfg).await.expect("open");
        let clock: Arc<dyn evident_store::queue::Clock> =
            Arc::new(evident_store::queue::SystemClock);
        let ctx = opened.poll_context(clock);
        let mut polled = opened.pollers(&cfg, &ctx).kinds();
        polled.sort_unstable();
        let mut kinds: Vec<&str> = evident_sources::KINDS.iter().map(|k| k.kind).collect();
        kinds.sort_unstable();
        assert_eq!(polled, kinds);
        opened.close();
    }
}
