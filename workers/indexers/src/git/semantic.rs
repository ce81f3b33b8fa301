//! The semantic pass of a structure task: a branch's symbol table
//! ([`evident_code::semantic::SymbolTable`]) brought to the task's commit, then every file
//! to write prepared with its resolved `calls` / `extends` / `implements` / `uses_type`
//! edges.
//!
//! The table is kept in memory per (source, branch) between tasks ([`SemanticCache`]). It is
//! used only when it stands where the graph stands: at the task's base commit (the tip the
//! poller diffed from) or at the task's own commit (another batch of the same plan). It is
//! then moved forward by git's own diff, and only the changed files and the files whose
//! resolution changed with them are written. Otherwise — first task of a branch in this
//! process, a task another worker ran in between, a failed task (its table is dropped) —
//! the table is built from the whole tree at the commit and every code file of a semantic
//! language is prepared again: those whose resolution did not change have the stored
//! fingerprint and are skipped by the write path, the others are repaired.
//!
//! So the first batch of a plan writes every file of a semantic language; the table remembers
//! which files it wrote for which plan (`written`), and a later batch of the *same* plan at
//! the same commit neither parses nor prepares those again — they are written, with the
//! resolution this table holds. A batch of another plan (a later poll, a source removed and
//! added again) or without a plan id (a task queued by an older version) prepares its paths.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use evident_code::Language;
use evident_code::chunks::CodeChunking;
use evident_code::semantic::{FileUnit, Resolution, SymbolTable, supported};
use evident_code::structure::{RepoContext, Structure, analyse_with_facts};
use git2::Oid;

use super::GitSourceConfig;
use super::repo::{GitError, GitRepo};
use super::tasks::{FileOutcome, FileSite, FileText, open_with, prepare_file, read_text};

/// Branch tables kept per process (least recently stored dropped first).
const MAX_BRANCHES: usize = 16;
/// Threads parsing a whole tree.
const PARSE_THREADS: usize = 2;

/// One branch's symbol table and the commit it stands at.
pub struct BranchTable {
    pub table: SymbolTable,
    pub commit: String,
    /// The plan whose batches this table served at `commit`, and the files they wrote.
    pub plan: Option<String>,
    pub written: BTreeSet<String>,
}

/// A branch table under its (source, branch).
type Keyed = ((String, String), BranchTable);

/// The branch tables of this process.
#[derive(Clone, Default)]
pub struct SemanticCache {
    branches: Arc<Mutex<Vec<Keyed>>>,
}

impl SemanticCache {
    /// Takes a branch's table out (a task owns it while it runs; a failed task drops it).
    pub(super) fn take(&self, source: &str, branch: &str) -> Option<BranchTable> {
        let mut all = self.branches.lock().unwrap_or_else(|e| e.into_inner());
        let i = all
            .iter()
            .position(|((s, b), _)| s == source && b == branch)?;
        Some(all.remove(i).1)
    }

    pub(super) fn put(&self, source: &str, branch: &str, t: BranchTable) {
        let mut all = self.branches.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|((s, b), _)| !(s == source && b == branch));
        if all.len() >= MAX_BRANCHES {
            all.remove(0);
        }
        all.push(((source.to_string(), branch.to_string()), t));
    }
}

/// Whether a path is a file of a language with semantic edges.
fn semantic_path(path: &str) -> bool {
    Language::from_path(path).is_some_and(supported)
}

/// What the reader of a structure task with semantics reads.
pub(super) struct SemanticRead {
    pub(super) cfg: GitSourceConfig,
    pub(super) mirrors: PathBuf,
    pub(super) source_id: String,
    pub(super) ctx: RepoContext,
    pub(super) chunking: CodeChunking,
    pub(super) branch: String,
    pub(super) commit: String,
    /// The tip the task's paths were diffed from (`None`: a first read, or unknown).
    pub(super) base: Option<String>,
    /// The plan the task is a batch of (`None`: queued by an older version).
    pub(super) plan: Option<String>,
    pub(super) paths: Vec<String>,
    pub(super) deleted: Vec<String>,
}

/// A parsed file: its structure (for the write) and its table entry.
type Parsed = (Structure, Option<FileUnit>);

