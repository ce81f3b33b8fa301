//! Operations: `TaskQueue` on MongoDB, built from the commands.

use super::*;

/// What stops a claimed task from running now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blocker {
    /// An older unfinished task of the same source: the claimed task is not its source's head.
    Older,
    /// Another task of the source holds a live lease.
    Running,
}

/// The oldest unfinished task of a source.
struct Oldest {
    id: String,
    seq: i64,
    head: bool,
}

impl MongoStore {
    async fn store_payload(&self, hash: &str, body: &str, now: Millis) -> Result<()> {
        // Two enqueues of one new payload may both insert it; the retry updates `usedAt`.
        self.db()
            .upsert("enqueue", payload_upsert_command(hash, body, now))
            .await
    }

    async fn next_seq(&self) -> Result<i64> {
        // The first enqueue ever, twice at once, races to create the counter.
        let value = self
            .db()
            .upsert_returning("enqueue", next_seq_command())
            .await?;
        req_i64(&value, "seq", "task sequence")
    }

    async fn oldest_open(&self, partition: &str, urn: &str) -> Result<Option<Oldest>> {
        let Some(d) = self
            .db()
            .find_one("queue", oldest_open_command(partition, urn))
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(Oldest {
            id: req_str(&d, "_id", "task")?,
            seq: req_i64(&d, "seq", "task")?,
            head: opt_bool(&d, "head").unwrap_or(false),
        }))
    }

    /// Gives the source's oldest unfinished task the head marker and takes it from newer
    /// ones. Whether it settled (else the repair sweep finishes the job).
    pub(crate) async fn promote(&self, partition: &str, urn: &str) -> Result<bool> {
        for _ in 0..PROMOTE_ROUNDS {
            let Some(oldest) = self.oldest_open(partition, urn).await? else {
                return Ok(true);
            };
            let cleared = self
                .db()
                .write("queue", clear_heads_command(partition, urn, oldest.seq))
                .await?
                .n;
            if !oldest.head {
                self.db()
                    .write("queue", set_head_command(&oldest.id))
                    .await?;
            }
            // A head was taken from a newer task: if `oldest` finished meanwhile, that was the
            // rightful head. Look again.
            if cleared == 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Promotion after a hand-over recorded on task `id` at `fix_at`, then clears the record.
    async fn settle(&self, partition: &str, urn: &str, id: &str, fix_at: Millis) -> Result<()> {
        if self.promote(partition, urn).await? {
            self.db()
                .write("queue", clear_fix_command(id, fix_at))
                .await?;
        }
        Ok(())
    }

    /// Finishes hand-overs whose writer died (see the module docs).
    async fn repair(&self, now: Millis) -> Result<usize> {
        let stale = self
            .db()
            .find_all("queue repair", repair_scan_command(now))
            .await?;
        for d in &stale {
            let id = req_str(d, "_id", "task")?;
            let partition = req_str(d, "partition", "task")?;
            let urn = req_str(d, "sourceUrn", "task")?;
            let fix_at = req_i64(d, "fixAt", "task")?;
            self.settle(&partition, &urn, &id, fix_at).await?;
        }
        Ok(stale.len())
    }

    async fn maybe_repair(&self, now: Millis) {
        let due = self.inner.next_repair.load(Ordering::Relaxed);
        if now < due {
            return;
        }
        self.inner
            .next_repair
            .store(now.saturating_add(REPAIR_EVERY_MS), Ordering::Relaxed);
        match self.repair(now).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                repaired = n,
                "mongo queue: finished interrupted head hand-overs"
            ),
            Err(e) => tracing::warn!(error = %e, "mongo queue: repair sweep failed"),
        }
    }

    async fn blocker(&self, t: &TaskDoc, now: Millis) -> Result<Option<Blocker>> {
        let found = self.db().find_one("claim", blocker_command(t, now)).await?;
        Ok(found.map(|d| {
            if opt_i64(&d, "seq").is_some_and(|s| s < t.seq) {
                Blocker::Older
            } else {
                Blocker::Running
            }
        }))
    }

    async fn payload(&self, hash: &str) -> Result<serde_json::Value> {
        let d = self
            .db()
            .find_one("claim", payload_get_command(hash))
            .await?
            .ok_or_else(|| corrupt(format!("task payload {hash} is missing")))?;
        parse_json(&d, "body", "task payload")
    }

    async fn get_task(&self, id: &str) -> Result<Option<TaskDoc>> {
        self.db()
            .find_one("get task", get_command(id))
            .await?
            .map(|d| TaskDoc::from_doc(&d))
            .transpose()
    }

    /// Sends a lease-guarded single update; whether the lease was current.
    async fn with_lease(&self, op: &str, command: Document) -> Result<bool> {
        Ok(self.db().write(op, command).await?.n > 0)
    }
}

