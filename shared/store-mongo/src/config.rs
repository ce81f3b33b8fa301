//! The `[mongo]` section of the runtime configuration.

use serde::{Deserialize, Serialize};

use evident_store::{Result, StoreError};

/// How to reach MongoDB. The connection string holds credentials, so the configuration names
/// the environment variable that holds it; the string itself is read at connect time and never
/// stored or logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct MongoConfig {
    /// Name of the environment variable holding the connection string
    /// (`mongodb://user:pass@host/?replicaSet=rs0`, `mongodb+srv://…`).
    #[serde(default = "default_uri_env")]
    pub uri_env: String,
    /// Database holding Evident's collections.
    #[serde(default = "default_database")]
    pub database: String,
    /// Bound on server selection, connecting and each command.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
}

fn default_uri_env() -> String {
    "EVIDENT_MONGO_URL".to_string()
}

fn default_database() -> String {
    "evident".to_string()
}

fn default_timeout_secs() -> u64 {
    30
}

impl Default for MongoConfig {
    fn default() -> Self {
        MongoConfig {
            uri_env: default_uri_env(),
            database: default_database(),
            timeout_secs: default_timeout_secs(),
        }
    }
}

impl MongoConfig {
    /// Refuses settings that cannot work (checked at load, before connecting).
    pub fn validate(&self) -> Result<()> {
        if self.uri_env.trim().is_empty() {
            return Err(StoreError::invalid(
                "mongo.uri_env must name an environment variable",
            ));
        }
        // Database names: no empty name, none of `/\. "$*<>:|?` and NUL, at most 63 bytes.
        if self.database.is_empty()
            || self.database.len() > 63
            || self
                .database
                .chars()
                .any(|c| "/\\. \"$*<>:|?\0".contains(c))
        {
            return Err(StoreError::invalid(format!(
                "mongo.database {:?} is not a valid MongoDB database name",
                self.database
            )));
        }
        if self.timeout_secs == 0 {
            return Err(StoreError::invalid("mongo.timeout_secs must be at least 1"));
        }
        Ok(())
    }

    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_missing_keys_and_unknown_keys_are_refused() {
        let cfg: MongoConfig =
            serde_json::from_str(r#"{"uri_env": "MONGO_URL"}"#).expect("minimal config");
        assert_eq!(
            cfg,
            MongoConfig {
                uri_env: "MONGO_URL".into(),
                database: "evident".into(),
                timeout_secs: 30
            }
        );
        assert!(cfg.validate().is_ok());
        assert!(serde_json::from_str::<MongoConfig>(r#"{"uri": "mongodb://x"}"#).is_err());
        let bad = MongoConfig {
            database: "a.b".into(),
            ..MongoConfig::default()
        };
        assert!(bad.validate().is_err());
    }
}
