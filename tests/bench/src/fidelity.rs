//! `fidelity [--files N] [--languages rust,go,…] [--commits-repo PATH] [--kotlin DIR]`: does the store hold what the
//! code says? Real sources found on this machine (or fetched through the package registries'
//! own clients) are committed into a git repository per language and indexed through the git
//! indexer (poll → queued tasks → `evident-code` outline, chunks, graph → embedded store).
//! In the same command, independent oracles read the same files:
//!
//! - symbols: universal-ctags (Rust, Go, Java, JavaScript, TypeScript, Kotlin) and CPython's
//!   `ast` (Python) — name, kind, line — against the symbols reachable from each file's node
//!   (rules in [`symbols`], kind mapping in [`oracles`]); per-language precision and recall.
//! - commits: `git show --name-status` per commit against each commit node's file edges
//!   ([`commits`]), on a real history (this repository's own, or `--commits-repo`).
//!
//! Corpora (N files per language, default 400, spread evenly over the sorted file list):
//! Rust crates in the cargo registry, the Python standard library, Go's standard library
//! (Debian `golang-src`), the JDK's `java.base` (`src.zip` of Debian `openjdk-17-source` or
//! any installed JDK), JavaScript of npm's own installation, TypeScript of the npm package
//! `rxjs` (fetched with `npm pack`), Kotlin from `--kotlin DIR` when given.

mod commits;
mod oracles;
mod symbols;
mod tsc;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

use crate::Args;
use crate::git::{Corpus, home, indexer, repository_of, walk};

/// What of Python's standard library the benchmarks do not read: installed packages, its
/// own tests, and tools outside the library proper.
pub(crate) const PYTHON_SKIP: [&str; 6] = [
    "site-packages",
    "test",
    "tests",
    "idlelib",
    "lib2to3",
    "__pycache__",
];

/// The npm package whose TypeScript sources are the TypeScript corpus.
const TYPESCRIPT_PACKAGE: &str = "rxjs@7.8.1";

/// A corpus and where it came from.
struct Source {
    corpus: Corpus,
    origin: String,
}

/// Every `step`-th file so N files span the whole tree, not its first directories.
fn spread(mut files: Vec<PathBuf>, n: usize) -> Vec<PathBuf> {
    files.sort();
    if files.len() <= n {
        return files;
    }
    let step = files.len() as f64 / n as f64;
    (0..n)
        .map(|i| files[(i as f64 * step) as usize].clone())
        .collect()
}

fn source(language: &'static str, root: PathBuf, files: Vec<PathBuf>, origin: String) -> Source {
    Source {
        corpus: Corpus {
            language,
            root,
            files,
        },
        origin,
    }
}

fn command_line(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn rust_corpus(n: usize) -> Option<Source> {
    let registry = std::fs::read_dir(home().join(".cargo/registry/src"))
        .ok()?
        .flatten()
        .next()?
        .path();
    let crates = std::fs::read_dir(&registry).ok()?.count();
    let files = walk(
        &registry,
        &["rs"],
        &["tests", "benches", "examples", "target"],
        usize::MAX,
    );
    Some(source(
        "rust",
        registry,
        spread(files, n),
        format!("cargo registry ({crates} crates)"),
    ))
}

fn python_corpus(n: usize) -> Option<Source> {
    let root = PathBuf::from(command_line(
        "python3",
        &[
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ],
    )?);
    let files = walk(&root, &["py"], &PYTHON_SKIP, usize::MAX);
    let version = oracles::python_version().unwrap_or_default();
    Some(source(
        "python",
        root,
        spread(files, n),
        format!("{version} standard library"),
    ))
}

fn go_corpus(n: usize) -> Option<Source> {
    let root = ["/usr/share", "/usr/lib"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("go-"))
        })
        .map(|p| p.join("src"))
        .filter(|p| p.join("fmt").is_dir())
        .max()?;
    let files = walk(&root, &["go"], &["testdata", "vendor"], usize::MAX);
    let origin = format!(
        "Go standard library ({})",
        root.parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    Some(source("go", root, spread(files, n), origin))
}

