//! Mail thread fidelity: Evident's threads next to notmuch's on the same messages.
//!
//! Evident reads the messages as a user's Maildir source would (poll → queue → a pool of
//! workers extracting and writing, in whatever order they finish), then each stored
//! message's `in_thread` edge names its thread. notmuch (Debian package `notmuch`, which
//! threads as JWZ does: the whole `References` chain and `In-Reply-To`, with ghost messages
//! for absent ones) indexes a copy of the same folder in a temporary database. Both sides
//! are compared as partitions of Message-IDs, not only as sizes.
//!
//! How to call it (the `fidelity` suite does; `evident-bench fidelity-mail` runs it alone):
//!
//! ```ignore
//! let f = fidelity_mail::compare_threads(&fidelity_mail::lkml_corpus(), 4).await?;
//! println!("{}", f.summary());
//! assert!(f.agree);
//! ```
//!
//! The corpus shipped for it, `tests/bench/data/notmuch-lkml` (see its `SOURCE.txt`), is
//! notmuch's own threading test corpus: 210 files of the Linux kernel list, 176 distinct
//! Message-IDs, with missing parents, In-Reply-To-only replies and duplicates.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use evident_core::Visibility;
use evident_extract::mail::message_key;
use evident_store::{Direction, TraverseOptions};
use serde_json::json;

/// Threads of one set of messages as Evident and notmuch see them.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadFidelity {
    /// Distinct Message-IDs each side stored.
    pub evident_messages: usize,
    pub notmuch_messages: usize,
    /// Messages per thread, largest first.
    pub evident_sizes: Vec<usize>,
    pub notmuch_sizes: Vec<usize>,
    /// `thread` nodes in Evident's graph: one per thread when the nodes of partial chains were
    /// folded into their root's.
    pub evident_thread_nodes: usize,
    /// Both sides put exactly the same messages together (so the sizes agree too).
    pub agree: bool,
    /// Threads of either side that the other does not have, as their sorted Message-IDs (at
    /// most a few of each, to say what differs).
    pub only_evident: Vec<Vec<String>>,
    pub only_notmuch: Vec<Vec<String>>,
}

impl ThreadFidelity {
    /// One readable line.
    pub fn summary(&self) -> String {
        format!(
            "threads: Evident {} ({} messages, {} thread nodes) {:?}, notmuch {} ({} messages) {:?}: {}",
            self.evident_sizes.len(),
            self.evident_messages,
            self.evident_thread_nodes,
            self.evident_sizes,
            self.notmuch_sizes.len(),
            self.notmuch_messages,
            self.notmuch_sizes,
            if self.agree { "identical" } else { "differ" }
        )
    }

    /// The figures as JSON (for a suite's closing line).
    pub fn json(&self) -> serde_json::Value {
        json!({
            "evident_threads": self.evident_sizes.len(),
            "notmuch_threads": self.notmuch_sizes.len(),
            "evident_messages": self.evident_messages,
            "evident_thread_nodes": self.evident_thread_nodes,
            "notmuch_messages": self.notmuch_messages,
            "evident_sizes": self.evident_sizes,
            "notmuch_sizes": self.notmuch_sizes,
            "threads_agree": self.agree,
        })
    }
}

/// The LKML corpus shipped with the benchmarks (a Maildir).
pub fn lkml_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/notmuch-lkml")
}

type Partition = BTreeSet<BTreeSet<String>>;

/// Threads the Maildir at `maildir` (a folder with `cur/` or `new/`) with Evident, on a
/// temporary embedded store with `workers` extraction workers, and with notmuch, and
/// compares them. Errors name what could not run (notmuch missing, an unreadable folder).
pub async fn compare_threads(maildir: &Path, workers: usize) -> Result<ThreadFidelity, String> {
    let notmuch = notmuch_threads(maildir)?;
    let (evident, evident_thread_nodes) = evident_threads(maildir, workers).await?;
    let sizes = |p: &Partition| {
        let mut v: Vec<usize> = p.iter().map(BTreeSet::len).collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v
    };
    let differing = |a: &Partition, b: &Partition| -> Vec<Vec<String>> {
        a.difference(b)
            .take(5)
            .map(|t| t.iter().cloned().collect())
            .collect()
    };
    Ok(ThreadFidelity {
        evident_messages: evident.iter().map(BTreeSet::len).sum(),
        notmuch_messages: notmuch.iter().map(BTreeSet::len).sum(),
        evident_sizes: sizes(&evident),
        evident_thread_nodes,
        notmuch_sizes: sizes(&notmuch),
        agree: evident == notmuch,
        only_evident: differing(&evident, &notmuch),
        only_notmuch: differing(&notmuch, &evident),
    })
}

