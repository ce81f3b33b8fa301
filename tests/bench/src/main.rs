//! Benchmark suites. Each prints readable figures and ends with one JSON line.
//!
//! Usage: `cargo run --release -p evident-bench -- <suite> [--flag value]…`
//!
//! - `retrieve [--chunks N] [--queries N] [--dir PATH] [--index-after]`: ingest a generated
//!   corpus (default 100,000 chunks), then retrieval with expansion, by-kind, and the raw-index floor.
//! - `restart --dir PATH`: opening a data dir made by `retrieve --dir`, the text index rebuilt
//!   versus loaded from `text.index` (each in a fresh process): time, RSS, memory by structure.
//! - `mcp [--chunks N] [--queries N]`: `search` through MCP over HTTP next to the REST retrieve
//!   path (same router, token and queries; default 20,000 chunks).
//! - `memory [--items N] [--reads N] [--appends N] [--procedures N] [--matches N]`: the
//!   user-context prefetch over N knowledge items (default 10,000), session-log appends, and
//!   procedure match over N procedures (default 10,000).
//! - `queue [--tasks N] [--workers N] [--backlog N] [--probes N]`: enqueue + claim + complete throughput,
//!   and the latency of priority-1 synchronous ingests with and without a bulk backlog.
//! - `code [--files N]`: structural indexing of real code (Rust, Python, Java, JavaScript found on
//!   this machine) next to parse-only and `ctags -R`.
//! - `commits [--commits N]`: full-history commit ingest next to `git log --name-status`.
//! - `fidelity [--files N] [--languages L,…] [--commits-repo PATH] [--kotlin DIR]`: symbols and commits as stored,
//!   against universal-ctags, CPython `ast` and `git show --name-status` on real sources.
//! - `fidelity-semantic [--languages python,java] [--java-src DIR] [--python-sdist NAME==VER]`:
//!   stored `calls` / `extends` / `implements` / `uses_type` edges against jedi (Python) and
//!   javac + `javap` (Java) on real third-party projects, and the incremental re-resolution.
//! - `mail [--messages N] [--workers N]`: an mbox polled, extracted and stored, messages/s.
//! - `transcripts [--meetings N] [--cues N] [--workers N]`: WebVTT meetings, cues/s.
//! - `fidelity-mail [--dir MAILDIR] [--workers N]`: mail threads next to notmuch's (default:
//!   the LKML corpus in `data/notmuch-lkml`).
//! - `claims [--claims N] [--learns N] [--queries N] [--docs N]`: learn p99 and recall p50 at
//!   N claims (default 100,000).
//! - `quality [--repo PATH] [--collections NAME=DIR,…]`: retrieval quality — this
//!   repository's code-and-docs and history questions, judged collections — per channel and
//!   fused, next to a plain Okapi BM25 (see `quality/mod.rs`).
//! - `graph-writes [--edges N] [--batch N] [--writers N] [--gaps N] [--claims N]`: agent edge
//!   writes with evidence (edges/s) and gap claims among N open gaps (p99).
//! - `ui [--chunks N] [--queries N]`: the web console's pages rendered through the router
//!   over N chunks (default 100,000): p50/p99 per page and page weight.
//! - `secrets [--repo PATH] [--fixtures DIR] [--rounds N]`: the credential detector over this
//!   repository, the mail/tracker/transcript/PDF fixtures and CISI, chunked as Evident chunks
//!   them: every flagged chunk listed, and the detector's MB/s (see `secrets.rs`).
//! - `repo [--path DIR] [--branch B]`: a real repository indexed in full next to `git log -p`
//!   on it in the same run (default: this project's own history).

mod auth;
mod claims;
mod context;
mod fidelity;
pub mod fidelity_mail;
mod fidelity_semantic;
mod gaps;
mod git;
mod graph_nl;
mod mcp;
mod memory;
mod procedures;
mod quality;
mod queue;
mod repo;
mod restart;
mod retrieve;
mod retrieve_scale;
mod secrets;
mod setup;
mod sources;
mod ui;

use std::collections::HashMap;
use std::time::Duration;

/// xorshift64*: deterministic corpus and queries without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Zipf-like rank in 0..n (s ≈ 1), so some words are common and most are rare.
    pub fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) - 1.0) as usize % n
    }
}

pub struct Corpus {
    words: Vec<String>,
}

impl Default for Corpus {
    fn default() -> Self {
        Self::new()
    }
}

impl Corpus {
    pub fn new() -> Corpus {
        // Real English word pieces from the embedder's vocabulary, so tokenisation and
        // embedding costs are those of real text.
        let vocab = include_str!("../../../shared/ai/assets/minilm-vocab.txt");
        let words: Vec<String> = vocab
            .lines()
            .filter(|w| w.len() >= 3 && w.chars().all(|c| c.is_ascii_lowercase()))
            .map(str::to_string)
            .collect();
        Corpus { words }
    }

