//! Removing sources: one, all under a prefix, or moving one to another scope of its client.

use super::*;

impl Kb {
    /// Removes every source of a partition whose URN starts with `prefix` (what an
    /// unregistered indexer source wrote). Returns how many sources were purged.
    pub async fn purge_prefix(
        &self,
        scope: &Scope,
        prefix: &str,
        priority: Priority,
    ) -> Result<usize> {
        validate::bounded_text("prefix", prefix, validate::MAX_URN_LEN)?;
        if prefix.len() < 4 || !prefix.contains(':') {
            return Err(KbError::Invalid(format!(
                "`{prefix}` is too broad a prefix to purge"
            )));
        }
        let mut purged = 0;
        let mut after: Option<String> = None;
        loop {
            let page = self
                .stores
                .sources
                .list_prefix(scope.partition(), prefix, after.as_deref(), 500)
                .await?;
            let Some(last) = page.last() else {
                return Ok(purged);
            };
            after = Some(last.source_urn.clone());
            // Only this scope's sources: one under the prefix that an admin moved to another
            // scope of the client belongs to that scope now (see `ensure_owner`).
            for r in page.into_iter().filter(|r| r.scope == *scope) {
                self.purge(&r.scope, &r.source_urn, priority).await?;
                purged += 1;
            }
        }
    }

    /// Fails with `scope_conflict` when `source_urn` is registered in `scope`'s partition
    /// under another scope — what an ingest or purge from `scope` would refuse. For callers
    /// that want the refusal before doing work (the queued ingest route, before enqueuing).
    pub async fn check_source_owner(&self, scope: &Scope, source_urn: &str) -> Result<()> {
        let record = self
            .stores
            .sources
            .get(scope.partition(), source_urn)
            .await?;
        ensure_owner(record.as_ref(), scope, source_urn)
    }

    /// An admin's explicit move of a source from the scope that owns it to another scope of
    /// the same client: chunks keep their ids, text and vectors (nothing is re-embedded), the
    /// graph evidence they give follows them. `from` must be the owner (`scope_conflict`
    /// otherwise; `not_found` when there is no such source). Moving between clients is
    /// refused: chunk ids, graph and aliases are per client, so that is a purge and a fresh
    /// ingest. Returns how many chunks moved.
    #[tracing::instrument(skip(self))]
    pub async fn move_source(
        &self,
        from: &Scope,
        source_urn: &str,
        to: &Scope,
        priority: Priority,
    ) -> Result<usize> {
        validate::bounded_text("sourceUrn", source_urn, validate::MAX_URN_LEN)?;
        for scope in [from, to] {
            if !scope.is_consistent() {
                return Err(KbError::Invalid(
                    "projectId and groupId need a clientId".into(),
                ));
            }
            for id in [&scope.client_id, &scope.project_id, &scope.group_id]
                .into_iter()
                .flatten()
            {
                validate::identifier("scope", id)?;
            }
        }
        if from.partition() != to.partition() {
            return Err(KbError::Invalid(
                "a source moves only between scopes of one client; to change client, purge it \
                 and ingest it again"
                    .into(),
            ));
        }
        let _permit = self.pools.acquire(priority).await;
        let partition = from.partition();
        let record = self.stores.sources.get(partition, source_urn).await?;
        let Some(record) = record else {
            return Err(KbError::NotFound {
                what: format!("source `{source_urn}`"),
            });
        };
        ensure_owner(Some(&record), from, source_urn)?;
        if from == to {
            return Ok(0);
        }
        let moved = self
            .stores
            .writer
            .move_source(partition, source_urn, to)
            .await?
            .ok_or_else(|| KbError::NotFound {
                what: format!("source `{source_urn}`"),
            })?;
        metrics::counter!("evident_source_moves_total").increment(1);
        Ok(moved)
    }

    /// Removes a source: its chunks, its registry record, and graph items left without evidence.
    #[tracing::instrument(skip(self))]
    pub async fn purge(
        &self,
        scope: &Scope,
        source_urn: &str,
        priority: Priority,
    ) -> Result<PurgeOutcome> {
        validate::bounded_text("sourceUrn", source_urn, validate::MAX_URN_LEN)?;
        let _permit = self.pools.acquire(priority).await;
        let partition = scope.partition().to_string();
        let record = self.stores.sources.get(&partition, source_urn).await?;
        // 409 rather than a 404 that would pretend the source is absent: the conflict is only
        // ever visible inside one client (URNs are per client partition), and an ingest of the
        // same URN from this scope has to refuse with the same conflict anyway, so a 404 here
        // would hide nothing — it would only make purge and ingest disagree.
        ensure_owner(record.as_ref(), scope, source_urn)?;
        let found = record.is_some();
        let ids: Vec<String> = self
            .stores
            .chunks
            .source_chunks(&partition, source_urn)
            .await?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        if !found && ids.is_empty() {
            return Ok(PurgeOutcome {
                source_urn: source_urn.to_string(),
                found: false,
                chunks: 0,
                nodes: 0,
                edges: 0,
            });
        }
        let removed = self
            .stores
            .writer
            .apply(SourceWrite {
                partition: partition.clone(),
                source_urn: source_urn.to_string(),
                delete_chunk_ids: ids.clone(),
                record: RecordUpdate::Remove,
                ..Default::default()
            })
            .await?;
        // Claims these chunks evidenced lose that evidence: marked stale, never deleted.
        self.claims_evidence_gone(&partition, &ids).await?;
        metrics::counter!("evident_purge_total").increment(1);
        Ok(PurgeOutcome {
            source_urn: source_urn.to_string(),
            found: true,
            chunks: removed.chunks,
            nodes: removed.nodes,
            edges: removed.edges,
        })
    }
}
