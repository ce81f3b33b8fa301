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

use crate::config::MAX_RESULTS;
use crate::error;
use crate::ids::{object_id, tenant_name};
use crate::query::{
    self, Filter, GetQuery, SORT_BY_ORDINAL, SORT_NEWEST_FIRST, bm25_arg, hybrid_arg,
    near_vector_arg,
};
use crate::{Inner, WeaviateStore};

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
        let listed = self
            .client
            .send(
                Method::GET,
                &format!("/v1/schema/{}/tenants", self.class),
                &[],
                None,
            )
            .await?
            .ok("listing tenants")?;
        let exists = listed.as_array().is_some_and(|all| {
            all.iter()
                .any(|t| t.get("name").and_then(Value::as_str) == Some(tenant))
        });
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

    pub(crate) async fn upsert(&self, items: Vec<(Chunk, Vec<f32>)>) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        for (chunk, vector) in &items {
            self.check_vector(vector, &format!("chunk `{}`", chunk.id))?;
            if !chunk.scope.is_consistent() {
                return Err(StoreError::invalid(format!(
                    "chunk `{}` has a project or group but no client",
                    chunk.id
                )));
            }
        }
        if self.multi_tenancy {
            let tenants = items
                .iter()
                .map(|(c, _)| tenant_name(c.scope.partition()))
                .collect();
            self.ensure_tenants(tenants).await?;
        }
        let level = [("consistency_level", self.consistency.as_str())];
        for batch in items.chunks(self.batch_size) {
            let mut objects = Vec::with_capacity(batch.len());
            let mut names: HashMap<String, &str> = HashMap::new();
            for (chunk, vector) in batch {
                let (created_at, seq) = self.next_seq();
                let partition = chunk.scope.partition();
                let id = object_id(partition, &chunk.id);
                let mut object = json!({
                    "class": self.class,
                    "id": id,
                    "properties": chunk_properties(chunk, created_at, seq)?,
                    "vector": vector,
                });
                if self.multi_tenancy {
                    object["tenant"] = json!(tenant_name(partition));
                }
                names.insert(id, &chunk.id);
                objects.push(object);
            }
            let body = json!({ "objects": objects });
            let answer = self
                .client
                .send(Method::POST, "/v1/batch/objects", &level, Some(&body))
                .await?
                .ok("writing chunks")?;
            let Value::Array(results) = &answer else {
                return Err(error::unexpected("writing chunks", &answer));
            };
            let mut failed: Vec<String> = Vec::new();
            for (i, result) in results.iter().enumerate() {
                let errors = error::object_errors(result);
                if errors.is_empty() {
                    continue;
                }
                let name = result
                    .get("id")
                    .and_then(Value::as_str)
                    .and_then(|id| names.get(id).copied())
                    .or_else(|| batch.get(i).map(|(c, _)| c.id.as_str()))
                    .unwrap_or("?");
                failed.push(format!("chunk `{name}`: {}", errors.join("; ")));
            }
            if !failed.is_empty() {
                return Err(error::reported(
                    &format!(
                        "{} of {} chunks were not written",
                        failed.len(),
                        batch.len()
                    ),
                    &failed,
                ));
            }
        }
        Ok(())
    }

    pub(crate) async fn relocate(self: &Arc<Self>, chunks: Vec<Chunk>) -> Result<()> {
        let mut tasks = tokio::task::JoinSet::new();
        let mut first_error: Option<StoreError> = None;
        let mut note = |joined: std::result::Result<Result<()>, tokio::task::JoinError>| {
            let outcome = joined.unwrap_or_else(|e| {
                Err(StoreError::unavailable(format!(
                    "relocation task failed: {e}"
                )))
            });
            if let Err(e) = outcome
                && first_error.is_none()
            {
                first_error = Some(e);
            }
        };
        for chunk in chunks {
            while tasks.len() >= RELOCATE_CONCURRENCY {
                if let Some(joined) = tasks.join_next().await {
                    note(joined);
                }
            }
            let me = Arc::clone(self);
            let _abort = tasks.spawn(async move { me.relocate_one(&chunk).await });
        }
        while let Some(joined) = tasks.join_next().await {
            note(joined);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Merges the new non-text fields into the stored object (`PATCH` keeps the vector; a
    /// `null` removes a property). A chunk not stored is skipped, as in the embedded store.
    async fn relocate_one(&self, chunk: &Chunk) -> Result<()> {
        let partition = chunk.scope.partition();
        let id = object_id(partition, &chunk.id);
        let mut body = json!({
            "class": self.class,
            "id": id,
            "properties": relocation_properties(chunk)?,
        });
        if let Some(tenant) = self.tenant_of(partition) {
            body["tenant"] = json!(tenant);
        }
        let reply = self
            .client
            .send(
                Method::PATCH,
                &format!("/v1/objects/{}/{id}", self.class),
                &[("consistency_level", self.consistency.as_str())],
                Some(&body),
            )
            .await?;
        if reply.is_success() || reply.status == 404 {
            return Ok(());
        }
        if let Some(tenant) = self.tenant_of(partition)
            && reply.status == 422
            && self.tenant_absent(&tenant, &reply.message()).await?
        {
            return Ok(()); // no tenant: the chunk was never stored
        }
        Err(error::status(
            &format!("relocating chunk `{}`", chunk.id),
            reply.status,
            &reply.body,
        ))
    }

    pub(crate) async fn delete(&self, partition: &str, ids: &[String]) -> Result<usize> {
        let unique = unique(ids);
        if unique.is_empty() {
            return Ok(0);
        }
        let tenant = self.tenant_of(partition);
        let mut params = vec![("consistency_level", self.consistency.as_str())];
        if let Some(t) = &tenant {
            params.push(("tenant", t.as_str()));
        }
        let mut deleted = 0usize;
        for batch in unique.chunks(self.batch_size) {
            let filter = Filter::all(vec![
                query::partition_filter(partition),
                Filter::ContainsAny("chunkId", batch.to_vec()),
            ]);
            let body = json!({
                "match": {"class": self.class, "where": filter.to_rest()},
                "output": "minimal",
                "dryRun": false,
            });
            // A server whose QUERY_MAXIMUM_RESULTS is below the batch deletes at most that
            // many per request (`matches` > `limit`): send the same request until all went.
            loop {
                let reply = self
                    .client
                    .send(Method::DELETE, "/v1/batch/objects", &params, Some(&body))
                    .await?;
                if let Some(t) = &tenant
                    && reply.status == 422
                    && self.tenant_absent(t, &reply.message()).await?
                {
                    return Ok(deleted); // no tenant: nothing of this partition was ever stored
                }
                let answer = reply.ok("deleting chunks")?;
                let results = answer
                    .get("results")
                    .ok_or_else(|| error::unexpected("deleting chunks", &answer))?;
                let failed = results.get("failed").and_then(Value::as_u64).unwrap_or(0);
                if failed > 0 {
                    let messages: Vec<String> = results
                        .get("objects")
                        .and_then(Value::as_array)
                        .map(|objs| objs.iter().flat_map(error::object_errors).collect())
                        .unwrap_or_default();
                    let messages = if messages.is_empty() {
                        vec![format!("{failed} objects could not be deleted")]
                    } else {
                        messages
                    };
                    return Err(error::reported("deleting chunks", &messages));
                }
                let successful = results
                    .get("successful")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                deleted += successful as usize;
                let count = |k: &str| results.get(k).and_then(Value::as_u64);
                match (count("matches"), count("limit")) {
                    (Some(matches), Some(limit)) if matches > limit && successful > 0 => {}
                    (Some(matches), Some(limit)) if matches > limit => {
                        return Err(error::unexpected(
                            "deleting chunks (more matches than the server deletes at once, and none deleted)",
                            &answer,
                        ));
                    }
                    _ => break,
                }
            }
        }
        Ok(deleted)
    }

    /// Pages by ordinal: each page asks for `ordinal >= last ordinal seen`, skipping (by
    /// offset) the chunks already returned at that ordinal, so the offset never grows past
    /// the chunks sharing one ordinal and any number of chunks can be listed.
    pub(crate) async fn source_chunks(
        &self,
        partition: &str,
        source_urn: &str,
    ) -> Result<Vec<(String, String)>> {
        let tenant = self.tenant_of(partition);
        let page = self.batch_size.min(MAX_RESULTS);
        let mut out = Vec::new();
        let mut cursor: Option<i64> = None;
        let mut skip = 0usize;
        loop {
            let mut parts = vec![
                query::partition_filter(partition),
                Filter::EqualText("sourceUrn", source_urn.to_string()),
            ];
            if let Some(ordinal) = cursor {
                parts.push(Filter::GreaterThanEqualInt("ordinal", ordinal));
            }
            let filter = Filter::all(parts);
            let mut q = self.query(tenant.as_deref(), &filter, SOURCE_FIELDS, page);
            q.sort = Some(SORT_BY_ORDINAL);
            q.offset = skip;
            let rows = self.rows(tenant.as_deref(), &q.render()).await?;
            let n = rows.len();
            let mut last: Option<i64> = None;
            let mut at_last = 0usize;
            for row in &rows {
                let ordinal = int_field(row, "ordinal")?;
                if last == Some(ordinal) {
                    at_last += 1;
                } else {
                    last = Some(ordinal);
                    at_last = 1;
                }
                out.push((text_field(row, "chunkId")?, text_field(row, "contentHash")?));
            }
            let Some(last) = last else { break };
            if n < page {
                break;
            }
            if cursor == Some(last) {
                skip += n; // the whole page shared the cursor's ordinal
            } else {
                cursor = Some(last);
                skip = at_last;
            }
            if skip + page > MAX_RESULTS {
                return Err(StoreError::invalid(format!(
                    "source `{source_urn}` has more than {MAX_RESULTS} chunks at ordinal {last}"
                )));
            }
        }
        Ok(out)
    }

    pub(crate) async fn get(&self, vis: &Visibility, ids: &[String]) -> Result<Vec<Chunk>> {
        let unique = unique(ids);
        if unique.is_empty() {
            return Ok(Vec::new());
        }
        let mut found: HashMap<String, Chunk> = HashMap::new();
        let per_query = self.batch_size.min(MAX_RESULTS / 2);
        for target in self.targets(vis) {
            for batch in unique.chunks(per_query) {
                let filter = Filter::all(vec![
                    target.filter.clone(),
                    Filter::ContainsAny("chunkId", batch.to_vec()),
                ]);
                let q = self.query(
                    target.tenant.as_deref(),
                    &filter,
                    CHUNK_FIELDS,
                    batch.len() * target.partitions,
                );
                for row in self.rows(target.tenant.as_deref(), &q.render()).await? {
                    let chunk = decode_chunk(&row)?;
                    found.entry(chunk.id.clone()).or_insert(chunk);
                }
            }
        }
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    /// Runs one search per target and merges the hits, best first.
    async fn scored(
        &self,
        vis: &Visibility,
        filter: &ChunkFilter,
        search: &str,
        score: Score,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        let fields = match score {
            Score::Relevance => SCORE_FIELDS,
            Score::Distance => DISTANCE_FIELDS,
        };
        let mut hits: Vec<ScoredId> = Vec::new();
        for target in self.targets(vis) {
            let where_ = with_kinds(target.filter, &filter.kinds);
            let mut q = self.query(target.tenant.as_deref(), &where_, fields, limit);
            q.search = Some(search);
            for row in self.rows(target.tenant.as_deref(), &q.render()).await? {
                let chunk_id = text_field(&row, "chunkId")?;
                let value = match score {
                    Score::Relevance => number(row.pointer("/_additional/score")),
                    Score::Distance => {
                        number(row.pointer("/_additional/distance")).map(|d| 1.0 - d)
                    }
                }
                .ok_or_else(|| error::unexpected("search hit without a score", &row))?;
                hits.push(ScoredId {
                    chunk_id,
                    score: value,
                });
            }
        }
        // Stable: hits of one query keep Weaviate's order among equal scores.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(limit);
        Ok(hits)
    }

    pub(crate) async fn search_text(
        &self,
        vis: &Visibility,
        query: &str,
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        if limit == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        // BM25 statistics (document count, average length, document frequencies) are
        // Weaviate's, per shard. With multi-tenancy every client is its own tenant and the
        // reader's query runs once per tenant (global + its client), so a client's scores
        // never depend on another client's data — the guarantee the embedded store gives.
        // Without multi-tenancy the whole collection is one index: the visibility filter
        // decides what is returned, not what is counted, so another client's ingest or purge
        // of documents sharing a term changes this client's scores (and leaks a little about
        // them). Deployments with more than one client should enable multi-tenancy.
        self.scored(vis, filter, &bm25_arg(query), Score::Relevance, limit)
            .await
    }

    pub(crate) async fn search_vector(
        &self,
        vis: &Visibility,
        vector: &[f32],
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        self.check_vector(vector, "query")?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let search = near_vector_arg(vector)?;
        self.scored(vis, filter, &search, Score::Distance, limit)
            .await
    }

    pub(crate) async fn search_hybrid(
        &self,
        vis: &Visibility,
        query: &str,
        vector: &[f32],
        filter: &ChunkFilter,
        alpha: f32,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        self.check_vector(vector, "query")?;
        let search = hybrid_arg(query, vector, alpha)?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.scored(vis, filter, &search, Score::Relevance, limit)
            .await
    }

    pub(crate) async fn by_kind(
        &self,
        vis: &Visibility,
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<Chunk>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut listed: Vec<(i64, Chunk)> = Vec::new();
        for target in self.targets(vis) {
            let where_ = with_kinds(target.filter, &filter.kinds);
            let mut q = self.query(target.tenant.as_deref(), &where_, CHUNK_FIELDS, limit);
            q.sort = Some(SORT_NEWEST_FIRST);
            for row in self.rows(target.tenant.as_deref(), &q.render()).await? {
                let seq = int_field(&row, "seq").unwrap_or(0);
                listed.push((seq, decode_chunk(&row)?));
            }
        }
        listed.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
        listed.truncate(limit);
        Ok(listed.into_iter().map(|(_, c)| c).collect())
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

/// The visibility filter narrowed to the given kinds (exact match; empty = all kinds).
fn with_kinds(visibility: Filter, kinds: &[String]) -> Filter {
    if kinds.is_empty() {
        visibility
    } else {
        Filter::all(vec![visibility, Filter::ContainsAny("kind", unique(kinds))])
    }
}

/// `ids` without repeats, first occurrence kept.
fn unique(ids: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    ids.iter()
        .filter(|id| seen.insert(id.as_str()))
        .cloned()
        .collect()
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn json_text<T: serde::Serialize>(value: &T, what: &str) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::invalid(format!("{what} cannot be written: {e}")))
}

fn ordinal_of(chunk: &Chunk) -> Result<i64> {
    i64::try_from(chunk.ordinal)
        .map_err(|_| StoreError::invalid(format!("chunk `{}`: ordinal too large", chunk.id)))
}

/// Every property of a new object (absent optional fields are left out: no value).
fn chunk_properties(chunk: &Chunk, created_at: i64, seq: i64) -> Result<Value> {
    let mut p = Map::new();
    p.insert("chunkId".into(), json!(chunk.id));
    p.insert("partition".into(), json!(chunk.scope.partition()));
    put_opt(&mut p, "clientId", chunk.scope.client_id.as_deref());
    put_opt(&mut p, "projectId", chunk.scope.project_id.as_deref());
    put_opt(&mut p, "groupId", chunk.scope.group_id.as_deref());
    p.insert("sourceUrn".into(), json!(chunk.source_urn));
    p.insert("kind".into(), json!(chunk.kind));
    put_opt(&mut p, "title", chunk.title.as_deref());
    p.insert("content".into(), json!(chunk.content));
    p.insert("contentHash".into(), json!(chunk.content_hash));
    p.insert(
        "locator".into(),
        json!(json_text(&chunk.locator, "locator")?),
    );
    p.insert("graphRefs".into(), json!(refs(chunk)));
    p.insert(
        "metadata".into(),
        json!(json_text(&chunk.metadata, "metadata")?),
    );
    put_opt(&mut p, "observedAt", chunk.observed_at.as_deref());
    p.insert("ordinal".into(), json!(ordinal_of(chunk)?));
    p.insert("createdAt".into(), json!(created_at));
    p.insert("seq".into(), json!(seq));
    Ok(Value::Object(p))
}

/// What a relocation changes: everything but id, text, hash and vector (and the newest-first
/// key, which belongs to the upsert). Absent optional fields are `null`: PATCH removes them.
fn relocation_properties(chunk: &Chunk) -> Result<Value> {
    Ok(json!({
        "partition": chunk.scope.partition(),
        "clientId": chunk.scope.client_id,
        "projectId": chunk.scope.project_id,
        "groupId": chunk.scope.group_id,
        "sourceUrn": chunk.source_urn,
        "kind": chunk.kind,
        "title": chunk.title,
        "locator": json_text(&chunk.locator, "locator")?,
        "graphRefs": refs(chunk),
        "metadata": json_text(&chunk.metadata, "metadata")?,
        "observedAt": chunk.observed_at,
        "ordinal": ordinal_of(chunk)?,
    }))
}

fn refs(chunk: &Chunk) -> Vec<&str> {
    chunk.graph_refs.iter().map(NodeKey::as_str).collect()
}

fn put_opt(p: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    if let Some(v) = value {
        p.insert(key.to_string(), json!(v));
    }
}

/// A text property, or `None` when absent, null or empty (Weaviate treats "" as null).
fn opt_text(row: &Value, name: &str) -> Option<String> {
    row.get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn text_field(row: &Value, name: &str) -> Result<String> {
    row.get(name)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| error::corrupt(format!("object without `{name}`: {row}")))
}

fn int_field(row: &Value, name: &str) -> Result<i64> {
    let v = row.get(name);
    v.and_then(Value::as_i64)
        .or_else(|| {
            v.and_then(Value::as_f64)
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        })
        .ok_or_else(|| error::corrupt(format!("object without integer `{name}`: {row}")))
}

/// A score or distance: GraphQL answers `score` as a string and `distance` as a number.
fn number(v: Option<&Value>) -> Option<f32> {
    match v? {
        Value::Number(n) => n.as_f64().map(|f| f as f32),
        Value::String(s) => s.trim().parse::<f32>().ok(),
        _ => None,
    }
}

/// Rebuilds a chunk from its object's properties.
pub(crate) fn decode_chunk(row: &Value) -> Result<Chunk> {
    let locator = text_field(row, "locator")?;
    let metadata = opt_text(row, "metadata");
    let ordinal = int_field(row, "ordinal")?;
    Ok(Chunk {
        id: text_field(row, "chunkId")?,
        scope: Scope {
            client_id: opt_text(row, "clientId"),
            project_id: opt_text(row, "projectId"),
            group_id: opt_text(row, "groupId"),
        },
        source_urn: text_field(row, "sourceUrn")?,
        kind: text_field(row, "kind")?,
        title: opt_text(row, "title"),
        content: row
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        content_hash: text_field(row, "contentHash")?,
        locator: serde_json::from_str(&locator)
            .map_err(|e| error::corrupt(format!("locator `{locator}`: {e}")))?,
        graph_refs: row
            .get("graphRefs")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(NodeKey::from_canonical)
                    .collect()
            })
            .unwrap_or_default(),
        metadata: match metadata {
            Some(m) => serde_json::from_str(&m)
                .map_err(|e| error::corrupt(format!("metadata `{m}`: {e}")))?,
            None => Map::new(),
        },
        observed_at: opt_text(row, "observedAt"),
        ordinal: usize::try_from(ordinal)
            .map_err(|_| error::corrupt(format!("negative ordinal {ordinal}")))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use evident_core::Locator;

    fn sample() -> Chunk {
        let mut metadata = Map::new();
        metadata.insert("lang".into(), json!("cs"));
        Chunk {
            id: "d1".into(),
            scope: Scope::client("c1").with_project("p1"),
            source_urn: "urn:doc".into(),
            kind: "doc".into(),
            title: Some("Úvod".into()),
            content: "Příliš žluťoučký kůň".into(),
            content_hash: "sha256:d1".into(),
            locator: Locator::Document {
                uri: "urn:doc".into(),
                char_start: 0,
                char_end: 20,
                page: Some(2),
                section: None,
            },
            graph_refs: vec![NodeKey::from_canonical("jira:abc-1")],
            metadata,
            observed_at: Some("2026-01-02T03:04:05Z".into()),
            ordinal: 3,
        }
    }

    #[test]
    fn chunks_round_trip_through_object_properties() {
        let chunk = sample();
        let props =
            chunk_properties(&chunk, 1_700_000_000_000, 1_700_000_000_000_000).expect("properties");
        assert_eq!(props["partition"], "c1");
        assert!(props.get("groupId").is_none(), "absent fields are left out");
        assert_eq!(props["graphRefs"], json!(["jira:abc-1"]));
        assert_eq!(decode_chunk(&props).expect("decodes"), chunk);
    }

    #[test]
    fn relocation_clears_absent_fields_and_keeps_text() {
        let mut chunk = sample();
        chunk.title = None;
        let props = relocation_properties(&chunk).expect("properties");
        assert_eq!(props["title"], Value::Null, "null removes the stored title");
        assert_eq!(props["groupId"], Value::Null);
        for kept in ["content", "contentHash", "chunkId", "seq", "createdAt"] {
            assert!(props.get(kept).is_none(), "{kept} is not relocated");
        }
    }

    #[test]
    fn scores_are_read_from_strings_and_numbers() {
        assert_eq!(number(Some(&json!("0.5"))), Some(0.5));
        assert_eq!(number(Some(&json!(0.25))), Some(0.25));
        assert_eq!(number(Some(&json!(null))), None);
        assert_eq!(number(None), None);
    }

    #[test]
    fn bad_stored_values_are_corrupt() {
        let mut props = chunk_properties(&sample(), 0, 0).expect("properties");
        props["locator"] = json!("{not json");
        let err = decode_chunk(&props).expect_err("corrupt");
        assert_eq!(err.kind, evident_store::ErrorKind::Corrupt);
    }

    #[test]
    fn kinds_narrow_the_visibility_filter() {
        let vis = Filter::IsNull("clientId");
        assert_eq!(with_kinds(vis.clone(), &[]), vis);
        assert_eq!(
            with_kinds(vis.clone(), &["a".into(), "a".into(), "b".into()]),
            Filter::And(vec![
                vis,
                Filter::ContainsAny("kind", vec!["a".into(), "b".into()])
            ])
        );
    }
}
