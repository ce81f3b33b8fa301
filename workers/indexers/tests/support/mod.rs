//! What the indexer tests share: a knowledge base over a temporary embedded store with every
//! poller and task handler wired as the service wires them, a manual clock, and a local HTTP
//! server that replays recorded REST exchanges.

#![allow(dead_code)]

pub mod git;

use std::collections::HashMap;
use std::sync::Arc;

use evident_ai::{Embedder, HashingEmbedder, Priority};
use evident_core::{Locator, Scope};
use evident_indexers::access::Access;
use evident_indexers::items::ItemTasks;
use evident_indexers::poll::{PollContext, PollError, SourcePoller};
use evident_indexers::sources::{SourceRequest, register_with};
use evident_indexers::{documents, mail, meetings, tracker, wiki};
use evident_kb::{EvidencePack, Kb, RetrieveQuery, TaskHandlers, TaskSubmitter};
use evident_qualifier::{Outcome, Qualifier, QueueConfig};
use evident_store::VectorSpace;
use evident_store::indexers::IndexerSource;
use evident_store::queue::{Clock, ManualClock, PriorityBand, TaskRecord, TaskState};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};
use serde_json::{Value, json};

pub struct Harness {
    pub store: EmbeddedStore,
    pub kb: Kb,
    pub ctx: PollContext,
    pub pollers: HashMap<&'static str, Arc<dyn SourcePoller>>,
    pub transcripts: Arc<meetings::TranscriptsPoller>,
    pub qualifier: Qualifier,
    pub clock: Arc<ManualClock>,
    pub dir: tempfile::TempDir,
}

/// Tasks run by [`Harness::drain`], by final state.
#[derive(Debug, Default)]
pub struct Drained {
    pub done: usize,
    /// Tasks that ended in `error`, with their reason.
    pub errors: Vec<TaskRecord>,
}

/// A knowledge base over a fresh embedded store under `dir` (hashing embedder: fast, and
/// exact words match).
pub async fn open_kb(dir: &std::path::Path) -> (EmbeddedStore, Kb) {
    let embedder: Arc<dyn Embedder> = Arc::new(HashingEmbedder::new(64).expect("embedder"));
    let store = EmbeddedStore::open(EmbeddedOptions {
        dir: dir.join("data"),
        vector_space: VectorSpace {
            embedder: embedder.identity().to_string(),
            dim: embedder.dim(),
        },
        background_indexer: false,
    })
    .expect("store");
    let kb = Kb::new(store.stores(), embedder, Default::default())
        .await
        .expect("kb");
    (store, kb)
}

/// What a poller of `kb` runs with, as the service builds it (the default priority),
/// leasing sources as `owner`.
pub fn poll_context(kb: &Kb, clock: Arc<dyn Clock>, owner: &str, access: Access) -> PollContext {
    PollContext {
        indexers: kb.stores().indexers.clone(),
        tasks: TaskSubmitter::new(kb.stores().queue.clone()),
        owner: owner.into(),
        clock,
        priority: Priority::DEFAULT,
        access,
    }
}

/// The queue consumer of `kb`'s queue running `handlers`, every band, the default settings.
pub fn qualifier(kb: &Kb, handlers: TaskHandlers, clock: Arc<dyn Clock>) -> Qualifier {
    Qualifier {
        queue: kb.stores().queue.clone(),
        handlers,
        clock,
        config: QueueConfig::default(),
        worker_id: "test-worker".into(),
        band: PriorityBand::ALL,
    }
}

pub async fn harness() -> Harness {
    // Fixtures live under the test's folder; fake servers listen on loopback.
    harness_with(Access::for_tests).await
}