fn java_corpus(n: usize, scratch: &Path) -> Option<Source> {
    let mut zips: Vec<PathBuf> = std::fs::read_dir("/usr/lib/jvm")
        .ok()?
        .flatten()
        .map(|e| e.path().join("lib/src.zip"))
        .filter(|p| p.exists())
        .collect();
    zips.sort();
    // Prefer Debian's openjdk-17-source.
    let zip = zips
        .iter()
        .find(|p| p.starts_with("/usr/lib/jvm/openjdk-17"))
        .or(zips.first())?
        .clone();
    let root = scratch.join("jdk-src");
    let extracted = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith('java.base/') and n.endswith('.java')])",
        ])
        .arg(&zip)
        .arg(&root)
        .status()
        .is_ok_and(|s| s.success());
    if !extracted {
        return None;
    }
    let files = walk(&root, &["java"], &[], usize::MAX);
    Some(source(
        "java",
        root,
        spread(files, n),
        format!("JDK java.base from {}", zip.display()),
    ))
}

/// The packages npm ships with (its `node_modules`, as their own tree: inside a repository
/// `node_modules/` is vendored code the indexer skips by design).
fn javascript_corpus(n: usize) -> Option<Source> {
    let root = PathBuf::from("/usr/lib/node_modules/npm/node_modules");
    let version = command_line("npm", &["--version"]).unwrap_or_default();
    let files = walk(&root, &["js"], &["test", "tests"], usize::MAX);
    let packages = std::fs::read_dir(&root).ok()?.count();
    (!files.is_empty()).then(|| {
        source(
            "javascript",
            root,
            spread(files, n),
            format!("the {packages} packages bundled with npm {version}"),
        )
    })
}

fn typescript_corpus(n: usize, scratch: &Path) -> Option<Source> {
    let dir = scratch.join("ts");
    std::fs::create_dir_all(&dir).ok()?;
    let packed = Command::new("npm")
        .current_dir(&dir)
        .args(["pack", "--silent", TYPESCRIPT_PACKAGE])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let tarball = String::from_utf8_lossy(&packed.stdout).trim().to_string();
    let untarred = Command::new("tar")
        .current_dir(&dir)
        .args(["xzf", &tarball])
        .status()
        .is_ok_and(|s| s.success());
    if !untarred {
        return None;
    }
    let root = dir.join("package/src");
    let files: Vec<PathBuf> = walk(&root, &["ts"], &[], usize::MAX)
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with(".d.ts"))
        .collect();
    Some(source(
        "typescript",
        root,
        spread(files, n),
        format!("npm package {TYPESCRIPT_PACKAGE} (src/)"),
    ))
}

fn kotlin_corpus(n: usize, dir: Option<PathBuf>) -> Option<Source> {
    let root = dir?;
    let files = walk(&root, &["kt"], &["build"], usize::MAX);
    (!files.is_empty()).then(|| {
        let origin = format!("--kotlin {}", root.display());
        source("kotlin", root, spread(files, n), origin)
    })
}