#[async_trait]
impl TaskQueue for MongoStore {
    async fn enqueue(&self, task: NewTask, now: Millis) -> Result<TaskRecord> {
        evident_store::queue::check_priority(task.priority)?;
        let body = json_text(&task.payload)?;
        let hash = evident_core::hashing::content_hash(&body);
        self.store_payload(&hash, &body, now).await?;
        let seq = self.next_seq().await?;
        let id = task_id(seq);
        let partition = task.scope.partition().to_string();
        let busy = self
            .oldest_open(&partition, &task.source_urn)
            .await?
            .is_some();
        let doc = new_task_doc(&id, seq, &task, &hash, !busy, now);
        let stored = TaskDoc::from_doc(&doc)?;
        self.db().write("enqueue", insert_task_command(doc)).await?;
        // Inserted without the marker because the source was busy: if what kept it busy
        // finished before the insert, its hand-over did not see this task. Look again (the
        // insert recorded `fixAt`, so a crash before this check is swept up).
        if busy {
            let older = self
                .db()
                .find_one(
                    "enqueue",
                    older_open_command(&partition, &task.source_urn, seq),
                )
                .await?;
            let settled = match older {
                Some(_) => true,
                None => self.promote(&partition, &task.source_urn).await?,
            };
            if settled {
                self.db()
                    .write("enqueue", clear_fix_command(&id, now))
                    .await?;
            }
        }
        Ok(stored.record)
    }

    async fn claim(
        &self,
        worker: &str,
        band: PriorityBand,
        lease_ms: i64,
        now: Millis,
    ) -> Result<Option<Claim>> {
        self.maybe_repair(now).await;
        let mut skip: Vec<String> = Vec::new();
        for _ in 0..CLAIM_ROUNDS {
            let Some(pre) = self
                .db()
                .find_and_modify("claim", claim_command(worker, band, lease_ms, now, &skip))
                .await?
            else {
                return Ok(None);
            };
            let pre = TaskDoc::from_doc(&pre)?;
            let claimed = pre.claimed(worker, lease_ms, now);
            match self.blocker(&claimed, now).await? {
                None => {
                    let payload = self.payload(&pre.payload_hash).await?;
                    return Ok(Some(Claim {
                        token: LeaseToken {
                            task_id: claimed.record.task_id.clone(),
                            epoch: claimed.epoch,
                        },
                        task: claimed.record,
                        payload,
                    }));
                }
                Some(Blocker::Older) => {
                    self.db()
                        .write("claim", undo_claim_command(&pre, true, now))
                        .await?;
                    self.settle(
                        &pre.partition,
                        &pre.record.source_urn,
                        &pre.record.task_id,
                        now,
                    )
                    .await?;
                }
                Some(Blocker::Running) => {
                    self.db()
                        .write("claim", undo_claim_command(&pre, false, now))
                        .await?;
                }
            }
            skip.push(pre.record.task_id);
        }
        Ok(None)
    }

    async fn heartbeat(&self, token: &LeaseToken, lease_ms: i64, now: Millis) -> Result<bool> {
        self.with_lease("heartbeat", heartbeat_command(token, lease_ms, now))
            .await
    }

    async fn complete(&self, token: &LeaseToken, now: Millis) -> Result<bool> {
        self.finish("complete", token, TaskState::Done, None, now)
            .await
    }

    async fn fail(
        &self,
        token: &LeaseToken,
        failure: Failure,
        backoff: &BackoffPolicy,
        now: Millis,
    ) -> Result<bool> {
        match failure {
            Failure::Retryable(reason) => {
                let Some(d) = self.db().find_one("fail", retries_command(token)).await? else {
                    return Ok(false);
                };
                let retries = opt_i64(&d, "retries").unwrap_or(0);
                let n = u32::try_from(retries + 1).unwrap_or(u32::MAX);
                let at = now.saturating_add(backoff.delay(&token.task_id, n));
                self.with_lease("fail", retry_wait_command(token, retries, at, &reason, now))
                    .await
            }
            Failure::Permanent(reason) => {
                self.finish("fail", token, TaskState::Error, Some(reason.as_str()), now)
                    .await
            }
        }
    }

