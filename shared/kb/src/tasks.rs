//! Queue task bodies and their execution. Every body is versioned and tagged
//! (`{"type": "ingest", "v": 1, …}`), and every handler is idempotent: ingest skips unchanged
//! content by hash, purge of a purged source is a no-op — so a task processed twice (a crash
//! after the write, before the acknowledgement) leaves the same state as once.

use std::collections::HashMap;
use std::sync::Arc;

use evident_ai::Priority;
use evident_core::Scope;
use evident_store::queue::{NewTask, TaskQueue, TaskRecord};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::{Document, Kb, KbError, Result};

/// Task bodies. New kinds are added as new variants; a changed body gets a new `v`.
// A body is parsed once per task and handled by value; boxing the ingest request would change
// nothing that matters and every construction site.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TaskBody {
    /// A document ingest deferred through the queue (`POST /ingest-queue`).
    ///
    /// - `v: 3`: `document`, the domain [`Document`] with typed knowledge (`knowledgeType`,
    ///   `infoType`, `tags`, `entity`, `embeddingText`).
    /// - `v: 2` (stored before): the same without typed knowledge — a v3 document without
    ///   those fields, read as one ([`TaskBody::upgrade`]).
    /// - `v: 1` (stored before): `request`, the HTTP body of the time. Its fields are those of
    ///   a [`Document`], so it is read as one.
    Ingest {
        v: u32,
        #[serde(alias = "request")]
        document: Document,
    },
    /// Remove a source and what only it evidences.
    Purge {
        v: u32,
        #[serde(default)]
        scope: Scope,
        source_urn: String,
    },
    /// A source an indexer already prepared (a mail message, an issue, a transcript…).
    IngestPrepared {
        v: u32,
        source: Box<evident_core::PreparedSource>,
    },
    /// Remove every source whose URN starts with `prefix` (an unregistered source's data).
    PurgePrefix {
        v: u32,
        #[serde(default)]
        scope: Scope,
        prefix: String,
    },
}

impl TaskBody {
    /// The version of each kind's body this build writes.
    pub const INGEST_V: u32 = 3;

    /// The body as this build writes it: older versions of a kind converted to the current
    /// one (their stored form stays readable), unknown versions left for the handler to refuse.
    pub fn upgrade(self) -> TaskBody {
        match self {
            // v1 stored the HTTP body as `request`: the same fields, read as a `Document`; v2
            // is a `Document` without the typed-knowledge fields (all optional in v3).
            TaskBody::Ingest { v: 1 | 2, document } => TaskBody::Ingest {
                v: Self::INGEST_V,
                document,
            },
            other => other,
        }
    }

    /// Every kind, as [`TaskBody::kind`] names them (the serialised `type`).
    pub const KINDS: [&'static str; 4] = ["ingest", "purge", "ingest-prepared", "purge-prefix"];

    pub fn kind(&self) -> &'static str {
        match self {
            TaskBody::Ingest { .. } => "ingest",
            TaskBody::Purge { .. } => "purge",
            TaskBody::IngestPrepared { .. } => "ingest-prepared",
            TaskBody::PurgePrefix { .. } => "purge-prefix",
        }
    }
}

/// Why a task body could not be executed, classified for the queue.
#[derive(Debug)]
pub enum TaskError {
    /// Operational: retry later (store or embedder unavailable, busy, rate-limited).
    Retryable(String),
    /// The task can never succeed as it is: unparseable or invalid.
    Permanent(String),
}

impl From<KbError> for TaskError {
    fn from(e: KbError) -> Self {
        if e.is_retryable() {
            TaskError::Retryable(format!("{}: {e}", e.code()))
        } else {
            TaskError::Permanent(format!("{}: {e}", e.code()))
        }
    }
}

/// Enqueue side of the queue, shared by the API and indexers; wakes idle workers.
#[derive(Clone)]
pub struct TaskSubmitter {
    queue: Arc<dyn TaskQueue>,
    wake: Arc<Notify>,
}

impl TaskSubmitter {
    pub fn new(queue: Arc<dyn TaskQueue>) -> Self {
        TaskSubmitter {
            queue,
            wake: Arc::new(Notify::new()),
        }
    }

    pub fn queue(&self) -> &Arc<dyn TaskQueue> {
        &self.queue
    }

