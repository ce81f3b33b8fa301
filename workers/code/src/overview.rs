//! The branch overview: one generated document per branch — languages and sizes, the file
//! tree in outline, README and documentation files, recent activity — ingested as chunks of
//! kind `git-overview`, with `repository –has_branch→ branch` evidenced by it.

use std::collections::BTreeMap;

use evident_core::chunking::{ChunkingConfig, chunk_text};
use evident_core::hashing::content_hash;
use evident_core::prepared::props;
use evident_core::secrets::redact;
use evident_core::{
    EvidenceSpec, Locator, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource, keys,
};
use serde_json::Map;

use crate::Language;
use crate::skip::is_documentation;
use crate::structure::RepoContext;

/// A commit as listed under recent activity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitSummary {
    pub hash: String,
    pub date: String,
    pub author: String,
    pub subject: String,
}

pub struct OverviewInput<'a> {
    pub url: Option<&'a str>,
    pub branch: &'a str,
    pub tip: &'a str,
    /// Every file of the branch with its size in bytes.
    pub files: &'a [(String, u64)],
    /// The README (path, text), if the branch has one.
    pub readme: Option<(&'a str, &'a str)>,
    /// Newest first.
    pub recent: &'a [CommitSummary],
}

pub fn overview_urn(source_id: &str, branch: &str) -> String {
    format!("git:{source_id}:overview:{branch}")
}

/// The language a file counts under in the overview.
fn language_of(path: &str) -> String {
    if let Some(l) = Language::from_path(path) {
        return l.name().to_string();
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((_, ext)) => ext.to_ascii_lowercase(),
        None => "other".into(),
    }
}

/// The overview's Markdown text.
pub fn overview_text(repository: &str, o: &OverviewInput<'_>) -> String {
    let mut s = format!("# {repository} — branch {}\n\n", o.branch);
    s.push_str(&format!(
        "Repository {repository}{}, branch {}, at commit {}. {} files.\n\n",
        o.url.map(|u| format!(" ({u})")).unwrap_or_default(),
        o.branch,
        o.tip,
        o.files.len()
    ));

    let mut langs: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    for (path, size) in o.files {
        let e = langs.entry(language_of(path)).or_default();
        e.0 += 1;
        e.1 += size;
    }
    let mut langs: Vec<(String, (usize, u64))> = langs.into_iter().collect();
    langs.sort_by(|a, b| b.1.1.cmp(&a.1.1).then(a.0.cmp(&b.0)));
    s.push_str("## Languages\n\n");
    for (lang, (files, bytes)) in langs.iter().take(15) {
        s.push_str(&format!(
            "- {lang}: {files} files, {} KiB\n",
            bytes.div_ceil(1024)
        ));
    }

    let mut dirs: BTreeMap<String, usize> = BTreeMap::new();
    for (path, _) in o.files {
        let parts: Vec<&str> = path.split('/').collect();
        for depth in 1..parts.len().min(3) {
            *dirs.entry(parts[..depth].join("/") + "/").or_default() += 1;
        }
    }
    let mut dirs: Vec<(String, usize)> = dirs.into_iter().collect();
    dirs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    dirs.truncate(40);
    dirs.sort();
    s.push_str("\n## Layout\n\n");
    for (dir, n) in &dirs {
        let depth = dir.matches('/').count().saturating_sub(1);
        s.push_str(&format!("{}- {dir} ({n} files)\n", "  ".repeat(depth)));
    }

    let docs: Vec<&str> = o
        .files
        .iter()
        .map(|(p, _)| p.as_str())
        .filter(|p| is_documentation(p))
        .take(50)
        .collect();
    if !docs.is_empty() {
        s.push_str("\n## Documentation\n\n");
        for d in docs {
            s.push_str(&format!("- {d}\n"));
        }
    }
    if !o.recent.is_empty() {
        s.push_str("\n## Recent activity\n\n");
        for c in o.recent.iter().take(20) {
            s.push_str(&format!(
                "- {} {} {}: {}\n",
                c.date,
                &c.hash[..c.hash.len().min(10)],
                c.author,
                c.subject
            ));
        }
    }
    if let Some((path, text)) = o.readme {
        s.push_str(&format!("\n## {path}\n\n"));
        let cut: String = text.chars().take(16 * 1024).collect();
        s.push_str(&cut);
        s.push('\n');
    }
    s
}

