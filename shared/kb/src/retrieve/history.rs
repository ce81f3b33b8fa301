//! Step 5 (before the pack): current state first.
//!
//! A repository's history is indexed beside its tree: every commit's message
//! (`git-commit`) and diff hunks (`git-diff`). Without a rule, those chunks crowd out the
//! current code and docs — the same lines appear in the tree and in the hunks that wrote
//! them, often in several commits. So, unless the query asks about change
//! ([`asks_about_change`]):
//! - history chunks' fused scores are multiplied by [`HISTORY_DEMOTION`], so the current
//!   tree and documents outrank them;
//! - a diff hunk that adds nothing new is left out: its new side (added and context lines)
//!   is held by a current chunk of the same path among the candidates, or by a diff hunk
//!   ranked above it (the same text repeated across commits).
//!
//! When the query asks about change, history chunks' scores are multiplied by
//! [`HISTORY_PROMOTION`] and nothing is left out: each hunk is a different commit's answer.
//! Either way, history items carry their commit (hash, author, date, subject) — see
//! [`PackCommit`], filled by [`Kb::commits_of`].

use std::collections::{HashMap, HashSet};

use evident_core::refs::NodeKey;
use evident_core::{Chunk, Locator, Visibility};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::phrase::words;
use super::{EvidenceItem, Fusion};
use crate::{Kb, Result};

/// Chunk kinds that describe the past of a repository, not its current state (the code
/// worker's commit message and diff hunk chunks).
pub const HISTORY_KINDS: &[&str] = &["git-commit", "git-diff"];
/// Multiplies history chunks' fused scores for a question about the current state.
pub const HISTORY_DEMOTION: f32 = 0.25;
/// Multiplies history chunks' fused scores for a question about change.
pub const HISTORY_PROMOTION: f32 = 2.0;

/// Words that make a query a question about change: past-tense change verbs, the nouns of
/// version control, `since`. Present-tense verbs (`change`, `remove`) are left out on
/// purpose — "how do I remove a source" asks how things are, not what happened.
const CHANGE_WORDS: &[&str] = &[
    "changed",
    "changes",
    "changelog",
    "history",
    "historical",
    "diff",
    "diffs",
    "commit",
    "commits",
    "committed",
    "blame",
    "since",
    "introduced",
    "removed",
    "deleted",
    "added",
    "modified",
    "renamed",
    "refactored",
    "reverted",
    "rewrote",
    "rewritten",
    "regressed",
    "regression",
    "authored",
    "wrote",
    "previously",
    "originally",
    "fixed",
    "became",
    "started",
    "stopped",
    "dropped",
    "replaced",
    "moved",
    "exported",
];

/// Openings of a question about the past: "when was …", "who wrote …", "why did …".
const CHANGE_OPENINGS: &[&[&str]] = &[
    &["when", "was"],
    &["when", "were"],
    &["when", "did"],
    &["when", "could"],
    &["who"],
    &["why", "did"],
    &["why", "was"],
    &["why", "were"],
];

/// Words after `commit` or `diff` that make it the name of a thing, not a change: "commit
/// messages", "diff hunks" (and "group commit" before it) ask how those work now.
const THING_AFTER: &[&str] = &[
    "message", "messages", "hook", "hooks", "graph", "hunk", "hunks", "chunk", "chunks", "tool",
    "tools", "format", "parser", "parsing",
];

/// Whether the query asks about change (who/when/why something changed, history, diffs,
/// commits, since when), by its words; see [`CHANGE_WORDS`]. `commit` and `diff` used as
/// the name of a thing ([`THING_AFTER`], "group commit") do not count.
pub fn asks_about_change(query: &str) -> bool {
    let ws = words(query);
    if CHANGE_OPENINGS
        .iter()
        .any(|o| ws.len() > o.len() && ws.iter().zip(o.iter()).all(|(w, o)| w == o))
    {
        return true;
    }
    ws.iter().enumerate().any(|(i, w)| {
        if !CHANGE_WORDS.contains(&w.as_str()) {
            return false;
        }
        let noun = matches!(w.as_str(), "commit" | "commits" | "diff" | "diffs");
        let next = ws.get(i + 1).map(String::as_str).unwrap_or("");
        let prev = if i > 0 { ws[i - 1].as_str() } else { "" };
        !(noun && (THING_AFTER.contains(&next) || prev == "group"))
    })
}

