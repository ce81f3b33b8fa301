//! `code` and `commits`: the git indexer over real code found on this machine.
//!
//! `code [--files N]`: for each language with real sources here — Rust (the cargo registry),
//! Python (the interpreter's standard library), Java (the JDK's `src.zip`), JavaScript (npm) —
//! up to N files (default 2,000) are committed into a repository and indexed structurally
//! (poll → queued tasks → parse, chunk, embed, store). Next to it, in the same run: tree-sitter
//! parse + extraction alone on every core (the floor) and `ctags -R` on the same tree.
//!
//! `commits [--commits N]`: a history of N commits (default 3,000) replaying real Python files
//! (additions, edits, renames, deletions), ingested in full; next to it `git log --name-status`
//! on the same repository.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::{Embedder, StaticEmbedder};
use evident_code::chunks::CodeChunking;
use evident_indexers::git::{GitPoller, GitSourceConfig, GitTasks};
use evident_kb::{Kb, PoolConfig, TaskHandlers};
use evident_qualifier::{Outcome, Qualifier, QueueConfig};
use evident_store::VectorSpace;
use evident_store::indexers::{IndexerSource, PollStatus};
use evident_store::queue::{Clock, PriorityBand, SystemClock};
use evident_store_embedded::writer_stats::WriterStats;
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

use crate::{Args, rss_mib};

/// Files under `root` with one of `exts`, skipping directories named in `skip`, sorted.
pub(crate) fn walk(root: &Path, exts: &[&str], skip: &[&str], limit: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries.into_iter().rev() {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p.is_dir() {
                if !skip.contains(&name) && !name.starts_with('.') {
                    stack.push(p);
                }
            } else if p
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| exts.contains(&e))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out.truncate(limit);
    out
}

pub(crate) struct Corpus {
    pub(crate) language: &'static str,
    pub(crate) root: PathBuf,
    pub(crate) files: Vec<PathBuf>,
}

pub(crate) fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/root".into())
}

/// The real code on this machine, by language.
fn corpora(limit: usize, scratch: &Path) -> Vec<Corpus> {
    let mut out = Vec::new();
    if let Some(registry) = std::fs::read_dir(home().join(".cargo/registry/src"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
    {
        let root = registry.path();
        out.push(Corpus {
            language: "rust",
            files: walk(&root, &["rs"], &["tests", "benches", "examples"], limit),
            root,
        });
    }
    let python = std::process::Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(root) = python.filter(|p| p.is_dir()) {
        let files = walk(&root, &["py"], &crate::fidelity::PYTHON_SKIP, limit);
        out.push(Corpus {
            language: "python",
            files,
            root,
        });
    }
    if let Some(src_zip) = std::fs::read_dir("/usr/lib/jvm").ok().and_then(|d| {
        d.flatten()
            .map(|e| e.path().join("lib/src.zip"))
            .find(|p| p.exists())
    }) {
        let root = scratch.join("jdk-src");
        let extracted = std::process::Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith('java.base/') and n.endswith('.java')])",
            ])
            .arg(&src_zip)
            .arg(&root)
            .status()
            .is_ok_and(|s| s.success());
        if extracted {
            out.push(Corpus {
                language: "java",
                files: walk(&root, &["java"], &[], limit),
                root,
            });
        }
    }
    let npm = PathBuf::from("/usr/lib/node_modules/npm");
    if npm.is_dir() {
        out.push(Corpus {
            language: "javascript",
            files: walk(&npm, &["js"], &["test", "tests"], limit),
            root: npm,
        });
    }
    out.retain(|c| !c.files.is_empty());
    out
}

fn signature() -> git2::Signature<'static> {
    git2::Signature::now("Bench", "bench@example.com").expect("signature")
}

/// Copies a corpus into a new repository, committed once. Returns (repo dir, bytes).
pub(crate) fn repository_of(corpus: &Corpus, dir: &Path) -> (PathBuf, u64) {
    let work = dir.join(format!("repo-{}", corpus.language));
    let repo = git2::Repository::init(&work).expect("init");
    repo.set_head("refs/heads/main").expect("head");
    let mut bytes = 0;
    let mut index = repo.index().expect("index");
    for f in &corpus.files {
        let rel = f.strip_prefix(&corpus.root).expect("under root");
        let dest = work.join(rel);
        std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
        bytes += std::fs::copy(f, &dest).expect("copy");
        index.add_path(rel).expect("add");
    }
    index.write().expect("index");
    let tree = repo
        .find_tree(index.write_tree().expect("tree"))
        .expect("tree");
    let sig = signature();
    repo.commit(Some("HEAD"), &sig, &sig, "Import", &tree, &[])
        .expect("commit");
    (work, bytes)
}

