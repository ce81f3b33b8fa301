//! One file of a branch as a prepared source: chunks at symbol boundaries with
//! `{path, lineStart, lineEnd, symbol, commit}` locators, the file and symbol nodes, and the
//! edges `branch –contains_file→ file –contains→ class –has_method→ method`, `file –imports→`.
//!
//! A file's source URN names its branch (`git:{source}:blob:{branch}:{path}`), so each branch
//! holds its own version; its fingerprint covers the content but not the commit, so a file
//! that did not change between commits is skipped outright (its chunks keep citing the commit
//! they were first indexed at, where the cited lines are identical).

use evident_core::chunking::{ChunkingConfig, chunk_text};
use evident_core::hashing::content_hash;
use evident_core::prepared::props;
use evident_core::{
    EvidenceSpec, Locator, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource, Scope, keys,
};
use serde_json::{Map, Value};

use crate::Language;
use crate::chunks::{CodeChunk, CodeChunking, chunk_code, chunk_lines};
use crate::outline::{Import, Outline, OutlineError, Symbol, SymbolKind, outline};
use crate::skip::is_documentation;
use evident_core::secrets::redact;

/// Bump when what a file becomes changes, so every file is re-derived once.
pub const STRUCTURE_VERSION: &str = "structure-v5";

/// The repository a file belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoContext {
    /// The registered source's id (part of every source URN).
    pub source_id: String,
    /// The repository's name in node keys (`repository:{name}`, `file:{name}/{path}`).
    pub repository: String,
    pub scope: Scope,
}

/// One file at one commit of one branch.
#[derive(Debug, Clone, Copy)]
pub struct FileVersion<'a> {
    pub branch: &'a str,
    pub commit: Option<&'a str>,
    pub path: &'a str,
    pub content: &'a str,
}

pub fn file_urn(source_id: &str, branch: &str, path: &str) -> String {
    format!("{}{path}", branch_files_prefix(source_id, branch))
}

/// The URN prefix of every file of a branch.
pub fn branch_files_prefix(source_id: &str, branch: &str) -> String {
    format!("git:{source_id}:blob:{branch}:")
}

/// What Evident understands of a file.
#[derive(Debug, Clone)]
pub enum Structure {
    /// Parsed: symbols and imports.
    Code(Outline),
    /// Documentation: chunked as prose.
    Documentation,
    /// Other text (configuration, languages without a grammar): line windows.
    Text,
}

/// Parses a file when Evident knows its language.
pub fn analyse(path: &str, content: &str) -> Result<Structure, OutlineError> {
    match Language::from_path(path) {
        Some(lang) => Ok(Structure::Code(outline(lang, path, content)?)),
        None if is_documentation(path) => Ok(Structure::Documentation),
        None => Ok(Structure::Text),
    }
}

/// [`analyse`], with the file's semantic facts read from the same syntax tree (`None` for a
/// file that is not code, or of a language without semantic extraction).
pub fn analyse_with_facts(
    path: &str,
    content: &str,
) -> Result<(Structure, Option<crate::semantic::FileFacts>), OutlineError> {
    match Language::from_path(path) {
        Some(lang) => {
            let (o, facts) = crate::outline::outline_with_facts(lang, path, content, true)?;
            Ok((Structure::Code(o), facts))
        }
        None => analyse(path, content).map(|s| (s, None)),
    }
}

fn file_node(ctx: &RepoContext, path: &str, language: Option<&str>) -> PreparedNode {
    PreparedNode {
        key: keys::file(&ctx.repository, path),
        node_type: "file".into(),
        label: path.to_string(),
        props: props([
            ("path", path.into()),
            ("language", language.map(Value::from).unwrap_or(Value::Null)),
            ("repository", ctx.repository.clone().into()),
        ]),
        evidence: EvidenceSpec::AllChunks,
    }
}

/// A symbol's key: a function or method is a callable (`…name()`), anything else a type.
pub fn symbol_key(repository: &str, s: &Symbol) -> evident_core::NodeKey {
    if s.kind.is_type() {
        keys::symbol(repository, &s.qualified_name)
    } else {
        keys::callable(repository, &s.qualified_name)
    }
}