/// Whether a request is about change: its query asks ([`asks_about_change`]), or it asks
/// for history kinds only (`kinds: ["git-diff"]` — the caller chose history).
pub fn wants_history(query: &str, kinds: &[String]) -> bool {
    asks_about_change(query) || (!kinds.is_empty() && kinds.iter().all(|k| is_history(k)))
}

/// Whether a chunk kind is history (see [`HISTORY_KINDS`]).
pub fn is_history(kind: &str) -> bool {
    HISTORY_KINDS.contains(&kind)
}

/// The commit a history item belongs to, so the reader sees who changed what and when.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackCommit {
    pub hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// The new side of a diff hunk, as words: its added and context lines (headers, `@@` lines
/// and removed lines skipped). Empty for a hunk that only removes.
pub fn new_side(diff: &str) -> String {
    let mut kept = String::new();
    for line in diff.lines() {
        if line.starts_with("+++") || line.starts_with("---") || line.starts_with("@@") {
            continue;
        }
        if let Some(rest) = line.strip_prefix('+').or_else(|| line.strip_prefix(' ')) {
            kept.push_str(rest);
            kept.push('\n');
        }
    }
    words(&kept).join(" ")
}

fn path_of(c: &Chunk) -> Option<&str> {
    match &c.locator {
        Locator::File { path, .. } => Some(path),
        _ => None,
    }
}

/// Applies the rule to the fused page: rescales history chunks' scores in `fused` and, for
/// a question about the current state, drops redundant diff hunks from `chunks` (see the
/// module documentation); a hunk repeated across commits keeps its best-ranked copy (by
/// `fused` order). Returns how many hunks were dropped.
pub fn current_first(change: bool, fused: &mut [(String, f32)], chunks: &mut Vec<Chunk>) -> usize {
    let kinds: HashMap<&str, &str> = chunks
        .iter()
        .map(|c| (c.id.as_str(), c.kind.as_str()))
        .collect();
    let factor = if change {
        HISTORY_PROMOTION
    } else {
        HISTORY_DEMOTION
    };
    for (id, score) in fused.iter_mut() {
        if kinds.get(id.as_str()).is_some_and(|k| is_history(k)) {
            *score *= factor;
        }
    }
    if change {
        return 0;
    }
    // The current text of each path among the candidates, as words.
    let mut current: HashMap<&str, Vec<String>> = HashMap::new();
    for c in chunks.iter().filter(|c| !is_history(&c.kind)) {
        if let Some(p) = path_of(c) {
            current
                .entry(p)
                .or_default()
                .push(words(&c.content).join(" "));
        }
    }
    // Hunks best first, so a repeated one keeps its best-ranked copy.
    let rank: HashMap<&str, usize> = fused
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (id.as_str(), i))
        .collect();
    let mut diffs: Vec<&Chunk> = chunks.iter().filter(|c| c.kind == "git-diff").collect();
    diffs.sort_by_key(|c| rank.get(c.id.as_str()).copied().unwrap_or(usize::MAX));
    let mut redundant: HashSet<String> = HashSet::new();
    let mut seen: HashSet<String> = HashSet::new();
    for c in diffs {
        let new = new_side(&c.content);
        if new.is_empty() {
            continue; // a removal: not in the current tree, only demoted
        }
        let in_tree = path_of(c)
            .and_then(|p| current.get(p))
            .is_some_and(|texts| texts.iter().any(|t| t.contains(&new)));
        if in_tree || !seen.insert(new) {
            redundant.insert(c.id.clone());
        }
    }
    chunks.retain(|c| !redundant.contains(&c.id));
    redundant.len()
}

/// The candidates past `fused`'s window that take the places history chunks in it will give
/// up: as many as there are history chunks among `chunks`, in fused order.
fn past_the_window(
    fusion: &Fusion,
    fused: &[(String, f32)],
    chunks: &[Chunk],
) -> Vec<(String, f32)> {
    let history = chunks.iter().filter(|c| is_history(&c.kind)).count();
    if history == 0 {
        return Vec::new();
    }
    let have = fused.len();
    fusion
        .ranked(have + history)
        .into_iter()
        .skip(have)
        .collect()
}

