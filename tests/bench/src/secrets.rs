//! `secrets [--repo PATH] [--fixtures DIR] [--rounds N]`: the credential detector's false
//! positives and throughput on real text (issue 29; the figures are in `docs/security.md`).
//!
//! Each corpus is cut into chunks as Evident cuts it, and every chunk the detector flags is
//! listed (file, line, class, the line with the finding marked) for a person to judge:
//!
//! - `repo`: every file `git ls-files` lists that the git indexer would read (its skip rules
//!   and 1 MiB limit), outlined and chunked like the indexer (code by symbols, documentation
//!   as prose, other text by lines);
//! - `mail`: the mail fixtures split into messages (mbox) and parsed; each text part chunked;
//! - `issues`: the tracker fixtures' issues and comments (GitHub, GitLab, Jira parsers),
//!   each description and comment chunked;
//! - `transcripts`: the WebVTT fixtures' cue texts, chunked;
//! - `pdf`: the PDF fixture's extracted layout text, chunked;
//! - `cisi`: the CISI collection's documents (title and abstract), chunked;
//! - `fixtures-raw`: every fixture file as a plain document (what a filesystem source
//!   pointed at them would store, the JSON of API recordings included).
//!
//! Throughput: `find_secrets` over each repository file, best of `--rounds` (run it from a
//! release build for a figure that means anything).

use std::path::{Path, PathBuf};
use std::time::Instant;

use evident_code::chunks::{CodeChunking, chunk_code, chunk_lines};
use evident_code::structure::{Structure, analyse};
use evident_core::chunking::{ChunkingConfig, chunk_text};
use evident_core::secrets::{SecretFinding, find_secrets};
use serde_json::{Value, json};

/// One chunk of one corpus: where it comes from and its text.
struct Chunk {
    file: String,
    /// 1-based line of the chunk's start in its file (0 when unknown).
    line: usize,
    text: String,
}

/// A flagged chunk, as reported.
struct Flag {
    corpus: &'static str,
    file: String,
    line: usize,
    class: &'static str,
    excerpt: String,
}

pub fn run(args: &crate::Args) {
    let repo = args.path("repo").unwrap_or_else(|| PathBuf::from("."));
    let fixtures = args
        .path("fixtures")
        .unwrap_or_else(|| PathBuf::from("/work/shared/fixtures"));
    let rounds = args.usize("rounds", 3);
    let files = repo_files(&repo);
    let corpora: Vec<(&'static str, Vec<Chunk>)> = vec![
        ("repo", repo_chunks(&files)),
        ("mail", mail_chunks(&fixtures.join("mail"))),
        ("issues", issue_chunks(&fixtures.join("issues"))),
        (
            "transcripts",
            transcript_chunks(&fixtures.join("transcripts")),
        ),
        (
            "pdf",
            prose_chunks(&fixtures.join("pdf"), |p| p.ends_with(".txt")),
        ),
        ("cisi", cisi_chunks(&fixtures.join("ir/cisi/CISI.ALL"))),
        ("fixtures-raw", prose_chunks(&fixtures, |_| true)),
    ];
    let mut flags = Vec::new();
    let mut summary = serde_json::Map::new();
    println!("corpus         chunks    MB   flagged");
    for (corpus, chunks) in &corpora {
        let bytes: usize = chunks.iter().map(|c| c.text.len()).sum();
        let before = flags.len();
        for c in chunks {
            if let Some(f) = find_secrets(&c.text).first() {
                flags.push(flag(corpus, c, f));
            }
        }
        let flagged = flags.len() - before;
        println!(
            "{corpus:<12} {:>8} {:>5.1} {flagged:>9}",
            chunks.len(),
            bytes as f64 / 1e6
        );
        summary.insert(
            corpus.to_string(),
            json!({"chunks": chunks.len(), "bytes": bytes, "flagged": flagged}),
        );
    }
    println!("\nflagged chunks:");
    for f in &flags {
        println!(
            "- {} {}:{} {}: {}",
            f.corpus, f.file, f.line, f.class, f.excerpt
        );
    }
    let (mb, secs) = throughput(&files, rounds);
    println!(
        "\nthroughput: {mb:.1} MB of repository files, best of {rounds}: {secs:.3} s = {:.0} MB/s",
        mb / secs
    );
    println!(
        "{}",
        json!({"suite": "secrets", "corpora": summary, "flagged": flags.len(),
               "throughputMbPerS": mb / secs, "repoMb": mb})
    );
}

