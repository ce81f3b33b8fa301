//! `[weaviate]`: where the chunks live and how to talk to it.

use evident_store::StoreError;
use serde::{Deserialize, Serialize};

/// How many replicas must acknowledge a write (and answer a read) before Weaviate replies.
/// Writes and reads both at `QUORUM` (the default) or `ALL` give read-your-writes on a
/// replicated collection; on a single node every level behaves the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConsistencyLevel {
    #[serde(alias = "one")]
    One,
    #[default]
    #[serde(alias = "quorum")]
    Quorum,
    #[serde(alias = "all")]
    All,
}

impl ConsistencyLevel {
    /// The name Weaviate uses, in the `consistency_level` query parameter and as the GraphQL
    /// `consistencyLevel` enum value.
    pub fn as_str(self) -> &'static str {
        match self {
            ConsistencyLevel::One => "ONE",
            ConsistencyLevel::Quorum => "QUORUM",
            ConsistencyLevel::All => "ALL",
        }
    }
}

/// Settings of the Weaviate chunk store (the runtime's `[weaviate]` table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct WeaviateConfig {
    /// Base URL of the Weaviate REST API, e.g. `http://127.0.0.1:8080` (without `/v1`).
    pub url: String,
    /// Name of the environment variable holding the API key, sent as `Authorization: Bearer`.
    /// Read once at connect time; the key itself is never stored in the config or logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The collection (class) holding the chunks. A second collection named
    /// `{collection}Meta` holds the vector-space record.
    #[serde(default = "default_collection")]
    pub collection: String,
    /// `false`: one collection, partitions told apart by the `clientId` filter.
    /// `true`: one Weaviate tenant per client partition (and `global` for global data).
    #[serde(default)]
    pub multi_tenancy: bool,
    /// Per-request timeout.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// Objects per request: write batches, delete batches, id lookups and listing pages.
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    /// Replica acknowledgement for writes and reads.
    #[serde(default)]
    pub consistency_level: ConsistencyLevel,
}

fn default_collection() -> String {
    "EvidentChunk".to_string()
}

fn default_timeout_secs() -> u64 {
    30
}

fn default_batch_size() -> usize {
    100
}

/// Weaviate's default `QUERY_MAXIMUM_RESULTS`: no query, page or batch delete goes past it.
pub(crate) const MAX_RESULTS: usize = 10_000;

impl WeaviateConfig {
    /// Defaults for everything but the URL.
    pub fn new(url: impl Into<String>) -> Self {
        WeaviateConfig {
            url: url.into(),
            api_key_env: None,
            collection: default_collection(),
            multi_tenancy: false,
            timeout_secs: default_timeout_secs(),
            batch_size: default_batch_size(),
            consistency_level: ConsistencyLevel::default(),
        }
    }

    /// Checks the settings without contacting Weaviate.
    pub fn validate(&self) -> Result<(), StoreError> {
        let url = self.url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(StoreError::invalid(format!(
                "weaviate.url must be http(s)://…, got `{}`",
                self.url
            )));
        }
        if !is_class_name(&self.collection) {
            return Err(StoreError::invalid(format!(
                "weaviate.collection must start with an upper-case letter and hold only \
                 letters, digits and `_` (at most 200), got `{}`",
                self.collection
            )));
        }
        if self.batch_size == 0 || self.batch_size > MAX_RESULTS {
            return Err(StoreError::invalid(format!(
                "weaviate.batch_size must be within 1..={MAX_RESULTS}, got {}",
                self.batch_size
            )));
        }
        if self.timeout_secs == 0 {
            return Err(StoreError::invalid(
                "weaviate.timeout_secs must be at least 1",
            ));
        }
        if let Some(var) = &self.api_key_env
            && var.trim().is_empty()
        {
            return Err(StoreError::invalid(
                "weaviate.api_key_env, when given, names an environment variable",
            ));
        }
        Ok(())
    }

    /// The API key from the named environment variable (`None` when no variable is named).
    pub(crate) fn api_key(&self) -> Result<Option<String>, StoreError> {
        let Some(var) = &self.api_key_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
            _ => Err(StoreError::invalid(format!(
                "weaviate.api_key_env names `{var}`, which is not set or empty"
            ))),
        }
    }

    /// The collection holding the vector-space record.
    pub(crate) fn meta_collection(&self) -> String {
        format!("{}Meta", self.collection)
    }
}

/// Weaviate class names: `^[A-Z][_0-9A-Za-z]*$` (kept short enough for the `Meta` suffix).
pub(crate) fn is_class_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 200
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_everything_but_the_url() {
        let cfg: WeaviateConfig =
            serde_json::from_value(serde_json::json!({"url": "http://127.0.0.1:8080"}))
                .expect("parses");
        assert_eq!(cfg, WeaviateConfig::new("http://127.0.0.1:8080"));
        assert_eq!(cfg.collection, "EvidentChunk");
        assert_eq!((cfg.timeout_secs, cfg.batch_size), (30, 100));
        assert!(!cfg.multi_tenancy);
        assert_eq!(cfg.consistency_level, ConsistencyLevel::Quorum);
        assert_eq!(cfg.meta_collection(), "EvidentChunkMeta");
        cfg.validate().expect("valid");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        let unknown = serde_json::from_value::<WeaviateConfig>(
            serde_json::json!({"url": "http://x", "colection": "Typo"}),
        );
        assert!(unknown.is_err(), "deny_unknown_fields");
        let level: WeaviateConfig = serde_json::from_value(
            serde_json::json!({"url": "http://x", "consistency_level": "all"}),
        )
        .expect("lower-case level accepted");
        assert_eq!(level.consistency_level, ConsistencyLevel::All);
        let mut cfg = WeaviateConfig::new("ftp://x");
        assert!(cfg.validate().is_err());
        cfg.url = "https://weaviate.example".into();
        cfg.collection = "lowercase".into();
        assert!(cfg.validate().is_err());
        cfg.collection = "Evident_Chunk2".into();
        cfg.batch_size = 0;
        assert!(cfg.validate().is_err());
        cfg.batch_size = 100;
        cfg.validate().expect("valid");
    }

    #[test]
    fn a_named_but_unset_key_variable_is_an_error() {
        let mut cfg = WeaviateConfig::new("http://x");
        assert_eq!(cfg.api_key().expect("no key"), None);
        cfg.api_key_env = Some("EVIDENT_TEST_SURELY_UNSET_WEAVIATE_KEY".into());
        let err = cfg.api_key().expect_err("unset");
        assert_eq!(err.kind, evident_store::ErrorKind::Invalid);
        assert!(
            err.message
                .contains("EVIDENT_TEST_SURELY_UNSET_WEAVIATE_KEY")
        );
    }
}
