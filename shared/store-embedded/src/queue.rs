//! TaskQueue over SQLite. Every state change is one statement or one transaction on the single
//! writer connection, so claims are atomic and survive crashes: a claimed task whose process
//! died is simply `processing` with an expired lease, claimable again.

use async_trait::async_trait;
use evident_store::queue::*;
use evident_store::{Result, StoreError};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use crate::{EmbeddedStore, json_err, sql, sqlite_err};

const COLUMNS: &str = "id, kind, source_urn, client_id, project_id, group_id, state, priority, queue_position, retries, attempts, \
     next_retry_at, last_error, lease_owner, lease_expires_at, created_at, updated_at";

fn record(r: &rusqlite::Row<'_>) -> rusqlite::Result<TaskRecord> {
    let state: String = r.get(6)?;
    Ok(TaskRecord {
        task_id: r.get(0)?,
        kind: r.get(1)?,
        source_urn: r.get(2)?,
        scope: sql::scope_at(r, 3)?,
        state: TaskState::parse(&state).unwrap_or(TaskState::Error),
        priority: r.get::<_, i64>(7)? as u8,
        queue_position: r.get(8)?,
        retries: r.get::<_, i64>(9)? as u32,
        attempts: r.get::<_, i64>(10)? as u32,
        next_retry_at: r.get(11)?,
        last_error: r.get(12)?,
        lease_owner: r.get(13)?,
        lease_expires_at: r.get(14)?,
        created_at: r.get(15)?,
        updated_at: r.get(16)?,
    })
}

fn get(conn: &Connection, id: &str) -> Result<Option<TaskRecord>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))
        .map_err(sqlite_err)?
        .query_row([id], record)
        .optional()
        .map_err(sqlite_err)
}

/// Runs `f` only if `token` is the current lease; returns whether it was.
fn with_lease(
    conn: &Connection,
    token: &LeaseToken,
    f: impl FnOnce(&Connection) -> Result<()>,
) -> Result<bool> {
    let current: Option<i64> = conn
        .prepare_cached("SELECT lease_epoch FROM tasks WHERE id = ?1 AND state = 'processing'")
        .map_err(sqlite_err)?
        .query_row([&token.task_id], |r| r.get(0))
        .optional()
        .map_err(sqlite_err)?;
    if current != Some(token.epoch) {
        return Ok(false);
    }
    f(conn)?;
    Ok(true)
}

fn payload_hash(body: &str) -> String {
    evident_core::hashing::content_hash(body)
}

const ELIGIBLE: &str = "(t.state = 'queued' \
     OR (t.state = 'retry_wait' AND t.next_retry_at <= :now) \
     OR (t.state = 'processing' AND t.lease_expires_at <= :now))";

/// First claimable task in queue order within the band (see the trait contract). A task also
/// waits while a newer task of its source holds a live lease (an older `error` task retried
/// while a newer one runs): one source's tasks never run at the same time. The
/// `state IN (…)` term lets SQLite use the partial `tasks_claim_order` index: it walks
/// unfinished tasks in claim order and stops at the first eligible one.
fn claim_sql() -> String {
    format!(
        "SELECT t.id, t.payload_hash FROM tasks t \
         WHERE t.state IN ('queued', 'retry_wait', 'processing') AND {ELIGIBLE} AND t.priority BETWEEN :min AND :max \
         AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.partition = t.partition AND o.source_urn = t.source_urn \
                         AND o.seq < t.seq AND o.state IN ('queued', 'retry_wait', 'processing')) \
         AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.partition = t.partition AND o.source_urn = t.source_urn \
                         AND o.id != t.id AND o.state = 'processing' AND o.lease_expires_at > :now) \
         ORDER BY t.priority, t.queue_position IS NULL, t.queue_position, t.seq LIMIT 1"
    )
}

fn next_claimable(
    conn: &Connection,
    band: PriorityBand,
    now: Millis,
) -> Result<Option<(String, String)>> {
    conn.prepare_cached(&claim_sql())
        .map_err(sqlite_err)?
        .query_row(
            rusqlite::named_params! {":now": now, ":min": band.min as i64, ":max": band.max as i64},
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sqlite_err)
}

impl EmbeddedStore {
    /// Runs `update(conn, task id)` if `token` is still the current lease; returns whether it was.
    async fn with_current_lease<F>(&self, token: &LeaseToken, update: F) -> Result<bool>
    where
        F: FnOnce(&Connection, &str) -> rusqlite::Result<usize> + Send + 'static,
    {
        let token = token.clone();
        self.write_grouped(move |conn| {
            with_lease(conn, &token, |c| {
                update(c, &token.task_id).map_err(sqlite_err).map(drop)
            })
        })
        .await
    }
}