fn symbol_node(
    ctx: &RepoContext,
    path: &str,
    lang: &str,
    s: &Symbol,
    chunk: usize,
) -> PreparedNode {
    PreparedNode {
        key: symbol_key(&ctx.repository, s),
        node_type: s.kind.as_str().into(),
        label: s.name.clone(),
        props: props([
            ("name", s.name.clone().into()),
            ("qualifiedName", s.qualified_name.clone().into()),
            ("path", path.into()),
            ("lineStart", s.line_start.into()),
            ("lineEnd", s.line_end.into()),
            ("signature", s.signature.clone().into()),
            ("language", lang.into()),
            ("repository", ctx.repository.clone().into()),
        ]),
        evidence: EvidenceSpec::chunk(chunk),
    }
}

fn edge(
    from: evident_core::NodeKey,
    t: &str,
    to: evident_core::NodeKey,
    evidence: EvidenceSpec,
) -> PreparedEdge {
    PreparedEdge {
        from,
        to,
        edge_type: t.into(),
        props: Map::new(),
        evidence,
    }
}

/// Index of the chunk holding 1-based `line` (the nearest before it otherwise).
fn chunk_at(chunks: &[CodeChunk], line: usize) -> usize {
    chunks
        .iter()
        .rposition(|c| c.line_start <= line)
        .unwrap_or(0)
}

/// The file's nodes (the file, its symbols) and edges (`contains_file`, `contains`,
/// `has_method`, `imports`); `chunk_of(line)` says which chunk evidences a 1-based line.
fn file_graph(
    ctx: &RepoContext,
    branch: &str,
    path: &str,
    language: Option<&str>,
    symbols: &[Symbol],
    imports: &[Import],
    chunk_of: impl Fn(usize) -> usize,
) -> (Vec<PreparedNode>, Vec<PreparedEdge>) {
    let file_key = keys::file(&ctx.repository, path);
    let lang = language.unwrap_or("text");
    let mut nodes = vec![file_node(ctx, path, language)];
    let mut edges = vec![edge(
        keys::branch(&ctx.repository, branch),
        "contains_file",
        file_key.clone(),
        EvidenceSpec::chunk(0),
    )];
    // Types declared here: a member of a type declared elsewhere (a Go method in another
    // file than its receiver, a Rust `impl` of another module's type) is also contained by
    // this file, so every symbol is reachable from the file that declares it.
    let local_types: std::collections::HashSet<&str> = symbols
        .iter()
        .filter(|s| s.kind.is_type())
        .map(|s| s.qualified_name.as_str())
        .collect();
    for s in symbols {
        let at = chunk_of(s.line_start);
        let key = symbol_key(&ctx.repository, s);
        nodes.push(symbol_node(ctx, path, lang, s, at));
        if let Some(p) = &s.parent {
            let t = if s.kind == SymbolKind::Method {
                "has_method"
            } else {
                "contains"
            };
            edges.push(edge(
                keys::symbol(&ctx.repository, p),
                t,
                key.clone(),
                EvidenceSpec::chunk(at),
            ));
        }
        if s.parent.as_deref().is_none_or(|p| !local_types.contains(p)) {
            edges.push(edge(
                file_key.clone(),
                "contains",
                key,
                EvidenceSpec::chunk(at),
            ));
        }
    }
    for i in imports {
        edges.push(edge(
            file_key.clone(),
            "imports",
            keys::import(&ctx.repository, &i.target),
            EvidenceSpec::chunk(chunk_of(i.line)),
        ));
    }
    (nodes, edges)
}

