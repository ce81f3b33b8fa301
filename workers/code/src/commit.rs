//! One commit as a prepared source: a message chunk (header, message, file list) and diff
//! chunks per file with `{commit, path, hunk line range}` locators — large diffs are chunked,
//! never cut — and the graph: the commit, its author (a person resolved through the alias
//! registry), `parent` edges, `modifies` / `creates` / `deletes` / `renames` edges to files,
//! and `fixes` / `references` edges to issues named in the message.
//!
//! Git-reading code and the push API both produce a [`CommitInfo`]; everything after that is
//! shared, so a commit pushed over HTTP is stored exactly like one read from a repository.

use evident_core::chunking::estimate_tokens;
use evident_core::commits::{IssueRelation, issue_refs};
use evident_core::hashing::content_hash;
use evident_core::keys::{self, IssueContext};
use evident_core::prepared::props;
use evident_core::secrets::redact;
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::structure::RepoContext;

/// Bump when what a commit becomes changes.
pub const COMMIT_VERSION: &str = "commit-v2";
/// Files listed in a commit's message chunk (the rest are counted).
const LISTED_FILES: usize = 300;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChangeStatus {
    #[serde(rename = "A")]
    Added,
    #[serde(rename = "M")]
    Modified,
    #[serde(rename = "D")]
    Deleted,
    #[serde(rename = "R")]
    Renamed,
    #[serde(rename = "C")]
    Copied,
    #[serde(rename = "T")]
    TypeChanged,
}

impl ChangeStatus {
    pub fn letter(self) -> char {
        match self {
            ChangeStatus::Added => 'A',
            ChangeStatus::Modified => 'M',
            ChangeStatus::Deleted => 'D',
            ChangeStatus::Renamed => 'R',
            ChangeStatus::Copied => 'C',
            ChangeStatus::TypeChanged => 'T',
        }
    }

    pub fn from_letter(c: char) -> Option<ChangeStatus> {
        Some(match c.to_ascii_uppercase() {
            'A' => ChangeStatus::Added,
            'M' => ChangeStatus::Modified,
            'D' => ChangeStatus::Deleted,
            'R' => ChangeStatus::Renamed,
            'C' => ChangeStatus::Copied,
            'T' => ChangeStatus::TypeChanged,
            _ => return None,
        })
    }

    fn edge_type(self) -> &'static str {
        match self {
            ChangeStatus::Added | ChangeStatus::Copied => "creates",
            ChangeStatus::Deleted => "deletes",
            ChangeStatus::Renamed => "renames",
            ChangeStatus::Modified | ChangeStatus::TypeChanged => "modifies",
        }
    }
}

/// A hunk of a unified diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    /// The `@@ … @@` line's trailing context (often the enclosing function).
    #[serde(default)]
    pub section: String,
    /// The hunk's lines, each starting with ` `, `+`, `-` or `\`.
    pub lines: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    pub path: String,
    /// The path before a rename or copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub status: ChangeStatus,
    #[serde(default)]
    pub binary: bool,
    /// Why the diff is not kept, when it is not (`generated`, `vendored`, `oversized`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<String>,
    #[serde(default)]
    pub hunks: Vec<Hunk>,
}

/// A commit with everything its ingest needs (lossless: parents, file list with status,
/// diff hunks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitInfo {
    pub hash: String,
    #[serde(default)]
    pub parents: Vec<String>,
    pub author_name: String,
    pub author_email: String,
    #[serde(default)]
    pub committer_name: Option<String>,
    #[serde(default)]
    pub committer_email: Option<String>,
    /// RFC 3339 author date.
    pub date: String,
    pub message: String,
    #[serde(default)]
    pub files: Vec<FileChange>,
}