fn prop(props: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    props
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

impl Kb {
    /// For a question about the current state: the history chunks of the fetch window will
    /// be demoted below current ones ([`current_first`]), so they must not keep current
    /// chunks ranked just past the window out of the page. The window is widened by as many
    /// fused candidates as it holds history chunks (one more read), before the reranker and
    /// the rule see it. Returns how many were added.
    pub(crate) async fn widen_past_history(
        &self,
        vis: &Visibility,
        fusion: &Fusion,
        fused: &mut Vec<(String, f32)>,
        chunks: &mut Vec<Chunk>,
    ) -> Result<usize> {
        let more = past_the_window(fusion, fused, chunks);
        if more.is_empty() {
            return Ok(0);
        }
        let ids: Vec<String> = more.iter().map(|(id, _)| id.clone()).collect();
        chunks.extend(self.stores.chunks.get(vis, &ids).await?);
        fused.extend(more);
        Ok(ids.len())
    }

    /// Fills the commit of every history item from its commit node (author, date, subject),
    /// in one read of the visible commit nodes; items whose commit is not visible keep
    /// none.
    pub(crate) async fn commits_of(
        &self,
        vis: &Visibility,
        items: &mut [EvidenceItem],
    ) -> Result<()> {
        let commit_of = |i: &EvidenceItem| -> Option<NodeKey> {
            is_history(&i.kind)
                .then(|| {
                    i.graph_refs
                        .iter()
                        .find(|k| k.as_str().starts_with("commit:"))
                })
                .flatten()
                .cloned()
        };
        let mut keys: Vec<NodeKey> = Vec::new();
        for k in items.iter().filter_map(commit_of) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        if keys.is_empty() {
            return Ok(());
        }
        let nodes = self.stores.graph.get_nodes(vis, &keys).await?;
        for item in items.iter_mut() {
            let Some(key) = commit_of(item) else { continue };
            let Some(node) = nodes.iter().find(|n| n.key == key) else {
                continue;
            };
            item.commit = Some(PackCommit {
                hash: prop(&node.props, "hash")
                    .unwrap_or_else(|| key.as_str().trim_start_matches("commit:").to_string()),
                author: prop(&node.props, "authorName"),
                date: prop(&node.props, "date"),
                subject: prop(&node.props, "subject"),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use evident_core::Scope;

    use super::*;

    #[test]
    fn questions_about_change_are_told_from_questions_about_now() {
        for (q, change) in [
            ("who changed the cart total", true),
            ("when was retrieve_with_expansion introduced", true),
            ("why was the FTS5 index removed", true),
            ("history of the visibility rule", true),
            ("show the diff of the pack step", true),
            ("which commit added phrase matching", true),
            ("what changed since v1.2", true),
            ("git blame text_index.rs", true),
            ("what is the visibility rule", false),
            ("how does retrieval fuse BM25 and vectors", false),
            ("how do I change the timeout", false),
            ("how to remove a source", false),
            ("retrieve with expansion", false),
            ("group commit of source writes", false),
            ("issue references in commit messages", false),
            ("why are diff chunks demoted", false),
            ("which commit changed the commit messages", true),
            ("when did purge stop removing other scopes' sources", true),
            ("why did the claim start naming its index", true),
            ("who maintains the queue", true),
            ("when is the lease renewed", false),
            ("", false),
        ] {
            assert_eq!(asks_about_change(q), change, "{q}");
        }
    }

    #[test]
    fn asking_for_history_kinds_only_is_asking_about_change() {
        let kinds = |ks: &[&str]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        assert!(wants_history("cart total", &kinds(&["git-diff"])));
        assert!(wants_history(
            "cart total",
            &kinds(&["git-diff", "git-commit"])
        ));
        assert!(!wants_history("cart total", &kinds(&["git-diff", "code"])));
        assert!(!wants_history("cart total", &[]));
        assert!(wants_history("who changed the cart total", &[]));
    }

    #[test]
    fn a_hunks_new_side_is_its_added_and_context_lines() {
        let diff = "--- a/a.rs\n+++ b/a.rs\n@@ -1,3 +1,3 @@ fn a()\n let x = 1;\n-let y = 2;\n+let y = 3;\n";
        assert_eq!(new_side(diff), "let x 1 let y 3");
        assert_eq!(
            new_side("--- a/a.rs\n+++ b/a.rs\n@@ -1 +0,0 @@\n-gone\n"),
            ""
        );
    }

    fn chunk(id: &str, kind: &str, path: &str, content: &str) -> Chunk {
        Chunk {
            id: id.into(),
            scope: Scope::client("c"),
            source_urn: format!("urn:{id}"),
            kind: kind.into(),
            title: None,
            content: content.into(),
            content_hash: String::new(),
            locator: Locator::File {
                path: path.into(),
                line_start: 1,
                line_end: 9,
                commit: None,
                symbol: None,
            },
            graph_refs: Vec::new(),
            metadata: Default::default(),
            observed_at: None,
            ordinal: 0,
        }
    }

    fn page() -> (Vec<(String, f32)>, Vec<Chunk>) {
        let chunks = vec![
            chunk(
                "d1",
                "git-diff",
                "a.rs",
                "--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n+let y = 3;\n",
            ),
            chunk(
                "d2",
                "git-diff",
                "b.rs",
                "--- a/b.rs\n+++ b/b.rs\n@@ -1 +1 @@\n+fn new() {}\n",
            ),
            chunk(
                "d3",
                "git-diff",
                "b.rs",
                "--- a/b.rs\n+++ b/b.rs\n@@ -5 +5 @@\n+fn new() {}\n",
            ),
            chunk("c1", "code", "a.rs", "fn a() {\n    let y = 3;\n}\n"),
            chunk("m1", "git-commit", "", "commit 1\nAuthor: A"),
        ];
        let fused = chunks.iter().map(|c| (c.id.clone(), 1.0)).collect();
        (fused, chunks)
    }

    #[test]
    fn for_a_question_about_now_history_is_demoted_and_redundant_hunks_dropped() {
        let (mut fused, mut chunks) = page();
        assert_eq!(current_first(false, &mut fused, &mut chunks), 2);
        let ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
        // d1 is the current code of a.rs; d3 repeats d2.
        assert_eq!(ids, ["d2", "c1", "m1"]);
        let score = |id: &str| fused.iter().find(|(i, _)| i == id).map(|(_, s)| *s);
        assert_eq!(score("c1"), Some(1.0));
        assert_eq!(score("d2"), Some(HISTORY_DEMOTION));
        assert_eq!(score("m1"), Some(HISTORY_DEMOTION));
    }

    #[test]
    fn for_a_question_about_change_history_gains_and_nothing_is_dropped() {
        let (mut fused, mut chunks) = page();
        assert_eq!(current_first(true, &mut fused, &mut chunks), 0);
        assert_eq!(chunks.len(), 5);
        let score = |id: &str| fused.iter().find(|(i, _)| i == id).map(|(_, s)| *s);
        assert_eq!(score("c1"), Some(1.0));
        assert_eq!(score("d1"), Some(HISTORY_PROMOTION));
    }

    #[test]
    fn the_window_widens_past_history_by_as_many_candidates() {
        let mut fusion = Fusion::default();
        let list: Vec<evident_store::ScoredId> = ["d1", "c1", "m1", "c2", "c3", "c4"]
            .iter()
            .map(|id| evident_store::ScoredId {
                chunk_id: (*id).into(),
                score: 1.0,
            })
            .collect();
        fusion.add(&list, 1.0);
        let fused = fusion.ranked(3);
        let window = vec![
            chunk("d1", "git-diff", "a.rs", "+x"),
            chunk("c1", "code", "a.rs", "x"),
            chunk("m1", "git-commit", "", "commit"),
        ];
        let more: Vec<String> = past_the_window(&fusion, &fused, &window)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(more, ["c2", "c3"], "two history chunks, two more places");
        let current: Vec<Chunk> = window.into_iter().filter(|c| c.kind == "code").collect();
        assert!(past_the_window(&fusion, &fused, &current).is_empty());
    }
}