/// A file known only by its outline (an external indexer sent symbols without content): one
/// chunk per symbol stating it, with the symbol's line span, and the same graph as a parsed
/// file. `None` without symbols.
pub fn outline_source(
    ctx: &RepoContext,
    branch: &str,
    commit: Option<&str>,
    path: &str,
    language: Option<&str>,
    symbols: &[Symbol],
    imports: &[Import],
) -> Option<PreparedSource> {
    if symbols.is_empty() {
        return None;
    }
    let chunks: Vec<PreparedChunk> = symbols
        .iter()
        .map(|s| {
            let mut text = format!("{} {} in {path}", s.kind.as_str(), s.qualified_name);
            if !s.signature.is_empty() {
                text.push_str(&format!("\n{}", s.signature));
            }
            let mut c = PreparedChunk::new(
                text,
                Locator::File {
                    path: path.to_string(),
                    line_start: s.line_start,
                    line_end: s.line_end,
                    commit: commit.map(str::to_string),
                    symbol: Some(s.qualified_name.clone()),
                },
            );
            c.refs = vec![
                keys::file(&ctx.repository, path),
                symbol_key(&ctx.repository, s),
            ];
            c
        })
        .collect();
    // Evidence for a line: the symbol declared there, else the nearest before it.
    let chunk_of = |line: usize| {
        symbols
            .iter()
            .rposition(|s| s.line_start <= line)
            .unwrap_or(0)
    };
    let (nodes, edges) = file_graph(ctx, branch, path, language, symbols, imports, chunk_of);
    let listing: String = chunks
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    Some(PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: file_urn(&ctx.source_id, branch, path),
        kind: "code".into(),
        title: Some(path.to_string()),
        fingerprint: content_hash(&format!(
            "{STRUCTURE_VERSION}\0outline\0{}\0{branch}\0{path}\0{listing}\0{:?}",
            ctx.repository,
            imports.iter().map(|i| &i.target).collect::<Vec<_>>()
        )),
        observed_at: None,
        chunks,
        nodes,
        edges,
        aliases: Vec::new(),
        merges: Vec::new(),
    })
}

/// Builds the prepared source of one file; `None` when it has no content worth a chunk.
pub fn file_source(
    ctx: &RepoContext,
    f: &FileVersion<'_>,
    structure: &Structure,
    cfg: &CodeChunking,
) -> Option<PreparedSource> {
    file_source_with(ctx, f, structure, cfg, None)
}

/// [`file_source`] with the file's semantic edges (`calls`, `extends`, `implements`,
/// `uses_type`, each evidenced by the chunk holding the use) and each symbol's unresolved
/// callees (`callsUnresolved`); the resolution's digest joins the fingerprint, so a file
/// whose resolution changed is written again even when its text did not.
pub fn file_source_with(
    ctx: &RepoContext,
    f: &FileVersion<'_>,
    structure: &Structure,
    cfg: &CodeChunking,
    semantic: Option<&crate::semantic::Resolution>,
) -> Option<PreparedSource> {
    let (content, redacted) = match redact(f.content) {
        Some((text, _)) => (std::borrow::Cow::Owned(text), true),
        None => (std::borrow::Cow::Borrowed(f.content), false),
    };
    let (chunks, symbols, imports, language): (Vec<CodeChunk>, &[Symbol], &[Import], Option<&str>) =
        match structure {
            Structure::Code(o) => (
                chunk_code(&content, &o.symbols, cfg),
                &o.symbols,
                &o.imports,
                Some(o.language.name()),
            ),
            Structure::Documentation => (doc_chunks(&content, cfg), &[], &[], None),
            Structure::Text => (chunk_lines(&content, cfg), &[], &[], None),
        };
    if chunks.is_empty() {
        return None;
    }
    let file_key = keys::file(&ctx.repository, f.path);
    let prepared_chunks: Vec<PreparedChunk> = chunks
        .iter()
        .map(|c| {
            let mut pc = PreparedChunk::new(
                c.text.clone(),
                Locator::File {
                    path: f.path.to_string(),
                    line_start: c.line_start,
                    line_end: c.line_end,
                    commit: f.commit.map(str::to_string),
                    symbol: c.symbol.clone(),
                },
            );
            pc.refs = std::iter::once(file_key.clone())
                .chain(
                    c.declares
                        .iter()
                        .map(|i| symbol_key(&ctx.repository, &symbols[*i])),
                )
                .collect();
            pc.context = Some(match &c.symbol {
                Some(s) => format!("{} {s}", f.path),
                None => f.path.to_string(),
            });
            if matches!(structure, Structure::Documentation) {
                pc.kind = Some("git-doc".into());
            }
            pc
        })
        .collect();

    let (mut nodes, mut edges) =
        file_graph(ctx, f.branch, f.path, language, symbols, imports, |line| {
            chunk_at(&chunks, line)
        });
    let mut digest = String::new();
    if let Some(res) = semantic {
        edges.extend(crate::semantic::semantic_edges(
            &ctx.repository,
            symbols,
            res,
            |line| chunk_at(&chunks, line),
        ));
        // Symbol nodes follow the file node, in symbol order.
        for (i, names) in crate::semantic::unresolved_by_symbol(res) {
            if let Some(n) = nodes.get_mut(i + 1) {
                n.props.insert("callsUnresolved".into(), Value::from(names));
            }
        }
        digest = res.digest();
    }
    Some(PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: file_urn(&ctx.source_id, f.branch, f.path),
        kind: "code".into(),
        title: Some(f.path.to_string()),
        fingerprint: content_hash(&format!(
            "{STRUCTURE_VERSION}\0{}\0{}\0{}\0{}\0{}\0{redacted}{digest}",
            ctx.repository,
            f.branch,
            f.path,
            cfg.max_tokens,
            content_hash(f.content)
        )),
        observed_at: None,
        chunks: prepared_chunks,
        nodes,
        edges,
        aliases: Vec::new(),
        merges: Vec::new(),
    })
}

