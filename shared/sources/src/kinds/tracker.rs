//! Issue trackers: `github`, `gitlab` and `jira`, and the credentials they (and Confluence)
//! name.

use serde::{Deserialize, Serialize};

use crate::SourceConfig;

fn default_per_page() -> u32 {
    100
}

fn default_github() -> String {
    "https://api.github.com".into()
}

fn default_gitlab() -> String {
    "https://gitlab.com".into()
}

pub fn check_base_url(url: &str) -> Result<(), String> {
    let u = url::Url::parse(url).map_err(|e| format!("`baseUrl` `{url}`: {e}"))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err("`baseUrl` must be http(s)".into());
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err("put credentials in `tokenEnv`/`emailEnv`, not in the URL".into());
    }
    Ok(())
}

fn check_page(per_page: u32) -> Result<(), String> {
    if (1..=100).contains(&per_page) {
        Ok(())
    } else {
        Err("`perPage` must be between 1 and 100".into())
    }
}

/// `kind = "github"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GithubConfig {
    /// `owner/repo`.
    pub repo: String,
    #[serde(default = "default_github")]
    pub base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    #[serde(default = "default_per_page")]
    pub per_page: u32,
    /// Pull requests are issues to GitHub's API; they are skipped unless asked for.
    #[serde(default)]
    pub include_pull_requests: bool,
}

impl SourceConfig for GithubConfig {
    const KIND: &'static str = "github";
    const FAMILY: &'static str = "tracker";

    fn validate(&self) -> Result<(), String> {
        let parts: Vec<&str> = self.repo.split('/').collect();
        if parts.len() != 2 || parts.iter().any(|p| p.is_empty() || p.contains(' ')) {
            return Err("`repo` is `owner/repo`".into());
        }
        check_base_url(&self.base_url)?;
        check_page(self.per_page)?;
        self.credentials().validate()
    }

    fn name(&self) -> String {
        self.repo.replace('/', "-")
    }

    fn remote_urls(&self) -> Vec<String> {
        vec![self.base_url.clone()]
    }

    fn credential_envs(&self) -> Vec<(&'static str, String)> {
        self.credentials().envs()
    }
}

impl GithubConfig {
    /// The environment variables it authenticates with.
    pub fn credentials(&self) -> Credentials {
        Credentials {
            token_env: self.token_env.clone(),
            email_env: None,
        }
    }
}

/// `kind = "gitlab"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitlabConfig {
    /// The project's numeric id or its path (`group/project`).
    pub project: String,
    #[serde(default = "default_gitlab")]
    pub base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    #[serde(default = "default_per_page")]
    pub per_page: u32,
}

impl SourceConfig for GitlabConfig {
    const KIND: &'static str = "gitlab";
    const FAMILY: &'static str = "tracker";

    fn validate(&self) -> Result<(), String> {
        if self.project.trim().is_empty() || self.project.contains(' ') {
            return Err("`project` is a project id or `group/project`".into());
        }
        check_base_url(&self.base_url)?;
        check_page(self.per_page)?;
        Credentials {
            token_env: self.token_env.clone(),
            email_env: None,
        }
        .validate()
    }

    fn name(&self) -> String {
        self.project.replace('/', "-")
    }

    fn remote_urls(&self) -> Vec<String> {
        vec![self.base_url.clone()]
    }

    fn credential_envs(&self) -> Vec<(&'static str, String)> {
        Credentials {
            token_env: self.token_env.clone(),
            email_env: None,
        }
        .envs()
    }
}

/// Which Jira search endpoint to use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JiraSearchApi {
    /// `GET /rest/api/2/search` with `startAt` (Jira Data Center and Server).
    #[default]
    Search,
    /// `GET /rest/api/2/search/jql` with `nextPageToken` (Jira Cloud, where the former is
    /// gone since 2025).
    Jql,
}

/// `kind = "jira"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JiraConfig {
    /// The project key (`SHOP`).
    pub project: String,
    /// `https://example.atlassian.net` or a Data Center URL.
    pub base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    #[serde(default = "default_per_page")]
    pub per_page: u32,
    #[serde(default)]
    pub search_api: JiraSearchApi,
}

impl SourceConfig for JiraConfig {
    const KIND: &'static str = "jira";
    const FAMILY: &'static str = "tracker";

    fn validate(&self) -> Result<(), String> {
        let ok = !self.project.is_empty()
            && self
                .project
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ok {
            return Err("`project` is a Jira project key (`SHOP`)".into());
        }
        check_base_url(&self.base_url)?;
        check_page(self.per_page)?;
        self.credentials().validate()
    }

    fn name(&self) -> String {
        self.project.to_lowercase()
    }

    fn remote_urls(&self) -> Vec<String> {
        vec![self.base_url.clone()]
    }

    fn credential_envs(&self) -> Vec<(&'static str, String)> {
        self.credentials().envs()
    }
}

impl JiraConfig {
    /// The environment variables it authenticates with.
    pub fn credentials(&self) -> Credentials {
        Credentials {
            token_env: self.token_env.clone(),
            email_env: self.email_env.clone(),
        }
    }
}

/// How requests authenticate. Values come from environment variables named in the source's
/// settings, read when the client is built; they are never stored or logged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Credentials {
    /// Environment variable holding a token (GitHub, GitLab, Jira/Confluence PAT or API token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// Environment variable holding the account e-mail (Atlassian Cloud: basic auth with the
    /// API token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_env: Option<String>,
}

impl Credentials {
    /// The variables named, with their setting's name.
    pub fn envs(&self) -> Vec<(&'static str, String)> {
        [("tokenEnv", &self.token_env), ("emailEnv", &self.email_env)]
            .into_iter()
            .filter_map(|(f, v)| v.clone().map(|v| (f, v)))
            .collect()
    }

    pub fn validate(&self) -> Result<(), String> {
        for (field, v) in [("tokenEnv", &self.token_env), ("emailEnv", &self.email_env)] {
            if let Some(v) = v {
                let ok = !v.is_empty()
                    && v.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
                if !ok {
                    return Err(format!(
                        "`{field}` names an environment variable (A-Z, 0-9, _), not a value"
                    ));
                }
            }
        }
        if self.email_env.is_some() && self.token_env.is_none() {
            return Err("`emailEnv` goes with `tokenEnv`".into());
        }
        Ok(())
    }
}