fn flag(corpus: &'static str, c: &Chunk, f: &SecretFinding) -> Flag {
    let start = c.text[..f.byte_start].rfind('\n').map_or(0, |i| i + 1);
    let end = c.text[f.byte_end..]
        .find('\n')
        .map_or(c.text.len(), |i| f.byte_end + i);
    let marked = format!(
        "{}⟦{}⟧{}",
        &c.text[start..f.byte_start],
        &c.text[f.byte_start..f.byte_end],
        &c.text[f.byte_end..end]
    );
    let excerpt: String = marked.trim().chars().take(200).collect();
    Flag {
        corpus,
        file: c.file.clone(),
        line: if c.line == 0 { 0 } else { c.line + f.line - 1 },
        class: f.class.as_str(),
        excerpt,
    }
}

/// The repository's files the git indexer reads: (path, content).
fn repo_files(repo: &Path) -> Vec<(String, String)> {
    let listed = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["ls-files", "-z"])
        .output()
        .expect("git ls-files runs");
    // The git source's default `max_file_bytes`.
    let max = 1024 * 1024;
    listed
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .filter_map(|p| {
            let path = String::from_utf8_lossy(p).into_owned();
            let bytes = std::fs::read(repo.join(&path)).ok()?;
            if evident_code::skip::skip_file(&path, &bytes, max).is_some() {
                return None;
            }
            Some((path, String::from_utf8(bytes).ok()?))
        })
        .collect()
}

fn repo_chunks(files: &[(String, String)]) -> Vec<Chunk> {
    let cfg = CodeChunking::default();
    let mut out = Vec::new();
    for (path, content) in files {
        let pieces: Vec<(usize, String)> = match analyse(path, content) {
            Ok(Structure::Code(o)) => chunk_code(content, &o.symbols, &cfg)
                .into_iter()
                .map(|c| (c.line_start, c.text))
                .collect(),
            Ok(Structure::Documentation) => with_lines(
                content,
                chunk_text(
                    content,
                    &ChunkingConfig {
                        max_tokens: cfg.max_tokens,
                        ..ChunkingConfig::default()
                    },
                ),
            ),
            Ok(Structure::Text) | Err(_) => chunk_lines(content, &cfg)
                .into_iter()
                .map(|c| (c.line_start, c.text))
                .collect(),
        };
        out.extend(pieces.into_iter().map(|(line, text)| Chunk {
            file: path.clone(),
            line,
            text,
        }));
    }
    out
}

fn with_lines(
    content: &str,
    pieces: Vec<evident_core::chunking::TextChunk>,
) -> Vec<(usize, String)> {
    let (mut line, mut at) = (1, 0);
    pieces
        .into_iter()
        .map(|p| {
            line += content[at..p.byte_start].matches('\n').count();
            at = p.byte_start;
            (line, p.text)
        })
        .collect()
}

/// `text` cut as a document is, each piece with its line.
fn document(file: &str, text: &str) -> Vec<Chunk> {
    with_lines(text, chunk_text(text, &ChunkingConfig::default()))
        .into_iter()
        .map(|(line, text)| Chunk {
            file: file.to_string(),
            line,
            text,
        })
        .collect()
}

/// Files under `dir` (recursively, sorted), relative names.
fn walk(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = p
                    .strip_prefix(dir.parent().unwrap_or(dir))
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .into_owned();
                out.push((name, p));
            }
        }
    }
    out.sort();
    out
}