    /// Workers wait on this between polls; every enqueue and retry notifies it.
    pub fn wake_signal(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    pub fn notify(&self) {
        self.wake.notify_waiters();
    }

    /// Validates the request exactly as a synchronous ingest would (so bad input is refused at
    /// once with 4xx, not discovered later by a worker), then enqueues it.
    pub async fn enqueue_ingest(
        &self,
        document: impl Into<Document>,
        priority: Priority,
        now: i64,
    ) -> Result<TaskRecord> {
        let document = document.into();
        let checked = crate::ingest::check(&document)?;
        let urn = document.source_urn.clone();
        let body = TaskBody::Ingest {
            v: TaskBody::INGEST_V,
            document,
        };
        self.enqueue_typed(&body, checked.scope, &urn, priority, now)
            .await
    }

    /// Enqueues one of this crate's task bodies under `source_urn`.
    async fn enqueue_typed(
        &self,
        body: &TaskBody,
        scope: Scope,
        source_urn: &str,
        priority: Priority,
        now: i64,
    ) -> Result<TaskRecord> {
        let payload = serde_json::to_value(body)
            .map_err(|e| KbError::Invalid(format!("unserialisable task: {e}")))?;
        self.enqueue_body(scope, source_urn, priority, payload, now)
            .await
    }

    /// Enqueues a task body of another kind (an indexer's), already serialised with its
    /// `type` and `v`.
    pub async fn enqueue_body(
        &self,
        scope: Scope,
        source_urn: &str,
        priority: Priority,
        body: serde_json::Value,
        now: i64,
    ) -> Result<TaskRecord> {
        let kind = body
            .get("type")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| KbError::Invalid("a task body needs a `type`".into()))?
            .to_string();
        let task = NewTask {
            kind: kind.clone(),
            scope,
            source_urn: source_urn.to_string(),
            priority: priority.value(),
            payload: body,
        };
        let rec = self.queue.enqueue(task, now).await?;
        metrics::counter!("evident_queue_enqueued_total", "kind" => kind).increment(1);
        self.notify();
        Ok(rec)
    }

    /// Enqueues a prepared source; `queue_urn` orders it with the other tasks of its origin
    /// (a mailbox, a tracker project), so they are written in the order they were read.
    pub async fn enqueue_prepared(
        &self,
        source: evident_core::PreparedSource,
        queue_urn: &str,
        priority: Priority,
        now: i64,
    ) -> Result<TaskRecord> {
        let scope = source.scope.clone();
        let body = TaskBody::IngestPrepared {
            v: 1,
            source: Box::new(source),
        };
        self.enqueue_typed(&body, scope, queue_urn, priority, now)
            .await
    }

    /// Enqueues the removal of everything under a URN prefix.
    pub async fn enqueue_purge_prefix(
        &self,
        scope: Scope,
        prefix: &str,
        priority: Priority,
        now: i64,
    ) -> Result<TaskRecord> {
        let body = TaskBody::PurgePrefix {
            v: 1,
            scope: scope.clone(),
            prefix: prefix.to_string(),
        };
        self.enqueue_typed(&body, scope, prefix, priority, now)
            .await
    }

    pub async fn enqueue_purge(
        &self,
        scope: Scope,
        source_urn: &str,
        priority: Priority,
        now: i64,
    ) -> Result<TaskRecord> {
        evident_core::validate::bounded_text(
            "sourceUrn",
            source_urn,
            evident_core::validate::MAX_URN_LEN,
        )?;
        let body = TaskBody::Purge {
            v: 1,
            scope: scope.clone(),
            source_urn: source_urn.to_string(),
        };
        self.enqueue_typed(&body, scope, source_urn, priority, now)
            .await
    }
}

/// Executes the task bodies of the kinds it is registered for. Implementations must be
/// idempotent: a task processed twice (a crash after its write, before its acknowledgement)
/// leaves the same state as once.
///
/// `scope` is the queued task's scope: the client (and project, group) it was queued for. A
/// body naming a source by id alone (`sourceId`) means that client's source: ids are unique
/// per client only.
#[async_trait::async_trait]
pub trait TaskHandler: Send + Sync {
    async fn execute(
        &self,
        payload: &serde_json::Value,
        scope: &evident_core::Scope,
        priority: Priority,
    ) -> std::result::Result<(), TaskError>;
}

