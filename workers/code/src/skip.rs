//! Which files of a repository are not indexed, by rule, and why.

use serde::{Deserialize, Serialize};

/// Why a file is not indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Third-party code checked in (`vendor/`, `node_modules/`, …).
    Vendored,
    /// Produced by a tool (`@generated`, `*.min.js`, lock files, minified lines).
    Generated,
    /// Binary content (NUL bytes).
    Binary,
    /// Larger than the configured limit.
    Oversized,
    /// A file whose name does not say it is text and whose content is not text (not UTF-8,
    /// or control characters): images, archives, data dumps…
    NotText,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Vendored => "vendored",
            SkipReason::Generated => "generated",
            SkipReason::Binary => "binary",
            SkipReason::Oversized => "oversized",
            SkipReason::NotText => "not_text",
        }
    }
}

const VENDOR_DIRS: &[&str] = &[
    "vendor",
    "vendors",
    "node_modules",
    "bower_components",
    "third_party",
    "third-party",
    "thirdparty",
    "external",
    "Pods",
    "Carthage",
    ".venv",
    "venv",
    "site-packages",
    "__pycache__",
    ".git",
];

const GENERATED_NAMES: &[&str] = &[
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "Cargo.lock",
    "go.sum",
    "poetry.lock",
    "Pipfile.lock",
    "composer.lock",
    "Gemfile.lock",
    "gradle-wrapper.jar",
];

const GENERATED_SUFFIXES: &[&str] = &[
    ".min.js",
    ".min.css",
    ".map",
    ".pb.go",
    "_pb2.py",
    "_pb2_grpc.py",
    ".pb.cc",
    ".pb.h",
    ".g.dart",
    ".designer.cs",
    ".generated.ts",
    ".generated.js",
    ".lock",
];

/// Extensions of text worth indexing without a grammar (documentation, configuration, other
/// languages): cut into line windows.
const TEXT_EXTENSIONS: &[&str] = &[
    "md",
    "markdown",
    "rst",
    "txt",
    "adoc",
    "org",
    "toml",
    "yaml",
    "yml",
    "json",
    "xml",
    "ini",
    "cfg",
    "conf",
    "properties",
    "gradle",
    "sql",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "bat",
    "c",
    "h",
    "cc",
    "cpp",
    "cxx",
    "hpp",
    "hh",
    "cs",
    "rb",
    "php",
    "swift",
    "scala",
    "sc",
    "clj",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "mli",
    "lua",
    "pl",
    "pm",
    "r",
    "dart",
    "m",
    "mm",
    "vue",
    "svelte",
    "html",
    "htm",
    "css",
    "scss",
    "sass",
    "less",
    "proto",
    "graphql",
    "gql",
    "tf",
    "hcl",
    "cmake",
    "mk",
    "dockerfile",
    "nix",
    "zig",
    "jl",
    "f90",
    "groovy",
    "vb",
    "fs",
    "elm",
];

/// File names without an extension that are text.
const TEXT_NAMES: &[&str] = &[
    "Makefile",
    "Dockerfile",
    "README",
    "LICENSE",
    "CHANGELOG",
    "CONTRIBUTING",
    "AUTHORS",
    "NOTICE",
    "Jenkinsfile",
    "Vagrantfile",
    "Rakefile",
    "Gemfile",
    "Procfile",
    ".gitignore",
    ".editorconfig",
];

/// Documentation: chunked as prose rather than code.
pub fn is_documentation(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".md")
        || lower.ends_with(".markdown")
        || lower.ends_with(".rst")
        || lower.ends_with(".adoc")
        || lower.ends_with(".txt")
        || ["readme", "changelog", "contributing", "authors", "notice"].contains(&lower.as_str())
}

/// Whether a path's name says it holds text: a parsed language, a text extension or a text
/// file name. Such a file is read as text whatever its encoding (Latin-1 sources are read
/// lossily); any other file is indexed when its content is text ([`is_text`]).
pub fn is_text_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if crate::Language::from_path(path).is_some() || TEXT_NAMES.contains(&name) {
        return true;
    }
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    ext.is_some_and(|e| TEXT_EXTENSIONS.contains(&e.as_str()))
}

/// Bytes read to decide whether content is text.
const TEXT_SAMPLE_BYTES: usize = 8192;

/// Whether content is text: no NUL, UTF-8 (a character cut by the sample's end aside), and
/// control characters other than tab, line feed, carriage return, form feed and escape (ANSI
/// colours in captured output) at most 1 in 100 bytes of the first 8 KiB. An empty file is
/// text.
pub fn is_text(bytes: &[u8]) -> bool {
    let sample = &bytes[..bytes.len().min(TEXT_SAMPLE_BYTES)];
    if sample.contains(&0) {
        return false;
    }
    match std::str::from_utf8(sample) {
        Ok(_) => {}
        // Cut inside the last character by the sample: text up to there.
        Err(e) if e.error_len().is_none() && sample.len() < bytes.len() => {}
        Err(_) => return false,
    }
    let control = sample
        .iter()
        .filter(|b| {
            (**b < 0x20 && !matches!(**b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) || **b == 0x7f
        })
        .count();
    control * 100 <= sample.len()
}

/// Every rule for one file whose content is at hand: by path, then by content (size, binary,
/// generated), then — for a file whose name does not say it is text — whether the content is
/// text.
pub fn skip_file(path: &str, bytes: &[u8], max_bytes: usize) -> Option<SkipReason> {
    skip_by_path(path)
        .or_else(|| skip_by_content(bytes, max_bytes))
        .or_else(|| (!is_text_path(path) && !is_text(bytes)).then_some(SkipReason::NotText))
}

/// Whether a path is skipped by its name alone (before reading its content): vendored or
/// generated. Whether a file is text is decided by its content ([`skip_file`]).
pub fn skip_by_path(path: &str) -> Option<SkipReason> {
    let mut parts = path.split('/');
    let name = parts.next_back().unwrap_or(path);
    if path
        .split('/')
        .rev()
        .skip(1)
        .any(|dir| VENDOR_DIRS.contains(&dir))
    {
        return Some(SkipReason::Vendored);
    }
    if GENERATED_NAMES.contains(&name) || GENERATED_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return Some(SkipReason::Generated);
    }
    None
}

