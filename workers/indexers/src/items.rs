//! The qualification tasks of polled items: a mail message, a transcript, a document — as
//! read from their source, raw. Pollers only read and queue; workers parse, extract and write,
//! so extraction scales with the workers and an item that cannot be read (a truncated MIME
//! message, a malformed VTT, an encrypted PDF) ends in the queue's `error` state with its
//! reason while everything else goes on.
//!
//! Items carry their bytes (not a path): a worker need not see the poller's disk, and an item
//! changed or deleted after it was queued is still written as it was read (the next poll
//! queues the new version).

use std::sync::Arc;

use evident_ai::Priority;
use evident_core::chunking::ChunkingConfig;
use evident_core::{PreparedSource, Scope};
use evident_extract::document::{DocumentMeta, Format, document_source, extract};
use evident_extract::mail::{MailContext, email_sources, parse_email};
use evident_extract::meeting::{MeetingContext, transcript_source};
use evident_extract::transcript::{TranscriptFormat, parse};
use evident_kb::{Kb, TaskError, TaskHandler};
use evident_store::indexers::{IndexerSource, IndexerStore};
use serde::{Deserialize, Serialize};

/// Attachments larger than this are not extracted unless a source says otherwise.
pub use evident_sources::kinds::DEFAULT_MAX_ATTACHMENT_BYTES;

/// Bytes as base64 in task bodies (which are JSON).
mod b64 {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// Task bodies of polled items. A changed body gets a new `v`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum ItemTask {
    /// One e-mail message (RFC 5322 bytes) from a mailbox of a mail source.
    IngestMail {
        v: u32,
        source_id: String,
        mailbox: String,
        #[serde(with = "b64")]
        raw: Vec<u8>,
        /// Only the first this-many bytes were read (the message was over the size limit).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        truncated_at: Option<u64>,
    },
    /// One transcript file of a meeting.
    IngestTranscript {
        v: u32,
        source_id: String,
        meeting_id: String,
        uri: String,
        format: TranscriptFormat,
        text: String,
        /// When the meeting took place, if known (RFC 3339).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        date: Option<String>,
    },
    /// One document (a file, a crawled page, a wiki attachment).
    IngestDocument {
        v: u32,
        source_id: String,
        /// The URN it is stored under (within the source's prefix).
        source_urn: String,
        /// What citations name: a path or URL.
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_type: Option<String>,
        /// The chunks' kind (`doc`, `web`, `wiki-attachment`).
        kind: String,
        #[serde(with = "b64")]
        data: Vec<u8>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        observed_at: Option<String>,
        /// The graph node the document is (a wiki attachment's), if it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
    },
}

impl ItemTask {
    /// Queues this item under `urn` for `source`, at the poller's priority.
    pub async fn queue(
        &self,
        ctx: &crate::poll::PollContext,
        source: &IndexerSource,
        urn: &str,
    ) -> Result<(), crate::poll::PollError> {
        let body = serde_json::to_value(self).map_err(|e| {
            crate::poll::PollError::internal(format!("unserialisable {} task", self.kind()), e)
        })?;
        ctx.tasks
            .enqueue_body(
                source.scope.clone(),
                urn,
                ctx.priority,
                body,
                ctx.clock.now_ms(),
            )
            .await?;
        Ok(())
    }

    pub fn kind(&self) -> &'static str {
        match self {
            ItemTask::IngestMail { .. } => "ingest-mail",
            ItemTask::IngestTranscript { .. } => "ingest-transcript",
            ItemTask::IngestDocument { .. } => "ingest-document",
        }
    }

    fn source_id(&self) -> &str {
        match self {
            ItemTask::IngestMail { source_id, .. }
            | ItemTask::IngestTranscript { source_id, .. }
            | ItemTask::IngestDocument { source_id, .. } => source_id,
        }
    }

    /// The task kinds this module executes.
    pub const KINDS: [&'static str; 3] = ["ingest-mail", "ingest-transcript", "ingest-document"];
}

/// Executes [`ItemTask`]s: extract, prepare, write through the knowledge base.
#[derive(Clone)]
pub struct ItemTasks {
    pub kb: Kb,
    pub indexers: Arc<dyn IndexerStore>,
    pub chunking: ChunkingConfig,
}

impl ItemTasks {
    /// Handles every item task kind.
    pub fn register(self, handlers: &mut evident_kb::TaskHandlers) {
        let me: Arc<dyn TaskHandler> = Arc::new(self);
        for kind in ItemTask::KINDS {
            handlers.register(kind, me.clone());
        }
    }
}

/// How big an attachment may be for a source (its `maxAttachmentBytes`, else the default).
fn max_attachment_bytes(source: &IndexerSource) -> usize {
    source
        .config
        .get("maxAttachmentBytes")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(DEFAULT_MAX_ATTACHMENT_BYTES) as usize
}