pub fn commit_urn(source_id: &str, hash: &str) -> String {
    format!("git:{source_id}:commit:{}", hash.to_ascii_lowercase())
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

fn subject(message: &str) -> &str {
    message.lines().next().unwrap_or("").trim()
}

/// A person's node and the aliases that let their name resolve to it.
fn person(name: &str, email: &str) -> Option<(PreparedNode, Vec<(NodeKey, NodeKey)>)> {
    let key = keys::person(Some(name), Some(email))?;
    // A private (no-reply) address carries the forge login: the tracker's name for them.
    let login = keys::forge_login(email);
    let handles: Vec<&str> = login.iter().map(String::as_str).collect();
    let aliases = keys::person_aliases(&key, Some(name), &handles);
    Some((
        PreparedNode {
            label: if name.trim().is_empty() {
                email.to_string()
            } else {
                name.trim().to_string()
            },
            key,
            node_type: "person".into(),
            props: props([
                ("name", name.trim().into()),
                ("email", email.trim().to_lowercase().into()),
            ]),
            evidence: EvidenceSpec::chunk(0),
        },
        aliases,
    ))
}

fn message_chunk_text(c: &CommitInfo) -> String {
    let mut s = format!(
        "commit {}\nAuthor: {} <{}>\nDate:   {}\n",
        c.hash, c.author_name, c.author_email, c.date
    );
    if !c.parents.is_empty() {
        s.push_str(&format!(
            "Parents: {}\n",
            c.parents
                .iter()
                .map(|p| short(p))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    s.push('\n');
    for line in c.message.trim_end().lines() {
        s.push_str("    ");
        s.push_str(line);
        s.push('\n');
    }
    if !c.files.is_empty() {
        s.push('\n');
        for f in c.files.iter().take(LISTED_FILES) {
            match &f.old_path {
                Some(old)
                    if f.status == ChangeStatus::Renamed || f.status == ChangeStatus::Copied =>
                {
                    s.push_str(&format!("{} {old} -> {}\n", f.status.letter(), f.path))
                }
                _ => s.push_str(&format!("{} {}\n", f.status.letter(), f.path)),
            }
        }
        if c.files.len() > LISTED_FILES {
            s.push_str(&format!(
                "… and {} more files\n",
                c.files.len() - LISTED_FILES
            ));
        }
    }
    s
}

/// A piece of one file's diff: text, and the line span it covers in the new (or, for pure
/// deletions, the old) version.
struct DiffPiece {
    text: String,
    new_span: Option<(usize, usize)>,
    old_span: Option<(usize, usize)>,
}

/// Cuts one file's hunks into pieces within `max_tokens`: whole hunks packed together, a
/// hunk larger than the budget split between lines (each piece says where it continues).
fn diff_pieces(f: &FileChange, max_tokens: usize) -> Vec<DiffPiece> {
    let header = match &f.old_path {
        Some(old) => format!("--- a/{old}\n+++ b/{}\n", f.path),
        None => format!("--- a/{0}\n+++ b/{0}\n", f.path),
    };
    let mut pieces: Vec<DiffPiece> = Vec::new();
    let mut cur = DiffPiece {
        text: header.clone(),
        new_span: None,
        old_span: None,
    };
    let mut cur_tokens = estimate_tokens(&header);
    let widen = |span: &mut Option<(usize, usize)>, line: usize| {
        *span = Some(match *span {
            Some((a, b)) => (a.min(line), b.max(line)),
            None => (line, line),
        });
    };
    for h in &f.hunks {
        let at = format!(
            "@@ -{},{} +{},{} @@ {}\n",
            h.old_start, h.old_lines, h.new_start, h.new_lines, h.section
        );
        let (mut old_line, mut new_line) = (h.old_start, h.new_start);
        let mut first = true;
        for line in &h.lines {
            let t = estimate_tokens(line);
            let prefix_tokens = if first { estimate_tokens(&at) } else { 0 };
            if cur_tokens + t + prefix_tokens > max_tokens && cur.text.len() > header.len() {
                pieces.push(std::mem::replace(
                    &mut cur,
                    DiffPiece {
                        text: header.clone(),
                        new_span: None,
                        old_span: None,
                    },
                ));
                cur_tokens = estimate_tokens(&header);
                if !first {
                    let cont = format!("@@ -{old_line} +{new_line} @@ (continued)\n");
                    cur_tokens += estimate_tokens(&cont);
                    cur.text.push_str(&cont);
                }
            }
            if first {
                cur.text.push_str(&at);
                cur_tokens += prefix_tokens;
                first = false;
            }
            cur.text.push_str(line);
            cur.text.push('\n');
            cur_tokens += t;
            match line.as_bytes().first() {
                Some(b'+') => {
                    widen(&mut cur.new_span, new_line);
                    new_line += 1;
                }
                Some(b'-') => {
                    widen(&mut cur.old_span, old_line);
                    old_line += 1;
                }
                Some(b'\\') => {}
                _ => {
                    widen(&mut cur.new_span, new_line);
                    widen(&mut cur.old_span, old_line);
                    new_line += 1;
                    old_line += 1;
                }
            }
        }
    }
    if cur.text.len() > header.len() {
        pieces.push(cur);
    }
    pieces
}

/// The chunks of a commit's source as they are built, and whether credential lines were
/// withheld from any of them.
struct Chunks {
    chunks: Vec<PreparedChunk>,
    withheld: bool,
}

impl Chunks {
    /// Adds a chunk, its credential lines redacted (`withheld` records that some were).
    fn push(&mut self, text: String, locator: Locator, kind: &str, refs: Vec<NodeKey>) {
        let text = match redact(&text) {
            Some((clean, _)) => {
                self.withheld = true;
                clean
            }
            None => text,
        };
        let mut pc = PreparedChunk::new(text, locator);
        pc.kind = Some(kind.into());
        pc.refs = refs;
        self.chunks.push(pc);
    }

    /// Adds the diff chunks of every text file the commit changes; per file (in order), the
    /// indices of the chunks that evidence its change.
    fn push_diffs(
        &mut self,
        repository: &str,
        c: &CommitInfo,
        hash: &str,
        max_tokens: usize,
    ) -> Vec<Vec<usize>> {
        let commit_key = keys::commit(hash);
        let mut file_chunks: Vec<Vec<usize>> = Vec::with_capacity(c.files.len());
        for f in &c.files {
            let mut mine = Vec::new();
            if !f.binary {
                let file_key = keys::file(repository, &f.path);
                for piece in diff_pieces(f, max_tokens) {
                    let (path, span, at) = match (piece.new_span, piece.old_span) {
                        (Some(span), _) => (f.path.clone(), span, Some(hash.to_string())),
                        // Only removed lines: cite them where they still exist, in the parent.
                        (None, Some(span)) => (
                            f.old_path.clone().unwrap_or_else(|| f.path.clone()),
                            span,
                            c.parents.first().cloned().or(Some(hash.to_string())),
                        ),
                        (None, None) => continue,
                    };
                    mine.push(self.chunks.len());
                    self.push(
                        piece.text,
                        Locator::File {
                            path,
                            line_start: span.0,
                            line_end: span.1,
                            commit: at,
                            symbol: None,
                        },
                        "git-diff",
                        vec![commit_key.clone(), file_key.clone()],
                    );
                }
            }
            file_chunks.push(mine);
        }
        file_chunks
    }
}

/// An edge of the commit's source.
fn edge(
    from: &NodeKey,
    t: &str,
    to: NodeKey,
    evidence: EvidenceSpec,
    props: Map<String, Value>,
) -> PreparedEdge {
    PreparedEdge {
        from: from.clone(),
        to,
        edge_type: t.into(),
        props,
        evidence,
    }
}

/// Builds the prepared source of a commit. `issues` says where `#12` points.
pub fn commit_source(
    ctx: &RepoContext,
    c: &CommitInfo,
    issues: &IssueContext,
    max_tokens: usize,
) -> PreparedSource {
    let hash = c.hash.to_ascii_lowercase();
    let commit_key = keys::commit(&hash);
    let mut chunks = Chunks {
        chunks: Vec::new(),
        withheld: false,
    };
    // The message chunk cites the commit; its refs lead expansion to author and issues.
    let author = person(&c.author_name, &c.author_email);
    let committer = match (&c.committer_name, &c.committer_email) {
        (Some(n), Some(e)) if !e.eq_ignore_ascii_case(&c.author_email) => person(n, e),
        _ => None,
    };
    let found_issues: Vec<(IssueRelation, NodeKey)> = issue_refs(&c.message)
        .into_iter()
        .map(|r| (r.relation, keys::issue_ref(issues, &r.key)))
        .collect();
    let mut refs = vec![commit_key.clone()];
    refs.extend(author.iter().map(|(n, _)| n.key.clone()));
    refs.extend(found_issues.iter().map(|(_, k)| k.clone()));
    chunks.push(
        message_chunk_text(c),
        Locator::Commit {
            repository: ctx.repository.clone(),
            commit: hash.clone(),
        },
        "git-commit",
        refs,
    );
    // Diff chunks, and which chunks evidence each file's change.
    let file_chunks = chunks.push_diffs(&ctx.repository, c, &hash, max_tokens);

    // The message is stored in the commit's props and title too: with its credential lines
    // redacted, as in its chunk (the knowledge base refuses credentials in any stored string).
    let message = redact(&c.message).map_or_else(|| c.message.clone(), |(clean, _)| clean);
    let mut nodes = vec![commit_node(ctx, c, &hash, &message)];
    let (people, mut edges, aliases) = people_and_parents(&commit_key, c, author, committer);
    nodes.extend(people);
    push_file_changes(ctx, c, &commit_key, &file_chunks, &mut nodes, &mut edges);
    for (relation, key) in found_issues {
        edges.push(edge(
            &commit_key,
            relation.edge_type(),
            key,
            EvidenceSpec::chunk(0),
            Map::new(),
        ));
    }
    PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: commit_urn(&ctx.source_id, &hash),
        kind: "git-commit".into(),
        title: Some(format!("{} {}", short(&hash), subject(&message))),
        fingerprint: content_hash(&format!(
            "{COMMIT_VERSION}\0{}\0{hash}\0{}\0{}\0{max_tokens}\0{withheld}",
            ctx.repository,
            issues.tracker,
            issues.project,
            withheld = chunks.withheld
        )),
        observed_at: humantime_rfc3339(&c.date),
        chunks: chunks.chunks,
        nodes,
        edges,
        aliases,
        merges: Vec::new(),
    }
}

/// The author's and committer's nodes and aliases, with `authored_by` / `committed_by` edges,
/// then a `parent` edge per parent.
fn people_and_parents(
    commit_key: &NodeKey,
    c: &CommitInfo,
    author: Option<(PreparedNode, Vec<(NodeKey, NodeKey)>)>,
    committer: Option<(PreparedNode, Vec<(NodeKey, NodeKey)>)>,
) -> (
    Vec<PreparedNode>,
    Vec<PreparedEdge>,
    Vec<(NodeKey, NodeKey)>,
) {
    let (mut nodes, mut edges, mut aliases) = (Vec::new(), Vec::new(), Vec::new());
    for (edge_type, who) in [("authored_by", author), ("committed_by", committer)] {
        if let Some((node, al)) = who {
            edges.push(edge(
                commit_key,
                edge_type,
                node.key.clone(),
                EvidenceSpec::chunk(0),
                Map::new(),
            ));
            nodes.push(node);
            aliases.extend(al);
        }
    }
    for p in &c.parents {
        edges.push(edge(
            commit_key,
            "parent",
            keys::commit(p),
            EvidenceSpec::chunk(0),
            Map::new(),
        ));
    }
    (nodes, edges, aliases)
}

/// The commit's node: hash, subject, message (redacted, its first 1000 characters), author,
/// committer, date, parents and repository, evidenced by all its chunks.
fn commit_node(ctx: &RepoContext, c: &CommitInfo, hash: &str, message: &str) -> PreparedNode {
    PreparedNode {
        key: keys::commit(hash),
        node_type: "commit".into(),
        label: format!("{} {}", short(hash), subject(message)),
        props: props([
            ("hash", hash.into()),
            ("subject", subject(message).into()),
            (
                "message",
                message.chars().take(1000).collect::<String>().into(),
            ),
            ("authorName", c.author_name.clone().into()),
            ("authorEmail", c.author_email.to_lowercase().into()),
            (
                "committerName",
                c.committer_name
                    .clone()
                    .map(Value::from)
                    .unwrap_or(Value::Null),
            ),
            (
                "committerEmail",
                c.committer_email
                    .clone()
                    .map(Value::from)
                    .unwrap_or(Value::Null),
            ),
            ("date", c.date.clone().into()),
            ("parents", Value::from(c.parents.clone())),
            ("repository", ctx.repository.clone().into()),
        ]),
        evidence: EvidenceSpec::AllChunks,
    }
}

/// A node per file the commit changes and an edge from the commit saying how
/// (`modifies`, `creates`, …), evidenced by the file's diff chunks (`file_chunks`, in file
/// order) or, without any, by the message.
fn push_file_changes(
    ctx: &RepoContext,
    c: &CommitInfo,
    commit_key: &NodeKey,
    file_chunks: &[Vec<usize>],
    nodes: &mut Vec<PreparedNode>,
    edges: &mut Vec<PreparedEdge>,
) {
    for (f, mine) in c.files.iter().zip(file_chunks) {
        // A deleted file is the one at its old path; others at their new path.
        let target_path = match f.status {
            ChangeStatus::Deleted => f.old_path.as_deref().unwrap_or(&f.path),
            _ => &f.path,
        };
        let file_key = keys::file(&ctx.repository, target_path);
        nodes.push(PreparedNode {
            key: file_key.clone(),
            node_type: "file".into(),
            label: target_path.to_string(),
            props: props([
                ("path", target_path.into()),
                ("repository", ctx.repository.clone().into()),
            ]),
            evidence: EvidenceSpec::chunk(0),
        });
        let evidence = if mine.is_empty() {
            EvidenceSpec::chunk(0)
        } else {
            EvidenceSpec::Chunks(mine.clone())
        };
        let p = props([
            ("status", f.status.letter().to_string().into()),
            (
                "oldPath",
                f.old_path.clone().map(Value::from).unwrap_or(Value::Null),
            ),
        ]);
        edges.push(edge(
            commit_key,
            f.status.edge_type(),
            file_key,
            evidence,
            p,
        ));
    }
}

/// The date if it is RFC 3339 (what `observedAt` accepts), else nothing.
fn humantime_rfc3339(date: &str) -> Option<String> {
    let ok = date.len() >= 20 && date.as_bytes().get(4) == Some(&b'-') && date.contains('T');
    ok.then(|| date.to_string())
}

/// Parses a unified diff (`git diff` / `git show` output) into files with hunks. Lenient:
/// lines it does not understand are skipped, never a panic.
pub fn parse_unified_diff(text: &str) -> Vec<(String, Option<String>, Vec<Hunk>)> {
    let mut files: Vec<(String, Option<String>, Vec<Hunk>)> = Vec::new();
    let mut old_path: Option<String> = None;
    let mut in_hunk = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            in_hunk = false;
            old_path = None;
            // `a/x b/y`: take y as the provisional path.
            let path = rest
                .rsplit_once(" b/")
                .map(|(_, b)| b.to_string())
                .unwrap_or_default();
            files.push((path, None, Vec::new()));
            continue;
        }
        if let Some(p) = line.strip_prefix("--- ") {
            in_hunk = false;
            old_path = p.strip_prefix("a/").map(str::to_string);
            continue;
        }
        if let Some(p) = line.strip_prefix("+++ ") {
            in_hunk = false;
            let new = p.strip_prefix("b/").map(str::to_string);
            let path = new.or(old_path.clone()).unwrap_or_default();
            // The old path is kept only when it differs (a rename or copy).
            let old = old_path.clone().filter(|o| *o != path);
            match files.last_mut() {
                Some(last) if last.2.is_empty() => {
                    last.0 = path;
                    last.1 = old;
                }
                _ => files.push((path, old, Vec::new())),
            }
            continue;
        }
        if line.starts_with("@@") {
            if let Some(h) = parse_hunk_header(line) {
                if files.is_empty() {
                    files.push((String::new(), None, Vec::new()));
                }
                if let Some(last) = files.last_mut() {
                    last.2.push(h);
                    in_hunk = true;
                }
            }
            continue;
        }
        if in_hunk
            && matches!(
                line.as_bytes().first(),
                Some(b' ' | b'+' | b'-' | b'\\') | None
            )
            && let Some(h) = files.last_mut().and_then(|f| f.2.last_mut())
        {
            h.lines.push(if line.is_empty() {
                " ".into()
            } else {
                line.to_string()
            });
        }
    }
    files.retain(|f| !f.0.is_empty());
    files
}

fn parse_hunk_header(line: &str) -> Option<Hunk> {
    // @@ -a[,b] +c[,d] @@ section
    let rest = line.strip_prefix("@@ ")?;
    let (ranges, section) = rest.split_once(" @@").unwrap_or((rest, ""));
    let mut parts = ranges.split_whitespace();
    let range = |s: &str, sign: char| -> Option<(usize, usize)> {
        let s = s.strip_prefix(sign)?;
        Some(match s.split_once(',') {
            Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
            None => (s.parse().ok()?, 1),
        })
    };
    let (old_start, old_lines) = range(parts.next()?, '-')?;
    let (new_start, new_lines) = range(parts.next()?, '+')?;
    Some(Hunk {
        old_start,
        old_lines,
        new_start,
        new_lines,
        section: section.trim().to_string(),
        lines: Vec::new(),
    })
}

#[cfg(test)]
mod tests;