/// Whether content is skipped: too large, binary, or generated (a marker in its first lines,
/// or minified: very long lines).
pub fn skip_by_content(bytes: &[u8], max_bytes: usize) -> Option<SkipReason> {
    if bytes.len() > max_bytes {
        return Some(SkipReason::Oversized);
    }
    let head = &bytes[..bytes.len().min(8192)];
    if head.contains(&0) {
        return Some(SkipReason::Binary);
    }
    let head_text = String::from_utf8_lossy(&bytes[..bytes.len().min(2048)]).to_lowercase();
    let marker = head_text.lines().take(8).any(|l| {
        l.contains("@generated")
            || (l.contains("code generated") && l.contains("do not edit"))
            || l.contains("auto-generated")
            || l.contains("autogenerated")
            || l.contains("this file is generated")
    });
    if marker {
        return Some(SkipReason::Generated);
    }
    let lines = bytes.iter().filter(|b| **b == b'\n').count() + 1;
    if bytes.len() > 4096 && bytes.len() / lines > 400 {
        return Some(SkipReason::Generated);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_by_rule() {
        assert_eq!(
            skip_by_path("vendor/github.com/x/y.go"),
            Some(SkipReason::Vendored)
        );
        assert_eq!(
            skip_by_path("web/node_modules/react/index.js"),
            Some(SkipReason::Vendored)
        );
        assert_eq!(
            skip_by_path("static/app.min.js"),
            Some(SkipReason::Generated)
        );
        assert_eq!(skip_by_path("Cargo.lock"), Some(SkipReason::Generated));
        assert_eq!(skip_by_path("api/v1/x.pb.go"), Some(SkipReason::Generated));
        assert_eq!(skip_by_path("assets/logo.png"), None, "decided by content");
        assert_eq!(skip_by_path("src/main.rs"), None);
        assert_eq!(skip_by_path("docs/guide.md"), None);
        assert_eq!(skip_by_path("Makefile"), None);
        assert_eq!(
            skip_by_path("src/vendor.rs"),
            None,
            "a file named vendor is not vendored"
        );
        assert!(is_documentation("README"));
        assert!(is_documentation("docs/a.MD"));
        assert!(!is_documentation("src/lib.rs"));
    }

    #[test]
    fn text_is_decided_by_content_when_the_name_does_not_say() {
        let max = 1 << 20;
        // Text without a known extension: indexed.
        for (path, content) in [
            (".ci/run", &b"#!/bin/sh\nset -eu\ncargo test\n"[..]),
            (
                "tests/ui/parse.expected",
                b"error: expected `;`\n  --> a.rs:1:5\n",
            ),
            (
                "LICENSE-MIT",
                b"Permission is hereby granted, free of charge\n",
            ),
            ("out/colours.expected", b"\x1b[31merror\x1b[0m: it failed\n"),
            ("notes/caf\u{e9}", "caf\u{e9} cr\u{e8}me\n".as_bytes()),
            ("empty", b""),
        ] {
            assert!(is_text(content), "{path}");
            assert_eq!(skip_file(path, content, max), None, "{path}");
        }
        // Not text: skipped with the reason, whatever the name.
        assert_eq!(
            skip_file("assets/logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", max),
            Some(SkipReason::Binary)
        );
        assert_eq!(
            skip_file("data/blob", &[0xff, 0xfe, 0x41, 0x00, 0x42], max),
            Some(SkipReason::Binary)
        );
        assert_eq!(
            skip_file("data/latin1", b"caf\xe9 cr\xe8me\n", max),
            Some(SkipReason::NotText)
        );
        assert_eq!(
            skip_file("data/ctl", b"\x01\x02\x03\x04abc\x05", max),
            Some(SkipReason::NotText)
        );
        // A name that says text keeps a Latin-1 source (read lossily).
        assert_eq!(skip_file("src/legacy.py", b"# caf\xe9\n", max), None);
        assert_eq!(
            skip_file("vendor/x/run", b"#!/bin/sh\n", max),
            Some(SkipReason::Vendored)
        );
        // A multi-byte character cut by the sample's end is still text.
        let mut long = "a".repeat(TEXT_SAMPLE_BYTES - 1).into_bytes();
        long.extend("é and more".as_bytes());
        assert!(is_text(&long));
    }

    #[test]
    fn content_by_rule() {
        assert_eq!(skip_by_content(b"fn main() {}\n", 1024), None);
        assert_eq!(
            skip_by_content(&[b'a'; 2048], 1024),
            Some(SkipReason::Oversized)
        );
        assert_eq!(
            skip_by_content(b"\x7fELF\0\0\x01", 1024),
            Some(SkipReason::Binary)
        );
        assert_eq!(
            skip_by_content(
                b"// Code generated by protoc-gen-go. DO NOT EDIT.\npackage x\n",
                1024
            ),
            Some(SkipReason::Generated)
        );
        let minified = format!("var a={};", "x".repeat(10_000));
        assert_eq!(
            skip_by_content(minified.as_bytes(), 1 << 20),
            Some(SkipReason::Generated)
        );
    }
}
