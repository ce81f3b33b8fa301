//! Registering git sources (API, CLI, config file); pushing git data from external indexers
//! is in [`super::push`], re-exported here (the API's paths stay `git::service::…`).

use evident_core::Visibility;
use evident_kb::{Kb, KbError, TaskSubmitter};
use evident_store::indexers::IndexerSource;
use evident_store::queue::{Millis, TaskRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::push::*;
use crate::kinds::git::{GitSourceConfig, default_max_file_bytes};

/// Polling interval when none is given.
pub const DEFAULT_INTERVAL_SECS: u64 = crate::registration::DEFAULT_INTERVAL_SECS;

/// `POST /api/v1/sources/git`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitSourceRequest {
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub group_id: Option<String>,
    /// Default: `{clientId}.{name}`.
    #[serde(default)]
    pub id: Option<String>,
    /// The repository's name in node keys. Default: the last segment of the URL or path.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub path: Option<std::path::PathBuf>,
    #[serde(default)]
    pub branches: Vec<String>,
    #[serde(default)]
    pub interval_secs: Option<u64>,
    #[serde(default)]
    pub username_env: Option<String>,
    #[serde(default)]
    pub token_env: Option<String>,
    #[serde(default)]
    pub issue_tracker: Option<String>,
    #[serde(default)]
    pub max_file_bytes: Option<u64>,
    #[serde(default)]
    pub enabled: Option<bool>,
}

use crate::registration::SourceRequest;
pub use crate::registration::check_id;

impl GitSourceRequest {
    /// The repository's name in node keys: as given, else the last segment of the URL or
    /// path without `.git`.
    fn repository_name(&self) -> String {
        if let Some(name) = self.name.as_ref().filter(|n| !n.trim().is_empty()) {
            return name.clone();
        }
        let location = self
            .url
            .clone()
            .or_else(|| self.path.as_ref().map(|p| p.display().to_string()))
            .unwrap_or_default();
        location
            .trim_end_matches('/')
            .rsplit(['/', ':'])
            .next()
            .unwrap_or("")
            .trim_end_matches(".git")
            .to_string()
    }

    /// The source this request registers (validated like every kind's, by
    /// [`SourceRequest::to_source`]); a git request only names its settings in typed fields.
    pub fn to_source(&self, now: Millis) -> Result<IndexerSource, KbError> {
        self.request()?.to_source("git", now)
    }

    /// [`Self::to_source`] with the path under `[sources] roots` and the URL's scheme and IP
    /// literal allowed by the egress policy.
    pub fn to_source_with(
        &self,
        now: Millis,
        access: &crate::access::Access,
    ) -> Result<IndexerSource, KbError> {
        self.request()?.to_source_with("git", now, access)
    }

    fn request(&self) -> Result<SourceRequest, KbError> {
        let cfg = GitSourceConfig {
            name: self.repository_name(),
            url: self.url.clone(),
            path: self.path.clone(),
            branches: self.branches.clone(),
            username_env: self.username_env.clone(),
            token_env: self.token_env.clone(),
            issue_tracker: self.issue_tracker.clone(),
            max_file_bytes: self.max_file_bytes.unwrap_or_else(default_max_file_bytes),
        };
        let config = match serde_json::to_value(&cfg) {
            Ok(Value::Object(map)) => map,
            _ => return Err(KbError::Invalid("unserialisable git settings".into())),
        };
        Ok(SourceRequest {
            client_id: self.client_id.clone(),
            project_id: self.project_id.clone(),
            group_id: self.group_id.clone(),
            id: self.id.clone(),
            interval_secs: self.interval_secs,
            enabled: self.enabled,
            config,
        })
    }
}

/// Registers (or updates) a git source under the process's access
/// ([`crate::access::current`]). An id registered by another client is refused.
pub async fn register(
    kb: &Kb,
    req: &GitSourceRequest,
    now: Millis,
) -> Result<IndexerSource, KbError> {
    register_with(kb, &crate::access::current(), req, now).await
}

/// Registers (or updates) a git source: URL and branches checked, a local repository under
/// `[sources] roots`, an HTTPS remote's host allowed by the egress policy (resolved).
pub async fn register_with(
    kb: &Kb,
    access: &crate::access::Access,
    req: &GitSourceRequest,
    now: Millis,
) -> Result<IndexerSource, KbError> {
    let source = req.to_source_with(now, access)?;
    crate::registration::check_access(&source, access).await?;
    crate::registration::put(kb, source, now).await
}

/// Git sources the reader may see.
pub async fn list(kb: &Kb, vis: &Visibility) -> Result<Vec<IndexerSource>, KbError> {
    crate::registration::list(kb, vis, Some("git")).await
}

/// One git source, if the reader may see it.
pub async fn get(kb: &Kb, vis: &Visibility, id: &str) -> Result<IndexerSource, KbError> {
    crate::registration::get(kb, vis, Some("git"), id).await
}

/// Unregisters a source and queues the removal of everything it wrote.
pub async fn unregister(
    kb: &Kb,
    tasks: &TaskSubmitter,
    vis: &Visibility,
    id: &str,
    now: Millis,
) -> Result<TaskRecord, KbError> {
    crate::registration::unregister(kb, tasks, vis, Some("git"), id, now).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_are_validated_and_named() {
        let req = GitSourceRequest {
            client_id: Some("Acme".into()),
            url: Some("https://github.com/acme/shop.git".into()),
            ..Default::default()
        };
        let s = req.to_source(1).expect("valid");
        assert_eq!(s.id, "acme.shop");
        assert_eq!(s.config["name"], "shop");
        assert_eq!(s.interval_secs, DEFAULT_INTERVAL_SECS);
        let bad = [
            GitSourceRequest {
                client_id: Some("a".into()),
                ..Default::default()
            },
            GitSourceRequest {
                url: Some("https://x/y.git".into()),
                ..Default::default()
            },
            GitSourceRequest {
                client_id: Some("a".into()),
                path: Some("relative/path".into()),
                ..Default::default()
            },
            GitSourceRequest {
                client_id: Some("a".into()),
                url: Some("https://x/y.git".into()),
                interval_secs: Some(1),
                ..Default::default()
            },
            GitSourceRequest {
                client_id: Some("a".into()),
                url: Some("https://x/y.git".into()),
                id: Some("Bad Id".into()),
                ..Default::default()
            },
        ];
        for b in bad {
            assert!(b.to_source(1).is_err(), "{b:?}");
        }
    }
}
