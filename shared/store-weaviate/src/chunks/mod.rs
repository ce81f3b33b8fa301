//! [`ChunkStore`] on Weaviate.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use evident_core::{Chunk, NodeKey, Scope, Visibility};
use evident_store::{
    ChunkFilter, ChunkStore, ErrorKind, Result, ScoredId, StoreError, VectorSpace,
};
use reqwest::Method;
use serde_json::{Map, Value, json};

use labels::{label_properties, with_filter};

use crate::config::MAX_RESULTS;
use crate::error;
use crate::ids::{object_id, tenant_name};
use crate::query::{
    self, Filter, GetQuery, SORT_BY_ORDINAL, SORT_NEWEST_FIRST, bm25_arg, hybrid_arg,
    near_vector_arg,
};
use crate::{Inner, WeaviateStore};

mod labels;
mod properties;
mod read;
mod write;

pub(crate) use properties::*;

/// Properties read back to rebuild a [`Chunk`] (plus `seq`, the newest-first key).
const CHUNK_FIELDS: &str = "chunkId clientId projectId groupId sourceUrn kind title content \
                            contentHash locator graphRefs metadata observedAt ordinal seq";
const SOURCE_FIELDS: &str = "chunkId contentHash ordinal";
const SCORE_FIELDS: &str = "chunkId _additional{score}";
const DISTANCE_FIELDS: &str = "chunkId _additional{distance}";
/// Relocations (one PATCH each) in flight at once.
const RELOCATE_CONCURRENCY: usize = 8;

/// One query to run for a reader: a tenant (multi-tenant collections) and the part of the
/// visibility rule that tenant's data can match.
struct Target {
    tenant: Option<String>,
    filter: Filter,
    /// Partitions this query spans (how many objects one chunk id can match).
    partitions: usize,
}

/// How a search hit is scored.
#[derive(Clone, Copy)]
enum Score {
    /// `_additional.score` (BM25, hybrid): positive, higher is better.
    Relevance,
    /// `_additional.distance` (cosine distance): score = 1 − distance = cosine similarity.
    Distance,
}

impl Inner {
    /// The queries covering what `vis` may see: one over the whole collection, or one per
    /// tenant (global and the reader's client) with the clauses that tenant can satisfy.
    fn targets(&self, vis: &Visibility) -> Vec<Target> {
        if !self.multi_tenancy {
            return query::visibility_filter(vis)
                .map(|filter| Target {
                    tenant: None,
                    filter,
                    partitions: vis.partitions().len(),
                })
                .into_iter()
                .collect();
        }
        let clauses = vis.clauses();
        vis.partitions()
            .into_iter()
            .filter_map(|p| {
                let own: Vec<_> = clauses
                    .iter()
                    .filter(|c| c.client_id.as_deref().unwrap_or("") == p)
                    .cloned()
                    .collect();
                query::clauses_filter(&own).map(|filter| Target {
                    tenant: Some(tenant_name(p)),
                    filter,
                    partitions: 1,
                })
            })
            .collect()
    }

    /// The tenant holding `partition` (multi-tenant collections only).
    fn tenant_of(&self, partition: &str) -> Option<String> {
        self.multi_tenancy.then(|| tenant_name(partition))
    }

    /// Objects returned by a `Get` query; a tenant that does not exist yet holds nothing.
    async fn rows(&self, tenant: Option<&str>, query: &str) -> Result<Vec<Value>> {
        let e = match self.client.graphql(query).await {
            Ok(mut data) => {
                return match data
                    .get_mut("Get")
                    .and_then(|g| g.get_mut(self.class.as_str()))
                    .map(Value::take)
                {
                    Some(Value::Array(rows)) => Ok(rows),
                    Some(Value::Null) | None => Ok(Vec::new()),
                    Some(other) => Err(error::unexpected("GraphQL Get", &other)),
                };
            }
            Err(e) => e,
        };
        if let Some(t) = tenant
            && e.kind == ErrorKind::Invalid
            && self.tenant_absent(t, &e.message).await?
        {
            return Ok(Vec::new());
        }
        Err(e)
    }

