//! Polling: fetch each registered repository when it is due, compare every followed branch's
//! tip with its cursor, and queue the difference.
//!
//! Each source is polled by one replica at a time: the poller takes the source's lease
//! (`IndexerStore::acquire`) before polling and keeps it across polls while it lives, so a
//! dead replica's sources move to a live one when their leases expire.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use evident_ai::Priority;
use evident_code::skip::skip_by_path;
use evident_kb::TaskSubmitter;
use evident_store::indexers::{IndexerSource, IndexerStore};
use evident_store::queue::Clock;
use git2::Oid;
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::repo::{GitError, GitRepo};
use super::{GitSourceConfig, GitTask, branch_matches, branch_task_urn};

/// How much work goes into one task.
#[derive(Debug, Clone, Copy)]
pub struct Batches {
    pub files: usize,
    pub commits: usize,
}

impl Default for Batches {
    fn default() -> Self {
        Batches {
            files: 256,
            commits: 200,
        }
    }
}

/// What one poll of one source did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PollReport {
    pub branches: usize,
    pub changed_branches: usize,
    pub deleted_branches: usize,
    pub new_commits: usize,
    pub removed_commits: usize,
    pub files_queued: usize,
    pub files_deleted: usize,
    pub tasks: usize,
    /// Files left out by rule at planning time, by reason.
    pub skipped: BTreeMap<String, usize>,
    /// A few of them, to say what was skipped.
    pub skipped_examples: Vec<String>,
}

/// One branch's plan, computed from the repository.
struct BranchPlan {
    tip: Oid,
    removed: Vec<String>,
    paths: Vec<String>,
    deleted: Vec<String>,
    commits: Vec<String>,
}

#[derive(Clone)]
pub struct GitPoller {
    pub indexers: Arc<dyn IndexerStore>,
    pub tasks: TaskSubmitter,
    pub mirrors: PathBuf,
    /// This replica's identity for source leases.
    pub owner: String,
    pub clock: Arc<dyn Clock>,
    pub batches: Batches,
    /// Priority of the planned work (bulk by default).
    pub priority: Priority,
}

