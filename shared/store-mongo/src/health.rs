//! Readiness: `{ping: 1}` on the store's database.

use async_trait::async_trait;
use bson::{Document, doc};
use evident_store::{Health, HealthReport};

use crate::{MongoStore, ROLES};

pub(crate) fn ping_command() -> Document {
    doc! {"ping": 1}
}

#[async_trait]
impl Health for MongoStore {
    async fn check(&self) -> HealthReport {
        let result = self.ping().await;
        HealthReport {
            backend: "mongo".to_string(),
            roles: ROLES.iter().map(|r| r.to_string()).collect(),
            ready: result.is_ok(),
            detail: result.err().map(|e| e.message),
        }
    }
}
