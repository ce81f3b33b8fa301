//! What the git indexer tests share: a knowledge base over a temporary embedded store with the
//! git poller and task handlers wired as the service wires them (source `acme`, a manual clock),
//! and libgit2 helpers to build repositories commit by commit.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use evident_code::chunks::CodeChunking;
use evident_core::{NodeKey, Scope, Visibility};
use evident_indexers::access::Access;
use evident_indexers::git::{GitPoller, GitReport, GitSourceConfig, GitTasks};
use evident_kb::{Kb, TaskHandlers};
use evident_qualifier::Qualifier;
use evident_store::indexers::{IndexerSource, PollStatus};
use evident_store::queue::{Clock, ManualClock};
use evident_store::{Direction, TraverseOptions};
use evident_store_embedded::EmbeddedStore;
use git2::{Repository, Signature};

pub struct Harness {
    pub store: EmbeddedStore,
    pub kb: Kb,
    pub poller: GitPoller,
    pub qualifier: Qualifier,
    pub clock: Arc<ManualClock>,
    pub dir: tempfile::TempDir,
}

/// Repositories of these tests live in temporary folders (some outside the harness's own) and,
/// for one, in this checkout; fake remotes listen on loopback.
pub fn test_access() -> Access {
    let mut access = Access::for_tests(&std::env::temp_dir());
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    access.roots = access.roots.with([checkout]);
    access
}

pub async fn harness_in(dir: tempfile::TempDir) -> Harness {
    let (store, kb) = super::open_kb(dir.path()).await;
    let clock = Arc::new(ManualClock::new(1_000_000));
    let mirrors = dir.path().join("mirrors");
    let mut handlers = TaskHandlers::new(&kb);
    GitTasks {
        kb: kb.clone(),
        indexers: kb.stores().indexers.clone(),
        mirrors: mirrors.clone(),
        code_chunking: CodeChunking::default(),
        doc_chunking: Default::default(),
        parallel: 4,
        access: test_access(),
        semantic: Some(Default::default()),
    }
    .register(&mut handlers);
    let poller = GitPoller {
        ctx: super::poll_context(&kb, clock.clone(), "test-poller", test_access()),
        mirrors,
        batches: Default::default(),
    };
    let qualifier = super::qualifier(&kb, handlers, clock.clone());
    Harness {
        store,
        kb,
        poller,
        qualifier,
        clock,
        dir,
    }
}

pub async fn harness() -> Harness {
    harness_in(tempfile::tempdir().expect("tmp")).await
}

impl Harness {
    pub async fn register(&self, id: &str, cfg: GitSourceConfig) -> IndexerSource {
        let s = IndexerSource {
            id: id.into(),
            kind: "git".into(),
            scope: Scope::client("acme"),
            config: serde_json::to_value(cfg).expect("config"),
            interval_secs: 60,
            enabled: true,
            created_at: 0,
            updated_at: 0,
            status: PollStatus::default(),
        };
        self.kb
            .stores()
            .indexers
            .put_source(&s, self.clock.now_ms())
            .await
            .expect("register")
    }

    pub async fn poll(&self, id: &str) -> GitReport {
        let s = self
            .kb
            .stores()
            .indexers
            .get_source(&evident_store::indexers::SourceKey::new("acme", id))
            .await
            .expect("get")
            .expect("registered");
        self.poller.poll(&s).await.expect("poll").expect("lease")
    }

    /// Runs every queued task; panics on a task that does not end `done`.
    pub async fn drain(&self) -> usize {
        let d = super::drain(&self.qualifier, &self.kb).await;
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        d.done
    }

    pub fn vis(&self) -> Visibility {
        Visibility::of(Scope::client("acme"))
    }

    pub async fn node_exists(&self, key: &NodeKey) -> bool {
        !self
            .kb
            .stores()
            .graph
            .get_nodes(&self.vis(), std::slice::from_ref(key))
            .await
            .expect("get")
            .is_empty()
    }

    /// Edges `(type, to)` out of `from` (one hop).
    pub async fn out_edges(&self, from: &NodeKey) -> BTreeSet<(String, String)> {
        let sub = self
            .kb
            .stores()
            .graph
            .traverse(
                &self.vis(),
                std::slice::from_ref(from),
                &TraverseOptions {
                    max_depth: 1,
                    direction: Direction::Out,
                    edge_types: vec![],
                    max_nodes: 100_000,
                },
            )
            .await
            .expect("traverse");
        sub.edges
            .into_iter()
            .map(|e| (e.edge_type, e.to.as_str().to_string()))
            .collect()
    }

    pub async fn source_urns(&self, prefix: &str) -> Vec<String> {
        super::source_urns(&self.kb, prefix).await
    }
}

pub fn cfg_path(name: &str, path: &Path, branches: &[&str]) -> GitSourceConfig {
    GitSourceConfig {
        name: name.into(),
        url: None,
        path: Some(path.to_path_buf()),
        branches: branches.iter().map(|b| b.to_string()).collect(),
        username_env: None,
        token_env: None,
        issue_tracker: Some("github:acme/shop".into()),
        max_file_bytes: 1024 * 1024,
    }
}

/// Writes `files` (path → content; `None` deletes) into the work tree and commits them on HEAD.
pub fn commit(
    repo: &Repository,
    files: &[(&str, Option<&[u8]>)],
    message: &str,
    who: (&str, &str),
) -> git2::Oid {
    let root = repo.workdir().expect("workdir");
    let mut index = repo.index().expect("index");
    for (path, content) in files {
        let full = root.join(path);
        match content {
            Some(bytes) => {
                std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
                std::fs::write(&full, bytes).expect("write");
                index.add_path(Path::new(path)).expect("add");
            }
            None => {
                std::fs::remove_file(&full).expect("rm");
                index.remove_path(Path::new(path)).expect("rm from index");
            }
        }
    }
    index.write().expect("index write");
    let tree = repo
        .find_tree(index.write_tree().expect("tree"))
        .expect("tree");
    let sig = Signature::now(who.0, who.1).expect("sig");
    let parents: Vec<git2::Commit<'_>> = repo
        .head()
        .ok()
        .and_then(|h| h.peel_to_commit().ok())
        .into_iter()
        .collect();
    let parent_refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parent_refs)
        .expect("commit")
}

pub const LIB_RS: &str = "//! Shop.\nuse std::collections::HashMap;\n\npub struct Cart {\n    items: HashMap<String, u32>,\n}\n\nimpl Cart {\n    pub fn total(&self) -> u32 {\n        self.items.values().sum()\n    }\n}\n";

/// Makes `branch` HEAD and checks its tree out (whatever the work tree held).
pub fn checkout(repo: &Repository, branch: &str) {
    repo.set_head(&format!("refs/heads/{branch}"))
        .expect("head");
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .expect("checkout");
}

pub fn init_repo(dir: &Path) -> Repository {
    let repo = Repository::init(dir).expect("init");
    // HEAD → main, whatever the system default.
    repo.set_head("refs/heads/main").expect("head");
    repo
}
