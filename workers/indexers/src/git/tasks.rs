//! Git task bodies and their handlers. Every handler is idempotent: files and commits are
//! prepared sources with fingerprints (a repeat is `skipped_unchanged`), purges of purged
//! sources are no-ops, and edge writes merge.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use evident_ai::Priority;
use evident_code::chunks::CodeChunking;
use evident_code::commit::commit_urn;
use evident_code::overview::{OverviewInput, overview_source, overview_urn};
use evident_code::skip::{SkipReason, skip_by_path, skip_file};
use evident_code::structure::{
    FileVersion, RepoContext, analyse, branch_files_prefix, file_source_with, file_urn,
};
use evident_core::chunking::ChunkingConfig;
use evident_core::{PreparedSource, Scope, keys};
use evident_kb::{IngestStatus, Kb, KbError, TaskError, TaskHandler};
use evident_store::EdgeKey;
use evident_store::indexers::{IndexerStore, SourceKey};
use git2::Oid;
use serde::{Deserialize, Serialize};

use super::read_commits::CommitReading;
use super::repo::{GitError, GitRepo};
use super::semantic::{BranchTable, SemanticCache, SemanticRead};
use super::write::ingest_commits;
use super::{GitSourceConfig, repo_context};

/// Git task bodies (`{"type": "ingest-git-commits", "v": 1, …}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum GitTask {
    /// (Re-)index these files of a branch at a commit; purge the deleted ones. `v: 2` adds
    /// `base`, the tip the paths were diffed from (absent on a first read); a `v: 1` task is
    /// read as one whose base is unknown. `v: 3` adds `plan`, the id shared by the batches of
    /// one poll's plan (a file one batch wrote for the plan is not prepared again by the
    /// next); older tasks have none.
    IngestGitStructure {
        v: u32,
        source_id: String,
        branch: String,
        commit: String,
        paths: Vec<String>,
        #[serde(default)]
        deleted: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        plan: Option<String>,
    },
    /// Ingest these commits (oldest first) and link them to the branch.
    IngestGitCommits {
        v: u32,
        source_id: String,
        branch: String,
        commits: Vec<String>,
    },
    /// Rebuild the branch overview at a commit.
    GitOverview {
        v: u32,
        source_id: String,
        branch: String,
        commit: String,
    },
    /// These commits left the branch (force-push): unlink them, and purge those no followed
    /// branch holds any more.
    GitBranchRewrite {
        v: u32,
        source_id: String,
        branch: String,
        removed: Vec<String>,
    },
    /// The branch is gone: remove its files, overview and commit links.
    GitBranchDelete {
        v: u32,
        source_id: String,
        branch: String,
        #[serde(default)]
        last_tip: Option<String>,
    },
}

impl GitTask {
    pub const KINDS: [&'static str; 5] = [
        "ingest-git-structure",
        "ingest-git-commits",
        "git-overview",
        "git-branch-rewrite",
        "git-branch-delete",
    ];

    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

fn git_err(e: GitError) -> TaskError {
    if e.is_retryable() {
        TaskError::Retryable(e.to_string())
    } else {
        TaskError::Permanent(e.to_string())
    }
}

/// Opens a source's repository, making sure `commits` are in it (a mirror that lacks them —
/// on a worker that did not poll — is fetched first).
pub(super) fn open_with(
    cfg: &GitSourceConfig,
    mirrors: &std::path::Path,
    id: &str,
    commits: &[String],
) -> Result<GitRepo, GitError> {
    let repo = GitRepo::open(cfg, mirrors, id)?;
    if commits.iter().any(|c| !repo.has_commit(c)) {
        repo.fetch(cfg)?;
    }
    Ok(repo)
}

/// Runs blocking repository work off the runtime threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, GitError> + Send + 'static,
) -> Result<T, TaskError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| TaskError::Retryable(format!("repository worker failed: {e}")))?
        .map_err(git_err)
}

/// What reading one file of a structural task gave.
pub(super) enum FileOutcome {
    Prepared(Box<PreparedSource>),
    Skipped(String, SkipReason),
    /// Not in the tree (deleted since planning) or without content worth a chunk.
    Gone(String),
}

/// A file's text at a commit, after the skip rules.
pub(super) enum FileText {
    Text(String),
    Skipped(SkipReason),
    Gone,
}

