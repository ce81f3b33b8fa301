//! Connection settings, as the runtime reads them from the `[arango]` table of its TOML config.
//!
//! Credentials are never part of the config: it names the environment variables that hold
//! them, and they are read once, at connect time, and kept only in memory (never logged).

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Seconds a request may take before it fails as `Unavailable`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

fn default_timeout_secs() -> u64 {
    DEFAULT_TIMEOUT_SECS
}

/// `[arango]`: where the graph and the alias registry live.
///
/// ```toml
/// [arango]
/// url = "http://arangodb:8529"
/// database = "evident"
/// username_env = "ARANGO_USER"
/// password_env = "ARANGO_PASSWORD"
/// timeout_secs = 30
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct ArangoConfig {
    /// Base URL of the server or coordinator, e.g. `http://localhost:8529`.
    pub url: String,
    /// Database holding Evident's collections; created at connect when missing.
    pub database: String,
    /// Name of the environment variable holding the user name (no authentication when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username_env: Option<String>,
    /// Name of the environment variable holding the password (empty when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// Per-request timeout in seconds.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// Idle connections kept per host (reqwest's pool); its default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<usize>,
}

impl ArangoConfig {
    /// A config with defaults for everything but the server and the database.
    pub fn new(url: impl Into<String>, database: impl Into<String>) -> ArangoConfig {
        ArangoConfig {
            url: url.into(),
            database: database.into(),
            username_env: None,
            password_env: None,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            pool_size: None,
        }
    }

    /// Checks what can be checked without a server.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        let url = self.url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::Config(format!(
                "arango.url must start with http:// or https://, got `{url}`"
            )));
        }
        if self.database.is_empty() || self.database.len() > 128 {
            return Err(Error::Config(
                "arango.database must be a non-empty name of at most 128 bytes".into(),
            ));
        }
        if self.database.contains('/') || self.database.chars().any(char::is_control) {
            return Err(Error::Config(format!(
                "arango.database `{}` contains `/` or control characters",
                self.database
            )));
        }
        if self.timeout_secs == 0 {
            return Err(Error::Config(
                "arango.timeout_secs must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// (user, password) from the named environment variables, when a user variable is named.
    pub(crate) fn credentials(&self) -> Result<Option<(String, String)>, Error> {
        let Some(user_var) = &self.username_env else {
            return Ok(None);
        };
        let user = std::env::var(user_var).map_err(|_| {
            Error::Config(format!(
                "arango.username_env names `{user_var}`, but that environment variable is not set"
            ))
        })?;
        let password = match &self.password_env {
            Some(var) => std::env::var(var).map_err(|_| {
                Error::Config(format!(
                    "arango.password_env names `{var}`, but that environment variable is not set"
                ))
            })?,
            None => String::new(),
        };
        Ok(Some((user, password)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_table_with_defaults() {
        let cfg: ArangoConfig =
            serde_json::from_str(r#"{"url": "http://localhost:8529", "database": "evident"}"#)
                .expect("config");
        assert_eq!(cfg, ArangoConfig::new("http://localhost:8529", "evident"));
        assert_eq!(cfg.timeout_secs, 30);
        assert!(cfg.validate().is_ok());
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        assert!(
            serde_json::from_str::<ArangoConfig>(
                r#"{"url": "http://x", "database": "d", "password": "secret"}"#
            )
            .is_err(),
            "a literal password is not a known key"
        );
        assert!(ArangoConfig::new("localhost:8529", "d").validate().is_err());
        assert!(ArangoConfig::new("http://x", "").validate().is_err());
        assert!(ArangoConfig::new("http://x", "a/b").validate().is_err());
    }

    #[test]
    fn a_named_but_missing_variable_is_a_config_error() {
        let mut cfg = ArangoConfig::new("http://x", "d");
        assert_eq!(cfg.credentials().expect("no auth"), None);
        cfg.username_env = Some("EVIDENT_ARANGO_TEST_SURELY_UNSET_5c1e".into());
        let err = cfg.credentials().expect_err("missing variable");
        assert!(
            err.to_string()
                .contains("EVIDENT_ARANGO_TEST_SURELY_UNSET_5c1e")
        );
    }
}