impl ItemTasks {
    async fn write_all(
        &self,
        sources: Vec<PreparedSource>,
        priority: Priority,
    ) -> Result<(), TaskError> {
        for s in sources {
            self.kb.ingest_prepared(s, priority).await?;
        }
        Ok(())
    }

    /// Parses and prepares off the async threads (MIME, PDF and VTT parsing are CPU work).
    async fn prepare<F>(f: F) -> Result<Vec<PreparedSource>, TaskError>
    where
        F: FnOnce() -> Result<Vec<PreparedSource>, String> + Send + 'static,
    {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| TaskError::Permanent(format!("extraction crashed: {e}")))?
            .map_err(TaskError::Permanent)
    }

    fn prepare_item(
        task: ItemTask,
        scope: Scope,
        max_attachment_bytes: usize,
        chunking: ChunkingConfig,
    ) -> Result<Vec<PreparedSource>, String> {
        match task {
            ItemTask::IngestMail {
                source_id,
                mailbox,
                raw,
                truncated_at,
                ..
            } => {
                let email = parse_email(&raw).map_err(|e| e.to_string())?;
                Ok(email_sources(
                    &email,
                    &MailContext {
                        scope: &scope,
                        source_id: &source_id,
                        mailbox: &mailbox,
                        max_attachment_bytes,
                        chunking: &chunking,
                        truncated_at,
                    },
                ))
            }
            ItemTask::IngestTranscript {
                source_id,
                meeting_id,
                uri,
                format,
                text,
                date,
                ..
            } => {
                let transcript = parse(format, &text).map_err(|e| format!("{uri}: {e}"))?;
                let file_name = uri.rsplit('/').next().unwrap_or(&uri);
                let stem = file_name.rsplit_once('.').map_or(file_name, |p| p.0);
                Ok(transcript_source(
                    &transcript,
                    &MeetingContext {
                        scope: &scope,
                        source_id: &source_id,
                        meeting_id: &meeting_id,
                        uri: &uri,
                        fallback_title: Some(stem),
                        date: date.as_deref(),
                        chunking: &chunking,
                    },
                )
                .into_iter()
                .collect())
            }
            ItemTask::IngestDocument {
                source_urn,
                uri,
                title,
                content_type,
                kind,
                data,
                observed_at,
                node,
                ..
            } => {
                let meta = DocumentMeta {
                    scope: &scope,
                    source_urn: &source_urn,
                    uri: &uri,
                    kind: &kind,
                    title: title.as_deref(),
                    observed_at: observed_at.as_deref(),
                    node: node.as_deref().map(evident_core::NodeKey::from_canonical),
                };
                read_document(&meta, content_type.as_deref(), &data, &chunking)
            }
        }
    }
}

/// A fetched document as a prepared source: its format from the content type, the name or
/// the bytes, then extracted and chunked by page.
fn read_document(
    meta: &DocumentMeta<'_>,
    content_type: Option<&str>,
    data: &[u8],
    chunking: &ChunkingConfig,
) -> Result<Vec<PreparedSource>, String> {
    let uri = meta.uri;
    let format = content_type
        .and_then(Format::from_mime)
        .or_else(|| Format::from_name(uri))
        .or_else(|| Format::sniff(data))
        .ok_or_else(|| format!("{uri}: not a document type Evident reads"))?;
    let doc = extract(format, data).map_err(|e| format!("{uri}: {e}"))?;
    Ok(document_source(meta, &doc, chunking).into_iter().collect())
}

#[async_trait::async_trait]
impl TaskHandler for ItemTasks {
    async fn execute(
        &self,
        payload: &serde_json::Value,
        scope: &evident_core::Scope,
        priority: Priority,
    ) -> Result<(), TaskError> {
        let task: ItemTask = serde_json::from_value(payload.clone())
            .map_err(|e| TaskError::Permanent(format!("unreadable item task: {e}")))?;
        let Some(source) =
            crate::sources::registered(self.indexers.as_ref(), scope, task.source_id()).await?
        else {
            return Ok(());
        };
        let (scope, max_bytes, chunking) = (
            source.scope.clone(),
            max_attachment_bytes(&source),
            self.chunking,
        );
        let prepared =
            Self::prepare(move || Self::prepare_item(task, scope, max_bytes, chunking)).await?;
        self.write_all(prepared, priority).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_round_trip_with_bytes_as_base64() {
        let task = ItemTask::IngestMail {
            v: 1,
            source_id: "acme.inbox".into(),
            mailbox: "INBOX".into(),
            raw: b"Subject: hi\r\n\r\n\xff\x00body".to_vec(),
            truncated_at: None,
        };
        let json = serde_json::to_value(&task).expect("json");
        assert_eq!(json["type"], "ingest-mail");
        assert_eq!(json["sourceId"], "acme.inbox");
        assert!(json["raw"].is_string());
        assert_eq!(
            serde_json::from_value::<ItemTask>(json).expect("back"),
            task
        );
    }
}
