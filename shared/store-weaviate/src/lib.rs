//! Evident's chunks on Weaviate: the [`ChunkStore`](evident_store::ChunkStore) role (text,
//! vectors, BM25, vector and hybrid search, exact filters) over Weaviate's REST and GraphQL
//! APIs, through a thin typed client on `reqwest`.
//!
//! # Layout
//!
//! One collection (default `EvidentChunk`) holds one object per chunk, with the vector
//! Evident computed (vectorizer `none`, HNSW, cosine distance) and the properties
//! `chunkId partition clientId projectId groupId sourceUrn kind title content contentHash
//! locator graphRefs metadata observedAt ordinal createdAt seq knowledgeType infoType tags
//! entity` (the last four: typed-knowledge labels copied out of `metadata`, see
//! `chunks::labels`). Ids, scope fields, source and
//! kind are `field`-tokenised (the whole value is one token, so filters are exact — the
//! reference filtered `sourceUrn` on word tokens); only `title` and `content` are
//! word-tokenised and BM25-searchable (title weighted ×2); `locator` and `metadata` are
//! stored as JSON text, not indexed. Absent scope fields are absent properties, found with
//! `IsNull` (the collection indexes null state). `seq` orders "newest first": it is taken at
//! upsert (microseconds, strictly increasing within a process) and kept by relocation — the
//! embedded store's row order. `seq` and `createdAt` are `number` properties: GraphQL `Int` is
//! 32-bit, and Weaviate answers larger `int` values as `null`. A second collection, `{collection}Meta`, holds the vector
//! space (embedder and dimension) once bound;
//! [`bind_vector_space`](evident_store::ChunkStore::bind_vector_space) refuses another one
//! with `Incompatible`.
//!
//! # Ids
//!
//! Object ids are UUIDs derived from (partition, chunk id) (see [`object_id`]): the same
//! chunk always maps to the same object, so an upsert replaces it and chunk ids are unique per
//! partition.
//!
//! # Filters
//!
//! Every read applies the reader's [`Visibility`](evident_core::Visibility): its
//! [`clauses`](evident_core::Visibility::clauses) become a `where` filter, an `Or` over the
//! clauses, each an `And` of `Equal` / `IsNull` conditions on `clientId`, `projectId`,
//! `groupId`; kind filters are `ContainsAny` on `kind`; typed-knowledge filters are one
//! condition per label group (`Equal`, or `ContainsAny` for several values and for `tags`).
//! Values are JSON-escaped GraphQL literals, never spliced text. Writes use
//! `consistency_level` and reads `consistencyLevel` (default `QUORUM`), and Weaviate indexes an object before the batch call returns, so a chunk
//! is findable as soon as `upsert` returns.
//!
//! # Tenancy
//!
//! With `multi_tenancy = false` (default) every partition shares the collection and the
//! `clientId` conditions keep them apart. With `multi_tenancy = true` each client partition is
//! a Weaviate tenant (see [`tenant_name`]; the global partition is the tenant `global`),
//! created on first write; a read queries the global tenant and the reader's, each with the
//! clauses its data can match, and merges the hits by score. Those scores come from two
//! queries — BM25 statistics per tenant index, hybrid scores normalised per query — so the
//! order across the global and a client tenant is approximate (within one tenant it is
//! Weaviate's). A tenant that does not exist yet reads as empty.
//!
//! # Failures
//!
//! Connection failures, timeouts, HTTP 408/429/5xx and error messages that say the service is
//! unavailable or timed out are `Unavailable` (retry); 400/422 and other 4xx, GraphQL
//! `errors` in an HTTP 200 answer and per-object batch errors are `Invalid`; a collection or
//! vector space Evident cannot use as it is is `Incompatible`; a stored object that does not
//! decode is `Corrupt`.
//!
//! Must not: hold graph, alias, source or queue data, or log the API key.

mod chunks;
mod client;
mod config;
mod error;
mod health;
mod ids;
mod query;
mod schema;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use evident_core::Visibility;
use evident_store::{ChunkFilter, Result, ScoredId, VectorSpace};
use parking_lot::Mutex;

pub use config::{ConsistencyLevel, WeaviateConfig};
pub use ids::{object_id, tenant_name};

/// The Weaviate chunk store. Cheap to clone (shares one HTTP client and state).
#[derive(Clone)]
pub struct WeaviateStore {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) client: client::Client,
    pub(crate) class: String,
    pub(crate) meta_class: String,
    pub(crate) multi_tenancy: bool,
    pub(crate) batch_size: usize,
    pub(crate) consistency: ConsistencyLevel,
    /// The vector space once bound (checked against every vector written or searched).
    pub(crate) space: Mutex<Option<VectorSpace>>,
    /// Tenants known to exist (multi-tenant collections).
    pub(crate) tenants: Mutex<HashSet<String>>,
    /// Last `seq` handed out.
    pub(crate) clock: Mutex<i64>,
}

impl std::fmt::Debug for WeaviateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeaviateStore")
            .field("collection", &self.inner.class)
            .field("multi_tenancy", &self.inner.multi_tenancy)
            .finish_non_exhaustive()
    }
}

impl WeaviateStore {
    /// Connects: checks readiness and the server version, then creates or migrates the
    /// collections (adding missing properties, refusing incompatible ones). The API key is
    /// read from `cfg.api_key_env` here.
    pub async fn connect(cfg: &WeaviateConfig) -> Result<WeaviateStore> {
        cfg.validate()?;
        let api_key = cfg.api_key()?;
        let client = client::Client::new(
            &cfg.url,
            api_key.as_deref(),
            Duration::from_secs(cfg.timeout_secs),
        )?;
        let inner = Inner {
            client,
            class: cfg.collection.clone(),
            meta_class: cfg.meta_collection(),
            multi_tenancy: cfg.multi_tenancy,
            batch_size: cfg.batch_size,
            consistency: cfg.consistency_level,
            space: Mutex::new(None),
            tenants: Mutex::new(HashSet::new()),
            clock: Mutex::new(0),
        };
        inner.ready().await?;
        let version = schema::check_version(&inner.client).await?;
        inner.migrate().await?;
        tracing::info!(
            collection = %inner.class,
            weaviate = %version,
            multi_tenancy = inner.multi_tenancy,
            "connected to Weaviate"
        );
        Ok(WeaviateStore {
            inner: Arc::new(inner),
        })
    }

    /// The chunk collection's name.
    pub fn collection(&self) -> &str {
        &self.inner.class
    }

    /// Hybrid search (Weaviate's fusion of BM25 over title and content with the supplied
    /// vector): `alpha` 0 is pure BM25, 1 pure vector. Scores are Weaviate's fused scores,
    /// higher is better; visibility and kind filters apply as in every read.
    pub async fn search_hybrid(
        &self,
        vis: &Visibility,
        query: &str,
        vector: &[f32],
        filter: &ChunkFilter,
        alpha: f32,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        self.inner
            .search_hybrid(vis, query, vector, filter, alpha, limit)
            .await
    }
}