    async fn release(&self, token: &LeaseToken, now: Millis) -> Result<bool> {
        self.with_lease("release", release_command(token, now))
            .await
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>> {
        Ok(self.get_task(task_id).await?.map(|t| t.record))
    }

    async fn list(&self, filter: &TaskFilter) -> Result<Vec<TaskRecord>> {
        self.db()
            .find_decoded("list tasks", list_command(filter), |d| {
                TaskDoc::from_doc(d).map(|t| t.record)
            })
            .await
    }

    async fn reorder(
        &self,
        task_id: &str,
        position: i64,
        now: Millis,
    ) -> Result<Option<TaskRecord>> {
        evident_store::queue::check_position(position)?;
        let Some(task) = self.get_task(task_id).await? else {
            return Ok(None);
        };
        self.db()
            .write(
                "reorder",
                shift_positions_command(task.record.priority, position, task_id),
            )
            .await?;
        self.db()
            .write("reorder", place_command(task_id, position, now))
            .await?;
        self.get(task_id).await
    }

    async fn retry(&self, task_id: &str, now: Millis) -> Result<Option<TaskRecord>> {
        let Some(task) = self.get_task(task_id).await? else {
            return Ok(None);
        };
        let refused = |state: TaskState| {
            StoreError::new(
                ErrorKind::Conflict,
                format!(
                    "task {task_id} is {}, only error tasks can be retried",
                    state.as_str()
                ),
            )
        };
        if task.record.state != TaskState::Error {
            return Err(refused(task.record.state));
        }
        if self
            .db()
            .write("retry", retry_command(task_id, now))
            .await?
            .n
            == 0
        {
            // Retried (or deleted) by someone else between the read and the write.
            let state = self
                .get(task_id)
                .await?
                .map(|t| t.state)
                .unwrap_or(TaskState::Error);
            return Err(refused(state));
        }
        self.settle(&task.partition, &task.record.source_urn, task_id, now)
            .await?;
        self.get(task_id).await
    }

    async fn prune_done(&self, before: Millis) -> Result<u64> {
        let pruned = self.db().write("prune", prune_command(before)).await?.n;
        let orphans: Vec<String> = self
            .db()
            .find_all("prune", orphan_payloads_command(before))
            .await?
            .iter()
            .filter_map(|d| opt_str(d, "_id"))
            .collect();
        for batch in orphans.chunks(PAYLOAD_DELETE_BATCH) {
            self.db()
                .write("prune", delete_payloads_command(batch, before))
                .await?;
        }
        Ok(pruned.max(0) as u64)
    }

    async fn counts(&self, client: Option<&str>) -> Result<QueueCounts> {
        let mut out = QueueCounts::default();
        for d in self.db().find_all("counts", counts_command(client)).await? {
            let key = d
                .get_document("_id")
                .map_err(|_| corrupt("counts: group without a key"))?;
            let (Some(state), Some(priority)) = (
                opt_str(key, "state").and_then(|s| TaskState::parse(&s)),
                opt_i64(key, "priority").and_then(|p| u8::try_from(p).ok()),
            ) else {
                continue;
            };
            let n = opt_i64(&d, "n").unwrap_or(0).max(0) as u64;
            out.by_state_priority.push((state, priority, n));
        }
        Ok(out)
    }

    async fn next_wakeup(&self, now: Millis) -> Result<Option<Millis>> {
        Ok(self
            .db()
            .find_one("next wakeup", next_wakeup_command(now))
            .await?
            .and_then(|d| opt_i64(&d, "wakeAt")))
    }
}

impl MongoStore {
    async fn finish(
        &self,
        op: &str,
        token: &LeaseToken,
        state: TaskState,
        reason: Option<&str>,
        now: Millis,
    ) -> Result<bool> {
        let Some(d) = self
            .db()
            .find_and_modify(op, finish_command(token, state, reason, now))
            .await?
        else {
            return Ok(false);
        };
        let partition = req_str(&d, "partition", "task")?;
        let urn = req_str(&d, "sourceUrn", "task")?;
        self.settle(&partition, &urn, &token.task_id, now).await?;
        Ok(true)
    }
}
