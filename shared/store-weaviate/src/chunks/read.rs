//! Reads: a source's chunks by ordinal, chunks by id, text, vector and hybrid search, listing by kind.

use super::*;

impl Inner {
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
            let where_ = with_filter(target.filter, filter);
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
            let where_ = with_filter(target.filter, filter);
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