#[derive(Debug, thiserror::Error)]
pub enum PollError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("store: {0}")]
    Store(#[from] evident_store::StoreError),
    #[error("queue: {0}")]
    Kb(#[from] evident_kb::KbError),
    #[error("source config: {0}")]
    Config(String),
    #[error("polling worker failed: {0}")]
    Join(String),
}

impl GitPoller {
    fn lease_ms(source: &IndexerSource) -> i64 {
        // Long enough to cover a slow fetch; short enough that a dead holder's sources move on.
        (source.interval_secs as i64 * 3_000).clamp(120_000, 3_600_000)
    }

    /// Polls every enabled git source that is due. Returns how many were polled.
    pub async fn poll_due(&self) -> usize {
        let sources = match self.indexers.list_sources(Some("git")).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "listing git sources failed");
                return 0;
            }
        };
        let now = self.clock.now_ms();
        let mut polled = 0;
        for s in sources {
            let due = s
                .status
                .last_poll_at
                .is_none_or(|at| now - at >= s.interval_secs as i64 * 1000);
            if !s.enabled || !due {
                continue;
            }
            match self.poll(&s).await {
                Ok(Some(report)) => {
                    polled += 1;
                    tracing::info!(source_id = %s.id, ?report, "git source polled");
                }
                Ok(None) => {}
                Err(e) => {
                    polled += 1;
                    tracing::warn!(source_id = %s.id, error = %e, "git poll failed; will retry at the next interval");
                    let _ = self
                        .indexers
                        .record_poll(
                            &s.id,
                            &self.owner,
                            self.clock.now_ms(),
                            Some(&e.to_string()),
                            &json!({}),
                        )
                        .await;
                }
            }
        }
        polled
    }

    /// Polls one source if this replica can take its lease (`None` when another holds it).
    pub async fn poll(&self, source: &IndexerSource) -> Result<Option<PollReport>, PollError> {
        let now = self.clock.now_ms();
        if !self
            .indexers
            .acquire(&source.id, &self.owner, Self::lease_ms(source), now)
            .await?
        {
            return Ok(None);
        }
        let cfg: GitSourceConfig = serde_json::from_value(source.config.clone())
            .map_err(|e| PollError::Config(e.to_string()))?;
        let cursors: BTreeMap<String, Oid> = self
            .indexers
            .list_cursors(&source.id)
            .await?
            .into_iter()
            .filter_map(|(k, v)| {
                let b = k.strip_prefix("branch:")?.to_string();
                let tip = Oid::from_str(v.get("tip")?.as_str()?).ok()?;
                Some((b, tip))
            })
            .collect();

        let (mirrors, id, cursors_for_plan) =
            (self.mirrors.clone(), source.id.clone(), cursors.clone());
        let cfg_for_plan = cfg.clone();
        let (followed, plans, skipped) = tokio::task::spawn_blocking(move || {
            plan(&cfg_for_plan, &mirrors, &id, &cursors_for_plan)
        })
        .await
        .map_err(|e| PollError::Join(e.to_string()))??;

        let mut report = PollReport {
            branches: followed.len(),
            ..Default::default()
        };
        for (reason, paths) in skipped {
            report.skipped.insert(reason.clone(), paths.len());
            report
                .skipped_examples
                .extend(paths.into_iter().take(5).map(|p| format!("{p} ({reason})")));
        }
        for (branch, p) in plans {
            report.changed_branches += 1;
            report.new_commits += p.commits.len();
            report.removed_commits += p.removed.len();
            report.files_queued += p.paths.len();
            report.files_deleted += p.deleted.len();
            report.tasks += self.queue_branch(source, &branch, p).await?;
        }
        for (branch, tip) in cursors.iter().filter(|(b, _)| !followed.contains(*b)) {
            let body = GitTask::GitBranchDelete {
                v: 1,
                source_id: source.id.clone(),
                branch: branch.clone(),
                last_tip: Some(tip.to_string()),
            };
            self.enqueue(source, branch, body).await?;
            self.indexers
                .delete_cursor(&source.id, &self.owner, &format!("branch:{branch}"))
                .await?;
            report.deleted_branches += 1;
            report.tasks += 1;
        }
        let stats = accumulate(&source.status.stats, &report);
        self.indexers
            .record_poll(&source.id, &self.owner, self.clock.now_ms(), None, &stats)
            .await?;
        Ok(Some(report))
    }

    async fn enqueue(
        &self,
        source: &IndexerSource,
        branch: &str,
        body: GitTask,
    ) -> Result<(), PollError> {
        self.tasks
            .enqueue_body(
                source.scope.clone(),
                &branch_task_urn(&source.id, branch),
                self.priority,
                body.to_value(),
                self.clock.now_ms(),
            )
            .await?;
        Ok(())
    }

    /// Queues one branch's work in the order it must run, then moves its cursor.
    async fn queue_branch(
        &self,
        source: &IndexerSource,
        branch: &str,
        p: BranchPlan,
    ) -> Result<usize, PollError> {
        let id = source.id.clone();
        let tip = p.tip.to_string();
        let mut tasks = 0;
        if !p.removed.is_empty() {
            self.enqueue(
                source,
                branch,
                GitTask::GitBranchRewrite {
                    v: 1,
                    source_id: id.clone(),
                    branch: branch.into(),
                    removed: p.removed,
                },
            )
            .await?;
            tasks += 1;
        }
        let mut deleted = Some(p.deleted);
        for (i, paths) in p.paths.chunks(self.batches.files.max(1)).enumerate() {
            let body = GitTask::IngestGitStructure {
                v: 1,
                source_id: id.clone(),
                branch: branch.into(),
                commit: tip.clone(),
                paths: paths.to_vec(),
                deleted: if i == 0 {
                    deleted.take().unwrap_or_default()
                } else {
                    Vec::new()
                },
            };
            self.enqueue(source, branch, body).await?;
            tasks += 1;
        }
        if let Some(deleted) = deleted.filter(|d| !d.is_empty()) {
            let body = GitTask::IngestGitStructure {
                v: 1,
                source_id: id.clone(),
                branch: branch.into(),
                commit: tip.clone(),
                paths: Vec::new(),
                deleted,
            };
            self.enqueue(source, branch, body).await?;
            tasks += 1;
        }
        for commits in p.commits.chunks(self.batches.commits.max(1)) {
            let body = GitTask::IngestGitCommits {
                v: 1,
                source_id: id.clone(),
                branch: branch.into(),
                commits: commits.to_vec(),
            };
            self.enqueue(source, branch, body).await?;
            tasks += 1;
        }
        self.enqueue(
            source,
            branch,
            GitTask::GitOverview {
                v: 1,
                source_id: id.clone(),
                branch: branch.into(),
                commit: tip.clone(),
            },
        )
        .await?;
        tasks += 1;
        // Only now, with the work durably queued, the cursor moves: a crash before this line
        // re-plans the same work, which the idempotent handlers absorb.
        self.indexers
            .put_cursor(
                &id,
                &self.owner,
                &format!("branch:{branch}"),
                &json!({ "tip": tip }),
            )
            .await?;
        Ok(tasks)
    }

    /// Polls due sources until `cancel`, looking every `tick`.
    pub async fn run(self, cancel: CancellationToken, tick: Duration) {
        loop {
            self.poll_due().await;
            tokio::select! {
                _ = tokio::time::sleep(tick) => {}
                _ = cancel.cancelled() => break,
            }
        }
        // Hand our sources to another replica at once rather than after the lease expires.
        if let Ok(sources) = self.indexers.list_sources(Some("git")).await {
            for s in sources
                .iter()
                .filter(|s| s.status.owner.as_deref() == Some(&self.owner))
            {
                let _ = self.indexers.release(&s.id, &self.owner).await;
            }
        }
    }
}

