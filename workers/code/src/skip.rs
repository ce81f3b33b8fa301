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
    /// Not text (NUL bytes).
    Binary,
    /// Larger than the configured limit.
    Oversized,
    /// Neither source code nor documentation (images, archives, data dumps…).
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

/// Whether a path is skipped by its name alone (before reading its content).
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
    if crate::Language::from_path(path).is_some() || TEXT_NAMES.contains(&name) {
        return None;
    }
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext {
        Some(e) if TEXT_EXTENSIONS.contains(&e.as_str()) => None,
        _ => Some(SkipReason::NotText),
    }
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
        assert_eq!(skip_by_path("assets/logo.png"), Some(SkipReason::NotText));
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
