//! The incremental step alone: a branch's symbol table built from a corpus, then a commit of
//! `n` files, each renaming the first function or method it defines (so every user of it
//! resolves differently): the time to parse the changed files and re-resolve what they may
//! affect (`SymbolTable::update`), and how many other files had to be written again.

use std::path::{Path, PathBuf};
use std::time::Instant;

use evident_code::semantic::{FileUnit, SymbolTable};
use evident_code::structure::{Structure, analyse_with_facts};
use serde_json::{Value, json};

fn unit(rel: &str, text: &str) -> Option<FileUnit> {
    match analyse_with_facts(rel, text) {
        Ok((Structure::Code(o), Some(f))) => Some(FileUnit::new(rel, &o, f)),
        _ => None,
    }
}

/// `text` with its first function or method renamed to `NAME_v2` (`None`: none).
fn rename_first_callable(rel: &str, text: &str) -> Option<String> {
    let Ok((Structure::Code(o), _)) = analyse_with_facts(rel, text) else {
        return None;
    };
    let s = o.symbols.iter().find(|s| !s.kind.is_type())?;
    let at = s.byte_start + text[s.byte_start..].find(&format!("{}(", s.name))?;
    Some(format!(
        "{}{}_v2{}",
        &text[..at],
        s.name,
        &text[at + s.name.len()..]
    ))
}

pub fn measure(root: &Path, files: &[PathBuf], n: usize) -> Value {
    let texts: Vec<(String, String)> = files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(root).ok()?.to_string_lossy().into_owned();
            Some((rel, std::fs::read_to_string(f).ok()?))
        })
        .collect();
    let t = Instant::now();
    let mut table = SymbolTable::new();
    table.update(texts.iter().map(|(r, s)| (r.clone(), unit(r, s))).collect());
    let built_ms = t.elapsed().as_secs_f64() * 1e3;
    // Files spread over the corpus, each with a definition to rename.
    let step = (texts.len() / n.max(1)).max(1);
    let changed: Vec<(String, String)> = (0..texts.len())
        .map(|i| &texts[(i * step + i / n.max(1)) % texts.len()])
        .filter_map(|(r, s)| Some((r.clone(), rename_first_callable(r, s)?)))
        .take(n)
        .collect();
    let t = Instant::now();
    let again = table.update(
        changed
            .iter()
            .map(|(r, s)| (r.clone(), unit(r, s)))
            .collect(),
    );
    let update_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "  incremental: table of {} files built in {built_ms:.0} ms; a commit renaming a definition in each of {} files parsed and re-resolved in {update_ms:.1} ms, {} other files to write again",
        texts.len(),
        changed.len(),
        again.len()
    );
    json!({"files": texts.len(), "build_ms": built_ms, "changed": changed.len(), "update_ms": update_ms, "rewritten": again.len()})
}
