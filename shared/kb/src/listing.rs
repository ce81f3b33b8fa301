//! Listings the API, the MCP tools and the CLI show: chunks by kind, the source registry, the
//! queue's tasks (one page, with counts by state). Limits and their bounds live here, so every
//! caller gets the same answer for the same question.

use std::collections::BTreeMap;

use evident_core::validate::{self, FieldError};
use evident_core::{Chunk, Scope, Visibility};
use evident_store::queue::{TaskFilter, TaskRecord, TaskState};
use evident_store::{ChunkFilter, SourceRecord};
use serde::Serialize;

use crate::{Kb, KbError, Result, TaskSubmitter};

/// Most chunks one by-kind listing returns.
pub const MAX_BY_KIND: usize = 1000;
/// Sources listed when the caller names no limit, and the most one listing returns.
pub const DEFAULT_SOURCES: usize = 100;
pub const MAX_SOURCES: usize = 10_000;
/// Tasks listed when the caller names no limit, and the most one page holds.
pub const DEFAULT_TASKS: usize = 100;
pub const MAX_TASKS: usize = 1000;

/// `limit` within `1..=max`, as a field error naming the range otherwise.
fn check_limit(limit: usize, max: usize) -> Result<usize> {
    if limit == 0 || limit > max {
        return Err(FieldError::Invalid {
            field: "limit",
            reason: format!("must be 1..={max}"),
        }
        .into());
    }
    Ok(limit)
}

impl Kb {
    /// The newest chunks of the given kinds the reader sees (`1..=1000`, at least one kind).
    pub async fn chunks_by_kind(
        &self,
        reader: &Visibility,
        kinds: Vec<String>,
        limit: usize,
    ) -> Result<Vec<Chunk>> {
        self.chunks_by_kind_typed(reader, kinds, evident_core::TypedFilter::default(), limit)
            .await
    }

    /// [`Kb::chunks_by_kind`] narrowed to chunks whose typed-knowledge labels `typed` admits.
    pub async fn chunks_by_kind_typed(
        &self,
        reader: &Visibility,
        kinds: Vec<String>,
        typed: evident_core::TypedFilter,
        limit: usize,
    ) -> Result<Vec<Chunk>> {
        if kinds.is_empty() {
            return Err(FieldError::Missing { field: "kinds" }.into());
        }
        for k in &kinds {
            validate::kind("kinds", k)?;
        }
        let limit = check_limit(limit, MAX_BY_KIND)?;
        Ok(self
            .stores
            .chunks
            .by_kind(reader, &ChunkFilter { kinds, typed }, limit)
            .await?)
    }

    /// The sources the reader sees; `limit` (default 100) is clamped to `1..=10000`.
    pub async fn sources(
        &self,
        reader: &Visibility,
        limit: Option<usize>,
    ) -> Result<Vec<SourceRecord>> {
        let limit = limit.unwrap_or(DEFAULT_SOURCES).clamp(1, MAX_SOURCES);
        Ok(self.stores.sources.list(reader, limit).await?)
    }
}

/// What to list of the queue.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskQuery {
    /// A state's name (`queued`, `processing`, `retry_wait`, `done`, `error`).
    pub state: Option<String>,
    pub client_id: Option<String>,
    pub source_urn: Option<String>,
    /// Page after this task id.
    pub after: Option<String>,
    /// `1..=1000`, 100 when unset.
    pub limit: Option<usize>,
}

/// One page of tasks, the id to ask the next page after (when the page is full), and the
/// queue's depth by state (of the client asked about, or of every client).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPage {
    pub tasks: Vec<TaskRecord>,
    pub next: Option<String>,
    pub counts: BTreeMap<&'static str, u64>,
}

impl TaskSubmitter {
    /// A page of tasks, keeping only those whose scope `sees` admits (a grant narrowed to
    /// projects or groups lists only the tasks it could read; `next` still pages on).
    pub async fn list(&self, q: TaskQuery, sees: impl Fn(&Scope) -> bool) -> Result<TaskPage> {
        let state = match q.state.as_deref() {
            None => None,
            Some(raw) => Some(TaskState::parse(raw).ok_or_else(|| FieldError::Invalid {
                field: "state",
                reason: "must be one of queued, processing, retry_wait, done, error".into(),
            })?),
        };
        let limit = check_limit(q.limit.unwrap_or(DEFAULT_TASKS), MAX_TASKS)?;
        let filter = TaskFilter {
            state,
            client_id: q.client_id,
            source_urn: q.source_urn,
            after: q.after,
            updated_since: None,
            limit,
        };
        let mut tasks = self.queue().list(&filter).await?;
        let next = (tasks.len() == limit)
            .then(|| tasks.last().map(|t| t.task_id.clone()))
            .flatten();
        tasks.retain(|t| sees(&t.scope));
        let counts = self.queue().counts(filter.client_id.as_deref()).await?;
        Ok(TaskPage {
            tasks,
            next,
            counts: TaskState::ALL
                .iter()
                .map(|st| (st.as_str(), counts.state(*st)))
                .collect(),
        })
    }

