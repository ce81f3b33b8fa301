//! Wikis: `confluence`.

use serde::{Deserialize, Serialize};

use super::tracker::{Credentials, check_base_url};
use crate::SourceConfig;

fn default_limit() -> u32 {
    25
}

fn default_true() -> bool {
    true
}

fn default_max_attachment_bytes() -> u64 {
    super::DEFAULT_MAX_ATTACHMENT_BYTES
}

fn default_deletion_check_hours() -> u32 {
    24
}

/// `kind = "confluence"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfluenceConfig {
    /// The REST root's parent: `https://example.atlassian.net/wiki` (Cloud) or the Data
    /// Center URL.
    pub base_url: String,
    /// The space key (`ENG`).
    pub space: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// Pages per request.
    #[serde(default = "default_limit")]
    pub limit: u32,
    #[serde(default = "default_true")]
    pub attachments: bool,
    #[serde(default = "default_max_attachment_bytes")]
    pub max_attachment_bytes: u64,
    /// How often an incremental poll also lists every page id of the space to find deleted
    /// pages (`0`: at every poll).
    #[serde(default = "default_deletion_check_hours")]
    pub deletion_check_hours: u32,
}

impl SourceConfig for ConfluenceConfig {
    const KIND: &'static str = "confluence";
    const FAMILY: &'static str = "wiki";

    fn validate(&self) -> Result<(), String> {
        check_base_url(&self.base_url)?;
        let ok = !self.space.is_empty()
            && self
                .space
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'~');
        if !ok {
            return Err("`space` is a space key (`ENG`)".into());
        }
        if !(1..=250).contains(&self.limit) {
            return Err("`limit` must be between 1 and 250".into());
        }
        self.credentials().validate()
    }

    fn name(&self) -> String {
        self.space.to_lowercase()
    }

    fn remote_urls(&self) -> Vec<String> {
        vec![self.base_url.clone()]
    }

    fn credential_envs(&self) -> Vec<(&'static str, String)> {
        self.credentials().envs()
    }
}

impl ConfluenceConfig {
    /// The environment variables it authenticates with.
    pub fn credentials(&self) -> Credentials {
        Credentials {
            token_env: self.token_env.clone(),
            email_env: self.email_env.clone(),
        }
    }
}
