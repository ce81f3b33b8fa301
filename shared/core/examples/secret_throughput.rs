//! Throughput of the credential detector on a real repository's files.
//!
//! `cargo run --release -p evident-core --example secret_throughput -- [REPO] [ROUNDS]`
//!
//! Reads every text file `git ls-files` lists under `REPO` (default `.`), then runs
//! `find_secrets` on each file (as the code indexer does before chunking) `ROUNDS` times
//! (default 5) and prints MB/s of the best round, and the number of files with a finding.
//! An example, not a test: the library itself does no I/O.

use std::time::Instant;

use evident_core::secrets::find_secrets;

fn main() {
    let mut args = std::env::args().skip(1);
    let repo = args.next().unwrap_or_else(|| ".".into());
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let listed = std::process::Command::new("git")
        .args(["-C", &repo, "ls-files", "-z"])
        .output()
        .expect("git ls-files runs");
    let files: Vec<String> = listed
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .filter_map(|p| {
            let path = std::path::Path::new(&repo).join(String::from_utf8_lossy(p).as_ref());
            let bytes = std::fs::read(path).ok()?;
            String::from_utf8(bytes).ok()
        })
        .collect();
    let total: usize = files.iter().map(String::len).sum();
    let mut best = f64::MAX;
    let mut flagged = 0;
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        flagged = files.iter().filter(|f| !find_secrets(f).is_empty()).count();
        best = best.min(started.elapsed().as_secs_f64());
    }
    let mb = total as f64 / 1e6;
    println!(
        "{} text files, {mb:.1} MB; best of {rounds}: {:.3} s = {:.0} MB/s; {flagged} files with a finding",
        files.len(),
        best,
        mb / best
    );
    println!(
        "{{\"suite\":\"secret_throughput\",\"files\":{},\"bytes\":{total},\"seconds\":{best:.4},\"mb_per_s\":{:.1},\"flagged_files\":{flagged}}}",
        files.len(),
        mb / best
    );
}
