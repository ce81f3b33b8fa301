//! Finding documents on disk for `serve --ingest` and `ingest DIR`.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Extensions read as documents.
const DOC_EXTENSIONS: &[&str] = &["md", "markdown", "txt", "rst", "adoc", "org"];
/// Directories never descended into.
const SKIP_DIRS: &[&str] = &[
    ".git",
    "target",
    "node_modules",
    "evident-data",
    ".venv",
    "vendor",
];
/// Files larger than this are skipped (the API's content limit is 8 MiB).
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

pub struct LocalFile {
    pub path: PathBuf,
    /// The path as shown in citations (relative to the given root).
    pub display: String,
    pub urn: String,
}

pub fn collect(root: &Path) -> anyhow::Result<Vec<LocalFile>> {
    let meta =
        std::fs::metadata(root).with_context(|| format!("cannot read {}", root.display()))?;
    let mut out = Vec::new();
    if meta.is_file() {
        let display = root.display().to_string();
        out.push(LocalFile {
            path: root.to_path_buf(),
            urn: format!("file:{display}"),
            display,
        });
        return Ok(out);
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .with_context(|| format!("cannot list {}", dir.display()))?
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if !SKIP_DIRS.contains(&name.as_str()) && !name.starts_with('.') {
                    stack.push(path);
                }
            } else if ft.is_file() {
                let ext = path
                    .extension()
                    .and_then(|e| e.to_str())
                    .map(str::to_lowercase)
                    .unwrap_or_default();
                let size = entry.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
                if DOC_EXTENSIONS.contains(&ext.as_str()) && size > 0 && size <= MAX_FILE_BYTES {
                    let rel = path
                        .strip_prefix(root)
                        .unwrap_or(&path)
                        .display()
                        .to_string();
                    let display = root.join(&rel).display().to_string();
                    out.push(LocalFile {
                        path,
                        urn: format!("file:{display}"),
                        display,
                    });
                }
            }
        }
    }
    out.sort_by(|a, b| a.display.cmp(&b.display));
    Ok(out)
}