#[async_trait]
impl TaskQueue for EmbeddedStore {
    async fn enqueue(&self, task: NewTask, now: Millis) -> Result<TaskRecord> {
        evident_store::queue::check_priority(task.priority)?;
        let body = serde_json::to_string(&task.payload).map_err(json_err)?;
        self.write_grouped(move |tx| {
            let hash = payload_hash(&body);
            tx.execute("INSERT OR IGNORE INTO task_payloads(hash, body) VALUES (?1, ?2)", params![hash, body]).map_err(sqlite_err)?;
            let next: i64 = tx
                .query_row("SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'tasks'), 0) + 1", [], |r| r.get(0))
                .map_err(sqlite_err)?;
            let id = format!("t{next:012}");
            tx.execute(
                "INSERT INTO tasks(id, kind, partition, client_id, project_id, group_id, source_urn, priority, state, payload_hash, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'queued', ?9, ?10, ?10)",
                params![id, task.kind, task.scope.partition(), task.scope.client_id, task.scope.project_id, task.scope.group_id, task.source_urn, task.priority as i64, hash, now],
            )
            .map_err(sqlite_err)?;
            get(tx, &id)?.ok_or_else(|| StoreError::corrupt("enqueued task vanished"))
        })
        .await
    }

    async fn claim(
        &self,
        worker: &str,
        band: PriorityBand,
        lease_ms: i64,
        now: Millis,
    ) -> Result<Option<Claim>> {
        let worker = worker.to_string();
        self.write_grouped(move |tx| {
            let Some((id, hash)) = next_claimable(tx, band, now)? else { return Ok(None) };
            tx.execute(
                "UPDATE tasks SET state = 'processing', lease_owner = ?2, lease_expires_at = ?3, lease_epoch = lease_epoch + 1, \
                 attempts = attempts + 1, next_retry_at = NULL, updated_at = ?4 WHERE id = ?1",
                params![id, worker, now + lease_ms, now],
            )
            .map_err(sqlite_err)?;
            let epoch: i64 = tx.query_row("SELECT lease_epoch FROM tasks WHERE id = ?1", [&id], |r| r.get(0)).map_err(sqlite_err)?;
            let body: String = tx.query_row("SELECT body FROM task_payloads WHERE hash = ?1", [&hash], |r| r.get(0)).map_err(sqlite_err)?;
            let task = get(tx, &id)?.ok_or_else(|| StoreError::corrupt("claimed task vanished"))?;
            let payload = serde_json::from_str(&body).map_err(json_err)?;
            Ok(Some(Claim { token: LeaseToken { task_id: id, epoch }, task, payload }))
        })
        .await
    }

    async fn heartbeat(&self, token: &LeaseToken, lease_ms: i64, now: Millis) -> Result<bool> {
        self.with_current_lease(token, move |c, id| {
            c.execute(
                "UPDATE tasks SET lease_expires_at = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, now + lease_ms, now],
            )
        })
        .await
    }

    async fn complete(&self, token: &LeaseToken, now: Millis) -> Result<bool> {
        self.with_current_lease(token, move |c, id| {
            c.execute(
                "UPDATE tasks SET state = 'done', lease_owner = NULL, lease_expires_at = NULL, last_error = NULL, updated_at = ?2 WHERE id = ?1",
                params![id, now],
            )
        })
        .await
    }

    async fn fail(
        &self,
        token: &LeaseToken,
        failure: Failure,
        backoff: &BackoffPolicy,
        now: Millis,
    ) -> Result<bool> {
        let backoff = *backoff;
        self.with_current_lease(token, move |c, id| match failure {
            Failure::Retryable(reason) => {
                let retries: i64 = c.query_row("SELECT retries FROM tasks WHERE id = ?1", [id], |r| r.get(0))?;
                let n = (retries + 1) as u32;
                c.execute(
                    "UPDATE tasks SET state = 'retry_wait', retries = ?2, next_retry_at = ?3, last_error = ?4, lease_owner = NULL, \
                     lease_expires_at = NULL, updated_at = ?5 WHERE id = ?1",
                    params![id, n as i64, now + backoff.delay(id, n), reason, now],
                )
            }
            Failure::Permanent(reason) => c.execute(
                "UPDATE tasks SET state = 'error', last_error = ?2, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?3 WHERE id = ?1",
                params![id, reason, now],
            ),
        })
        .await
    }

