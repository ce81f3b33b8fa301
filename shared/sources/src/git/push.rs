//! Git data pushed by external indexers (`/ingest/git-structure`, `/ingest/git-commits`,
//! `/ingest/cpg`): every push checked (scope, counts, credentials) before anything is written,
//! then ingested like what the pollers read.

use evident_ai::Priority;
use evident_code::Language;
use evident_code::chunks::CodeChunking;
use evident_code::commit::{
    ChangeStatus, CommitInfo, FileChange, commit_source, parse_unified_diff,
};
use evident_code::cpg::{CPG_EDGE_TYPES, CpgEdge, cpg_source};
use evident_code::outline::{Import, Symbol, SymbolKind};
use evident_code::skip::{skip_by_content, skip_by_path};
use evident_code::structure::{FileVersion, RepoContext, analyse, file_source, outline_source};
use evident_core::keys::IssueContext;
use evident_core::{PreparedSource, Scope, Visibility, validate};
use evident_kb::{IngestStatus, Kb, KbError};
use serde::{Deserialize, Serialize};

use super::write::{ingest_all, ingest_commits, stream_of};
use crate::registration::{check_id, invalid, slug};

/// Files or commits accepted in one push.
const MAX_PUSH_ITEMS: usize = 5_000;
/// Call-graph edges accepted in one push (an edge is far smaller than a file or a commit).
const MAX_CPG_EDGES: usize = 200_000;
/// Concurrent ingests while handling a push.
const PUSH_PARALLEL: usize = 4;

/// The context of pushed data: its repository under a push-specific source id, so pushed and
/// polled copies of one repository never overwrite each other's sources. The push's scope
/// fields are checked as a registration's: pushed data, like a registered source, always
/// belongs to a client.
fn push_context(scope: &Scope, repository: &str) -> Result<RepoContext, KbError> {
    validate::bounded_text("repository", repository, 200)?;
    let (_, scope) = crate::registration::registration_scope(
        scope.client_id.as_deref(),
        scope.project_id.as_deref(),
        scope.group_id.as_deref(),
    )?;
    Ok(RepoContext {
        source_id: format!("push.{}", slug(repository)),
        repository: repository.to_string(),
        scope,
    })
}

fn check_count(field: &'static str, n: usize, max: usize) -> Result<(), KbError> {
    if n == 0 {
        return Err(validate::FieldError::Empty { field }.into());
    }
    if n > max {
        return Err(validate::FieldError::TooLong { field, len: n, max }.into());
    }
    Ok(())
}

/// Pushed strings stored as they are sent (paths, symbol names, imports, commit messages,
/// names, CPG endpoints) must hold no credential: the whole push is refused (422
/// `credential_detected`, naming the field, never the secret) before anything is written.
/// File contents and diffs keep their line redaction instead.
fn refuse_credentials_in_structure(req: &StructurePush) -> Result<(), KbError> {
    let mut scan = evident_kb::credentials::Scan::default();
    scan.text("repository", &req.repository)?;
    scan.text("branch", &req.branch)?;
    scan.all("commit", req.commit.as_deref())?;
    for (i, f) in req.files.iter().enumerate() {
        scan.text(&format!("files[{i}].path"), &f.path)?;
        scan.all(&format!("files[{i}].language"), f.language.as_deref())?;
        scan.all(
            &format!("files[{i}].imports"),
            f.imports.iter().map(String::as_str),
        )?;
        for s in &f.symbols {
            let strings = [
                Some(s.name.as_str()),
                s.qualified_name.as_deref(),
                s.parent.as_deref(),
                s.signature.as_deref(),
            ];
            scan.all(
                &format!("files[{i}].symbols"),
                strings.into_iter().flatten(),
            )?;
        }
    }
    Ok(())
}

/// The same for pushed commits (see [`refuse_credentials_in_structure`]).
fn refuse_credentials_in_commits(req: &CommitsPush) -> Result<(), KbError> {
    let mut scan = evident_kb::credentials::Scan::default();
    scan.text("repository", &req.repository)?;
    scan.all("branch", req.branch.as_deref())?;
    scan.all("issueTracker", req.issue_tracker.as_deref())?;
    for (i, c) in req.commits.iter().enumerate() {
        scan.text(&format!("commits[{i}].message"), &c.message)?;
        let people = [
            Some(c.author_name.as_str()),
            Some(c.author_email.as_str()),
            c.committer_name.as_deref(),
            c.committer_email.as_deref(),
        ];
        scan.all(
            &format!("commits[{i}].author"),
            people.into_iter().flatten(),
        )?;
        for f in &c.files {
            let paths = [Some(f.path.as_str()), f.old_path.as_deref()];
            scan.all(&format!("commits[{i}].files"), paths.into_iter().flatten())?;
        }
    }
    Ok(())
}

