//! Writes: upsert (tenants created first), relocate without re-embedding, delete.

use super::*;

impl Inner {
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
}