/// A harness whose sources reach what `access` (given the test's folder) allows.
pub async fn harness_with(access: impl FnOnce(&std::path::Path) -> Access) -> Harness {
    let dir = tempfile::tempdir().expect("tmp");
    let (store, kb) = open_kb(dir.path()).await;
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let ctx = poll_context(&kb, clock.clone(), "test-indexer", access(dir.path()));
    let chunking = Default::default();
    let mut handlers = TaskHandlers::new(&kb);
    ItemTasks {
        kb: kb.clone(),
        indexers: kb.stores().indexers.clone(),
        chunking,
    }
    .register(&mut handlers);
    let mirrors = dir.path().join("mirrors");
    evident_indexers::git::GitTasks {
        kb: kb.clone(),
        indexers: kb.stores().indexers.clone(),
        mirrors: mirrors.clone(),
        code_chunking: Default::default(),
        doc_chunking: chunking,
        parallel: 4,
        access: ctx.access.clone(),
        semantic: Some(Default::default()),
    }
    .register(&mut handlers);
    let transcripts = Arc::new(meetings::TranscriptsPoller::new(ctx.clone()));
    let mut pollers: HashMap<&'static str, Arc<dyn SourcePoller>> = HashMap::new();
    let mut add = |p: Arc<dyn SourcePoller>| {
        pollers.insert(p.kind(), p);
    };
    add(Arc::new(evident_indexers::git::GitPoller {
        ctx: ctx.clone(),
        mirrors,
        batches: Default::default(),
    }));
    add(Arc::new(mail::MboxPoller { ctx: ctx.clone() }));
    add(Arc::new(mail::MaildirPoller { ctx: ctx.clone() }));
    add(Arc::new(mail::ImapPoller { ctx: ctx.clone() }));
    for t in tracker::TrackerPoller::all(&ctx, chunking) {
        add(Arc::new(t));
    }
    add(Arc::new(wiki::ConfluencePoller {
        ctx: ctx.clone(),
        chunking,
    }));
    add(transcripts.clone());
    add(Arc::new(documents::DocumentsPoller { ctx: ctx.clone() }));
    add(Arc::new(
        documents::WebPoller::new(ctx.clone()).expect("crawler"),
    ));
    let qualifier = qualifier(&kb, handlers, clock.clone());
    Harness {
        store,
        kb,
        ctx,
        pollers,
        transcripts,
        qualifier,
        clock,
        dir,
    }
}

impl Harness {
    /// Registers a tracker of `kind` reading from `replay`, two items a page, with
    /// `settings` (its id, project, interval) besides; the source's id.
    pub async fn register_paged(&self, kind: &str, replay: &Replay, mut settings: Value) -> String {
        settings["baseUrl"] = json!(replay.base);
        settings["perPage"] = json!(2);
        self.register(kind, settings).await.id
    }

    /// Registers the GitHub repository `acme/shop` as `acme.shop-issues` reading from
    /// `replay`, two issues a page, with `settings` besides; the source's id.
    pub async fn register_github(&self, replay: &Replay, mut settings: Value) -> String {
        settings["id"] = json!("acme.shop-issues");
        settings["repo"] = json!("acme/shop");
        self.register_paged("github", replay, settings).await
    }

    /// Registers the Jira project `SHOP` as `acme.shop-jira` reading from `replay`, two
    /// issues a page, with `settings` besides; the source's id.
    pub async fn register_jira(&self, replay: &Replay, mut settings: Value) -> String {
        settings["id"] = json!("acme.shop-jira");
        settings["project"] = json!("SHOP");
        self.register_paged("jira", replay, settings).await
    }

    /// Registers the Confluence space `ENG` as `acme.eng` reading from `replay`, two pages a
    /// request, with `settings` besides; the source's id.
    pub async fn register_confluence(&self, replay: &Replay, mut settings: Value) -> String {
        settings["id"] = json!("acme.eng");
        settings["baseUrl"] = json!(format!("{}/wiki", replay.base));
        settings["space"] = json!("ENG");
        settings["limit"] = json!(2);
        self.register("confluence", settings).await.id
    }

    /// Registers a source of `kind` from its API body (`clientId` defaults to `acme`).
    pub async fn register(&self, kind: &str, mut body: Value) -> IndexerSource {
        if body.get("clientId").is_none() {
            body["clientId"] = json!("acme");
        }
        let req = SourceRequest::from_json(body).expect("request");
        register_with(&self.kb, &self.ctx.access, kind, &req, self.clock.now_ms())
            .await
            .expect("register")
    }

    pub async fn source(&self, id: &str) -> IndexerSource {
        self.kb
            .stores()
            .indexers
            .get_source(&evident_store::indexers::SourceKey::new("acme", id))
            .await
            .expect("get")
            .expect("registered")
    }

    /// Polls a source now (whatever its interval).
    pub async fn poll(&self, id: &str) -> Result<Value, PollError> {
        let s = self.source(id).await;
        let poller = self.pollers.get(s.kind.as_str()).expect("poller");
        Ok(poller.poll(&s).await?.expect("lease").to_json())
    }