/// A symbol of a pre-parsed file.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushedSymbol {
    /// class, interface, struct, enum, trait, type, function, method.
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub qualified_name: Option<String>,
    /// Qualified name of the enclosing type.
    #[serde(default)]
    pub parent: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
    pub line_start: usize,
    #[serde(default)]
    pub line_end: Option<usize>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushedFile {
    pub path: String,
    #[serde(default)]
    pub language: Option<String>,
    /// The file's text: parsed with Evident's own grammars.
    #[serde(default)]
    pub content: Option<String>,
    /// Or its outline, when the content is not sent.
    #[serde(default)]
    pub symbols: Vec<PushedSymbol>,
    #[serde(default)]
    pub imports: Vec<String>,
}

/// `POST /api/v1/ingest/git-structure`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StructurePush {
    /// The scope fields (`clientId`, `projectId`, `groupId`).
    #[serde(flatten)]
    pub scope: Scope,
    pub repository: String,
    pub branch: String,
    #[serde(default)]
    pub commit: Option<String>,
    pub files: Vec<PushedFile>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushOutcome {
    pub received: usize,
    pub indexed: usize,
    pub unchanged: usize,
    /// Items not stored, with the reason.
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub item: String,
    pub reason: String,
}

fn tally(
    out: &mut PushOutcome,
    items: Vec<String>,
    results: Vec<Result<IngestStatus, KbError>>,
) -> Result<(), KbError> {
    for (item, r) in items.into_iter().zip(results) {
        match r {
            Ok(IngestStatus::SkippedUnchanged) => out.unchanged += 1,
            Ok(_) => out.indexed += 1,
            Err(e) if e.is_retryable() => return Err(e),
            Err(e) => out.skipped.push(Skipped {
                item,
                reason: e.to_string(),
            }),
        }
    }
    Ok(())
}

fn pushed_symbols(path: &str, symbols: &[PushedSymbol]) -> Result<Vec<Symbol>, KbError> {
    symbols
        .iter()
        .map(|s| {
            let kind = SymbolKind::parse(&s.kind.to_ascii_lowercase())
                .ok_or_else(|| invalid("symbols", format!("`{}` in {path}: kind must be class, interface, struct, enum, trait, type, function or method", s.kind)))?;
            validate::bounded_text("symbols", &s.name, 512)?;
            let line_end = s.line_end.unwrap_or(s.line_start).max(s.line_start);
            if s.line_start == 0 {
                return Err(invalid("symbols", format!("`{}` in {path}: lineStart is 1-based", s.name)));
            }
            Ok(Symbol {
                kind,
                name: s.name.clone(),
                qualified_name: s.qualified_name.clone().unwrap_or_else(|| s.name.clone()),
                parent: s.parent.clone(),
                signature: s.signature.clone().unwrap_or_default(),
                line_start: s.line_start,
                line_end,
                byte_start: 0,
                byte_end: 0,
            })
        })
        .collect()
}

