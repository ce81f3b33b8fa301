//! `fidelity-semantic [--languages python,java] [--java-src DIR] [--python-sdist NAME==VER]`:
//! the semantic edges the git indexer stores (`calls`, `extends`, `implements`, `uses_type`)
//! against compiler-grade oracles on real third-party projects, precision and recall per
//! language and edge type; then the incremental re-resolution of a 5-file commit.
//!
//! Corpora, fetched with the registries' own clients: Python — the sdist of `rich` from PyPI
//! (`pip download`); Java — Apache Commons Lang 3 from Debian's source package
//! `libcommons-lang3-java` (`apt-get source`, which needs a `deb-src` entry; or `--java-src`
//! naming a `src/main/java`). Each is committed into a git repository and indexed through the
//! real indexer (poll → tasks → outline, facts, symbol table → embedded store). Oracles, run
//! on the same files in the same command:
//! - Python: jedi (`Script.goto`, imports followed) on every call's callee name, every class
//!   base and every name in an annotation (`jedi_oracle.py`);
//! - Java: `javac` on the corpus, then `javap -v -p` on its classes: every invoke
//!   instruction's declaring method (owner's superclasses and interfaces walked) at its
//!   `LineNumberTable` line, class headers, and the corpus types in member descriptors,
//!   generic signatures and annotations (`javap_oracle.py`).
//!
//! Both sides are compared as edges between stored nodes: an oracle use is attributed like
//! the indexer attributes it (the innermost stored symbol whose lines hold it; calls only
//! from functions and methods), its target mapped to the stored symbol defining it (Python:
//! name and line; Java: class, name and argument count; a Python class called is its
//! `__init__`, a Java `new` the constructor). Targets outside the repository are not edges
//! on either side. Precision = shared / ours, recall = shared / oracle's.

mod incremental;
mod map;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

use crate::Args;
use crate::git::{Corpus, indexer, repository_of, walk};

pub(crate) const EDGE_TYPES: [&str; 4] = ["calls", "extends", "implements", "uses_type"];
const PYTHON_SDIST: &str = "rich==13.7.1";
const JAVA_SOURCE_PACKAGE: &str = "libcommons-lang3-java";

const JEDI_ORACLE: &str = include_str!("jedi_oracle.py");
const JAVAP_ORACLE: &str = include_str!("javap_oracle.py");

/// A corpus, its origin, and the oracle's facts once run.
struct Source {
    corpus: Corpus,
    origin: String,
}

fn run_ok(cmd: &mut Command) -> Option<std::process::Output> {
    cmd.output().ok().filter(|o| o.status.success())
}

fn python_corpus(scratch: &Path, spec: &str) -> Result<Source, String> {
    let dir = scratch.join("sdist");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    run_ok(
        Command::new("pip3")
            .args([
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                spec,
                "-d",
            ])
            .arg(&dir),
    )
    .ok_or(format!("pip download {spec} failed"))?;
    let tarball = std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .ok_or("no sdist tarball")?;
    run_ok(
        Command::new("tar")
            .current_dir(&dir)
            .arg("xzf")
            .arg(&tarball),
    )
    .ok_or("tar failed")?;
    let stem = tarball
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".tar.gz"))
        .ok_or("tarball name")?;
    let root = dir.join(stem);
    let files = walk(
        &root,
        &["py"],
        &["tests", "test", "docs", "examples"],
        usize::MAX,
    );
    Ok(Source {
        corpus: Corpus {
            language: "python",
            root,
            files,
        },
        origin: format!("PyPI sdist {spec}"),
    })
}

fn java_corpus(scratch: &Path, given: Option<PathBuf>) -> Result<Source, String> {
    let (root, origin) = match given {
        Some(d) => (d.clone(), format!("--java-src {}", d.display())),
        None => {
            let dir = scratch.join("debian-src");
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            run_ok(
                Command::new("apt-get")
                    .current_dir(&dir)
                    .args(["source", "--download-only", "-qq", JAVA_SOURCE_PACKAGE]),
            )
            .ok_or(format!(
                "apt-get source {JAVA_SOURCE_PACKAGE} failed (it needs a deb-src entry and `apt-get update`; or pass --java-src DIR)"
            ))?;
            let orig = std::fs::read_dir(&dir)
                .map_err(|e| e.to_string())?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().contains(".orig.tar"))
                .ok_or("no .orig tarball")?;
            run_ok(Command::new("tar").current_dir(&dir).arg("xf").arg(&orig))
                .ok_or("tar failed")?;
            let top = std::fs::read_dir(&dir)
                .map_err(|e| e.to_string())?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.is_dir())
                .ok_or("no source tree")?;
            let version = orig
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (
                top.join("src/main/java"),
                format!("Debian source package {JAVA_SOURCE_PACKAGE} ({version})"),
            )
        }
    };
    let files: Vec<PathBuf> = walk(&root, &["java"], &[], usize::MAX)
        .into_iter()
        .filter(|p| !p.ends_with("module-info.java") && !p.ends_with("package-info.java"))
        .collect();
    Ok(Source {
        corpus: Corpus {
            language: "java",
            root,
            files,
        },
        origin,
    })
}