    async fn release(&self, token: &LeaseToken, now: Millis) -> Result<bool> {
        self.with_current_lease(token, move |c, id| {
            c.execute("UPDATE tasks SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?2 WHERE id = ?1", params![id, now])
        })
        .await
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>> {
        let id = task_id.to_string();
        self.read(move |conn, _| get(conn, &id)).await
    }

    async fn list(&self, filter: &TaskFilter) -> Result<Vec<TaskRecord>> {
        let filter = filter.clone();
        self.read(move |conn, _| {
            let mut q = format!("SELECT {COLUMNS} FROM tasks WHERE 1 = 1");
            let mut p: Vec<Value> = Vec::new();
            if let Some(s) = filter.state {
                q.push_str(" AND state = ?");
                p.push(Value::Text(s.as_str().into()));
            }
            if let Some(c) = &filter.client_id {
                q.push_str(" AND client_id = ?");
                p.push(Value::Text(c.clone()));
            }
            if let Some(u) = &filter.source_urn {
                q.push_str(" AND source_urn = ?");
                p.push(Value::Text(u.clone()));
            }
            if let Some(since) = filter.updated_since {
                q.push_str(" AND updated_at >= ?");
                p.push(Value::Integer(since));
            }
            if let Some(a) = &filter.after {
                q.push_str(" AND id > ?");
                p.push(Value::Text(a.clone()));
            }
            q.push_str(" ORDER BY seq LIMIT ?");
            p.push(Value::Integer(filter.limit.clamp(1, 10_000) as i64));
            let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
            let rows = stmt
                .query_map(params_from_iter(p), record)
                .map_err(sqlite_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sqlite_err)
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
        let id = task_id.to_string();
        self.write_grouped(move |tx| {
            let Some(task) = get(tx, &id)? else { return Ok(None) };
            // Make room: explicitly placed tasks at or after the position move back by one.
            tx.execute(
                "UPDATE tasks SET queue_position = queue_position + 1 WHERE priority = ?1 AND queue_position >= ?2 AND id <> ?3 \
                 AND state IN ('queued', 'retry_wait', 'processing')",
                params![task.priority as i64, position, id],
            )
            .map_err(sqlite_err)?;
            tx.execute("UPDATE tasks SET queue_position = ?2, updated_at = ?3 WHERE id = ?1", params![id, position, now]).map_err(sqlite_err)?;
            get(tx, &id)
        })
        .await
    }

    async fn retry(&self, task_id: &str, now: Millis) -> Result<Option<TaskRecord>> {
        let id = task_id.to_string();
        self.write_grouped(move |conn| {
            let Some(task) = get(conn, &id)? else { return Ok(None) };
            if task.state != TaskState::Error {
                return Err(StoreError::new(evident_store::ErrorKind::Conflict, format!("task {id} is {}, only error tasks can be retried", task.state.as_str())));
            }
            conn.execute("UPDATE tasks SET state = 'queued', next_retry_at = NULL, updated_at = ?2 WHERE id = ?1", params![id, now]).map_err(sqlite_err)?;
            get(conn, &id)
        })
        .await
    }

    async fn prune_done(&self, before: Millis) -> Result<u64> {
        self.write(move |conn, _| {
            let tx = conn.transaction().map_err(sqlite_err)?;
            let n = tx
                .execute(
                    "DELETE FROM tasks WHERE state = 'done' AND updated_at < ?1",
                    [before],
                )
                .map_err(sqlite_err)?;
            tx.execute(
                "DELETE FROM task_payloads WHERE hash NOT IN (SELECT payload_hash FROM tasks)",
                [],
            )
            .map_err(sqlite_err)?;
            tx.commit().map_err(sqlite_err)?;
            Ok(n as u64)
        })
        .await
    }

    async fn counts(&self, client: Option<&str>) -> Result<QueueCounts> {
        let client = client.map(str::to_string);
        self.read(move |conn, _| {
            let mut stmt = conn.prepare_cached("SELECT state, priority, count(*) FROM tasks WHERE ?1 IS NULL OR client_id = ?1 GROUP BY state, priority ORDER BY state, priority").map_err(sqlite_err)?;
            let rows = stmt
                .query_map([client], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)))
                .map_err(sqlite_err)?;
            let mut out = QueueCounts::default();
            for row in rows {
                let (s, p, n) = row.map_err(sqlite_err)?;
                if let Some(state) = TaskState::parse(&s) {
                    out.by_state_priority.push((state, p as u8, n as u64));
                }
            }
            Ok(out)
        })
        .await
    }

    async fn next_wakeup(&self, now: Millis) -> Result<Option<Millis>> {
        self.read(move |conn, _| {
            conn.query_row(
                "SELECT min(t) FROM (SELECT min(next_retry_at) AS t FROM tasks WHERE state = 'retry_wait' AND next_retry_at > ?1 \
                 UNION ALL SELECT min(lease_expires_at) FROM tasks WHERE state = 'processing' AND lease_expires_at > ?1)",
                [now],
                |r| r.get(0),
            )
            .map_err(sqlite_err)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A claim must not sort the backlog: it walks the claim-order index and stops early.
    #[test]
    fn claim_walks_the_claim_order_index_without_sorting() {
        let conn = Connection::open_in_memory().expect("sqlite");
        conn.execute_batch(crate::schema::DDL).expect("schema");
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", claim_sql()))
            .expect("plan")
            .query_map(
                rusqlite::named_params! {":now": 0i64, ":min": 0i64, ":max": 9i64},
                |r| r.get::<_, String>(3),
            )
            .expect("rows")
            .collect::<rusqlite::Result<_>>()
            .expect("plan rows");
        let plan = plan.join("\n");
        assert!(plan.contains("tasks_claim_order"), "{plan}");
        assert!(plan.contains("tasks_source_open"), "{plan}");
        assert!(plan.contains("tasks_source_leased"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        // Every access is through an index: a bare `SCAN` would read the whole history.
        assert!(
            plan.lines()
                .all(|l| !l.contains("SCAN") || l.contains("USING INDEX")),
            "{plan}"
        );
    }
}