pub(crate) struct Indexer {
    pub(crate) store: EmbeddedStore,
    pub(crate) kb: Kb,
    poller: GitPoller,
    qualifier: Qualifier,
}

/// A knowledge base over a fresh embedded store under `dir`, with the built-in static
/// embedder (what a default server runs).
pub async fn open_kb(dir: &Path) -> (EmbeddedStore, Kb) {
    open_kb_with(
        &dir.join("data"),
        Arc::new(StaticEmbedder::builtin()),
        PoolConfig::default(),
    )
    .await
}

/// A knowledge base over a fresh embedded store in `dir` (the HNSW indexer running in the
/// background, as in a server), with `embedder` and write `pools`.
pub async fn open_kb_with(
    dir: &Path,
    embedder: Arc<dyn Embedder>,
    pools: PoolConfig,
) -> (EmbeddedStore, Kb) {
    let store = EmbeddedStore::open(EmbeddedOptions {
        dir: dir.to_path_buf(),
        vector_space: VectorSpace {
            embedder: embedder.identity().to_string(),
            dim: embedder.dim(),
        },
        background_indexer: true,
    })
    .expect("store");
    let kb = Kb::new(store.stores(), embedder, pools).await.expect("kb");
    (store, kb)
}

pub(crate) async fn indexer(dir: &Path) -> Indexer {
    indexer_with(dir, PoolConfig::default().bulk).await
}

/// The indexer with `writes` concurrent ingests per task and bulk writes in flight
/// (`[git] parallel_ingests` and `[kb] bulk` of a server; default 16 both).
pub(crate) async fn indexer_with(dir: &Path, writes: usize) -> Indexer {
    indexer_embedding(dir, writes, Arc::new(StaticEmbedder::builtin())).await
}

/// [`indexer_with`] embedding through `embedder` (the `quality` embedder comparison).
pub(crate) async fn indexer_embedding(
    dir: &Path,
    writes: usize,
    embedder: Arc<dyn Embedder>,
) -> Indexer {
    indexer_mode(dir, writes, embedder, true).await
}

/// [`indexer_embedding`], with (`semantic`) or without the semantic pass (`calls`,
/// `extends`, `implements`, `uses_type`), for the `code` suite's before/after.
pub(crate) async fn indexer_mode(
    dir: &Path,
    writes: usize,
    embedder: Arc<dyn Embedder>,
    semantic: bool,
) -> Indexer {
    let (store, kb) = open_kb_with(
        &dir.join("data"),
        embedder,
        PoolConfig {
            bulk: writes,
            ..PoolConfig::default()
        },
    )
    .await;
    let mut handlers = TaskHandlers::new(&kb);
    GitTasks {
        kb: kb.clone(),
        indexers: kb.stores().indexers.clone(),
        mirrors: dir.join("mirrors"),
        code_chunking: CodeChunking::default(),
        doc_chunking: Default::default(),
        parallel: writes,
        // A benchmark reads whatever repository its operator names.
        access: evident_indexers::access::Access::for_tests(std::path::Path::new("/")),
        semantic: semantic.then(Default::default),
    }
    .register(&mut handlers);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let poller = GitPoller {
        ctx: crate::sources::poll_context(&kb, clock.clone()),
        mirrors: dir.join("mirrors"),
        batches: Default::default(),
    };
    let qualifier = Qualifier {
        queue: kb.stores().queue.clone(),
        handlers,
        clock,
        config: QueueConfig::default(),
        worker_id: "bench".into(),
        band: PriorityBand::ALL,
    };
    Indexer {
        store,
        kb,
        poller,
        qualifier,
    }
}