/// One pushed file as a source to ingest — parsed from its content, or built from its
/// outline — or why it is skipped (an invalid path, a rule, nothing to index).
fn prepare_file(
    ctx: &RepoContext,
    branch: &str,
    commit: Option<&str>,
    f: PushedFile,
) -> Result<(String, PreparedSource), Skipped> {
    let skip = |item: String, reason: String| Skipped { item, reason };
    if let Err(e) = validate::bounded_text("path", &f.path, 4096) {
        return Err(skip(f.path, e.to_string()));
    }
    if let Some(reason) =
        skip_by_path(&f.path).filter(|r| !matches!(r, evident_code::skip::SkipReason::NotText))
    {
        return Err(skip(f.path, reason.as_str().into()));
    }
    let source = match (&f.content, f.symbols.is_empty()) {
        (Some(content), _) => {
            if let Some(reason) = skip_by_content(content.as_bytes(), 1024 * 1024) {
                return Err(skip(f.path, reason.as_str().into()));
            }
            let structure = match f.language.as_deref().and_then(Language::from_name) {
                Some(lang) => evident_code::outline(lang, &f.path, content)
                    .map(evident_code::structure::Structure::Code)
                    .unwrap_or(evident_code::structure::Structure::Text),
                None => {
                    analyse(&f.path, content).unwrap_or(evident_code::structure::Structure::Text)
                }
            };
            let v = FileVersion {
                branch,
                commit,
                path: &f.path,
                content,
            };
            file_source(ctx, &v, &structure, &CodeChunking::default())
        }
        (None, false) => {
            let symbols = match pushed_symbols(&f.path, &f.symbols) {
                Ok(symbols) => symbols,
                Err(e) => return Err(skip(f.path, e.to_string())),
            };
            let imports: Vec<Import> = f
                .imports
                .iter()
                .map(|t| Import {
                    target: t.clone(),
                    line: 1,
                })
                .collect();
            let language = f.language.as_deref();
            outline_source(ctx, branch, commit, &f.path, language, &symbols, &imports)
        }
        (None, true) => return Err(skip(f.path, "neither content nor symbols".into())),
    };
    match source {
        Some(s) => Ok((f.path, s)),
        None => Err(skip(f.path, "empty".into())),
    }
}

/// Indexes pushed files: parsed from their content, or from their outline.
pub async fn push_structure(
    kb: &Kb,
    req: StructurePush,
    priority: Priority,
) -> Result<PushOutcome, KbError> {
    let ctx = push_context(&req.scope, &req.repository)?;
    validate::bounded_text("branch", &req.branch, 256)?;
    check_count("files", req.files.len(), MAX_PUSH_ITEMS)?;
    refuse_credentials_in_structure(&req)?;
    let mut out = PushOutcome {
        received: req.files.len(),
        ..Default::default()
    };
    let (branch, commit) = (req.branch.clone(), req.commit.clone());
    let files = req.files;
    let (prepared, skipped) = tokio::task::spawn_blocking(move || {
        let mut prepared = Vec::new();
        let mut skipped = Vec::new();
        for f in files {
            match prepare_file(&ctx, &branch, commit.as_deref(), f) {
                Ok(p) => prepared.push(p),
                Err(s) => skipped.push(s),
            }
        }
        (prepared, skipped)
    })
    .await
    .map_err(|e| KbError::Invalid(format!("parsing failed: {e}")))?;
    out.skipped = skipped;
    let (items, sources): (Vec<String>, Vec<_>) = prepared.into_iter().unzip();
    let results = ingest_all(kb, stream_of(sources), PUSH_PARALLEL, priority).await;
    tally(&mut out, items, results)?;
    Ok(out)
}

/// A pushed file change.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushedChange {
    pub path: String,
    #[serde(default)]
    pub old_path: Option<String>,
    /// `A`, `M`, `D`, `R`, `C`, `T` (a similarity suffix such as `R095` is accepted).
    pub status: String,
    #[serde(default)]
    pub binary: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushedCommit {
    pub hash: String,
    #[serde(default)]
    pub parents: Vec<String>,
    pub author_name: String,
    pub author_email: String,
    #[serde(default)]
    pub committer_name: Option<String>,
    #[serde(default)]
    pub committer_email: Option<String>,
    pub date: String,
    pub message: String,
    #[serde(default)]
    pub files: Vec<PushedChange>,
    /// The commit's unified diff (`git show` output); hunks attach to the listed files.
    #[serde(default)]
    pub diff: Option<String>,
}

/// `POST /api/v1/ingest/git-commits`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommitsPush {
    /// The scope fields (`clientId`, `projectId`, `groupId`).
    #[serde(flatten)]
    pub scope: Scope,
    pub repository: String,
    /// Links the commits to this branch (`has_commit`).
    #[serde(default)]
    pub branch: Option<String>,
    /// Where `#12` points (`github:owner/repo`); default `issues:{repository}`.
    #[serde(default)]
    pub issue_tracker: Option<String>,
    pub commits: Vec<PushedCommit>,
}