    /// Runs queued tasks until none is ready (see [`drain`]).
    pub async fn drain(&self) -> Drained {
        drain(&self.qualifier, &self.kb).await
    }

    /// The edges of `edge_type` into `key`, by the key they come from.
    pub async fn incoming(&self, key: &str, edge_type: &str) -> Vec<String> {
        let sub = self
            .kb
            .stores()
            .graph
            .traverse(
                &evident_core::Visibility::of(self.scope()),
                &[evident_core::NodeKey::from_canonical(key)],
                &evident_store::TraverseOptions {
                    max_depth: 1,
                    direction: evident_store::Direction::In,
                    edge_types: vec![edge_type.into()],
                    ..Default::default()
                },
            )
            .await
            .expect("traverse");
        let mut from: Vec<String> = sub.edges.iter().map(|e| e.from.to_string()).collect();
        from.sort();
        from
    }

    pub async fn retrieve(&self, query: &str, kinds: &[&str]) -> EvidencePack {
        let mut req = RetrieveQuery::new(query, Some("acme"));
        req.kinds = kinds.iter().map(|k| k.to_string()).collect();
        req.max_results = 5;
        self.kb.retrieve(&req).await.expect("retrieve")
    }

    pub fn scope(&self) -> Scope {
        Scope::client("acme")
    }

    /// Sources stored under a URN prefix.
    pub async fn urns(&self, prefix: &str) -> Vec<String> {
        source_urns(&self.kb, prefix).await
    }
}

/// The sources of client `acme` stored under a URN prefix, sorted.
pub async fn source_urns(kb: &Kb, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = kb
        .stores()
        .sources
        .list_prefix("acme", prefix, None, 100_000)
        .await
        .expect("list")
        .into_iter()
        .map(|r| r.source_urn)
        .collect();
    v.sort();
    v
}

/// The locator's fields as JSON (for assertions that read like the API).
/// Runs queued tasks until none is ready; failures that will be retried panic (tests expect
/// none), permanent ones are returned.
pub async fn drain(qualifier: &Qualifier, kb: &Kb) -> Drained {
    let mut out = Drained::default();
    loop {
        match qualifier.process_next().await.expect("process") {
            Outcome::Empty => return out,
            Outcome::Processed { task_id, state } => {
                let rec = kb
                    .stores()
                    .queue
                    .get(&task_id)
                    .await
                    .expect("get")
                    .expect("task");
                match state {
                    TaskState::Done => out.done += 1,
                    TaskState::Error => out.errors.push(rec),
                    other => panic!("task ended {other:?}: {rec:?}"),
                }
            }
        }
    }
}

pub fn locator_json(l: &Locator) -> Value {
    serde_json::to_value(l).expect("locator")
}

/// The recorded REST exchanges of `tests/fixtures/rest/`, served by a local server
/// ([`evident_wire::WireServer`]).
#[derive(Clone)]
pub struct Replay {
    pub base: String,
    server: evident_wire::WireServer,
}

impl Replay {
    /// Serves the exchanges of `files` (in order) on a free loopback port.
    pub async fn start(files: &[&str]) -> Replay {
        let exchanges = files
            .iter()
            .flat_map(|f| {
                evident_wire::fixture(
                    env!("CARGO_MANIFEST_DIR"),
                    &format!("tests/fixtures/rest/{f}"),
                )
            })
            .collect();
        let server = evident_wire::WireServer::start(exchanges).await;
        Replay {
            base: server.base.clone(),
            server,
        }
    }

    /// Requests nothing answered.
    pub fn unmatched(&self) -> Vec<evident_wire::Received> {
        self.server.unmatched()
    }

    /// Every request received, in order.
    pub fn received(&self) -> Vec<evident_wire::Received> {
        self.server.received()
    }

    /// Panics unless every request matched and every exchange was used.
    pub fn server_exhausted(&self) {
        self.server.assert_exhausted();
    }

    /// Recorded exchanges not asked for, except those whose path contains one of `optional`.
    pub fn unused(&self, optional: &[&str]) -> Vec<String> {
        self.server
            .unused()
            .into_iter()
            .filter(|e| !optional.iter().any(|o| e.contains(o)))
            .collect()
    }
}
