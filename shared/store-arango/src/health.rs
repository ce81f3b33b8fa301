//! Readiness: the server answers `GET /_db/{database}/_api/version` and the configured
//! database exists. A version the server does not disclose (`--server.harden`) is reported as
//! unknown, not as a failure.

use async_trait::async_trait;
use evident_store::{Health, HealthReport, StoreError};

use crate::ArangoStore;
use crate::error::{ERR_DATABASE_NOT_FOUND, Error};

#[async_trait]
impl Health for ArangoStore {
    async fn check(&self) -> HealthReport {
        let result: Result<Option<String>, Error> = async {
            let version = self.client().version().await?;
            if !self.client().database_exists().await? {
                return Err(Error::Server {
                    what: "database info".into(),
                    status: 404,
                    num: ERR_DATABASE_NOT_FOUND,
                    message: format!("database `{}` does not exist", self.database()),
                });
            }
            Ok(version)
        }
        .await;
        HealthReport {
            backend: "arango".into(),
            roles: vec!["graph".into(), "aliases".into()],
            ready: result.is_ok(),
            detail: Some(match result {
                Ok(Some(version)) => {
                    format!("ArangoDB {version}, database {}", self.database())
                }
                Ok(None) => format!(
                    "ArangoDB (version not disclosed), database {}",
                    self.database()
                ),
                Err(e) => StoreError::from(e).message,
            }),
        }
    }
}