fn to_commit_info(c: PushedCommit) -> Result<CommitInfo, KbError> {
    let hex = |h: &str| h.len() >= 4 && h.len() <= 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
    if !hex(&c.hash) || !c.parents.iter().all(|p| hex(p)) {
        return Err(invalid(
            "hash",
            format!("`{}`: commit ids are hexadecimal", c.hash),
        ));
    }
    humantime::parse_rfc3339_weak(&c.date)
        .map_err(|e| invalid("date", format!("`{}`: {e}", c.date)))?;
    let mut files: Vec<FileChange> = Vec::with_capacity(c.files.len());
    for f in &c.files {
        let status = f
            .status
            .chars()
            .next()
            .and_then(ChangeStatus::from_letter)
            .ok_or_else(|| {
                invalid(
                    "status",
                    format!("`{}` for {}: use A, M, D, R, C or T", f.status, f.path),
                )
            })?;
        files.push(FileChange {
            path: f.path.clone(),
            old_path: f.old_path.clone(),
            status,
            binary: f.binary,
            omitted: None,
            hunks: Vec::new(),
        });
    }
    if let Some(diff) = &c.diff {
        for (path, old, hunks) in parse_unified_diff(diff) {
            match files
                .iter_mut()
                .find(|f| f.path == path || f.old_path.as_deref() == Some(path.as_str()))
            {
                Some(f) => f.hunks = hunks,
                // Listed only in the diff: the diff says what happened.
                None => files.push(FileChange {
                    status: if old.is_some() {
                        ChangeStatus::Renamed
                    } else {
                        ChangeStatus::Modified
                    },
                    path,
                    old_path: old,
                    binary: false,
                    omitted: None,
                    hunks,
                }),
            }
        }
    }
    Ok(CommitInfo {
        hash: c.hash.to_ascii_lowercase(),
        parents: c.parents.iter().map(|p| p.to_ascii_lowercase()).collect(),
        author_name: c.author_name,
        author_email: c.author_email,
        committer_name: c.committer_name,
        committer_email: c.committer_email,
        date: c.date,
        message: c.message,
        files,
    })
}

/// Indexes pushed commits exactly like commits read from a repository.
pub async fn push_commits(
    kb: &Kb,
    req: CommitsPush,
    priority: Priority,
) -> Result<PushOutcome, KbError> {
    let ctx = push_context(&req.scope, &req.repository)?;
    check_count("commits", req.commits.len(), MAX_PUSH_ITEMS)?;
    if let Some(b) = &req.branch {
        validate::bounded_text("branch", b, 256)?;
    }
    refuse_credentials_in_commits(&req)?;
    let issues = match req.issue_tracker.as_deref().and_then(|t| t.split_once(':')) {
        Some((tracker, project)) => IssueContext {
            tracker: tracker.into(),
            project: project.into(),
        },
        None => IssueContext {
            tracker: "issues".into(),
            project: req.repository.clone(),
        },
    };
    let mut out = PushOutcome {
        received: req.commits.len(),
        ..Default::default()
    };
    let mut items = Vec::new();
    let mut prepared = Vec::new();
    for c in req.commits {
        let hash = c.hash.clone();
        match to_commit_info(c) {
            Ok(info) => {
                items.push(hash);
                prepared.push(commit_source(
                    &ctx,
                    &info,
                    &issues,
                    CodeChunking::default().max_tokens,
                ));
            }
            Err(e) => out.skipped.push(Skipped {
                item: hash,
                reason: e.to_string(),
            }),
        }
    }
    let results = ingest_commits(
        kb,
        &ctx.scope,
        &ctx.repository,
        req.branch.as_deref(),
        stream_of(prepared),
        PUSH_PARALLEL,
        priority,
    )
    .await?;
    tally(&mut out, items, results)?;
    Ok(out)
}

/// `POST /api/v1/ingest/cpg`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CpgPush {
    /// The scope fields (`clientId`, `projectId`, `groupId`).
    #[serde(flatten)]
    pub scope: Scope,
    pub repository: String,
    /// Names this export (a later push with the same name replaces it). Default `default`.
    #[serde(default)]
    pub name: Option<String>,
    pub edges: Vec<CpgEdge>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpgOutcome {
    pub edges: usize,
    pub status: IngestStatus,
    /// Endpoints no structural ingest defined: kept as bare symbol nodes.
    pub unresolved: usize,
    pub unresolved_examples: Vec<String>,
}