/// Per language: the figures and the JSON row.
async fn symbol_fidelity(ix: &crate::git::Indexer, src: &Source, scratch: &Path) -> Value {
    let c = &src.corpus;
    let t = Instant::now();
    let (work, bytes) = repository_of(c, scratch);
    let rel: Vec<String> = c
        .files
        .iter()
        .map(|f| {
            f.strip_prefix(&c.root)
                .expect("under root")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    ix.index(c.language, &work).await;
    let indexed_s = t.elapsed().as_secs_f64();
    let (oracle, oracle_name, unparsable) = if c.language == "python" {
        let (defs, bad) = oracles::python_ast(&work, &rel).expect("python ast oracle");
        (defs, "CPython ast", bad)
    } else {
        let defs = oracles::ctags(c.language, &work, &rel).expect("ctags oracle");
        (defs, "universal-ctags", Vec::new())
    };
    let mut oracle = oracles::by_file(oracle);
    let (mut matched, mut stored_n, mut oracle_n, mut skipped, mut compared) = (0, 0, 0, 0, 0);
    let mut missing_by_kind = std::collections::BTreeMap::<String, usize>::new();
    let mut extra_by_kind = std::collections::BTreeMap::<String, usize>::new();
    let (mut missing_ex, mut extra_ex) = (Vec::new(), Vec::new());
    // JavaScript and TypeScript are compared with the compiler's parser too (see `tsc`).
    let mut kept: Vec<(String, Vec<symbols::Stored>)> = Vec::new();
    // ...and what ctags disagrees on is checked against the compiler (see `tsc::Disagreements`).
    let mut disagreements = tsc::Disagreements::default();
    for file in &rel {
        if unparsable.contains(file) {
            continue;
        }
        let Some(stored) = symbols::stored_symbols(&ix.kb, c.language, file).await else {
            skipped += 1;
            continue;
        };
        compared += 1;
        if matches!(c.language, "javascript" | "typescript") {
            kept.push((file.clone(), stored.clone()));
        }
        let defs = oracle.remove(file).unwrap_or_default();
        stored_n += stored.len();
        let score = symbols::compare(stored, &defs);
        // Values (variables, properties) count only when a stored function confirmed one.
        oracle_n += score.matched + score.missing.len();
        matched += score.matched;
        if matches!(c.language, "javascript" | "typescript") {
            disagreements.missing.extend(score.missing.iter().cloned());
            let extra = score.extra.iter().map(|e| (file.clone(), e.clone()));
            disagreements.extra.extend(extra);
        }
        for m in score.missing {
            *missing_by_kind.entry(m.kind.to_string()).or_default() += 1;
            if missing_ex.len() < 12 {
                missing_ex.push(format!("{}:{} {} {}", m.file, m.line, m.kind, m.name));
            }
        }
        for e in score.extra {
            *extra_by_kind.entry(e.kind.clone()).or_default() += 1;
            if extra_ex.len() < 12 {
                extra_ex.push(format!("{file}:{} {} {}", e.line_start, e.kind, e.name));
            }
        }
    }
    let precision = matched as f64 / stored_n.max(1) as f64;
    let recall = matched as f64 / oracle_n.max(1) as f64;
    println!(
        "{:<10} {compared:>4} files {:>5.1} MB ({}) vs {oracle_name}: {oracle_n} definitions, {stored_n} stored, {matched} matched | precision {precision:.4} recall {recall:.4} | indexed in {indexed_s:.1} s{}",
        c.language,
        bytes as f64 / 1e6,
        src.origin,
        if skipped + unparsable.len() > 0 {
            format!(
                " | not compared: {skipped} skipped by the indexer, {} unparsable by the oracle",
                unparsable.len()
            )
        } else {
            String::new()
        }
    );
    if !missing_by_kind.is_empty() {
        println!("    missing by kind {missing_by_kind:?}, e.g.");
        for m in &missing_ex {
            println!("      - {m}");
        }
    }
    if !extra_by_kind.is_empty() {
        println!("    not in the oracle by kind {extra_by_kind:?}, e.g.");
        for e in &extra_ex {
            println!("      + {e}");
        }
    }
    let second = if kept.is_empty() {
        Value::Null
    } else {
        match tsc::fetch(scratch) {
            Ok(lib) => tsc::second_oracle(c.language, &lib, &work, kept, &disagreements),
            Err(e) => json!({ "error": e }),
        }
    };
    json!({
        "second_oracle": second,
        "language": c.language, "corpus": src.origin, "files": compared, "mb": bytes as f64 / 1e6,
        "oracle": oracle_name, "oracle_definitions": oracle_n, "stored": stored_n,
        "matched": matched, "precision": precision, "recall": recall,
        "skipped_by_indexer": skipped, "unparsable_by_oracle": unparsable.len(),
        "missing_by_kind": missing_by_kind, "extra_by_kind": extra_by_kind,
    })
}

/// The repository whose real history is compared: `--commits-repo`, or the one holding the
/// current directory (Evident's own), cloned so its `HEAD` history is a plain branch.
fn history_repository(args: &Args, scratch: &Path) -> Option<PathBuf> {
    let origin = match args.path("commits-repo") {
        Some(p) => p,
        None => PathBuf::from(command_line("git", &["rev-parse", "--show-toplevel"])?),
    };
    let dest = scratch.join("history");
    let ok = Command::new("git")
        .args(["clone", "--quiet", "--no-local"])
        .arg(&origin)
        .arg(&dest)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(dest)
}

fn missing_tools() -> Vec<&'static str> {
    let mut missing = Vec::new();
    if oracles::ctags_version().is_none() {
        missing.push("universal-ctags");
    }
    if oracles::python_version().is_none() {
        missing.push("python3");
    }
    missing
}

pub async fn run(args: &Args) {
    let missing = missing_tools();
    if !missing.is_empty() {
        eprintln!(
            "fidelity: the oracles need {}: apt-get install universal-ctags python3 git (and for the corpora: golang-src openjdk-17-source npm)",
            missing.join(", ")
        );
        std::process::exit(2);
    }
    let n = args.usize("files", 400);
    let tmp = tempfile::tempdir().expect("temp dir");
    let scratch = tmp.path();
    let t = Instant::now();
    let mut sources: Vec<Source> = [
        rust_corpus(n),
        python_corpus(n),
        go_corpus(n),
        java_corpus(n, scratch),
        javascript_corpus(n),
        typescript_corpus(n, scratch),
        kotlin_corpus(n, args.path("kotlin")),
    ]
    .into_iter()
    .flatten()
    .collect();
    sources.retain(|s| !s.corpus.files.is_empty());
    if let Some(only) = args.value("languages") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        sources.retain(|s| only.contains(&s.corpus.language));
    }
    let absent: Vec<&str> = [
        "rust",
        "python",
        "go",
        "java",
        "javascript",
        "typescript",
        "kotlin",
    ]
    .into_iter()
    .filter(|l| !sources.iter().any(|s| s.corpus.language == *l))
    .collect();
    let ctags = oracles::ctags_version().unwrap_or_default();
    let python = oracles::python_version().unwrap_or_default();
    println!(
        "fidelity suite: up to {n} files per language; oracles: {ctags}; {python} ast; {}",
        command_line("git", &["--version"]).unwrap_or_default()
    );
    if !absent.is_empty() {
        println!(
            "no corpus here for: {} (Go: apt-get install golang-src; Java: apt-get install openjdk-17-source; TypeScript: npm; Kotlin: --kotlin DIR)",
            absent.join(", ")
        );
    }
    println!("corpora gathered in {:.1} s", t.elapsed().as_secs_f64());

    let ix = indexer(scratch).await;
    let mut languages = Vec::new();
    for src in &sources {
        languages.push(symbol_fidelity(&ix, src, scratch).await);
    }

    // Commits: every corpus repository (one import commit each) and a real history.
    let t = Instant::now();
    let mut commit_rows = Vec::new();
    let history = history_repository(args, scratch);
    if let Some(h) = &history {
        ix.index("history", h).await;
    }
    let mut repos: Vec<(String, PathBuf)> = sources
        .iter()
        .map(|s| {
            let l = s.corpus.language;
            (l.to_string(), scratch.join(format!("repo-{l}")))
        })
        .collect();
    repos.extend(history.map(|h| ("history".to_string(), h)));
    let (mut commits_n, mut exact_n) = (0, 0);
    for (name, repo) in &repos {
        let score = commits::compare(&ix.kb, repo).await;
        commits_n += score.commits;
        exact_n += score.exact;
        println!(
            "commits {name:<10} {} of {} exact",
            score.exact, score.commits
        );
        for (hash, git, ours) in &score.examples {
            println!("    {hash}: git {git:?}\n      evident {ours:?}");
        }
        commit_rows
            .push(json!({"repository": name, "commits": score.commits, "exact": score.exact}));
    }
    println!(
        "commits: {exact_n} of {commits_n} exact ({:.1} s)",
        t.elapsed().as_secs_f64()
    );

    // Mail threads against notmuch on the shipped LKML corpus (needs the `notmuch` CLI;
    // without it the section says why instead of a figure).
    let mut sections = serde_json::Map::new();
    let mail = match crate::fidelity_mail::compare_threads(
        &crate::fidelity_mail::lkml_corpus(),
        args.usize("workers", 4),
    )
    .await
    {
        Ok(f) => {
            println!("mail threads: {}", f.summary());
            f.json()
        }
        Err(e) => {
            println!("mail threads: not compared: {e}");
            json!({"error": e})
        }
    };
    sections.insert("mail".into(), mail);

    ix.store.close().expect("close");
    let mut summary = json!({
        "suite": "fidelity", "files_per_language": n, "oracles": {"ctags": ctags, "python": python},
        "languages": languages,
        "commits": {"total": commits_n, "exact": exact_n, "repositories": commit_rows},
    });
    if let Value::Object(m) = &mut summary {
        m.extend(sections);
    }
    println!("{summary}");
}