    pub fn sentence(&self, rng: &mut Rng, n: usize) -> String {
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&self.words[rng.zipf(self.words.len())]);
        }
        s.push('.');
        s
    }

    /// A document of `paragraphs` paragraphs of ~170 words (≈ one chunk each), mentioning an
    /// issue and a person, with one relationship line.
    pub fn document(&self, rng: &mut Rng, doc: usize, paragraphs: usize) -> String {
        let mut text = format!("# Design note {doc}\n\n");
        for p in 0..paragraphs {
            for _ in 0..10 {
                let len = 12 + rng.below(10);
                text.push_str(&self.sentence(rng, len));
                text.push(' ');
            }
            if p == 0 {
                text.push_str(&format!(
                    "Tracked in jira:PRJ-{} by user:dev{}.",
                    doc % 5000,
                    doc % 300
                ));
            }
            text.push_str("\n\n");
        }
        text.push_str(&format!(
            "jira:PRJ-{}|assigned_to|user:dev{}\n",
            doc % 5000,
            doc % 300
        ));
        text
    }
}

pub fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

pub fn rss_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// `--name value` flags (and bare `--name` switches) after the suite name.
pub struct Args {
    suite: String,
    values: HashMap<String, String>,
    switches: Vec<String>,
}

impl Args {
    fn parse(known_switches: &[&str]) -> Result<Args, String> {
        let mut it = std::env::args().skip(1);
        let suite = it.next().ok_or(format!(
            "usage: evident-bench <suite> [--flag value]…; suites: {SUITES}"
        ))?;
        let (mut values, mut switches) = (HashMap::new(), Vec::new());
        while let Some(flag) = it.next() {
            let name = flag
                .strip_prefix("--")
                .ok_or(format!("expected a --flag, got `{flag}`"))?
                .to_string();
            if known_switches.contains(&name.as_str()) {
                switches.push(name);
            } else {
                let value = it.next().ok_or(format!("--{name} needs a value"))?;
                values.insert(name, value);
            }
        }
        Ok(Args {
            suite,
            values,
            switches,
        })
    }

    /// A numeric flag; exits with a message on a malformed value.
    pub fn usize(&self, name: &str, default: usize) -> usize {
        match self.values.get(name) {
            None => default,
            Some(v) => v.replace('_', "").parse().unwrap_or_else(|e| {
                eprintln!("--{name}: {e}");
                std::process::exit(2)
            }),
        }
    }

    pub fn value(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    pub fn path(&self, name: &str) -> Option<std::path::PathBuf> {
        self.values.get(name).map(Into::into)
    }

    pub fn flag(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }
}

const SUITES: &str = "retrieve, mcp, memory, queue, code, commits, fidelity, fidelity-semantic, fidelity-mail, mail, transcripts, claims, graph-writes, context, restart, repo, quality, ui, secrets";

fn main() {
    let args = match Args::parse(&["index-after"]) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match args.suite.as_str() {
        "retrieve" => rt.block_on(retrieve::run(&args)),
        "mcp" => rt.block_on(mcp::run(&args)),
        "memory" => rt.block_on(memory::run(&args)),
        "queue" => rt.block_on(queue::run(&args)),
        "code" => rt.block_on(git::code(&args)),
        "commits" => rt.block_on(git::commits(&args)),
        "fidelity" => rt.block_on(fidelity::run(&args)),
        "fidelity-semantic" => rt.block_on(fidelity_semantic::run(&args)),
        "mail" => rt.block_on(sources::mail(&args)),
        "transcripts" => rt.block_on(sources::transcripts(&args)),
        "fidelity-mail" => rt.block_on(fidelity_mail::run(&args)),
        "claims" => rt.block_on(claims::run(&args)),
        "graph-writes" => rt.block_on(gaps::run(&args)),
        "context" => rt.block_on(context::run(&args)),
        "ui" => rt.block_on(ui::run(&args)),
        "restart" => rt.block_on(restart::run(&args)),
        "restart-open" => rt.block_on(restart::open_once(&args)),
        // The child server of `retrieve`'s restart measurement.
        "serve-child" => rt.block_on(retrieve_scale::serve_child(&args)),
        "repo" => rt.block_on(repo::run(&args)),
        "quality" => rt.block_on(quality::run(&args)),
        "graph-nl" => rt.block_on(graph_nl::run(&args)),
        "secrets" => secrets::run(&args),
        other => {
            eprintln!("unknown suite `{other}`; suites: {SUITES}");
            std::process::exit(2);
        }
    }
}