/// Stores a call-graph export; reports the endpoints the graph did not know.
pub async fn push_cpg(kb: &Kb, req: CpgPush, priority: Priority) -> Result<CpgOutcome, KbError> {
    let ctx = push_context(&req.scope, &req.repository)?;
    check_count("edges", req.edges.len(), MAX_CPG_EDGES)?;
    let name = req.name.clone().unwrap_or_else(|| "default".into());
    check_id(&slug(&name)).map_err(|_| invalid("name", "a short name"))?;
    for e in &req.edges {
        if !CPG_EDGE_TYPES.contains(&e.edge_type.as_str()) {
            return Err(invalid(
                "edges",
                format!(
                    "type `{}`: use one of {}",
                    e.edge_type,
                    CPG_EDGE_TYPES.join(", ")
                ),
            ));
        }
        validate::bounded_text("edges", &e.from, 1024)?;
        validate::bounded_text("edges", &e.to, 1024)?;
    }
    // Endpoint names become node keys and labels: no credential in them (see
    // `refuse_credentials_in_structure`).
    let mut scan = evident_kb::credentials::Scan::default();
    scan.all("name", req.name.as_deref())?;
    for (i, e) in req.edges.iter().enumerate() {
        let strings = [
            Some(e.from.as_str()),
            Some(e.to.as_str()),
            e.path.as_deref(),
        ];
        scan.all(&format!("edges[{i}]"), strings.into_iter().flatten())?;
    }
    // Which endpoints does the graph already know (from structural ingest)?
    let vis = Visibility::of(ctx.scope.clone());
    let mut named: Vec<(&str, evident_core::NodeKey)> = req
        .edges
        .iter()
        .flat_map(|e| {
            let (from, to) = evident_code::cpg::edge_keys(&ctx.repository, e);
            [(e.from.as_str(), from), (e.to.as_str(), to)]
        })
        .collect();
    named.sort_unstable();
    named.dedup();
    let (names, keys): (Vec<&str>, Vec<evident_core::NodeKey>) = named.into_iter().unzip();
    let mut known = std::collections::HashSet::new();
    for batch in keys.chunks(500) {
        for n in kb.stores().graph.get_nodes(&vis, batch).await? {
            known.insert(n.key);
        }
    }
    let unresolved: Vec<String> = names
        .iter()
        .zip(&keys)
        .filter(|(_, k)| !known.contains(*k))
        .map(|(n, _)| n.to_string())
        .collect();
    let source = cpg_source(&ctx, &slug(&name), &req.edges);
    let outcome = kb.ingest_prepared(source, priority).await?;
    if !unresolved.is_empty() {
        tracing::info!(repository = %ctx.repository, unresolved = unresolved.len(), "call-graph endpoints not defined by structural ingest; kept as bare symbols");
    }
    Ok(CpgOutcome {
        edges: outcome.edges,
        status: outcome.status,
        unresolved: unresolved.len(),
        unresolved_examples: unresolved.into_iter().take(20).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushed_commits_are_validated() {
        let ok = PushedCommit {
            hash: "abc123".into(),
            parents: vec![],
            author_name: "A".into(),
            author_email: "a@x.io".into(),
            committer_name: None,
            committer_email: None,
            date: "2026-01-01T00:00:00Z".into(),
            message: "m".into(),
            files: vec![PushedChange {
                path: "a.rs".into(),
                old_path: None,
                status: "R095".into(),
                binary: false,
            }],
            diff: Some(
                "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n-x\n+y\n".into(),
            ),
        };
        let info = to_commit_info(ok.clone()).expect("valid");
        assert_eq!(info.files[0].status, ChangeStatus::Renamed);
        assert_eq!(info.files[0].hunks.len(), 1);
        assert!(
            to_commit_info(PushedCommit {
                hash: "zz".into(),
                ..ok.clone()
            })
            .is_err()
        );
        assert!(
            to_commit_info(PushedCommit {
                date: "yesterday".into(),
                ..ok.clone()
            })
            .is_err()
        );
        let bad_status = PushedCommit {
            files: vec![PushedChange {
                path: "a".into(),
                old_path: None,
                status: "Q".into(),
                binary: false,
            }],
            ..ok
        };
        assert!(to_commit_info(bad_status).is_err());
    }
}
