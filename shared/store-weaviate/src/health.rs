//! Readiness: Weaviate answers `/v1/.well-known/ready` and the chunk collection exists.

use async_trait::async_trait;
use evident_store::{Health, HealthReport, Result, StoreError};
use reqwest::Method;

use crate::error;
use crate::{Inner, WeaviateStore};

impl Inner {
    /// `Ok` when Weaviate is ready to serve traffic.
    pub(crate) async fn ready(&self) -> Result<()> {
        let reply = self
            .client
            .send(Method::GET, "/v1/.well-known/ready", &[], None)
            .await?;
        if reply.is_success() {
            Ok(())
        } else {
            Err(error::status(
                "Weaviate readiness",
                reply.status,
                &reply.body,
            ))
        }
    }

    async fn probe(&self) -> Result<()> {
        self.ready().await?;
        let reply = self
            .client
            .send(
                Method::GET,
                &format!("/v1/schema/{}", self.class),
                &[],
                None,
            )
            .await?;
        match reply.status {
            200 if !reply.body.is_null() => Ok(()),
            200 | 404 => Err(StoreError::incompatible(format!(
                "collection `{}` is missing",
                self.class
            ))),
            s => Err(error::status(
                "reading the chunk collection",
                s,
                &reply.body,
            )),
        }
    }
}

#[async_trait]
impl Health for WeaviateStore {
    async fn check(&self) -> HealthReport {
        let result = self.inner.probe().await;
        HealthReport {
            backend: "weaviate".into(),
            roles: vec!["chunks".into()],
            ready: result.is_ok(),
            detail: Some(match result {
                Ok(()) => format!(
                    "collection `{}`{}",
                    self.inner.class,
                    if self.inner.multi_tenancy {
                        " (one tenant per client)"
                    } else {
                        ""
                    }
                ),
                Err(e) => e.to_string(),
            }),
        }
    }
}