/// Reads one file at a commit: skip rules by path, size and content, then its text.
pub(super) fn read_text(
    repo: &GitRepo,
    at: Oid,
    cfg: &GitSourceConfig,
    path: &str,
) -> Result<FileText, GitError> {
    if let Some(reason) = skip_by_path(path) {
        return Ok(FileText::Skipped(reason));
    }
    let Some((blob, size)) = repo.blob_at(at, path)? else {
        return Ok(FileText::Gone);
    };
    if size > cfg.max_file_bytes {
        return Ok(FileText::Skipped(SkipReason::Oversized));
    }
    let bytes = repo.blob(blob)?;
    // Content rules, and text by content for a file whose name does not say it is text.
    if let Some(reason) = skip_file(path, &bytes, cfg.max_file_bytes as usize) {
        return Ok(FileText::Skipped(reason));
    }
    // A source whose name says text but not UTF-8 (Latin-1 sources exist): read it lossily
    // rather than drop it.
    Ok(FileText::Text(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Where a structure task reads and writes: the repository at its commit, for its branch.
pub(super) struct FileSite<'a> {
    pub(super) repo: &'a GitRepo,
    pub(super) at: Oid,
    pub(super) cfg: &'a GitSourceConfig,
    pub(super) ctx: &'a RepoContext,
    pub(super) chunking: &'a CodeChunking,
    pub(super) branch: &'a str,
    pub(super) commit: &'a str,
}

/// Reads one file and prepares it (skip rules first, then parse — unless `parsed` already
/// holds its structure — and chunk), with its semantic edges when `semantic` is given.
pub(super) fn prepare_file(
    site: &FileSite<'_>,
    path: String,
    parsed: Option<evident_code::structure::Structure>,
    semantic: Option<&evident_code::semantic::Resolution>,
) -> Result<FileOutcome, GitError> {
    let content = match read_text(site.repo, site.at, site.cfg, &path)? {
        FileText::Text(t) => t,
        FileText::Skipped(reason) => return Ok(FileOutcome::Skipped(path, reason)),
        FileText::Gone => return Ok(FileOutcome::Gone(path)),
    };
    let structure = match parsed {
        Some(s) => s,
        None => analyse(&path, &content).unwrap_or_else(|e| {
            tracing::warn!(%path, error = %e, "unparsable file indexed as text");
            evident_code::structure::Structure::Text
        }),
    };
    let version = FileVersion {
        branch: site.branch,
        commit: Some(site.commit),
        path: &path,
        content: &content,
    };
    Ok(
        match file_source_with(site.ctx, &version, &structure, site.chunking, semantic) {
            Some(p) => FileOutcome::Prepared(Box::new(p)),
            None => FileOutcome::Gone(path),
        },
    )
}

/// Executes git tasks.
#[derive(Clone)]
pub struct GitTasks {
    pub kb: Kb,
    pub indexers: Arc<dyn IndexerStore>,
    /// Where mirrors of remote repositories live.
    pub mirrors: PathBuf,
    pub code_chunking: CodeChunking,
    pub doc_chunking: ChunkingConfig,
    /// Files ingested concurrently within one task.
    pub parallel: usize,
    /// What repositories may be read or fetched from (checked for every task).
    pub access: crate::access::Access,
    /// The branches' symbol tables for semantic edges (`calls`, `extends`, `implements`,
    /// `uses_type`); `None` writes the structural graph only.
    pub semantic: Option<super::semantic::SemanticCache>,
}

/// A structure task's work.
struct StructureTask {
    branch: String,
    commit: String,
    paths: Vec<String>,
    deleted: Vec<String>,
    base: Option<String>,
    plan: Option<String>,
}

/// What a task needs to know about its source.
struct Source {
    id: String,
    scope: Scope,
    /// Where this source's mirror lives: under its client's folder of `[git] mirrors_dir`.
    mirrors: std::path::PathBuf,
    cfg: GitSourceConfig,
    ctx: RepoContext,
}

impl Source {
    /// The key of this source's branch tables in the semantic cache: source ids are unique
    /// only within a client, so two clients' `docs` never share a table.
    fn cache_key(&self) -> String {
        let client = self.scope.client_id.as_deref().unwrap_or_default();
        format!("{client}\u{1f}{}", self.id)
    }
}

impl GitTasks {
    /// Registers these handlers for every git task kind.
    pub fn register(self, handlers: &mut evident_kb::TaskHandlers) {
        let me: Arc<dyn TaskHandler> = Arc::new(self);
        for kind in GitTask::KINDS {
            handlers.register(kind, me.clone());
        }
    }

    /// The registered source, or `None` when it was unregistered (its purge task cleans up).
    async fn source(&self, scope: &Scope, id: &str) -> Result<Option<Source>, TaskError> {
        let Some(s) = crate::sources::registered(self.indexers.as_ref(), scope, id).await? else {
            return Ok(None);
        };
        let cfg: GitSourceConfig = serde_json::from_value(s.config.clone()).map_err(|e| {
            TaskError::Permanent(format!("source {id} has an unreadable config: {e}"))
        })?;
        // Every task may open the repository (and fetch a mirror): the path and the remote
        // are checked again, as at registration.
        crate::sources::check_access(&s, &self.access)
            .await
            .map_err(|e| TaskError::Permanent(format!("source {id}: {e}")))?;
        let ctx = repo_context(id, &s.scope, &cfg);
        Ok(Some(Source {
            mirrors: super::repo::client_mirrors(
                &self.mirrors,
                s.scope.client_id.as_deref().unwrap_or_default(),
            ),
            id: s.id,
            scope: s.scope,
            cfg,
            ctx,
        }))
    }

    /// Starts the blocking reader of a `structure` task: it parses `paths` at `commit` one
    /// after another and sends each outcome to `tx`, stopping when the consumer has gone.
    fn spawn_reader(
        &self,
        src: &Source,
        branch: &str,
        commit: &str,
        paths: Vec<String>,
        tx: tokio::sync::mpsc::Sender<FileOutcome>,
    ) -> tokio::task::JoinHandle<Result<Option<BranchTable>, GitError>> {
        let (cfg, mirrors, id) = (src.cfg.clone(), src.mirrors.clone(), src.id.clone());
        let (ctx, chunking) = (src.ctx.clone(), self.code_chunking);
        let (branch_s, commit_s) = (branch.to_string(), commit.to_string());
        tokio::task::spawn_blocking(move || -> Result<Option<BranchTable>, GitError> {
            let repo = open_with(&cfg, &mirrors, &id, std::slice::from_ref(&commit_s))?;
            let site = FileSite {
                repo: &repo,
                at: repo.oid(&commit_s)?,
                cfg: &cfg,
                ctx: &ctx,
                chunking: &chunking,
                branch: &branch_s,
                commit: &commit_s,
            };
            for path in paths {
                let outcome = prepare_file(&site, path, None, None)?;
                if tx.blocking_send(outcome).is_err() {
                    break; // the consumer failed; its error is reported
                }
            }
            Ok(None)
        })
    }

    /// The reader of a structure task with semantic edges: the branch's table taken from the
    /// cache (the task owns it until it succeeds) and brought to the commit.
    fn spawn_semantic_reader(
        &self,
        cache: &SemanticCache,
        src: &Source,
        task: StructureTask,
        tx: tokio::sync::mpsc::Sender<FileOutcome>,
    ) -> tokio::task::JoinHandle<Result<Option<BranchTable>, GitError>> {
        let cached = cache.take(&src.cache_key(), &task.branch);
        let read = SemanticRead {
            cfg: src.cfg.clone(),
            mirrors: src.mirrors.clone(),
            source_id: src.id.clone(),
            ctx: src.ctx.clone(),
            chunking: self.code_chunking,
            branch: task.branch,
            commit: task.commit,
            base: task.base,
            plan: task.plan,
            paths: task.paths,
            deleted: task.deleted,
        };
        tokio::task::spawn_blocking(move || read.run(cached, &tx).map(Some))
    }

    async fn structure(
        &self,
        src: &Source,
        task: StructureTask,
        priority: Priority,
    ) -> Result<(), TaskError> {
        let branch = task.branch.clone();
        let branch = branch.as_str();
        let mut skipped: BTreeMap<SkipReason, usize> = BTreeMap::new();
        let mut to_purge: Vec<String> = task
            .deleted
            .iter()
            .map(|p| file_urn(&src.id, branch, p))
            .collect();
        // A pipeline: a blocking reader parses files one after another and hands each prepared
        // source over a bounded channel, while up to `parallel` ingests (embedding, writing)
        // run on the other core. Memory stays bounded by the channel, not by the task.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<FileOutcome>(2 * self.parallel.max(1));
        let reader = match &self.semantic {
            Some(cache) => self.spawn_semantic_reader(cache, src, task, tx),
            None => self.spawn_reader(src, branch, &task.commit, task.paths, tx),
        };
        let mut ingests = tokio::task::JoinSet::new();
        let mut failure: Option<TaskError> = None;
        while let Some(outcome) = rx.recv().await {
            match outcome {
                FileOutcome::Prepared(p) => {
                    while ingests.len() >= self.parallel.max(1) {
                        if let Some(r) = ingests.join_next().await {
                            record_ingest(r, &mut failure);
                        }
                    }
                    let kb = self.kb.clone();
                    ingests.spawn(async move {
                        kb.ingest_prepared(*p, priority).await.map(|o| o.status)
                    });
                }
                FileOutcome::Skipped(path, reason) => {
                    *skipped.entry(reason).or_default() += 1;
                    metrics::counter!("evident_git_files_skipped_total", "reason" => reason.as_str()).increment(1);
                    tracing::debug!(%path, reason = reason.as_str(), "file skipped");
                    // A file that is skipped now may have been indexed before: drop that.
                    to_purge.push(file_urn(&src.id, branch, &path));
                }
                FileOutcome::Gone(path) => to_purge.push(file_urn(&src.id, branch, &path)),
            }
            if failure.is_some() {
                break;
            }
        }
        drop(rx);
        while let Some(r) = ingests.join_next().await {
            record_ingest(r, &mut failure);
        }
        let table = reader
            .await
            .map_err(|e| TaskError::Retryable(format!("repository worker failed: {e}")))?
            .map_err(git_err)?;
        if let Some(f) = failure {
            return Err(f);
        }
        for urn in to_purge {
            self.kb
                .purge(&src.scope, &urn, priority)
                .await
                .map_err(TaskError::from)?;
        }
        if !skipped.is_empty() {
            tracing::info!(branch, skipped = ?skipped, "files skipped by rule");
        }
        // Only a task that wrote everything leaves its table for the next one.
        if let (Some(cache), Some(table)) = (&self.semantic, table) {
            cache.put(&src.cache_key(), branch, table);
        }
        Ok(())
    }

    async fn commits(
        &self,
        src: &Source,
        branch: &str,
        commits: Vec<String>,
        priority: Priority,
    ) -> Result<(), TaskError> {
        let reading = CommitReading {
            cfg: src.cfg.clone(),
            mirrors: src.mirrors.clone(),
            source_id: src.id.clone(),
            ctx: src.ctx.clone(),
            max_tokens: self.code_chunking.max_tokens,
        };
        // A pipeline: blocking readers diff commits (libgit2, several threads, merged back
        // into order) while the ones already read are embedded and written.
        let (tx, rx) = tokio::sync::mpsc::channel::<PreparedSource>(2 * self.parallel.max(1));
        let reader = tokio::task::spawn_blocking(move || reading.run(&commits, &tx));

        let results = ingest_commits(
            &self.kb,
            &src.scope,
            &src.cfg.name,
            Some(branch),
            rx,
            self.parallel,
            priority,
        )
        .await;
        let n = reader
            .await
            .map_err(|e| TaskError::Retryable(format!("repository worker failed: {e}")))?
            .map_err(git_err)?;
        let results = results.map_err(TaskError::from)?;
        for r in results {
            if let Err(e) = r {
                if e.is_retryable() {
                    return Err(TaskError::from(e));
                }
                tracing::warn!(error = %e, "commit not indexed");
                metrics::counter!("evident_git_commits_failed_total").increment(1);
            }
        }
        metrics::counter!("evident_git_commits_indexed_total").increment(n as u64);
        Ok(())
    }

    async fn overview(
        &self,
        src: &Source,
        branch: &str,
        commit: &str,
        priority: Priority,
    ) -> Result<(), TaskError> {
        let (cfg, mirrors, id, ctx) = (
            src.cfg.clone(),
            src.mirrors.clone(),
            src.id.clone(),
            src.ctx.clone(),
        );
        let (branch_s, commit_s, chunking) =
            (branch.to_string(), commit.to_string(), self.doc_chunking);
        let prepared = blocking(move || {
            let repo = open_with(&cfg, &mirrors, &id, std::slice::from_ref(&commit_s))?;
            let at = repo.oid(&commit_s)?;
            let files: Vec<(String, u64)> = repo
                .tree_files(at)?
                .into_iter()
                .map(|(p, _, s)| (p, s))
                .collect();
            let readme_path = files
                .iter()
                .map(|(p, _)| p.as_str())
                .filter(|p| !p.contains('/') && p.to_ascii_lowercase().starts_with("readme"))
                .min_by_key(|p| p.len())
                .map(str::to_string);
            let readme = match &readme_path {
                Some(p) => match repo.blob_at(at, p)? {
                    Some((blob, size)) if size <= cfg.max_file_bytes => {
                        Some(String::from_utf8_lossy(&repo.blob(blob)?).to_string())
                    }
                    _ => None,
                },
                None => None,
            };
            let recent = repo.recent(at, 20)?;
            let input = OverviewInput {
                url: cfg.url.as_deref(),
                branch: &branch_s,
                tip: &commit_s,
                files: &files,
                readme: readme_path.as_deref().zip(readme.as_deref()),
                recent: &recent,
            };
            Ok(overview_source(&ctx, &input, &chunking))
        })
        .await?;
        self.kb
            .ingest_prepared(prepared, priority)
            .await
            .map_err(TaskError::from)?;
        Ok(())
    }

    /// Tips of the followed branches other than `except`.
    async fn other_tips(&self, src: &Source, except: &str) -> Result<Vec<Oid>, TaskError> {
        let cursors = self
            .indexers
            .list_cursors(&SourceKey::new(
                src.scope.client_id.clone().unwrap_or_default(),
                src.id.clone(),
            ))
            .await
            .map_err(|e| TaskError::from(KbError::from(e)))?;
        Ok(super::branch_tips(cursors)
            .into_iter()
            .filter(|(branch, _)| branch != except)
            .map(|(_, tip)| tip)
            .collect())
    }

    async fn unlink(
        &self,
        src: &Source,
        branch: &str,
        commits: &[String],
    ) -> Result<(), TaskError> {
        let branch_key = keys::branch(&src.cfg.name, branch);
        let edges: Vec<EdgeKey> = commits
            .iter()
            .map(|c| EdgeKey {
                from: branch_key.clone(),
                edge_type: "has_commit".into(),
                to: keys::commit(c),
            })
            .collect();
        for batch in edges.chunks(1000) {
            self.kb
                .stores()
                .graph
                .remove_edges(src.scope.partition(), batch)
                .await
                .map_err(|e| TaskError::from(KbError::from(e)))?;
        }
        Ok(())
    }

    async fn rewrite(
        &self,
        src: &Source,
        branch: &str,
        removed: Vec<String>,
        priority: Priority,
    ) -> Result<(), TaskError> {
        self.unlink(src, branch, &removed).await?;
        let others = self.other_tips(src, branch).await?;
        let (cfg, mirrors, id) = (src.cfg.clone(), src.mirrors.clone(), src.id.clone());
        let orphans: Vec<String> = blocking(move || {
            let repo = GitRepo::open(&cfg, &mirrors, &id)?;
            Ok(removed
                .into_iter()
                .filter(|c| {
                    Oid::from_str(c)
                        .map(|o| !others.iter().any(|t| repo.is_ancestor(o, *t)))
                        .unwrap_or(true)
                })
                .collect())
        })
        .await?;
        for c in orphans {
            self.kb
                .purge(&src.scope, &commit_urn(&src.id, &c), priority)
                .await
                .map_err(TaskError::from)?;
        }
        Ok(())
    }

    async fn delete_branch(
        &self,
        src: &Source,
        branch: &str,
        last_tip: Option<String>,
        priority: Priority,
    ) -> Result<(), TaskError> {
        if let Some(cache) = &self.semantic {
            cache.take(&src.cache_key(), branch);
        }
        self.kb
            .purge_prefix(&src.scope, &branch_files_prefix(&src.id, branch), priority)
            .await
            .map_err(TaskError::from)?;
        self.kb
            .purge(&src.scope, &overview_urn(&src.id, branch), priority)
            .await
            .map_err(TaskError::from)?;
        let Some(tip) = last_tip else { return Ok(()) };
        let others = self.other_tips(src, branch).await?;
        let (cfg, mirrors, id) = (src.cfg.clone(), src.mirrors.clone(), src.id.clone());
        let walked = blocking(move || {
            let repo = GitRepo::open(&cfg, &mirrors, &id)?;
            let Ok(tip) = repo.oid(&tip) else {
                return Ok(None);
            };
            let all: Vec<String> = repo.walk(tip, &[])?.iter().map(Oid::to_string).collect();
            let only_here: HashSet<String> = repo
                .walk(tip, &others)?
                .iter()
                .map(Oid::to_string)
                .collect();
            Ok(Some((all, only_here)))
        })
        .await?;
        match walked {
            Some((all, only_here)) => {
                self.unlink(src, branch, &all).await?;
                for c in only_here {
                    self.kb
                        .purge(&src.scope, &commit_urn(&src.id, &c), priority)
                        .await
                        .map_err(TaskError::from)?;
                }
            }
            None => tracing::warn!(
                branch,
                "deleted branch's history is no longer in the repository; its commit links stay until the source is purged"
            ),
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl TaskHandler for GitTasks {
    async fn execute(
        &self,
        payload: &serde_json::Value,
        scope: &Scope,
        priority: Priority,
    ) -> Result<(), TaskError> {
        let task: GitTask = serde_json::from_value(payload.clone())
            .map_err(|e| TaskError::Permanent(format!("unreadable git task: {e}")))?;
        let id = match &task {
            GitTask::IngestGitStructure { source_id, .. }
            | GitTask::IngestGitCommits { source_id, .. }
            | GitTask::GitOverview { source_id, .. }
            | GitTask::GitBranchRewrite { source_id, .. }
            | GitTask::GitBranchDelete { source_id, .. } => source_id.clone(),
        };
        let Some(src) = self.source(scope, &id).await? else {
            return Ok(());
        };
        match task {
            GitTask::IngestGitStructure {
                v: v @ (1..=3),
                branch,
                commit,
                paths,
                deleted,
                base,
                plan,
                ..
            } => {
                let task = StructureTask {
                    branch,
                    commit,
                    paths,
                    deleted,
                    base: base.filter(|_| v >= 2),
                    plan: plan.filter(|_| v >= 3),
                };
                self.structure(&src, task, priority).await
            }
            GitTask::IngestGitCommits {
                v: 1,
                branch,
                commits,
                ..
            } => self.commits(&src, &branch, commits, priority).await,
            GitTask::GitOverview {
                v: 1,
                branch,
                commit,
                ..
            } => self.overview(&src, &branch, &commit, priority).await,
            GitTask::GitBranchRewrite {
                v: 1,
                branch,
                removed,
                ..
            } => self.rewrite(&src, &branch, removed, priority).await,
            GitTask::GitBranchDelete {
                v: 1,
                branch,
                last_tip,
                ..
            } => self.delete_branch(&src, &branch, last_tip, priority).await,
            other => Err(TaskError::Permanent(format!(
                "unsupported version of a git task: {other:?}"
            ))),
        }
    }
}

/// Counts one finished file ingest; a retryable failure (or a crashed ingest) becomes the
/// task's failure, any other is logged and counted: one bad file never stops the rest.
fn record_ingest(
    r: Result<Result<IngestStatus, KbError>, tokio::task::JoinError>,
    failure: &mut Option<TaskError>,
) {
    match r {
        Ok(Ok(_)) => metrics::counter!("evident_git_files_indexed_total").increment(1),
        Ok(Err(e)) if e.is_retryable() => *failure = Some(TaskError::from(e)),
        Ok(Err(e)) => {
            // One bad file never stops the rest.
            tracing::warn!(error = %e, "file not indexed");
            metrics::counter!("evident_git_files_failed_total").increment(1);
        }
        Err(e) => *failure = Some(TaskError::Retryable(format!("ingest worker failed: {e}"))),
    }
}
