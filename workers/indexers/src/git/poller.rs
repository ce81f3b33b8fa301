//! Polling: fetch each registered repository when it is due, compare every followed branch's
//! tip with its cursor, and queue the difference.
//!
//! Each source is polled by one replica at a time: the poller takes the source's lease
//! (`IndexerStore::acquire`) before polling and keeps it across polls while it lives, so a
//! dead replica's sources move to a live one when their leases expire.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use evident_code::skip::{SkipReason, is_text_path, skip_by_path, skip_file};
use evident_store::indexers::IndexerSource;
use git2::Oid;
use serde_json::json;

use crate::poll::{PollContext, PollError, SourcePoller};
use crate::report::GitReport;

use super::repo::{GitError, GitRepo};
use super::{GitSourceConfig, GitTask, branch_matches, branch_task_urn};

/// The cursor recording the key scheme a source was indexed under.
pub(crate) const KEYS_CURSOR: &str = "keys-version";

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

/// One branch's plan, computed from the repository.
struct BranchPlan {
    tip: Oid,
    /// The recorded tip the plan is diffed from (`None`: a first read).
    base: Option<String>,
    removed: Vec<String>,
    paths: Vec<String>,
    deleted: Vec<String>,
    commits: Vec<String>,
}

#[derive(Clone)]
pub struct GitPoller {
    pub ctx: PollContext,
    pub mirrors: PathBuf,
    pub batches: Batches,
}

impl From<GitError> for PollError {
    fn from(e: GitError) -> Self {
        PollError::unreachable("git", e)
    }
}

#[async_trait::async_trait]
impl SourcePoller for GitPoller {
    fn kind(&self) -> &'static str {
        "git"
    }

    async fn poll(
        &self,
        source: &IndexerSource,
    ) -> Result<Option<crate::poll::PollReport>, PollError> {
        Ok(self.poll(source).await?.map(Into::into))
    }
}

impl GitPoller {
    /// Polls one source if this replica can take its lease (`None` when another holds it).
    pub async fn poll(&self, source: &IndexerSource) -> Result<Option<GitReport>, PollError> {
        self.ctx
            .with_lease(source, || self.plan_and_queue(source))
            .await
    }

    async fn plan_and_queue(&self, source: &IndexerSource) -> Result<GitReport, PollError> {
        let cfg: GitSourceConfig = serde_json::from_value(source.config.clone())
            .map_err(|e| PollError::Config(e.to_string()))?;
        cfg.validate().map_err(PollError::Refused)?;
        // A local repository under `[sources] roots` (symlinks resolved now, not only at
        // registration); a remote's host resolved and allowed by the egress policy.
        crate::sources::check_access(source, &self.ctx.access).await?;
        let cursors: BTreeMap<String, Oid> = super::branch_tips(
            self.ctx
                .cursors(&source.key(), super::BRANCH_CURSOR)
                .await?,
        );
        // Indexed under an older key scheme (`evident_core::keys::KEYS_VERSION`): plan every
        // followed branch as new, so every file and commit is read and written again under
        // the current keys; each source write replaces its chunks' evidence, so the nodes
        // under old keys lose it and are removed (their old spellings stay as aliases).
        let keys_version = self
            .ctx
            .cursor(&source.key(), KEYS_CURSOR)
            .await?
            .and_then(|v| v.as_u64());
        let reindex = keys_version < Some(u64::from(evident_core::keys::KEYS_VERSION));
        let (mirrors, id, cursors_for_plan) = (
            super::repo::client_mirrors(&self.mirrors, &source.key().client_id),
            source.id.clone(),
            if reindex {
                BTreeMap::new()
            } else {
                cursors.clone()
            },
        );
        let (followed, plans, skipped) =
            tokio::task::spawn_blocking(move || plan(&cfg, &mirrors, &id, &cursors_for_plan))
                .await
                .map_err(|e| PollError::internal("polling worker", e))??;

        let mut report = GitReport {
            branches: followed.len(),
            ..Default::default()
        };
        report_skipped(&mut report, skipped);
        for (branch, p) in plans {
            report.changed_branches += 1;
            report.new_commits += p.commits.len();
            report.removed_commits += p.removed.len();
            report.files_queued += p.paths.len();
            report.files_deleted += p.deleted.len();
            report.tasks += self.queue_branch(source, &branch, p).await?;
        }
        for (branch, tip) in cursors.iter().filter(|(b, _)| !followed.contains(*b)) {
            self.queue_branch_delete(source, branch, tip).await?;
            report.deleted_branches += 1;
            report.tasks += 1;
        }
        if reindex {
            // Recorded once the re-reading work is queued (like any cursor).
            self.ctx
                .set_cursor(
                    &source.key(),
                    KEYS_CURSOR,
                    &json!(evident_core::keys::KEYS_VERSION),
                )
                .await?;
            report.reindexed = !cursors.is_empty();
        }
        Ok(report)
    }

    /// A branch no longer followed: its removal queued, then its cursor forgotten.
    async fn queue_branch_delete(
        &self,
        source: &IndexerSource,
        branch: &str,
        tip: &Oid,
    ) -> Result<(), PollError> {
        let body = GitTask::GitBranchDelete {
            v: 1,
            source_id: source.id.clone(),
            branch: branch.to_string(),
            last_tip: Some(tip.to_string()),
        };
        self.enqueue(source, branch, body).await?;
        self.ctx
            .forget_cursor(&source.key(), &format!("{}{branch}", super::BRANCH_CURSOR))
            .await?;
        Ok(())
    }

