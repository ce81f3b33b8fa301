//! Documents: `documents` folders and `web` crawls.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::SourceConfig;

fn default_max_document_bytes() -> u64 {
    50 * 1024 * 1024
}

/// `kind = "documents"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DocumentsConfig {
    pub path: PathBuf,
    #[serde(default = "default_max_document_bytes")]
    pub max_document_bytes: u64,
}

impl SourceConfig for DocumentsConfig {
    const KIND: &'static str = "documents";
    const FAMILY: &'static str = "doc";

    fn validate(&self) -> Result<(), String> {
        if !self.path.is_absolute() {
            return Err(format!(
                "`path` must be absolute, not `{}`",
                self.path.display()
            ));
        }
        if self.max_document_bytes == 0 {
            return Err("`maxDocumentBytes` must be positive".into());
        }
        Ok(())
    }

    fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "documents".into())
    }

    fn local_paths(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
}

fn default_depth() -> u32 {
    2
}

fn default_pages() -> u32 {
    200
}

fn default_true() -> bool {
    true
}

/// `kind = "web"`: a bounded crawl from seed URLs, repeated every interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebConfig {
    pub urls: Vec<String>,
    /// Follow links only to the seeds' hosts (default), or anywhere.
    #[serde(default = "default_true")]
    pub same_host: bool,
    /// Links followed away from a seed (0: the seeds only).
    #[serde(default = "default_depth")]
    pub max_depth: u32,
    /// Pages fetched per poll.
    #[serde(default = "default_pages")]
    pub max_pages: u32,
    #[serde(default = "default_max_document_bytes")]
    pub max_document_bytes: u64,
}

impl SourceConfig for WebConfig {
    const KIND: &'static str = "web";
    const FAMILY: &'static str = "web";

    fn validate(&self) -> Result<(), String> {
        if self.urls.is_empty() {
            return Err("`urls` lists at least one page to start from".into());
        }
        for u in &self.urls {
            let url = Url::parse(u).map_err(|e| format!("`{u}`: {e}"))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(format!("`{u}`: only http and https are crawled"));
            }
            if !url.username().is_empty() || url.password().is_some() {
                return Err(format!("`{u}`: no credentials in URLs"));
            }
        }
        if self.max_depth > 10 {
            return Err("`maxDepth` is at most 10".into());
        }
        if !(1..=100_000).contains(&self.max_pages) {
            return Err("`maxPages` must be between 1 and 100000".into());
        }
        Ok(())
    }

    fn name(&self) -> String {
        self.urls
            .first()
            .and_then(|u| Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_else(|| "web".into())
    }

    fn remote_urls(&self) -> Vec<String> {
        self.urls.clone()
    }
}
