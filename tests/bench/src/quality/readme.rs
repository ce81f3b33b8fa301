//! The README's worked examples as a smoke set, over the repository indexed at the pinned
//! commit: the quickstart's questions (answered by the files a maintainer would name, or for
//! "who changed…" by a commit whose message names the subject), and the MCP worked example
//! (the note "Payment retries" stored as `store_knowledge` stores it, then asked "how often
//! are charges retried"). An example is answered when a right chunk is in the top 3 of the
//! default request and of the request with rerank.

use std::path::Path;

use evident_ai::Priority;
use evident_kb::Document;
use evident_kb::retrieve::Tuning;
use serde_json::{Value, json};

use super::{Asker, Hit, Mode};

/// (question, kinds asked for, files that answer, or a phrase the answering commit's message
/// holds). README.md itself never answers: it holds the questions.
type Example = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    Option<&'static str>,
);

/// An example with the commits that answer it found: (question, kinds, files, commits).
type Asked = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    Vec<String>,
);

const EXAMPLES: &[Example] = &[
    (
        "how does retrieval fuse BM25 and vectors",
        &[],
        &[
            "shared/kb/src/retrieve/fusion.rs",
            "shared/kb/src/retrieve/mod.rs",
            "ARCHITECTURE.md",
        ],
        None,
    ),
    (
        "who changed the group commit",
        &["git-diff", "git-commit"],
        &[],
        Some("group commit"),
    ),
    (
        "credential rejection at ingest",
        &[],
        &[
            "shared/kb/src/credentials.rs",
            "shared/core/src/secrets/mod.rs",
            "tests/e2e/tests/credentials.rs",
        ],
        None,
    ),
    (
        "what is the visibility rule",
        &[],
        &[
            "shared/core/src/scope.rs",
            "ARCHITECTURE.md",
            "docs/adr/0003-graph-visibility-from-evidence.md",
        ],
        None,
    ),
];

/// The MCP worked example's note, stored as `store_knowledge` stores it.
pub fn payment_note() -> Document {
    Document {
        client_id: Some("bench".into()),
        source_urn: "knowledge:payment_retries".into(),
        kind: "note".into(),
        title: Some("Payment retries".into()),
        content: "service:payments retries a failed charge three times, then parks it.".into(),
        ..Default::default()
    }
}

/// Commits of `repo` whose message holds `phrase` (case-insensitive).
fn commits_naming(repo: &Path, phrase: &str) -> Vec<String> {
    let out = std::process::Command::new("git")
        .args([
            "-C",
            repo.to_str().expect("utf-8 path"),
            "log",
            "--format=%H",
            "-i",
        ])
        .arg(format!("--grep={phrase}"))
        .output()
        .expect("git log");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn answered(hits: &[Hit], files: &[&str], commits: &[String]) -> Option<usize> {
    hits.iter().position(|h| {
        h.path.as_deref().is_some_and(|p| files.contains(&p))
            || h.commit.as_ref().is_some_and(|c| commits.contains(c))
            || h.source_urn == "knowledge:payment_retries"
    })
}

/// Asks every example in the default request and with rerank; ranks printed, top-3 rates
/// returned.
pub async fn run(asker: &Asker<'_>, repo: &Path) -> Value {
    asker
        .kb
        .ingest(payment_note(), Priority::DEFAULT)
        .await
        .expect("store the note");
    let mut out = serde_json::Map::new();
    for mode in [Mode::HybridGraph, Mode::Rerank] {
        let mut top3 = 0;
        let mut ranks = Vec::new();
        let mut examples: Vec<Asked> = EXAMPLES
            .iter()
            .map(|(q, kinds, files, phrase)| {
                let commits = phrase.map(|p| commits_naming(repo, p)).unwrap_or_default();
                (*q, *kinds, *files, commits)
            })
            .collect();
        examples.push(("how often are charges retried", &[], &[], Vec::new()));
        for (q, kinds, files, commits) in &examples {
            let (hits, _) = asker.ask_kinds(mode, q, kinds, 10, Tuning::default()).await;
            let rank = answered(&hits, files, commits);
            top3 += usize::from(rank.is_some_and(|r| r < 3));
            println!("readme {:<20} {q:?}: rank {rank:?}", mode.name());
            ranks.push(json!({"q": q, "rank": rank}));
        }
        let rate = top3 as f64 / examples.len() as f64;
        println!(
            "readme {:<20} top-3 {rate:.3} of {}",
            mode.name(),
            examples.len()
        );
        out.insert(mode.name().into(), json!({"top3": rate, "ranks": ranks}));
    }
    Value::Object(out)
}