impl Indexer {
    /// Registers a local repository, polls it, and runs every queued task. Returns the time
    /// spent per task kind.
    pub(crate) async fn index(&self, id: &str, work: &Path) -> Vec<(String, Duration, usize)> {
        let cfg = GitSourceConfig {
            name: id.into(),
            url: None,
            path: Some(work.to_path_buf()),
            branches: vec![],
            username_env: None,
            token_env: None,
            issue_tracker: None,
            max_file_bytes: 1024 * 1024,
        };
        let source = IndexerSource {
            id: id.into(),
            kind: "git".into(),
            scope: evident_core::Scope::client("bench"),
            config: serde_json::to_value(cfg).expect("config"),
            interval_secs: 3600,
            enabled: true,
            created_at: 0,
            updated_at: 0,
            status: PollStatus::default(),
        };
        let source = self
            .kb
            .stores()
            .indexers
            .put_source(&source, SystemClock.now_ms())
            .await
            .expect("register");
        let t = Instant::now();
        self.poller
            .poll(&source)
            .await
            .expect("poll")
            .expect("lease");
        let mut by_kind: Vec<(String, Duration, usize)> = vec![("plan".into(), t.elapsed(), 1)];
        loop {
            let t = Instant::now();
            match self.qualifier.process_next().await.expect("process") {
                Outcome::Empty => break,
                Outcome::Processed { task_id, state } => {
                    let spent = t.elapsed();
                    let task = self
                        .kb
                        .stores()
                        .queue
                        .get(&task_id)
                        .await
                        .expect("get")
                        .expect("task");
                    assert_eq!(state, evident_store::queue::TaskState::Done, "{task:?}");
                    match by_kind.iter_mut().find(|(k, _, _)| *k == task.kind) {
                        Some(e) => {
                            e.1 += spent;
                            e.2 += 1;
                        }
                        None => by_kind.push((task.kind, spent, 1)),
                    }
                }
            }
        }
        by_kind
    }
}

fn spent(by_kind: &[(String, Duration, usize)], kinds: &[&str]) -> Duration {
    by_kind
        .iter()
        .filter(|(k, _, _)| kinds.contains(&k.as_str()))
        .map(|(_, d, _)| *d)
        .sum()
}

/// Parse + extraction alone, on every core: the floor of structural indexing.
fn parse_floor(files: &[PathBuf]) -> Duration {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let t = Instant::now();
    std::thread::scope(|s| {
        for part in files.chunks(files.len().div_ceil(threads).max(1)) {
            s.spawn(move || {
                for f in part {
                    let bytes = std::fs::read(f).expect("read");
                    let text = String::from_utf8_lossy(&bytes);
                    let path = f.to_string_lossy();
                    let _ = std::hint::black_box(evident_code::structure::analyse(&path, &text));
                }
            });
        }
    });
    t.elapsed()
}

fn ctags(dir: &Path) -> Option<Duration> {
    let t = Instant::now();
    let ok = std::process::Command::new("ctags")
        .args(["-R", "-f", "/dev/null"])
        .arg(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| t.elapsed())
}

