//! Commit exactness: for every commit of an indexed branch, the files Evident says the commit
//! touched (`creates` / `modifies` / `deletes` / `renames` edges, with their status letter and
//! old path) against `git show --name-status -M --diff-merges=first-parent` on the same
//! repository. A commit is exact when its node exists and both lists are equal as sets of
//! `(status, path, old path)`; git's rename score (`R087`) is compared as `R`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use evident_core::{Scope, Visibility, keys};
use evident_kb::Kb;
use evident_store::{Direction, TraverseOptions};

/// `(status letter, path, old path for a rename)`.
pub type Change = (char, String, Option<String>);

pub struct CommitScore {
    pub commits: usize,
    pub exact: usize,
    /// Up to 5 disagreements: hash, git's list, Evident's list.
    pub examples: Vec<(String, BTreeSet<Change>, Option<BTreeSet<Change>>)>,
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(repo)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `git show --name-status` of one commit, first parent for merges, renames detected.
fn git_changes(repo: &Path, hash: &str) -> BTreeSet<Change> {
    let text = git(
        repo,
        &[
            "show",
            "--name-status",
            "-M",
            "--diff-merges=first-parent",
            "--format=",
            hash,
        ],
    );
    text.lines()
        .filter_map(|l| {
            let mut parts = l.split('\t');
            let status = parts.next()?.chars().next()?;
            let first = parts.next()?.to_string();
            Some(match (status, parts.next()) {
                ('R' | 'C', Some(new)) => (status, new.to_string(), Some(first)),
                _ => (status, first, None),
            })
        })
        .collect()
}

/// The changes stored for a commit; `None` when there is no commit node.
async fn stored_changes(kb: &Kb, hash: &str) -> Option<BTreeSet<Change>> {
    let vis = Visibility::of(Scope::client("bench"));
    let start = keys::commit(hash);
    let graph = &kb.stores().graph;
    if graph
        .get_nodes(&vis, std::slice::from_ref(&start))
        .await
        .expect("commit node")
        .is_empty()
    {
        return None;
    }
    let sub = graph
        .traverse(
            &vis,
            &[start],
            &TraverseOptions {
                max_depth: 1,
                direction: Direction::Out,
                edge_types: ["creates", "modifies", "deletes", "renames"]
                    .map(String::from)
                    .to_vec(),
                max_nodes: 1_000_000,
            },
        )
        .await
        .expect("traverse");
    let path_of = |key: &evident_core::NodeKey| {
        sub.nodes
            .iter()
            .find(|(n, _)| &n.key == key)
            .and_then(|(n, _)| n.props.get("path")?.as_str().map(String::from))
            .unwrap_or_else(|| key.as_str().to_string())
    };
    Some(
        sub.edges
            .iter()
            .map(|e| {
                let status = e
                    .props
                    .get("status")
                    .and_then(|s| s.as_str())
                    .and_then(|s| s.chars().next())
                    .unwrap_or('?');
                let old = e
                    .props
                    .get("oldPath")
                    .and_then(|p| p.as_str())
                    .filter(|_| matches!(status, 'R' | 'C'))
                    .map(String::from);
                (status, path_of(&e.to), old)
            })
            .collect(),
    )
}

/// Compares every commit of `repo`'s `HEAD` history.
pub async fn compare(kb: &Kb, repo: &Path) -> CommitScore {
    let hashes = git(repo, &["rev-list", "HEAD"]);
    let mut score = CommitScore {
        commits: 0,
        exact: 0,
        examples: Vec::new(),
    };
    for hash in hashes.lines().filter(|l| !l.is_empty()) {
        score.commits += 1;
        let expected = git_changes(repo, hash);
        let ours = stored_changes(kb, hash).await;
        if ours.as_ref() == Some(&expected) {
            score.exact += 1;
        } else if score.examples.len() < 5 {
            score.examples.push((hash.to_string(), expected, ours));
        }
    }
    score
}