/// The overview as a prepared source.
pub fn overview_source(
    ctx: &RepoContext,
    o: &OverviewInput<'_>,
    chunking: &ChunkingConfig,
) -> PreparedSource {
    let raw = overview_text(&ctx.repository, o);
    let text = redact(&raw).map(|(t, _)| t).unwrap_or(raw);
    let uri = format!("{}@{}", ctx.repository, o.branch);
    let chunks: Vec<PreparedChunk> = chunk_text(&text, chunking)
        .into_iter()
        .map(|p| {
            let section = (!p.heading_path.is_empty()).then(|| p.heading_path.join(" > "));
            let mut c = PreparedChunk::new(
                p.text,
                Locator::Document {
                    uri: uri.clone(),
                    char_start: p.char_start,
                    char_end: p.char_end,
                    page: None,
                    section: section.clone(),
                },
            );
            c.refs = vec![
                keys::repository(&ctx.repository),
                keys::branch(&ctx.repository, o.branch),
            ];
            c.context = section;
            c
        })
        .collect();
    let repo = keys::repository(&ctx.repository);
    let branch = keys::branch(&ctx.repository, o.branch);
    PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: overview_urn(&ctx.source_id, o.branch),
        kind: "git-overview".into(),
        title: Some(format!("{} @ {}", ctx.repository, o.branch)),
        // Versioned by the key scheme: the same text under new keys is written again.
        fingerprint: content_hash(&format!("keys-v{}\0{text}", keys::KEYS_VERSION)),
        observed_at: None,
        chunks,
        nodes: vec![
            PreparedNode {
                key: repo.clone(),
                node_type: "repository".into(),
                label: ctx.repository.clone(),
                props: props([
                    ("name", ctx.repository.clone().into()),
                    (
                        "url",
                        o.url
                            .map(serde_json::Value::from)
                            .unwrap_or(serde_json::Value::Null),
                    ),
                ]),
                evidence: EvidenceSpec::AllChunks,
            },
            PreparedNode {
                key: branch.clone(),
                node_type: "branch".into(),
                label: o.branch.to_string(),
                props: props([
                    ("name", o.branch.into()),
                    ("repository", ctx.repository.clone().into()),
                    ("tip", o.tip.into()),
                ]),
                evidence: EvidenceSpec::AllChunks,
            },
        ],
        edges: vec![PreparedEdge {
            from: repo,
            to: branch,
            edge_type: "has_branch".into(),
            props: Map::new(),
            evidence: EvidenceSpec::AllChunks,
        }],
        aliases: Vec::new(),
        merges: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evident_core::Scope;

    #[test]
    fn the_overview_summarises_languages_layout_docs_and_activity() {
        let files = vec![
            ("src/main.rs".to_string(), 4000u64),
            ("src/lib.rs".to_string(), 2000),
            ("src/api/routes.rs".to_string(), 3000),
            ("web/app.ts".to_string(), 1000),
            ("README.md".to_string(), 500),
            ("docs/guide.md".to_string(), 700),
        ];
        let recent = vec![CommitSummary {
            hash: "abcdef1234567".into(),
            date: "2026-11-01".into(),
            author: "Jan".into(),
            subject: "Add routes".into(),
        }];
        let o = OverviewInput {
            url: Some("https://example.com/shop.git"),
            branch: "main",
            tip: "abcdef1234567",
            files: &files,
            readme: Some(("README.md", "# Shop\n\nA shop backend.")),
            recent: &recent,
        };
        let text = overview_text("shop", &o);
        assert!(text.contains("- rust: 3 files, 9 KiB"), "{text}");
        assert!(text.contains("- src/ (3 files)"), "{text}");
        assert!(text.contains("  - src/api/ (1 files)"), "{text}");
        assert!(text.contains("- docs/guide.md"));
        assert!(text.contains("Jan: Add routes"));
        assert!(text.contains("A shop backend."));
        let ctx = RepoContext {
            source_id: "acme.shop".into(),
            repository: "shop".into(),
            scope: Scope::client("acme"),
        };
        let p = overview_source(&ctx, &o, &ChunkingConfig::default());
        assert_eq!(p.kind, "git-overview");
        assert_eq!(p.edges[0].edge_type, "has_branch");
        assert!(!p.chunks.is_empty());
    }
}