    /// Whether a refusal happened because `tenant` does not exist (nothing was ever written
    /// there). Weaviate's message usually says so; otherwise the tenant list decides.
    async fn tenant_absent(&self, tenant: &str, message: &str) -> Result<bool> {
        if error::is_tenant_missing(message) {
            return Ok(true);
        }
        if self.tenants.lock().contains(tenant) {
            return Ok(false);
        }
        let exists = self.tenant_names().await?.iter().any(|t| t == tenant);
        if exists {
            self.tenants.lock().insert(tenant.to_string());
        }
        Ok(!exists)
    }

    fn query<'a>(
        &'a self,
        tenant: Option<&'a str>,
        filter: &'a Filter,
        fields: &'a str,
        limit: usize,
    ) -> GetQuery<'a> {
        GetQuery {
            class: &self.class,
            tenant,
            filter: Some(filter),
            search: None,
            sort: None,
            limit: limit.min(MAX_RESULTS),
            offset: 0,
            consistency: self.consistency,
            fields,
        }
    }

    /// Newest-first keys: wall-clock microseconds, strictly increasing within this process
    /// (so a batch keeps its order), comparable across processes up to clock skew.
    fn next_seq(&self) -> (i64, i64) {
        let now = now_millis();
        let mut last = self.clock.lock();
        let seq = now.saturating_mul(1_000).max(*last + 1);
        *last = seq;
        (now, seq)
    }

    /// Checks a vector against the bound space (when one is bound).
    fn check_vector(&self, vector: &[f32], what: &str) -> Result<()> {
        query::check_finite(vector)
            .map_err(|e| StoreError::invalid(format!("{what}: {}", e.message)))?;
        if let Some(space) = self.space.lock().as_ref()
            && space.dim != vector.len()
        {
            return Err(StoreError::invalid(format!(
                "{what}: vector has {} dims, the store holds `{}` vectors of {} dims",
                vector.len(),
                space.embedder,
                space.dim
            )));
        }
        Ok(())
    }

    /// Creates the tenants not known to exist (multi-tenant collections).
    async fn ensure_tenants(&self, tenants: BTreeSet<String>) -> Result<()> {
        let missing: Vec<String> = {
            let known = self.tenants.lock();
            tenants.into_iter().filter(|t| !known.contains(t)).collect()
        };
        for tenant in missing {
            let body = json!([{ "name": tenant }]);
            let reply = self
                .client
                .send(
                    Method::POST,
                    &format!("/v1/schema/{}/tenants", self.class),
                    &[],
                    Some(&body),
                )
                .await?;
            let exists =
                reply.status == 422 && reply.message().to_lowercase().contains("already exist");
            if !reply.is_success() && !exists {
                return Err(error::status(
                    &format!("creating tenant `{tenant}`"),
                    reply.status,
                    &reply.body,
                ));
            }
            self.tenants.lock().insert(tenant);
        }
        Ok(())
    }
}

#[async_trait]
impl ChunkStore for WeaviateStore {
    async fn bind_vector_space(&self, space: &VectorSpace) -> Result<()> {
        self.inner.bind_vector_space(space).await
    }

    async fn upsert(&self, chunks: Vec<(Chunk, Vec<f32>)>) -> Result<()> {
        self.inner.upsert(chunks).await
    }

    async fn relocate(&self, chunks: Vec<Chunk>) -> Result<()> {
        self.inner.relocate(chunks).await
    }

    async fn delete(&self, partition: &str, ids: &[String]) -> Result<usize> {
        self.inner.delete(partition, ids).await
    }

    async fn source_chunks(
        &self,
        partition: &str,
        source_urn: &str,
    ) -> Result<Vec<(String, String)>> {
        self.inner.source_chunks(partition, source_urn).await
    }

    async fn get(&self, vis: &Visibility, ids: &[String]) -> Result<Vec<Chunk>> {
        self.inner.get(vis, ids).await
    }

    async fn search_text(
        &self,
        vis: &Visibility,
        query: &str,
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        self.inner.search_text(vis, query, filter, limit).await
    }

    async fn search_vector(
        &self,
        vis: &Visibility,
        vector: &[f32],
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        self.inner.search_vector(vis, vector, filter, limit).await
    }

    async fn by_kind(
        &self,
        vis: &Visibility,
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<Chunk>> {
        self.inner.by_kind(vis, filter, limit).await
    }
}

#[cfg(test)]
mod tests;