    async fn enqueue(
        &self,
        source: &IndexerSource,
        branch: &str,
        body: GitTask,
    ) -> Result<(), PollError> {
        self.ctx
            .tasks
            .enqueue_body(
                source.scope.clone(),
                &branch_task_urn(&source.id, branch),
                self.ctx.priority,
                body.to_value(),
                self.ctx.clock.now_ms(),
            )
            .await?;
        Ok(())
    }

    /// Queues one branch's work in the order it must run, then moves its cursor. Long because
    /// the order is the contract (rewrite, structure batches, deletions, commit batches,
    /// overview, and only then the cursor) and reads best as one sequence.
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
        let plan = plan_id(self.ctx.clock.now_ms(), &tip);
        for (i, paths) in p.paths.chunks(self.batches.files.max(1)).enumerate() {
            let body = GitTask::IngestGitStructure {
                v: 3,
                source_id: id.clone(),
                branch: branch.into(),
                commit: tip.clone(),
                paths: paths.to_vec(),
                deleted: if i == 0 {
                    deleted.take().unwrap_or_default()
                } else {
                    Vec::new()
                },
                base: p.base.clone(),
                plan: Some(plan.clone()),
            };
            self.enqueue(source, branch, body).await?;
            tasks += 1;
        }
        if let Some(deleted) = deleted.filter(|d| !d.is_empty()) {
            let body = GitTask::IngestGitStructure {
                v: 3,
                source_id: id.clone(),
                branch: branch.into(),
                commit: tip.clone(),
                paths: Vec::new(),
                deleted,
                base: p.base.clone(),
                plan: Some(plan),
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
        self.ctx
            .set_cursor(
                &source.key(),
                &format!("{}{branch}", super::BRANCH_CURSOR),
                &json!({ "tip": tip }),
            )
            .await?;
        Ok(tasks)
    }
}

/// Counts the files skipped at planning time by reason, with a few examples of each.
fn report_skipped(report: &mut GitReport, skipped: BTreeMap<SkipReason, Vec<String>>) {
    for (reason, paths) in skipped {
        report.skipped.insert(reason, paths.len());
        report.skipped_examples.extend(
            paths
                .into_iter()
                .take(5)
                .map(|p| format!("{p} ({})", reason.as_str())),
        );
    }
}

/// The branches the source follows with their tips: those its patterns match, or without
/// patterns the default branch (else `main` or `master`).
fn followed_branches(
    cfg: &GitSourceConfig,
    repo: &GitRepo,
) -> Result<Vec<(String, Oid)>, PollError> {
    let all = repo.branches()?;
    Ok(if cfg.branches.is_empty() {
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
    })
}

/// The files of a branch read for the first time: every file of its tip's tree but those
/// skipped by path, size or content, which go into `skipped` by reason.
fn first_read_paths(
    cfg: &GitSourceConfig,
    repo: &GitRepo,
    tip: Oid,
    skipped: &mut BTreeMap<SkipReason, Vec<String>>,
) -> Result<Vec<String>, PollError> {
    let mut paths = Vec::new();
    for (path, blob, size) in repo.tree_files(tip)? {
        let mut reason =
            skip_by_path(&path).or((size > cfg.max_file_bytes).then_some(SkipReason::Oversized));
        // A name that does not say text: its content decides (here, so that the poll's report
        // names what was skipped and why).
        if reason.is_none() && !is_text_path(&path) {
            let bytes = repo.blob(blob)?;
            reason = skip_file(&path, &bytes, cfg.max_file_bytes as usize);
        }
        match reason {
            Some(r) => skipped.entry(r).or_default().push(path),
            None => paths.push(path),
        }
    }
    Ok(paths)
}

type Plans = (
    BTreeSet<String>,
    Vec<(String, BranchPlan)>,
    BTreeMap<SkipReason, Vec<String>>,
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
    let followed = followed_branches(cfg, &repo)?;
    let mut plans = Vec::new();
    let mut skipped: BTreeMap<SkipReason, Vec<String>> = BTreeMap::new();
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
            None => (
                first_read_paths(cfg, &repo, *tip, &mut skipped)?,
                Vec::new(),
            ),
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
                base: old.map(|o| o.to_string()),
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

/// An id for the structure batches of one plan: unique per poll (the clock, a per-process
/// count and this process's random hash seed), so a later plan — even at the same commit and
/// millisecond, after the source was removed and added again — never shares it.
fn plan_id(now_ms: i64, tip: &str) -> String {
    use std::hash::BuildHasher;
    static PLANS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    static SEED: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    let n = PLANS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let h = SEED
        .get_or_init(Default::default)
        .hash_one((now_ms, n, tip));
    format!("{now_ms}-{n}-{h:016x}")
}

#[cfg(test)]
mod plan_tests {
    #[test]
    fn plan_ids_differ_even_at_one_millisecond_and_tip() {
        let tip = "a".repeat(40);
        let (a, b) = (super::plan_id(7, &tip), super::plan_id(7, &tip));
        assert_ne!(a, b);
        assert!(a.starts_with("7-"), "{a}");
    }
}