/// The oracle's facts (JSON lines) for a corpus checked out at `work`.
fn oracle(
    language: &str,
    work: &Path,
    rel: &[String],
    scratch: &Path,
) -> Result<Vec<Value>, String> {
    let out = match language {
        "python" => {
            let script = scratch.join("jedi_oracle.py");
            std::fs::write(&script, JEDI_ORACLE).map_err(|e| e.to_string())?;
            run_ok(Command::new("python3").arg(&script).arg(work).args(rel))
                .ok_or("jedi oracle failed (pip install jedi)")?
        }
        "java" => {
            let classes = scratch.join("classes");
            std::fs::create_dir_all(&classes).map_err(|e| e.to_string())?;
            let sources: Vec<PathBuf> = rel.iter().map(|r| work.join(r)).collect();
            run_ok(
                Command::new("javac")
                    .args(["-nowarn", "-g", "-encoding", "UTF-8", "-proc:none", "-d"])
                    .arg(&classes)
                    .args(&sources),
            )
            .ok_or("javac failed")?;
            let script = scratch.join("javap_oracle.py");
            std::fs::write(&script, JAVAP_ORACLE).map_err(|e| e.to_string())?;
            run_ok(Command::new("python3").arg(&script).arg(&classes))
                .ok_or("javap oracle failed")?
        }
        other => return Err(format!("no oracle for {other}")),
    };
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// Precision and recall per edge type, with a few examples of each disagreement.
fn compare(ours: &BTreeSet<map::Edge>, theirs: &BTreeSet<map::Edge>) -> Value {
    let mut rows = serde_json::Map::new();
    for t in EDGE_TYPES {
        let o: BTreeSet<&map::Edge> = ours.iter().filter(|e| e.0 == t).collect();
        let r: BTreeSet<&map::Edge> = theirs.iter().filter(|e| e.0 == t).collect();
        let shared = o.intersection(&r).count();
        let p = shared as f64 / o.len().max(1) as f64;
        let rc = shared as f64 / r.len().max(1) as f64;
        println!(
            "    {t:<10} ours {:>6}  oracle {:>6}  shared {:>6}  precision {p:.3}  recall {rc:.3}",
            o.len(),
            r.len(),
            shared
        );
        for (label, a, b) in [("only ours", &o, &r), ("only oracle", &r, &o)] {
            for e in a.difference(b).take(4) {
                println!("        {label}: {} -> {}", e.1, e.2);
            }
        }
        rows.insert(
            t.into(),
            json!({"ours": o.len(), "oracle": r.len(), "shared": shared, "precision": p, "recall": rc}),
        );
    }
    Value::Object(rows)
}

pub async fn run(args: &Args) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let scratch = tmp.path();
    let mut wanted: Vec<&str> = vec!["python", "java"];
    if let Some(only) = args.value("languages") {
        wanted.retain(|l| only.split(',').any(|o| o.trim() == *l));
    }
    let ix = indexer(scratch).await;
    let mut rows = Vec::new();
    for lang in wanted {
        let t = Instant::now();
        let src = match lang {
            "python" => python_corpus(scratch, args.value("python-sdist").unwrap_or(PYTHON_SDIST)),
            _ => java_corpus(scratch, args.path("java-src")),
        };
        let src = match src {
            Ok(s) => s,
            Err(e) => {
                println!("{lang}: not measured: {e}");
                rows.push(json!({"language": lang, "error": e}));
                continue;
            }
        };
        let (work, bytes) = repository_of(&src.corpus, scratch);
        let rel: Vec<String> = src
            .corpus
            .files
            .iter()
            .map(|f| {
                f.strip_prefix(&src.corpus.root)
                    .expect("under root")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        let t_index = Instant::now();
        ix.index(lang, &work).await;
        let indexed_s = t_index.elapsed().as_secs_f64();
        let stored = map::stored(&ix.kb, lang, &rel).await;
        let ours = map::our_edges(&ix.kb, &stored).await;
        let t_oracle = Instant::now();
        let facts = match oracle(lang, &work, &rel, scratch) {
            Ok(f) => f,
            Err(e) => {
                println!("{lang}: oracle not run: {e}");
                rows.push(json!({"language": lang, "error": e}));
                continue;
            }
        };
        let oracle_s = t_oracle.elapsed().as_secs_f64();
        let theirs = map::oracle_edges(lang, &facts, &stored);
        println!(
            "{lang:<7} {} files {:.1} MB ({}) | indexed in {indexed_s:.1} s, oracle {oracle_s:.1} s, {} oracle facts",
            rel.len(),
            bytes as f64 / 1e6,
            src.origin,
            facts.len()
        );
        let by_type = compare(&ours, &theirs);
        rows.push(json!({
            "language": lang, "corpus": src.origin, "files": rel.len(), "mb": bytes as f64 / 1e6,
            "indexed_s": indexed_s, "oracle_s": oracle_s, "total_s": t.elapsed().as_secs_f64(),
            "edges": by_type,
        }));
        let inc = incremental::measure(&src.corpus.root, &src.corpus.files, args.usize("touch", 5));
        rows.push(json!({"language": lang, "incremental": inc}));
    }
    ix.store.close().expect("close");
    let summary: BTreeMap<&str, Value> = [
        ("suite", json!("fidelity-semantic")),
        ("languages", json!(rows)),
    ]
    .into_iter()
    .collect();
    println!("{}", json!(summary));
}
