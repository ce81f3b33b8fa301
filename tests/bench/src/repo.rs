//! `repo [--path DIR] [--branch B]`: a real repository indexed in full (files, commits,
//! overview) next to `git log -p` on the same repository, in the same run.
//!
//! The repository is cloned first (a plain local clone of `--branch`, default the current
//! branch), so the figure does not depend on the working tree and the indexer reads exactly
//! what `git log -p` reads. Default `--path`: this project's own history (`/work/main`,
//! falling back to the current directory's repository) — the only real multi-hundred-commit
//! history on this machine without network access.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use evident_store_embedded::writer_stats::WriterStats;

use crate::Args;
use crate::git::indexer_with;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn default_path() -> PathBuf {
    let main = PathBuf::from("/work/main");
    if main.join(".git").exists() {
        main
    } else {
        std::env::current_dir().expect("cwd")
    }
}

/// Wall time of `git log -p` (all of the branch's commits with their patches, written to
/// nowhere): the floor a full commit ingest compares with.
fn git_log_p(dir: &Path) -> Duration {
    let t = Instant::now();
    let ok = std::process::Command::new("git")
        .current_dir(dir)
        .args(["log", "-p", "--diff-merges=first-parent"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git log -p");
    assert!(ok.success());
    t.elapsed()
}

pub async fn run(args: &Args) {
    let source = args.path("path").unwrap_or_else(default_path);
    let branch = args
        .value("branch")
        .map(str::to_string)
        .unwrap_or_else(|| git(&source, &["rev-parse", "--abbrev-ref", "HEAD"]));
    let tmp = tempfile::tempdir().expect("temp dir");
    let work = tmp.path().join("repo");
    let clone = std::process::Command::new("git")
        .args(["clone", "-q", "--single-branch", "--branch", &branch])
        .arg(&source)
        .arg(&work)
        .status()
        .expect("git clone");
    assert!(clone.success(), "cloning {}", source.display());
    let commits: usize = git(&work, &["rev-list", "--count", "HEAD"])
        .parse()
        .expect("count");
    let files = git(&work, &["ls-files"]).lines().count();
    println!(
        "repo suite: {} ({branch}): {commits} commits, {files} files at the tip",
        source.display()
    );

    // Warm the object database once so neither side pays the first read from disk.
    let _ = git_log_p(&work);
    let log_p = git_log_p(&work);

    let ix = indexer_with(tmp.path(), args.usize("writes", 16)).await;
    let (t, w0) = (Instant::now(), WriterStats::now());
    let by_kind = ix.index("repo", &work).await;
    let ours = t.elapsed();
    println!("{}", WriterStats::now().since(&w0));
    // The same repository again, after the run: the two figures bracket our time.
    let log_p_after = git_log_p(&work);
    let floor = log_p.min(log_p_after);

    for (kind, d, tasks) in &by_kind {
        println!("  {kind:<22} {tasks:>4} tasks {:>7.2} s", d.as_secs_f64());
    }
    let integrity = ix.store.check_integrity().await.expect("integrity");
    assert!(integrity.is_ok(), "{integrity:?}");
    let (rss, peak) = crate::rss_mib();
    let ratio = ours.as_secs_f64() / floor.as_secs_f64();
    println!(
        "fully indexed (files, commits, overview): {:.2} s; git log -p on the same repository: {:.2} s / {:.2} s (before / after); ratio {ratio:.1}x; {} chunks, {} nodes, {} edges; RSS {rss:.0} MiB, peak {peak:.0} MiB",
        ours.as_secs_f64(),
        log_p.as_secs_f64(),
        log_p_after.as_secs_f64(),
        integrity.chunks,
        integrity.nodes,
        integrity.edges,
    );
    ix.store.close().expect("close");
    println!(
        "{}",
        serde_json::json!({
            "suite": "repo", "path": source.display().to_string(), "branch": branch,
            "commits": commits, "files": files, "indexed_s": ours.as_secs_f64(),
            "git_log_p_s": floor.as_secs_f64(), "ratio_to_git_log_p": ratio,
            "chunks": integrity.chunks, "nodes": integrity.nodes, "edges": integrity.edges,
            "peak_rss_mib": peak,
        })
    );
}