fn prose_chunks(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<Chunk> {
    walk(dir)
        .into_iter()
        .filter(|(name, _)| keep(name))
        .filter_map(|(name, p)| {
            let bytes = std::fs::read(p).ok()?;
            evident_code::skip::is_text(&bytes)
                .then(|| document(&name, &String::from_utf8_lossy(&bytes)))
        })
        .flatten()
        .collect()
}

fn mail_chunks(dir: &Path) -> Vec<Chunk> {
    use evident_extract::mail::{parse_email, split_mbox};
    let mut out = Vec::new();
    for (name, p) in walk(dir) {
        if name.ends_with("SOURCE.txt") || name.ends_with("-summary.txt") {
            continue;
        }
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        let messages: Vec<Vec<u8>> = if name.ends_with(".mbox.txt") {
            split_mbox(&bytes).into_iter().map(|m| m.bytes).collect()
        } else {
            vec![bytes]
        };
        for (i, raw) in messages.iter().enumerate() {
            let Ok(email) = parse_email(raw) else {
                continue;
            };
            for part in &email.texts {
                let label = format!("{name}#{i}/{}", part.part);
                out.extend(document(&label, &part.text).into_iter().map(|mut c| {
                    c.line = 0;
                    c
                }));
            }
        }
    }
    out
}

fn issue_chunks(dir: &Path) -> Vec<Chunk> {
    use evident_extract::tracker::{github_comments, github_issues, gitlab_issues, jira_search};
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (name, p) in walk(dir) {
        let Some(v) = std::fs::read(&p)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        else {
            continue;
        };
        let mut texts: Vec<(String, String)> = Vec::new();
        for candidate in values(&v) {
            let bytes = serde_json::to_vec(candidate).unwrap_or_default();
            let mut issues = github_issues(&bytes, "fixture").unwrap_or_default();
            issues.extend(gitlab_issues(&bytes, "fixture").unwrap_or_default());
            issues.extend(jira_search(&bytes).map(|p| p.issues).unwrap_or_default());
            for issue in issues {
                texts.push((format!("{name}#{}", issue.key), issue.title.clone()));
                texts.push((format!("{name}#{}", issue.key), issue.body.clone()));
                for c in issue.comments {
                    texts.push((format!("{name}#{}/{}", issue.key, c.id), c.body));
                }
            }
            for c in github_comments(&bytes).unwrap_or_default() {
                texts.push((format!("{name}#comment-{}", c.id), c.body));
            }
        }
        for (label, text) in texts {
            if !text.trim().is_empty() && seen.insert((label.clone(), text.clone())) {
                out.extend(document(&label, &text).into_iter().map(|mut c| {
                    c.line = 0;
                    c
                }));
            }
        }
    }
    out
}

/// Every array and object of a JSON document (where a parser may find issues).
fn values(v: &Value) -> Vec<&Value> {
    let mut out = vec![v];
    match v {
        Value::Array(items) => items.iter().for_each(|i| out.extend(values(i))),
        Value::Object(map) => map.values().for_each(|i| out.extend(values(i))),
        _ => {}
    }
    out.retain(|v| v.is_array() || v.is_object());
    out
}

fn transcript_chunks(dir: &Path) -> Vec<Chunk> {
    use evident_extract::transcript::{TranscriptFormat, parse};
    walk(dir)
        .into_iter()
        .filter(|(name, _)| name.ends_with(".vtt"))
        .filter_map(|(name, p)| {
            let text = std::fs::read_to_string(p).ok()?;
            let t = parse(TranscriptFormat::Vtt, &text).ok()?;
            let cues: Vec<String> = t.cues.into_iter().map(|c| c.text).collect();
            Some(document(&name, &cues.join("\n")))
        })
        .flatten()
        .map(|mut c| {
            c.line = 0;
            c
        })
        .collect()
}

/// CISI's `.I` records: title and abstract of each, chunked.
fn cisi_chunks(all: &Path) -> Vec<Chunk> {
    let Ok(text) = std::fs::read_to_string(all) else {
        return Vec::new();
    };
    crate::quality::judged::records(&text)
        .into_iter()
        .flat_map(|(id, title, body)| {
            document(&format!("CISI.ALL#{id}"), &format!("{title}\n\n{body}"))
                .into_iter()
                .map(|mut c| {
                    c.line = 0;
                    c
                })
        })
        .collect()
}

/// MB and the best time of `rounds` passes of `find_secrets` over every file.
fn throughput(files: &[(String, String)], rounds: usize) -> (f64, f64) {
    let mb = files.iter().map(|(_, c)| c.len()).sum::<usize>() as f64 / 1e6;
    let mut best = f64::MAX;
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        let n: usize = files.iter().map(|(_, c)| find_secrets(c).len()).sum();
        std::hint::black_box(n);
        best = best.min(started.elapsed().as_secs_f64());
    }
    (mb, best)
}