/// Routes a task body to the handler of its `type` (`ingest` and `purge` go to the knowledge
/// base; indexers register theirs, e.g. `ingest-git-commits`).
#[derive(Clone)]
pub struct TaskHandlers {
    by_kind: HashMap<String, Arc<dyn TaskHandler>>,
}

impl TaskHandlers {
    /// Handlers for the knowledge base's own task kinds.
    pub fn new(kb: &Kb) -> TaskHandlers {
        let acquirer: Arc<dyn TaskHandler> = Arc::new(crate::gaps::acquire::GapAcquirer {
            kb: kb.clone(),
            fetcher: None,
        });
        let kb: Arc<dyn TaskHandler> = Arc::new(kb.clone());
        let mut by_kind = HashMap::new();
        for kind in TaskBody::KINDS {
            by_kind.insert(kind.to_string(), kb.clone());
        }
        // The built-in acquirer of knowledge gaps.
        by_kind.insert(crate::gaps::acquire::KIND.to_string(), acquirer);
        TaskHandlers { by_kind }
    }

    pub fn register(&mut self, kind: &str, handler: Arc<dyn TaskHandler>) {
        self.by_kind.insert(kind.to_string(), handler);
    }

    /// Runs `payload` with the handler of its `type`; an unknown or missing type is a
    /// permanent failure (the task goes to `error`, where an operator can see it).
    pub async fn execute(
        &self,
        payload: &serde_json::Value,
        scope: &evident_core::Scope,
        priority: Priority,
    ) -> std::result::Result<(), TaskError> {
        let kind = payload
            .get("type")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| TaskError::Permanent("task body has no `type`".into()))?;
        let handler = self.by_kind.get(kind).ok_or_else(|| {
            TaskError::Permanent(format!("no handler for tasks of type `{kind}`"))
        })?;
        handler.execute(payload, scope, priority).await
    }
}

