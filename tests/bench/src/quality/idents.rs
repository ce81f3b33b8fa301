//! The code-identifier set, generated from the indexed repository itself: every public Rust
//! definition (`pub fn`, `pub struct`, … as the outline reads them) of the files the git
//! indexer keeps. A query is a definition's name (`token_hash`, `RetrieveQuery`) or the name
//! split into words (`token hash`, `retrieve query`); it is answered when a chunk that
//! *defines* it — a current chunk of its file whose lines hold the declaration's first line —
//! is in the top 1 / top 3. A name defined in several places (`new`) is one query, answered
//! by any of its definitions.

use std::collections::BTreeMap;
use std::path::Path;

use evident_code::{Language, SymbolKind};
use evident_kb::retrieve::Tuning;
use serde_json::{Value, json};

use super::okapi::{Flavour, Okapi};
use super::{Asker, Hit, Mode};

/// Where a name is defined: (path, declaration's first line).
type Definitions = BTreeMap<String, Vec<(String, usize)>>;

/// Every public definition of the repository's Rust files at `repo`'s checkout, by name.
pub fn definitions(repo: &Path) -> Definitions {
    let listed = std::process::Command::new("git")
        .args(["-C", repo.to_str().expect("utf-8 path"), "ls-files"])
        .output()
        .expect("git ls-files");
    let max = evident_sources::kinds::git::default_max_file_bytes() as usize;
    let mut out: Definitions = BTreeMap::new();
    for path in String::from_utf8_lossy(&listed.stdout).lines() {
        if Language::from_path(path) != Some(Language::Rust) {
            continue;
        }
        let Ok(bytes) = std::fs::read(repo.join(path)) else {
            continue;
        };
        if evident_code::skip::skip_file(path, &bytes, max).is_some() {
            continue;
        }
        let src = String::from_utf8_lossy(&bytes);
        let Ok(outline) = evident_code::outline(Language::Rust, path, &src) else {
            continue;
        };
        for s in outline.symbols {
            let public = s.signature.starts_with("pub ") || s.signature.starts_with("pub(crate)");
            if public && s.name.len() > 2 && s.kind != SymbolKind::Class {
                out.entry(s.name.clone())
                    .or_default()
                    .push((path.to_string(), s.line_start));
            }
        }
    }
    out
}

/// `token_hash` → `token hash`, `RetrieveQuery` → `retrieve query`.
pub fn split_words(name: &str) -> String {
    let mut words = Vec::new();
    for piece in name.split(|c: char| !c.is_alphanumeric()) {
        evident_analysis::camel_parts(piece, |p| words.push(p.to_lowercase()));
    }
    words.retain(|w| !w.is_empty());
    words.join(" ")
}

fn defines(hit: &Hit, defs: &[(String, usize)]) -> bool {
    let (Some(path), Some((from, to))) = (&hit.path, hit.lines) else {
        return false;
    };
    defs.iter()
        .any(|(p, line)| p == path && (from..=to).contains(line))
}

/// Every `step`-th name (by name order), so a run stays in minutes; `step` 1 takes all.
pub fn sample(defs: &Definitions, step: usize) -> Vec<(&String, &Vec<(String, usize)>)> {
    defs.iter().step_by(step.max(1)).collect()
}