impl SemanticRead {
    /// Brings `cached` (or a new table) to the task's commit, then prepares every file to
    /// write and sends it to `tx`. Returns the table at the commit.
    pub(super) fn run(
        self,
        cached: Option<BranchTable>,
        tx: &tokio::sync::mpsc::Sender<FileOutcome>,
    ) -> Result<BranchTable, GitError> {
        let repo = open_with(
            &self.cfg,
            &self.mirrors,
            &self.source_id,
            std::slice::from_ref(&self.commit),
        )?;
        let at = repo.oid(&self.commit)?;
        let usable =
            cached.filter(|c| c.commit == self.commit || Some(&c.commit) == self.base.as_ref());
        // Files an earlier batch of this very plan wrote at this commit are done. Any other
        // file of the task is prepared again, even one this table wrote at this commit for
        // another plan: the store may hold it otherwise since (a re-read under a new key
        // scheme, a source added again), and the write path skips it when its fingerprint is
        // the stored one.
        let mut written = match &usable {
            Some(c) if c.commit == self.commit && self.plan.is_some() && c.plan == self.plan => {
                c.written.clone()
            }
            _ => BTreeSet::new(),
        };
        let mut parsed: HashMap<String, Structure> = HashMap::new();
        let (table, also) = match usable {
            Some(c) => self.advance(&repo, at, c, &written, &mut parsed)?,
            None => self.build(&repo, at, &mut parsed)?,
        };
        let site = FileSite {
            repo: &repo,
            at,
            cfg: &self.cfg,
            ctx: &self.ctx,
            chunking: &self.chunking,
            branch: &self.branch,
            commit: &self.commit,
        };
        let empty = Resolution::default();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        for path in self.paths.iter().chain(also.iter()) {
            if !seen.insert(path) || written.contains(path) {
                continue;
            }
            let semantic = semantic_path(path).then(|| table.resolution(path).unwrap_or(&empty));
            let outcome = prepare_file(
                &site,
                path.to_string(),
                parsed.remove(path.as_str()),
                semantic,
            )?;
            if tx.blocking_send(outcome).is_err() {
                break; // the consumer failed; its error is reported
            }
        }
        written.extend(seen.into_iter().map(str::to_string));
        Ok(BranchTable {
            table,
            commit: self.commit,
            plan: self.plan,
            written,
        })
    }

    /// The cached table moved to the commit by git's diff (and the task's own paths but
    /// those `done`: written at this commit for this plan); the other files whose resolution
    /// changed.
    fn advance(
        &self,
        repo: &GitRepo,
        at: Oid,
        cached: BranchTable,
        done: &BTreeSet<String>,
        parsed: &mut HashMap<String, Structure>,
    ) -> Result<(SymbolTable, Vec<String>), GitError> {
        let mut table = cached.table;
        let from = repo.oid(&cached.commit)?;
        let (changed, gone) = if from == at {
            (Vec::new(), Vec::new())
        } else {
            repo.changed_paths(from, at)?
        };
        let changed: BTreeSet<String> = changed
            .into_iter()
            .chain(self.paths.iter().filter(|p| !done.contains(*p)).cloned())
            .filter(|p| semantic_path(p))
            .collect();
        let mut changes = Vec::new();
        for p in changed {
            let (structure, unit) = parse(repo, at, &self.cfg, &p)?;
            if let Some(s) = structure {
                parsed.insert(p.clone(), s);
            }
            changes.push((p, unit));
        }
        for p in gone.iter().chain(self.deleted.iter()) {
            if semantic_path(p) && !changes.iter().any(|(c, _)| c == p) {
                changes.push((p.clone(), None));
            }
        }
        let again = table.update(changes);
        Ok((table, again))
    }

    /// A table from the whole tree at the commit (parsed on [`PARSE_THREADS`] threads, each
    /// with its own repository handle); every code file of a semantic language is to write.
    fn build(
        &self,
        repo: &GitRepo,
        at: Oid,
        parsed: &mut HashMap<String, Structure>,
    ) -> Result<(SymbolTable, Vec<String>), GitError> {
        let all: Vec<String> = repo
            .tree_files(at)?
            .into_iter()
            .map(|(p, _, _)| p)
            .filter(|p| semantic_path(p))
            .collect();
        let per = all.len().div_ceil(PARSE_THREADS).max(1);
        let results: Vec<Result<Vec<(String, Parsed)>, GitError>> = std::thread::scope(|s| {
            let handles: Vec<_> = all
                .chunks(per)
                .map(|part| {
                    s.spawn(move || -> Result<Vec<(String, Parsed)>, GitError> {
                        let repo = GitRepo::open(&self.cfg, &self.mirrors, &self.source_id)?;
                        part.iter()
                            .map(|p| {
                                let (s, u) = parse(&repo, at, &self.cfg, p)?;
                                Ok((p.clone(), (s.unwrap_or(Structure::Text), u)))
                            })
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(GitError::Repository("a parsing thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut changes = Vec::with_capacity(all.len());
        for r in results {
            for (p, (structure, unit)) in r? {
                if unit.is_some() {
                    parsed.insert(p.clone(), structure);
                }
                changes.push((p, unit));
            }
        }
        let mut table = SymbolTable::new();
        table.update(changes);
        Ok((table, all))
    }
}

/// A file parsed for the table: its structure and its entry (`None` when skipped, gone or
/// unparsable — then it has no symbols to offer).
fn parse(
    repo: &GitRepo,
    at: Oid,
    cfg: &GitSourceConfig,
    path: &str,
) -> Result<(Option<Structure>, Option<FileUnit>), GitError> {
    let FileText::Text(content) = read_text(repo, at, cfg, path)? else {
        return Ok((None, None));
    };
    Ok(match analyse_with_facts(path, &content) {
        Ok((Structure::Code(o), Some(facts))) => {
            let unit = FileUnit::new(path, &o, facts);
            (Some(Structure::Code(o)), Some(unit))
        }
        Ok((s, _)) => (Some(s), None),
        Err(_) => (None, None),
    })
}