/// Documentation cut like any document (headings, paragraphs), with line spans.
fn doc_chunks(content: &str, cfg: &CodeChunking) -> Vec<CodeChunk> {
    let pieces = chunk_text(
        content,
        &ChunkingConfig {
            max_tokens: cfg.max_tokens,
            ..ChunkingConfig::default()
        },
    );
    let (mut line, mut at) = (1, 0);
    pieces
        .into_iter()
        .map(|p| {
            line += content[at..p.byte_start].matches('\n').count();
            at = p.byte_start;
            let start = line;
            let end = start + p.text.matches('\n').count();
            CodeChunk {
                symbol: (!p.heading_path.is_empty()).then(|| p.heading_path.join(" > ")),
                text: p.text,
                line_start: start,
                line_end: end,
                declares: Vec::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> RepoContext {
        RepoContext {
            source_id: "acme.shop".into(),
            repository: "shop".into(),
            scope: Scope::client("acme"),
        }
    }

    #[test]
    fn a_java_file_becomes_file_class_and_method_nodes_with_evidence() {
        let src = "package shop;\n\nimport java.util.List;\n\npublic class Cart {\n    private List<Item> items;\n\n    public int total() {\n        int sum = 0;\n        for (Item i : items) { sum += i.price(); }\n        return sum;\n    }\n}\n";
        let f = FileVersion {
            branch: "main",
            commit: Some("0123456789abcdef0123456789abcdef01234567"),
            path: "src/shop/Cart.java",
            content: src,
        };
        let s = analyse(f.path, src).expect("parse");
        let p = file_source(&ctx(), &f, &s, &CodeChunking::default()).expect("source");
        assert_eq!(p.source_urn, "git:acme.shop:blob:main:src/shop/Cart.java");
        let types: Vec<(&str, &str)> = p
            .nodes
            .iter()
            .map(|n| (n.node_type.as_str(), n.key.as_str()))
            .collect();
        assert!(
            types.contains(&("file", "file:shop/src/shop/Cart.java")),
            "{types:?}"
        );
        assert!(
            types.contains(&("class", "symbol:shop/shop.Cart")),
            "{types:?}"
        );
        assert!(
            types.contains(&("method", "symbol:shop/shop.Cart.total()")),
            "{types:?}"
        );
        let edges: Vec<(&str, &str, &str)> = p
            .edges
            .iter()
            .map(|e| (e.from.as_str(), e.edge_type.as_str(), e.to.as_str()))
            .collect();
        for e in [
            (
                "branch:shop/main",
                "contains_file",
                "file:shop/src/shop/Cart.java",
            ),
            (
                "file:shop/src/shop/Cart.java",
                "contains",
                "symbol:shop/shop.Cart",
            ),
            (
                "symbol:shop/shop.Cart",
                "has_method",
                "symbol:shop/shop.Cart.total()",
            ),
            (
                "file:shop/src/shop/Cart.java",
                "imports",
                "import:java.util.List",
            ),
        ] {
            assert!(edges.contains(&e), "{e:?} in {edges:?}");
        }
        match &p.chunks[0].locator {
            Locator::File {
                path,
                line_start,
                commit,
                ..
            } => {
                assert_eq!((path.as_str(), *line_start), ("src/shop/Cart.java", 1));
                assert!(commit.is_some());
            }
            other => panic!("{other:?}"),
        }
        // Unchanged content at a later commit has the same fingerprint: skipped, not redone.
        let later = FileVersion {
            commit: Some("ffff"),
            ..f
        };
        let again = file_source(&ctx(), &later, &s, &CodeChunking::default()).expect("source");
        assert_eq!(again.fingerprint, p.fingerprint);
    }

    #[test]
    fn members_differing_in_case_or_kind_are_distinct_nodes() {
        let src = "package com.acme;\n\npublic class Cart {\n    public static Builder builder() {\n        return new Builder();\n    }\n\n    public static class Builder {\n        Cart build() { return new Cart(); }\n    }\n}\n";
        let f = FileVersion {
            branch: "main",
            commit: None,
            path: "src/com/acme/Cart.java",
            content: src,
        };
        let s = analyse(f.path, src).expect("parse");
        let p = file_source(&ctx(), &f, &s, &CodeChunking::default()).expect("source");
        let keys: Vec<(&str, &str)> = p
            .nodes
            .iter()
            .map(|n| (n.node_type.as_str(), n.key.as_str()))
            .collect();
        for want in [
            ("file", "file:shop/src/com/acme/Cart.java"),
            ("class", "symbol:shop/com.acme.Cart"),
            ("method", "symbol:shop/com.acme.Cart.builder()"),
            ("class", "symbol:shop/com.acme.Cart.Builder"),
            ("method", "symbol:shop/com.acme.Cart.Builder.build()"),
        ] {
            assert!(keys.contains(&want), "{want:?} in {keys:?}");
        }
        let distinct: std::collections::HashSet<&str> = keys.iter().map(|(_, k)| *k).collect();
        assert_eq!(distinct.len(), keys.len(), "{keys:?}");
        assert!(p.edges.iter().any(|e| e.edge_type == "has_method"
            && e.from.as_str() == "symbol:shop/com.acme.Cart.Builder"
            && e.to.as_str() == "symbol:shop/com.acme.Cart.Builder.build()"));
    }

    #[test]
    fn go_named_types_and_methods_in_another_file_are_reachable_from_their_file() {
        let types = "package flag\n\ntype boolValue bool\n\ntype ErrorHandling int\n\ntype parseFunc func(string) error\n\ntype Alias = boolValue\n";
        let methods = "package flag\n\nfunc (b *boolValue) Set(s string) error { return nil }\n\nfunc (b *boolValue) String() string { return \"\" }\n\nfunc (e ErrorHandling) set() {}\n";
        let graph = |path: &str, src: &str| {
            let f = FileVersion {
                branch: "main",
                commit: None,
                path,
                content: src,
            };
            let s = analyse(path, src).expect("parse");
            let p = file_source(&ctx(), &f, &s, &CodeChunking::default()).expect("source");
            let nodes: Vec<(String, String)> = p
                .nodes
                .iter()
                .map(|n| (n.node_type.clone(), n.key.as_str().to_string()))
                .collect();
            let edges: Vec<(String, String, String)> = p
                .edges
                .iter()
                .map(|e| {
                    (
                        e.from.as_str().to_string(),
                        e.edge_type.clone(),
                        e.to.as_str().to_string(),
                    )
                })
                .collect();
            (nodes, edges)
        };
        let (nodes, edges) = graph("flag/types.go", types);
        for name in ["boolValue", "ErrorHandling", "parseFunc", "Alias"] {
            let key = format!("symbol:shop/flag.{name}");
            assert!(
                nodes.contains(&("type".to_string(), key.clone())),
                "{name} in {nodes:?}"
            );
            assert!(edges.contains(&("file:shop/flag/types.go".into(), "contains".into(), key)));
        }
        let (nodes, edges) = graph("flag/methods.go", methods);
        for (recv, m) in [
            ("boolValue", "Set"),
            ("boolValue", "String"),
            ("ErrorHandling", "set"),
        ] {
            let key = format!("symbol:shop/flag.{recv}.{m}()");
            assert!(
                nodes.contains(&("method".to_string(), key.clone())),
                "{key}"
            );
            for e in [
                (format!("symbol:shop/flag.{recv}"), "has_method", &key),
                ("file:shop/flag/methods.go".into(), "contains", &key),
            ] {
                assert!(
                    edges.contains(&(e.0.clone(), e.1.to_string(), e.2.clone())),
                    "{e:?} in {edges:?}"
                );
            }
        }
    }

    #[test]
    fn an_outline_without_content_still_cites_each_symbol() {
        let symbols = vec![
            Symbol {
                kind: SymbolKind::Class,
                name: "Cart".into(),
                qualified_name: "shop.Cart".into(),
                parent: None,
                signature: "public class Cart".into(),
                line_start: 3,
                line_end: 40,
                byte_start: 0,
                byte_end: 0,
            },
            Symbol {
                kind: SymbolKind::Method,
                name: "total".into(),
                qualified_name: "shop.Cart.total".into(),
                parent: Some("shop.Cart".into()),
                signature: "int total()".into(),
                line_start: 10,
                line_end: 20,
                byte_start: 0,
                byte_end: 0,
            },
        ];
        let imports = vec![Import {
            target: "java.util.List".into(),
            line: 1,
        }];
        let p = outline_source(
            &ctx(),
            "main",
            Some("abc"),
            "Cart.java",
            Some("java"),
            &symbols,
            &imports,
        )
        .expect("source");
        assert_eq!(p.chunks.len(), 2);
        assert!(
            p.edges
                .iter()
                .any(|e| e.edge_type == "has_method" && e.evidence == EvidenceSpec::chunk(1))
        );
        assert!(p.edges.iter().any(|e| e.edge_type == "imports"));
        assert!(outline_source(&ctx(), "main", None, "x", None, &[], &[]).is_none());
    }

    #[test]
    fn credentials_in_a_file_are_redacted_not_indexed() {
        let src = "db:\n  host: localhost\n  password: \"s3cr3t-P@ssw0rd-value\"\n  port: 5432\n";
        let f = FileVersion {
            branch: "main",
            commit: None,
            path: "config/app.yaml",
            content: src,
        };
        let p =
            file_source(&ctx(), &f, &Structure::Text, &CodeChunking::default()).expect("source");
        let all: String = p.chunks.iter().map(|c| c.text.as_str()).collect();
        assert!(
            !all.contains("s3cr3t") && all.contains("port: 5432"),
            "{all}"
        );
    }

    #[test]
    fn documentation_keeps_headings_and_lines() {
        let src = "# Guide\n\nIntro text here.\n\n## Install\n\nRun the installer.\n";
        let f = FileVersion {
            branch: "main",
            commit: None,
            path: "docs/guide.md",
            content: src,
        };
        let p = file_source(
            &ctx(),
            &f,
            &analyse(f.path, src).expect("doc"),
            &CodeChunking::default(),
        )
        .expect("source");
        assert_eq!(p.chunks[0].kind.as_deref(), Some("git-doc"));
        let last = p.chunks.last().expect("chunk");
        match &last.locator {
            Locator::File { line_end, .. } => assert_eq!(*line_end, 7),
            other => panic!("{other:?}"),
        }
    }
}