    /// One task (`not_found` when unknown).
    pub async fn task(&self, id: &str) -> Result<TaskRecord> {
        self.queue()
            .get(id)
            .await?
            .ok_or_else(|| task_not_found(id))
    }

    /// Moves a task to `position` (1 = next) among the waiting tasks; wakes idle workers.
    pub async fn reorder(&self, id: &str, position: i64, now: i64) -> Result<TaskRecord> {
        if position < 1 {
            return Err(FieldError::Invalid {
                field: "position",
                reason: "must be ≥ 1".into(),
            }
            .into());
        }
        let r = self.queue().reorder(id, position, now).await?;
        self.steered(id, r)
    }

    /// Moves an `error` task back to `queued` (after its cause was fixed); wakes idle workers.
    pub async fn retry(&self, id: &str, now: i64) -> Result<TaskRecord> {
        let r = self.queue().retry(id, now).await?;
        self.steered(id, r)
    }

    /// The task as it is after a steering call; idle workers are woken, since the queue's
    /// order changed.
    fn steered(&self, id: &str, rec: Option<TaskRecord>) -> Result<TaskRecord> {
        let rec = rec.ok_or_else(|| task_not_found(id))?;
        self.notify();
        Ok(rec)
    }
}

fn task_not_found(id: &str) -> KbError {
    KbError::NotFound {
        what: format!("task `{id}`"),
    }
}

#[cfg(test)]
mod tests {
    use evident_ai::Priority;

    use super::*;
    use crate::Document;

    #[tokio::test]
    async fn bad_listings_are_field_errors_and_pages_follow_the_reader() {
        let dir = tempfile::tempdir().expect("tmp");
        let kb = crate::test_kb(dir.path()).await;
        let reader = Visibility::of(Scope::client("acme"));
        for (kinds, limit, code) in [
            (vec![], 10, "missing_field"),
            (vec!["doc".to_string()], 0, "invalid_field"),
            (vec!["doc".to_string()], MAX_BY_KIND + 1, "invalid_field"),
            (vec!["no kind".to_string()], 10, "invalid_field"),
        ] {
            let e = kb
                .chunks_by_kind(&reader, kinds.clone(), limit)
                .await
                .expect_err("refused");
            assert_eq!(e.code(), code, "{kinds:?} {limit}: {e}");
        }

        let tasks = TaskSubmitter::new(kb.stores().queue.clone());
        for (client, urn) in [("acme", "doc:1"), ("acme", "doc:2"), ("other", "doc:3")] {
            let doc = Document {
                client_id: Some(client.into()),
                source_urn: urn.into(),
                kind: "doc".into(),
                content: "text".into(),
                ..Default::default()
            };
            tasks
                .enqueue_ingest(doc, Priority::DEFAULT, 1)
                .await
                .expect("queued");
        }
        let first = tasks
            .list(
                TaskQuery {
                    limit: Some(2),
                    ..Default::default()
                },
                |s| s.client_id.as_deref() == Some("acme"),
            )
            .await
            .expect("page");
        assert_eq!(first.tasks.len(), 2);
        assert_eq!(first.counts["queued"], 3);
        let rest = tasks
            .list(
                TaskQuery {
                    after: first.next.clone(),
                    ..Default::default()
                },
                |s| s.client_id.as_deref() == Some("acme"),
            )
            .await
            .expect("page");
        assert!(
            rest.tasks.is_empty(),
            "the other client's task is not listed"
        );
        assert_eq!(rest.next, None);
        let bad_state = TaskQuery {
            state: Some("finished".into()),
            ..Default::default()
        };
        let e = tasks.list(bad_state, |_| true).await.expect_err("state");
        assert_eq!(e.code(), "invalid_field");
        assert_eq!(
            tasks.task("nope").await.expect_err("none").code(),
            "not_found"
        );
        let e = tasks.reorder(&first.tasks[0].task_id, 0, 2).await;
        assert_eq!(e.expect_err("position").code(), "invalid_field");
    }
}