/// The stats kept with a source: the last poll's report, and totals since registration
/// (skips included, with examples), so what was skipped stays visible after quiet polls.
fn accumulate(previous: &serde_json::Value, report: &PollReport) -> serde_json::Value {
    let last = serde_json::to_value(report).unwrap_or_default();
    let mut totals = previous.get("totals").cloned().unwrap_or_else(|| json!({}));
    for field in [
        "newCommits",
        "removedCommits",
        "filesQueued",
        "filesDeleted",
        "tasks",
        "deletedBranches",
    ] {
        let add = last[field].as_u64().unwrap_or(0);
        totals[field] = json!(totals[field].as_u64().unwrap_or(0) + add);
    }
    for (reason, n) in &report.skipped {
        let t = &mut totals["skipped"][reason];
        *t = json!(t.as_u64().unwrap_or(0) + *n as u64);
    }
    if !report.skipped_examples.is_empty() {
        totals["skippedExamples"] = json!(report.skipped_examples);
    }
    json!({ "lastPoll": last, "totals": totals })
}

type Plans = (
    BTreeSet<String>,
    Vec<(String, BranchPlan)>,
    BTreeMap<String, Vec<String>>,
);

/// Fetches and compares: the followed branches, a plan for each that moved, and the files
/// skipped by path at planning time.
fn plan(
    cfg: &GitSourceConfig,
    mirrors: &std::path::Path,
    id: &str,
    cursors: &BTreeMap<String, Oid>,
) -> Result<Plans, PollError> {
    let repo = GitRepo::open(cfg, mirrors, id)?;
    repo.fetch(cfg)?;
    let all = repo.branches()?;
    let followed: Vec<(String, Oid)> = if cfg.branches.is_empty() {
        let default = repo.default_branch().or_else(|| {
            ["main", "master"]
                .into_iter()
                .find(|b| all.iter().any(|(n, _)| n == b))
                .map(str::to_string)
        });
        all.iter()
            .filter(|(n, _)| Some(n) == default.as_ref())
            .cloned()
            .collect()
    } else {
        all.iter()
            .filter(|(n, _)| cfg.branches.iter().any(|p| branch_matches(p, n)))
            .cloned()
            .collect()
    };
    let mut plans = Vec::new();
    let mut skipped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (branch, tip) in &followed {
        let old = cursors
            .get(branch)
            .copied()
            .filter(|o| repo.has_commit(&o.to_string()));
        if old == Some(*tip) {
            continue;
        }
        let (paths, deleted) = match old {
            Some(o) => repo.changed_paths(o, *tip)?,
            None => {
                let mut paths = Vec::new();
                for (path, _, size) in repo.tree_files(*tip)? {
                    let reason = skip_by_path(&path)
                        .map(|r| r.as_str())
                        .or((size > cfg.max_file_bytes).then_some("oversized"));
                    match reason {
                        Some(r) => skipped.entry(r.to_string()).or_default().push(path),
                        None => paths.push(path),
                    }
                }
                (paths, Vec::new())
            }
        };
        let hide: Vec<Oid> = old.into_iter().collect();
        let commits: Vec<String> = repo.walk(*tip, &hide)?.iter().map(Oid::to_string).collect();
        let removed = match old {
            Some(o) if !repo.is_ancestor(o, *tip) => {
                repo.walk(o, &[*tip])?.iter().map(Oid::to_string).collect()
            }
            _ => Vec::new(),
        };
        plans.push((
            branch.clone(),
            BranchPlan {
                tip: *tip,
                removed,
                paths,
                deleted,
                commits,
            },
        ));
    }
    Ok((
        followed.into_iter().map(|(b, _)| b).collect(),
        plans,
        skipped,
    ))
}