/// Evident: a Maildir source polled once, every task run, then each stored message's thread,
/// and how many `thread` nodes the graph holds.
async fn evident_threads(maildir: &Path, workers: usize) -> Result<(Partition, usize), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
    let p = crate::sources::pipeline(dir.path(), workers.max(1)).await;
    let src = p
        .register("maildir", json!({"clientId": "bench", "path": maildir}))
        .await;
    let poller = evident_indexers::mail::MaildirPoller { ctx: p.ctx.clone() };
    let (_, _, _, errors) = p.run(&poller, &src.id).await;
    if errors > 0 {
        return Err(format!("{errors} messages ended in error"));
    }
    let prefix = format!("mail:{}:", src.id);
    let stores = p.kb.stores();
    let records = stores
        .sources
        .list_prefix("bench", &prefix, None, 1_000_000)
        .await
        .map_err(|e| e.to_string())?;
    let vis = Visibility::of(evident_core::Scope::client("bench"));
    let mut threads: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in records {
        let id = r.source_urn[prefix.len()..].to_string();
        if id.contains(":attachment:") {
            continue;
        }
        let sub = stores
            .graph
            .traverse(
                &vis,
                &[message_key(&id)],
                &TraverseOptions {
                    max_depth: 1,
                    direction: Direction::Out,
                    edge_types: vec!["in_thread".into()],
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        let [edge] = sub.edges.as_slice() else {
            return Err(format!("{id}: {} in_thread edges", sub.edges.len()));
        };
        threads.entry(edge.to.to_string()).or_default().insert(id);
    }
    let thread_nodes = stores
        .graph
        .search_nodes(&vis, "thread", Some("thread"), 100_000)
        .await
        .map_err(|e| e.to_string())?
        .len();
    p.store.close().map_err(|e| e.to_string())?;
    Ok((threads.into_values().collect(), thread_nodes))
}

/// notmuch: a copy of the folder indexed in a temporary database, then the messages of
/// each thread.
fn notmuch_threads(maildir: &Path) -> Result<Partition, String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
    let mail = tmp.path().join("mail");
    copy_dir(maildir, &mail).map_err(|e| format!("copying {}: {e}", maildir.display()))?;
    let config = tmp.path().join("notmuch-config");
    std::fs::write(
        &config,
        format!(
            "[database]\npath={}\n[user]\nname=Bench\nprimary_email=bench@example.com\n[new]\ntags=\n[search]\nexclude_tags=\n[maildir]\nsynchronize_flags=false\n",
            mail.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    let run = |args: &[&str]| -> Result<String, String> {
        let out = Command::new("notmuch")
            .args(args)
            .env("NOTMUCH_CONFIG", &config)
            .output()
            .map_err(|e| format!("notmuch (Debian package `notmuch`) cannot run: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "notmuch {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    run(&["new", "--quiet"])?;
    let mut threads = Partition::new();
    for thread in run(&["search", "--output=threads", "*"])?.lines() {
        let ids: BTreeSet<String> = run(&["search", "--output=messages", thread])?
            .lines()
            .filter_map(|l| l.strip_prefix("id:"))
            .map(|id| id.trim_matches('"').replace("\"\"", "\""))
            .collect();
        threads.insert(ids);
    }
    Ok(threads)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// `evident-bench fidelity-mail [--workers N] [--dir MAILDIR]`: the comparison alone.
pub async fn run(args: &crate::Args) {
    let workers = args.usize("workers", 4);
    let dir = args.path("dir").unwrap_or_else(lkml_corpus);
    match compare_threads(&dir, workers).await {
        Ok(f) => {
            println!("fidelity-mail: {}", dir.display());
            println!("{}", f.summary());
            for t in &f.only_evident {
                println!("  only Evident: {t:?}");
            }
            for t in &f.only_notmuch {
                println!("  only notmuch: {t:?}");
            }
            let mut line = f.json();
            line["suite"] = json!("fidelity-mail");
            println!("{line}");
        }
        Err(e) => {
            eprintln!("fidelity-mail: {e}");
            std::process::exit(1);
        }
    }
}
