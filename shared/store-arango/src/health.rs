//! Readiness: the server answers `GET /_api/version` and the configured database exists.

use async_trait::async_trait;
use evident_store::{Health, HealthReport, StoreError};

use crate::ArangoStore;
use crate::error::{ERR_DATABASE_NOT_FOUND, Error};

#[async_trait]
impl Health for ArangoStore {
    async fn check(&self) -> HealthReport {
        let result: Result<String, Error> = async {
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
                Ok(version) => format!("ArangoDB {version}, database {}", self.database()),
                Err(e) => StoreError::from(e).message,
            }),
        }
    }
}
