//! A second oracle for JavaScript and TypeScript: the TypeScript compiler's own parser (npm
//! `typescript`, run with node; `tsc_oracle.js` maps its syntax tree onto Evident's kinds).
//! ctags 5.9's JavaScript/TypeScript parser abandons some class bodies and calls object
//! literals classes; comparing with both tells the oracle's errors from Evident's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::oracles::Def;
use super::symbols::{Stored, compare};

const SCRIPT: &str = include_str!("tsc_oracle.js");
/// The compiler version used as the oracle.
pub const PACKAGE: &str = "typescript@5.6.3";

/// Fetches the compiler with `npm pack` into `scratch`; its `lib/typescript.js`.
pub fn fetch(scratch: &Path) -> Result<PathBuf, String> {
    let dir = scratch.join("tsc");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let packed = Command::new("npm")
        .current_dir(&dir)
        .args(["pack", "--silent", PACKAGE])
        .output()
        .map_err(|e| format!("npm: {e}"))?;
    if !packed.status.success() {
        return Err(format!("npm pack {PACKAGE} failed"));
    }
    let tarball = String::from_utf8_lossy(&packed.stdout).trim().to_string();
    let ok = Command::new("tar")
        .current_dir(&dir)
        .args(["xzf", &tarball])
        .status()
        .is_ok_and(|s| s.success());
    let lib = dir.join("package/lib/typescript.js");
    (ok && lib.exists())
        .then_some(lib)
        .ok_or_else(|| format!("{PACKAGE}: no lib/typescript.js"))
}

/// The compiler's definitions in `files` (relative to `root`).
pub fn defs(lib: &Path, root: &Path, files: &[String]) -> Result<Vec<Def>, String> {
    let script = root.join(".fidelity-tsc.js");
    std::fs::write(&script, SCRIPT).map_err(|e| e.to_string())?;
    let mut child = Command::new("node")
        .arg(&script)
        .arg(lib)
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("node: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin
            .write_all((files.join("\n") + "\n").as_bytes())
            .map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&script);
    if !out.status.success() {
        return Err("the TypeScript oracle failed".into());
    }
    let kind = |k: &str| -> Option<&'static str> {
        ["class", "interface", "enum", "type", "function", "method"]
            .into_iter()
            .find(|x| *x == k)
    };
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            Some(Def {
                file: v["path"].as_str()?.to_string(),
                name: v["name"].as_str()?.to_string(),
                kind: kind(v["kind"].as_str()?)?,
                line: v["line"].as_u64()? as usize,
            })
        })
        .collect())
}

/// What ctags and Evident disagree on in one language: ctags definitions no stored symbol
/// matched, and stored symbols ctags does not report (with their file).
#[derive(Default)]
pub struct Disagreements {
    pub missing: Vec<Def>,
    pub extra: Vec<(String, Stored)>,
}

/// The ctags disagreements the compiler settles: (stored symbols ctags lacks that the
/// compiler also finds — same file, name and kind, its line in the stored span; ctags
/// definitions Evident lacks that the compiler also finds — same file, name and line).
fn settled(by_file: &BTreeMap<String, Vec<Def>>, d: &Disagreements) -> (usize, usize) {
    let name = |n: &str| n.trim_start_matches('#').to_string();
    let defs = |f: &str| by_file.get(f).map(Vec::as_slice).unwrap_or_default();
    let confirmed_extra = d
        .extra
        .iter()
        .filter(|(f, s)| {
            defs(f).iter().any(|t| {
                name(&t.name) == name(&s.name)
                    && t.kind == s.kind
                    && (s.line_start..=s.line_end).contains(&t.line)
            })
        })
        .count();
    let confirmed_missing = d
        .missing
        .iter()
        .filter(|m| {
            defs(&m.file)
                .iter()
                .any(|t| name(&t.name) == name(&m.name) && t.line == m.line)
        })
        .count();
    (confirmed_extra, confirmed_missing)
}

/// The stored symbols of the compared files against the compiler's definitions: printed, and
/// the JSON figures; with how many of ctags' disagreements the compiler confirms.
pub fn second_oracle(
    language: &str,
    lib: &Path,
    root: &Path,
    stored: Vec<(String, Vec<Stored>)>,
    ctags: &Disagreements,
) -> Value {
    let files: Vec<String> = stored.iter().map(|(f, _)| f.clone()).collect();
    let defs = match defs(lib, root, &files) {
        Ok(d) => d,
        Err(e) => return json!({"error": e}),
    };
    let mut by_file: BTreeMap<String, Vec<Def>> = BTreeMap::new();
    for d in defs {
        by_file.entry(d.file.clone()).or_default().push(d);
    }
    let (extra_confirmed, missing_confirmed) = settled(&by_file, ctags);
    println!(
        "{language:<10} ctags disagreements checked with the compiler: {extra_confirmed} of {} stored symbols ctags lacks are definitions for it; {missing_confirmed} of {} ctags definitions Evident lacks are",
        ctags.extra.len(),
        ctags.missing.len()
    );
    let (mut matched, mut stored_n, mut oracle_n) = (0, 0, 0);
    let (mut missing, mut extra) = (Vec::new(), Vec::new());
    for (file, symbols) in stored {
        stored_n += symbols.len();
        let score = compare(symbols, &by_file.remove(&file).unwrap_or_default());
        matched += score.matched;
        oracle_n += score.matched + score.missing.len();
        missing.extend(
            score
                .missing
                .iter()
                .map(|m| format!("{}:{} {} {}", m.file, m.line, m.kind, m.name)),
        );
        extra.extend(
            score
                .extra
                .iter()
                .map(|e| format!("{file}:{} {} {}", e.line_start, e.kind, e.name)),
        );
    }
    let precision = matched as f64 / stored_n.max(1) as f64;
    let recall = matched as f64 / oracle_n.max(1) as f64;
    println!(
        "{language:<10} vs {PACKAGE} parser: {oracle_n} definitions, {stored_n} stored, {matched} matched | precision {precision:.4} recall {recall:.4}"
    );
    for m in missing.iter().take(8) {
        println!("      - {m}");
    }
    for e in extra.iter().take(8) {
        println!("      + {e}");
    }
    json!({"oracle": PACKAGE, "oracle_definitions": oracle_n, "stored": stored_n,
           "matched": matched, "precision": precision, "recall": recall,
           "missing": missing.len(), "extra": extra.len(),
           "ctags_extra": ctags.extra.len(), "ctags_extra_confirmed": extra_confirmed,
           "ctags_missing": ctags.missing.len(), "ctags_missing_confirmed": missing_confirmed})
}