#[async_trait::async_trait]
impl TaskHandler for Kb {
    /// Executes an `ingest` or `purge` body. Idempotent (see the module docs).
    async fn execute(
        &self,
        payload: &serde_json::Value,
        _scope: &evident_core::Scope,
        priority: Priority,
    ) -> std::result::Result<(), TaskError> {
        let body: TaskBody = serde_json::from_value(payload.clone())
            .map_err(|e| TaskError::Permanent(format!("unreadable task body: {e}")))?;
        match body.upgrade() {
            TaskBody::Ingest {
                v: TaskBody::INGEST_V,
                document,
            } => self
                .ingest(document, priority)
                .await
                .map(drop)
                .map_err(TaskError::from),
            TaskBody::Purge {
                v: 1,
                scope,
                source_urn,
            } => self
                .purge(&scope, &source_urn, priority)
                .await
                .map(drop)
                .map_err(TaskError::from),
            TaskBody::IngestPrepared { v: 1, source } => self
                .ingest_prepared(*source, priority)
                .await
                .map(drop)
                .map_err(TaskError::from),
            TaskBody::PurgePrefix {
                v: 1,
                scope,
                prefix,
            } => self
                .purge_prefix(&scope, &prefix, priority)
                .await
                .map(drop)
                .map_err(TaskError::from),
            other => Err(TaskError::Permanent(format!(
                "unsupported version of a `{}` task",
                other.kind()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `ingest` task stored as `v: 1` (the HTTP body as `request`) before the body became
    /// the domain `Document` is still read, upgraded and run; new tasks are written as `v: 2`;
    /// a version this build does not know is refused, not guessed.
    #[tokio::test]
    async fn an_ingest_task_stored_as_v1_still_runs() {
        let dir = tempfile::tempdir().expect("tmp");
        let kb = crate::test_kb(dir.path()).await;
        let stored = serde_json::json!({
            "type": "ingest",
            "v": 1,
            "request": {
                "clientId": "acme",
                "sourceUrn": "doc:old",
                "kind": "doc",
                "title": "Old",
                "content": "Written to the queue before the upgrade."
            }
        });
        let body: TaskBody = serde_json::from_value(stored.clone()).expect("v1 readable");
        assert!(matches!(
            body.upgrade(),
            TaskBody::Ingest { v: 3, ref document } if document.source_urn == "doc:old"
        ));
        TaskHandlers::new(&kb)
            .execute(&stored, &evident_core::Scope::global(), Priority::DEFAULT)
            .await
            .expect("the v1 task runs");
        let scope = Scope::client("acme");
        let written = kb
            .stores()
            .sources
            .get(scope.partition(), "doc:old")
            .await
            .expect("read");
        assert!(written.is_some(), "the old task's document is stored");

        let queue = kb.stores().queue.clone();
        TaskSubmitter::new(queue.clone())
            .enqueue_ingest(
                Document {
                    client_id: Some("acme".into()),
                    source_urn: "doc:new".into(),
                    kind: "doc".into(),
                    content: "Queued by this build.".into(),
                    ..Default::default()
                },
                Priority::DEFAULT,
                1,
            )
            .await
            .expect("enqueue");
        let claim = queue
            .claim("test", evident_store::queue::PriorityBand::ALL, 60_000, 2)
            .await
            .expect("claim")
            .expect("the queued ingest");
        assert_eq!(claim.payload["v"], 3);
        assert_eq!(claim.payload["document"]["sourceUrn"], "doc:new");
        assert!(claim.payload.get("request").is_none());

        let mut future = stored;
        future["v"] = 9.into();
        match TaskHandlers::new(&kb)
            .execute(&future, &evident_core::Scope::global(), Priority::DEFAULT)
            .await
        {
            Err(TaskError::Permanent(m)) => assert!(m.contains("version"), "{m}"),
            other => panic!("an unknown version must be refused: {other:?}"),
        }
    }

    /// An `ingest` task stored as `v: 2` (a `Document` before typed knowledge) is read as a v3
    /// document without labels and runs; a v3 body carries the labels onto the chunks.
    #[tokio::test]
    async fn an_ingest_task_stored_as_v2_still_runs_and_v3_carries_labels() {
        let dir = tempfile::tempdir().expect("tmp");
        let kb = crate::test_kb(dir.path()).await;
        let v2 = serde_json::json!({
            "type": "ingest",
            "v": 2,
            "document": {
                "clientId": "acme",
                "sourceUrn": "doc:v2",
                "kind": "doc",
                "content": "Stored before typed knowledge existed."
            }
        });
        TaskHandlers::new(&kb)
            .execute(&v2, &evident_core::Scope::global(), Priority::DEFAULT)
            .await
            .expect("the v2 task runs");
        let mut v3 = v2.clone();
        v3["v"] = 3.into();
        v3["document"]["sourceUrn"] = "doc:v3".into();
        v3["document"]["knowledgeType"] = "fact".into();
        v3["document"]["infoType"] = "context".into();
        v3["document"]["entity"] = "user:Alice".into();
        TaskHandlers::new(&kb)
            .execute(&v3, &evident_core::Scope::global(), Priority::DEFAULT)
            .await
            .expect("the v3 task runs");
        let vis = evident_core::Visibility::of(Scope::client("acme"));
        let typed = crate::typed::typed_filter(&[], &["context".into()], &[], &[]).expect("f");
        let found = kb
            .chunks_by_kind_typed(&vis, vec!["doc".into()], typed, 10)
            .await
            .expect("list");
        let urns: Vec<&str> = found.iter().map(|c| c.source_urn.as_str()).collect();
        assert_eq!(urns, vec!["doc:v3"]);
        assert_eq!(
            found[0].metadata["knowledge"]["entity"],
            serde_json::json!("user:alice")
        );
    }

    /// The kinds the built-in handler registers for are the `type`s the bodies serialise to.
    #[test]
    fn kinds_are_the_serialised_types() {
        let scope = Scope::client("c");
        let bodies = [
            TaskBody::Purge {
                v: 1,
                scope: scope.clone(),
                source_urn: "urn:x".into(),
            },
            TaskBody::PurgePrefix {
                v: 1,
                scope,
                prefix: "urn:".into(),
            },
        ];
        for body in &bodies {
            let json = serde_json::to_value(body).expect("serialise");
            assert_eq!(json["type"], body.kind());
            assert!(TaskBody::KINDS.contains(&body.kind()), "{}", body.kind());
        }
    }
}