/// Top-1 / top-3 of the names and of the split names, per mode.
pub async fn run(asker: &Asker<'_>, repo: &Path) -> Value {
    let defs = definitions(repo);
    let step = std::env::var("EVIDENT_IDENTS_STEP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let names = sample(&defs, step);
    println!(
        "identifiers: {} public names ({} definitions), every {step}th asked: {}",
        defs.len(),
        defs.values().map(Vec::len).sum::<usize>(),
        names.len()
    );
    let show = std::env::var("EVIDENT_QUALITY_MISSES").ok();
    let mut out = serde_json::Map::new();
    for mode in [Mode::Bm25, Mode::Hybrid, Mode::HybridGraph, Mode::Rerank] {
        for (label, split) in [("name", false), ("words", true)] {
            let (mut top1, mut top3) = (0usize, 0usize);
            for (name, at) in &names {
                let query = if split {
                    split_words(name)
                } else {
                    (*name).clone()
                };
                let (hits, _) = asker.ask(mode, &query, 10, Tuning::default()).await;
                let rank = hits.iter().position(|h| defines(h, at));
                top1 += usize::from(rank == Some(0));
                top3 += usize::from(rank.is_some_and(|r| r < 3));
                if show.as_deref() == Some(mode.name()) && rank.is_none_or(|r| r >= 3) {
                    let first: Vec<String> = hits
                        .iter()
                        .take(3)
                        .map(|h| {
                            format!(
                                "{}:{:?}",
                                h.path.as_deref().unwrap_or(&h.source_urn),
                                h.lines
                            )
                        })
                        .collect();
                    println!(
                        "  miss {label} {query:?} (defined {:?}) rank {rank:?}: {first:?}",
                        at.first()
                    );
                }
            }
            let n = names.len().max(1) as f64;
            let (r1, r3) = (top1 as f64 / n, top3 as f64 / n);
            println!(
                "identifiers {:<20} {label:<5}: top-1 {r1:.3} top-3 {r3:.3}",
                mode.name()
            );
            out.insert(
                format!("{}/{label}", mode.name()),
                json!({"top1": r1, "top3": r3}),
            );
        }
    }
    okapi_baseline(repo, &names, &mut out);
    out.insert("names".into(), json!(names.len()));
    out.insert("public_names".into(), json!(defs.len()));
    Value::Object(out)
}

/// The same names asked of a stemmed Okapi BM25 over HEAD's files (path and text), in the
/// same run. Its unit is the file: a name is answered when a file defining it is ranked, a
/// looser test than Evident's (the chunk holding the declaration), so the ratio is not
/// flattering to Evident.
fn okapi_baseline(
    repo: &Path,
    names: &[(&String, &Vec<(String, usize)>)],
    out: &mut serde_json::Map<String, Value>,
) {
    let docs = super::repo::head_files(repo);
    let stemmed = Flavour {
        stem: true,
        ..Flavour::REPO
    };
    let idx = Okapi::with(stemmed, docs.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    for (label, split) in [("name", false), ("words", true)] {
        let (mut top1, mut top3) = (0usize, 0usize);
        for (name, at) in names {
            let query = if split {
                split_words(name)
            } else {
                (*name).clone()
            };
            let rank = idx
                .search(&query, 3)
                .iter()
                .position(|p| at.iter().any(|(path, _)| path == p));
            top1 += usize::from(rank == Some(0));
            top3 += usize::from(rank.is_some());
        }
        let n = names.len().max(1) as f64;
        let (r1, r3) = (top1 as f64 / n, top3 as f64 / n);
        println!(
            "identifiers {:<20} {label:<5}: top-1 {r1:.3} top-3 {r3:.3}",
            "okapi-stemmed (files)"
        );
        out.insert(
            format!("okapi-stemmed/{label}"),
            json!({"top1": r1, "top3": r3}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words() {
        assert_eq!(split_words("token_hash"), "token hash");
        assert_eq!(split_words("RetrieveQuery"), "retrieve query");
        assert_eq!(split_words("HTTPServer2"), "http server2");
        assert_eq!(split_words("MAX_RESULTS"), "max results");
    }

    #[test]
    fn a_hit_defines_a_name_when_its_lines_hold_the_declaration() {
        let hit = |path: &str, lines: (usize, usize)| Hit {
            kind: "code".into(),
            source_urn: "u".into(),
            path: Some(path.into()),
            lines: Some(lines),
            commit: None,
            note: String::new(),
        };
        let defs = vec![("a.rs".to_string(), 12)];
        assert!(defines(&hit("a.rs", (10, 20)), &defs));
        assert!(!defines(&hit("a.rs", (13, 20)), &defs));
        assert!(!defines(&hit("b.rs", (10, 20)), &defs));
    }
}