/// Long because it is one report: per language the structural pass alone and with semantic
/// edges in the same run, the floors beside them, then the totals.
pub async fn code(args: &Args) {
    let limit = args.usize("files", 2_000);
    let tmp = tempfile::tempdir().expect("temp dir");
    let corpora = corpora(limit, tmp.path());
    println!(
        "code suite: up to {limit} files per language; languages here: {}",
        corpora
            .iter()
            .map(|c| c.language)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let writes = args.usize("writes", 16);
    let ix = indexer_with(tmp.path(), writes).await;
    // The structural pass alone (before semantic edges), in a store of its own, same run.
    let structural = indexer_mode(
        &tmp.path().join("structural"),
        writes,
        Arc::new(StaticEmbedder::builtin()),
        false,
    )
    .await;
    let mut old_s = 0.0;
    let mut rows = Vec::new();
    let (mut all_files, mut all_bytes, mut all_ours, mut all_floor, mut all_ctags) =
        (0usize, 0u64, 0.0, 0.0, 0.0);
    for c in &corpora {
        let (work, bytes) = repository_of(c, tmp.path());
        let ctags_t = ctags(&work);
        let floor = parse_floor(&c.files);
        let old = structural.index(c.language, &work).await;
        let old_t = spent(&old, &["plan", "ingest-git-structure"]);
        old_s += old_t.as_secs_f64();
        // The background HNSW insertion of the first store must not run during the second.
        while structural.store.vector_index_status().1 > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let w0 = WriterStats::now();
        let by_kind = ix.index(c.language, &work).await;
        println!("  {}", WriterStats::now().since(&w0));
        let ours = spent(&by_kind, &["plan", "ingest-git-structure"]);
        let n = c.files.len();
        let mb = bytes as f64 / 1e6;
        println!(
            "{:<10} {n:>5} files {mb:>6.1} MB | structural index {:>6.0} files/s {:>5.2} MB/s | parse-only floor {:>6.0} files/s | ratio {:.2}x | ctags {}",
            c.language,
            n as f64 / ours.as_secs_f64(),
            mb / ours.as_secs_f64(),
            n as f64 / floor.as_secs_f64(),
            ours.as_secs_f64() / floor.as_secs_f64(),
            ctags_t
                .map(|t| format!(
                    "{:.2} s ({:.1}x faster)",
                    t.as_secs_f64(),
                    ours.as_secs_f64() / t.as_secs_f64()
                ))
                .unwrap_or_else(|| "not installed".into())
        );
        println!(
            "           structural pass alone {:>6.0} files/s | with semantic edges {:.0}% of it",
            n as f64 / old_t.as_secs_f64(),
            100.0 * old_t.as_secs_f64() / ours.as_secs_f64()
        );
        while ix.store.vector_index_status().1 > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        all_files += n;
        all_bytes += bytes;
        all_ours += ours.as_secs_f64();
        all_floor += floor.as_secs_f64();
        all_ctags += ctags_t.map(|t| t.as_secs_f64()).unwrap_or(f64::NAN);
        rows.push(serde_json::json!({
            "language": c.language, "files": n, "mb": mb,
            "files_per_s": n as f64 / ours.as_secs_f64(), "mb_per_s": mb / ours.as_secs_f64(),
            "floor_files_per_s": n as f64 / floor.as_secs_f64(),
            "ratio_to_floor": ours.as_secs_f64() / floor.as_secs_f64(),
            "ctags_s": ctags_t.map(|t| t.as_secs_f64()),
            "structural_only_files_per_s": n as f64 / old_t.as_secs_f64(),
        }));
    }
    let (_, pending) = ix.store.vector_index_status();
    let (rss, peak) = rss_mib();
    let integrity = ix.store.check_integrity().await.expect("integrity");
    println!(
        "all: {all_files} files {:.1} MB in {all_ours:.1} s = {:.0} files/s, {:.2} MB/s; floor {all_floor:.1} s (ratio {:.2}x); ctags {all_ctags:.1} s; {} chunks, {} nodes, {} edges; {pending} vectors still to index in the background; RSS {rss:.0} MiB, peak {peak:.0} MiB",
        all_bytes as f64 / 1e6,
        all_files as f64 / all_ours,
        all_bytes as f64 / 1e6 / all_ours,
        all_ours / all_floor,
        integrity.chunks,
        integrity.nodes,
        integrity.edges
    );
    println!(
        "structural pass alone: {:.0} files/s; with semantic edges: {:.0} files/s = {:.0}% of it",
        all_files as f64 / old_s,
        all_files as f64 / all_ours,
        100.0 * old_s / all_ours
    );
    structural.store.close().expect("close");
    ix.store.close().expect("close");
    println!(
        "{}",
        serde_json::json!({
            "suite": "code", "structural_only_files_per_s": all_files as f64 / old_s,
            "semantic_share": old_s / all_ours, "files": all_files, "mb": all_bytes as f64 / 1e6,
            "files_per_s": all_files as f64 / all_ours, "mb_per_s": all_bytes as f64 / 1e6 / all_ours,
            "floor_files_per_s": all_files as f64 / all_floor, "ratio_to_floor": all_ours / all_floor,
            "ctags_s": all_ctags, "peak_rss_mib": peak, "languages": rows,
        })
    );
}

/// A history of `n` commits replaying real files: additions first, then edits of a few lines,
/// a rename every 40 commits and a deletion every 50.
fn history(files: &[PathBuf], root: &Path, n: usize, dir: &Path) -> PathBuf {
    let work = dir.join("history");
    let repo = git2::Repository::init(&work).expect("init");
    repo.set_head("refs/heads/main").expect("head");
    let mut live: Vec<PathBuf> = Vec::new();
    let authors = [
        "Ada Lovelace",
        "Grace Hopper",
        "Alan Turing",
        "Barbara Liskov",
        "Edsger Dijkstra",
        "Donald Knuth",
        "Jan Novák",
    ];
    let mut parent: Option<git2::Oid> = None;
    for k in 0..n {
        let mut index = repo.index().expect("index");
        let source = &files[k % files.len()];
        let rel = source.strip_prefix(root).expect("under root").to_path_buf();
        let message;
        if k < files.len() && !live.contains(&rel) {
            let dest = work.join(&rel);
            std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
            std::fs::copy(source, &dest).expect("copy");
            index.add_path(&rel).expect("add");
            live.push(rel.clone());
            message = format!("Add {}", rel.display());
        } else if k % 50 == 0 && live.len() > 10 {
            let gone = live.remove(k % live.len());
            std::fs::remove_file(work.join(&gone)).expect("rm");
            index.remove_path(&gone).expect("rm");
            message = format!("Remove {}", gone.display());
        } else if k % 40 == 0 && !live.is_empty() {
            let i = k % live.len();
            let old = live[i].clone();
            let new = old.with_file_name(format!("renamed_{k}.py"));
            std::fs::rename(work.join(&old), work.join(&new)).expect("mv");
            index.remove_path(&old).expect("rm");
            index.add_path(&new).expect("add");
            live[i] = new.clone();
            message = format!("Rename {} to {}", old.display(), new.display());
        } else {
            let target = live[k % live.len()].clone();
            let path = work.join(&target);
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            let at = (k * 7) % lines.len().max(1);
            let donor = std::fs::read_to_string(source).unwrap_or_default();
            let insert: Vec<String> = donor
                .lines()
                .skip(k % 20)
                .take(4)
                .map(str::to_string)
                .collect();
            let end = (at + 2).min(lines.len());
            lines.splice(at..end, insert);
            std::fs::write(&path, lines.join("\n") + "\n").expect("write");
            index.add_path(&target).expect("add");
            message = format!("Change {} (refs #{})", target.display(), k % 300 + 1);
        }
        index.write().expect("index");
        let tree = repo
            .find_tree(index.write_tree().expect("tree"))
            .expect("tree");
        let who = authors[k % authors.len()];
        let sig = git2::Signature::now(
            who,
            &format!(
                "{}@example.com",
                who.split(' ').next().unwrap_or("x").to_lowercase()
            ),
        )
        .expect("sig");
        let parents: Vec<git2::Commit<'_>> = parent
            .map(|p| repo.find_commit(p).expect("parent"))
            .into_iter()
            .collect();
        let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
        parent = Some(
            repo.commit(Some("HEAD"), &sig, &sig, &message, &tree, &refs)
                .expect("commit"),
        );
    }
    work
}

pub async fn commits(args: &Args) {
    let n = args.usize("commits", 3_000);
    let tmp = tempfile::tempdir().expect("temp dir");
    let python = corpora(2_000, tmp.path())
        .into_iter()
        .find(|c| c.language == "python")
        .expect("python sources to replay");
    let t = Instant::now();
    let work = history(&python.files, &python.root, n, tmp.path());
    println!(
        "commits suite: {n} commits replaying real Python files, built in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let out = std::process::Command::new("git")
        .current_dir(&work)
        .args([
            "log",
            "--name-status",
            "--diff-merges=first-parent",
            "--format=%H %an %s",
        ])
        .output()
        .expect("git log");
    let git_log = t.elapsed();
    assert!(out.status.success());
    let t = Instant::now();
    let out_p = std::process::Command::new("git")
        .current_dir(&work)
        .args(["log", "-p", "--diff-merges=first-parent"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git log -p");
    let git_log_p = t.elapsed();
    assert!(out_p.success());

    let ix = indexer_with(tmp.path(), args.usize("writes", 16)).await;
    let w0 = WriterStats::now();
    let by_kind = ix.index("history", &work).await;
    println!("{}", WriterStats::now().since(&w0));
    let ours = spent(&by_kind, &["ingest-git-commits"]);
    let rate = n as f64 / ours.as_secs_f64();
    let (rss, peak) = rss_mib();
    println!(
        "git log --name-status: {:.2} s ({:.0} commits/s); git log -p: {:.2} s",
        git_log.as_secs_f64(),
        n as f64 / git_log.as_secs_f64(),
        git_log_p.as_secs_f64()
    );
    for (kind, d, tasks) in &by_kind {
        println!("  {kind:<22} {tasks:>4} tasks {:>7.2} s", d.as_secs_f64());
    }
    println!(
        "commit ingest (commit nodes, message + diff chunks embedded and stored, graph): {n} commits in {:.1} s = {rate:.0} commits/s; ratio to git log --name-status {:.1}x, to git log -p {:.1}x; RSS {rss:.0} MiB, peak {peak:.0} MiB",
        ours.as_secs_f64(),
        ours.as_secs_f64() / git_log.as_secs_f64(),
        ours.as_secs_f64() / git_log_p.as_secs_f64()
    );
    let integrity = ix.store.check_integrity().await.expect("integrity");
    assert!(integrity.is_ok(), "{integrity:?}");
    ix.store.close().expect("close");
    println!(
        "{}",
        serde_json::json!({
            "suite": "commits", "commits": n, "commits_per_s": rate,
            "git_log_name_status_s": git_log.as_secs_f64(), "git_log_p_s": git_log_p.as_secs_f64(),
            "ratio_to_git_log": ours.as_secs_f64() / git_log.as_secs_f64(),
            "chunks": integrity.chunks, "peak_rss_mib": peak,
        })
    );
}
