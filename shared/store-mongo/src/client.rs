//! The command transport and the reply handling shared by every operation.
//!
//! Every operation of the adapter is a MongoDB database command document built by a pure
//! function (see the `*_command` builders in each module) and sent through a [`Transport`]:
//! the official driver's `Database::run_command` in production ([`DriverTransport`], feature
//! `driver`), recorded replies in the wire tests ([`RecordedTransport`](crate::RecordedTransport)).
//! Replies are read here: `ok: 1` / `ok: 0`, `writeErrors`, `writeConcernError`, and cursors
//! (`firstBatch` / `nextBatch`, followed with `getMore` until the cursor id is 0).

use std::sync::Arc;

use async_trait::async_trait;
use bson::{Bson, Document, doc};
use evident_store::{Result, StoreError};

use crate::error::{TransportError, corrupt, store_error};
use crate::fields::number;

/// Runs one database command and returns the server's reply document.
///
/// A transport may return an `{ok: 0, …}` reply as `Ok` (the recorded transport does) or as
/// an `Err` (the driver does); the adapter handles both the same way.
#[async_trait]
pub trait Transport: Send + Sync {
    async fn run(&self, db: &str, command: Document) -> Result<Document, TransportError>;
}

/// One write error of a write command's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(dead_code)] // `index` is kept for diagnostics and read by tests
pub(crate) struct WriteError {
    pub index: i64,
    pub code: i32,
    pub message: String,
}

/// What a write command (`insert`, `update`, `delete`) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[allow(dead_code)] // `n_modified` and `upserted` are read by tests
pub(crate) struct WriteSummary {
    /// Documents matched (update) / inserted / deleted.
    pub n: i64,
    /// Documents actually changed (update).
    pub n_modified: i64,
    /// Documents inserted by an upsert.
    pub upserted: usize,
    /// Write errors the caller asked to see instead of failing on.
    pub write_errors: Vec<WriteError>,
}

impl WriteSummary {
    pub fn has_error(&self, code: i32) -> bool {
        self.write_errors.iter().any(|e| e.code == code)
    }
}

/// The checked reply of a command: `Err` for `ok: 0` and for a write concern error.
pub(crate) fn check_reply(reply: Document) -> Result<Document, TransportError> {
    let ok = reply.get("ok").and_then(number);
    if ok != Some(1) {
        if reply.get("ok").is_none() {
            return Err(TransportError::other(format!(
                "reply without an `ok` field: {reply}"
            )));
        }
        return Err(TransportError::from_reply(&reply));
    }
    if let Ok(wce) = reply.get_document("writeConcernError") {
        let mut e = TransportError::from_reply(wce);
        // The write itself was applied on the primary but not acknowledged as asked: unsure
        // durability is an availability problem, retried (every write here is idempotent or
        // guarded by a lease epoch).
        e.message = format!("write concern error: {}", e.message);
        if e.code.is_none() {
            e.code = Some(crate::error::codes::WRITE_CONCERN_FAILED);
        }
        if let Ok(labels) = reply.get_array("errorLabels") {
            e.labels
                .extend(labels.iter().filter_map(|l| l.as_str().map(str::to_string)));
        }
        return Err(e);
    }
    Ok(reply)
}

/// Reads `n`, `nModified`, `upserted` and `writeErrors` of a write command's reply.
pub(crate) fn write_summary(reply: &Document) -> WriteSummary {
    let write_errors = reply
        .get_array("writeErrors")
        .map(|errors| {
            errors
                .iter()
                .filter_map(Bson::as_document)
                .map(|e| WriteError {
                    index: e.get("index").and_then(number).unwrap_or(0),
                    code: e.get("code").and_then(number).unwrap_or(0) as i32,
                    message: e.get_str("errmsg").unwrap_or("").to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    WriteSummary {
        n: reply.get("n").and_then(number).unwrap_or(0),
        n_modified: reply.get("nModified").and_then(number).unwrap_or(0),
        upserted: reply.get_array("upserted").map(Vec::len).unwrap_or(0),
        write_errors,
    }
}

/// A cursor reply: its documents, its id (0 = exhausted) and the collection to `getMore` on.
pub(crate) fn cursor_batch(
    reply: &Document,
) -> Result<(Vec<Document>, i64, Option<String>), TransportError> {
    let cursor = reply
        .get_document("cursor")
        .map_err(|_| TransportError::other(format!("reply without a cursor: {reply}")))?;
    let batch = cursor
        .get_array("firstBatch")
        .or_else(|_| cursor.get_array("nextBatch"))
        .map_err(|_| TransportError::other(format!("cursor without a batch: {cursor}")))?;
    let docs = batch
        .iter()
        .map(|d| {
            d.as_document()
                .cloned()
                .ok_or_else(|| TransportError::other("cursor batch holds a non-document"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let id = cursor.get("id").and_then(number).unwrap_or(0);
    let collection = cursor
        .get_str("ns")
        .ok()
        .and_then(|ns| ns.split_once('.'))
        .map(|(_, c)| c.to_string());
    Ok((docs, id, collection))
}

/// The `getMore` that continues cursor `id` on `collection`.
pub(crate) fn get_more_command(id: i64, collection: &str) -> Document {
    doc! { "getMore": id, "collection": collection }
}

/// One database, reached through a transport.
pub(crate) struct Db {
    transport: Arc<dyn Transport>,
    name: String,
}

impl Db {
    pub fn new(transport: Arc<dyn Transport>, name: impl Into<String>) -> Self {
        Db {
            transport,
            name: name.into(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends `command` and checks the reply, keeping the transport error.
    pub async fn raw(&self, command: Document) -> Result<Document, TransportError> {
        let reply = self.transport.run(&self.name, command).await?;
        check_reply(reply)
    }

    /// Sends `command` for operation `op`; a failure becomes a [`StoreError`].
    pub async fn run(&self, op: &str, command: Document) -> Result<Document> {
        self.raw(command).await.map_err(|e| store_error(op, e))
    }

    /// A write command; any write error fails it.
    pub async fn write(&self, op: &str, command: Document) -> Result<WriteSummary> {
        self.write_allowing(op, command, &[]).await
    }

    /// A write command whose write errors with a code in `allowed` are returned in the
    /// summary instead of failing it (e.g. the duplicate key of an upsert that lost a race).
    pub async fn write_allowing(
        &self,
        op: &str,
        command: Document,
        allowed: &[i32],
    ) -> Result<WriteSummary> {
        let reply = self.run(op, command).await?;
        let summary = write_summary(&reply);
        if let Some(e) = summary
            .write_errors
            .iter()
            .find(|e| !allowed.contains(&e.code))
        {
            return Err(store_error(
                op,
                TransportError::server(e.code, format!("write error {}: {}", e.code, e.message)),
            ));
        }
        Ok(summary)
    }

    /// A `findAndModify` upsert returning its document. Two first upserts of one new document
    /// race: the loser's insert hits a duplicate key and, sent once more, updates the winner's.
    pub async fn upsert_returning(&self, op: &str, command: Document) -> Result<Document> {
        let mut last = None;
        for _ in 0..2 {
            match self.raw(command.clone()).await {
                Ok(reply) => {
                    let value = find_and_modify_value(&reply).map_err(|e| store_error(op, e))?;
                    return expect_doc(value, op);
                }
                Err(e) if e.is_duplicate_key() => last = Some(e),
                Err(e) => return Err(store_error(op, e)),
            }
        }
        Err(store_error(
            op,
            last.unwrap_or_else(|| TransportError::other("upsert")),
        ))
    }

    /// An `update` with `upsert`, under the same race as [`Db::upsert_returning`]: a write
    /// that lost it is sent once more.
    pub async fn upsert(&self, op: &str, command: Document) -> Result<()> {
        const DUPLICATE: [i32; 2] = [
            crate::codes::DUPLICATE_KEY,
            crate::codes::DUPLICATE_KEY_LEGACY,
        ];
        for _ in 0..2 {
            let s = self.write_allowing(op, command.clone(), &DUPLICATE).await?;
            if !DUPLICATE.iter().any(|c| s.has_error(*c)) {
                return Ok(());
            }
        }
        Err(StoreError::new(
            evident_store::ErrorKind::Conflict,
            format!("mongo {op}: the upsert kept colliding"),
        ))
    }

    /// `findAndModify`: the returned document (`value`), `None` when nothing matched.
    pub async fn find_and_modify(&self, op: &str, command: Document) -> Result<Option<Document>> {
        let reply = self.run(op, command).await?;
        find_and_modify_value(&reply).map_err(|e| store_error(op, e))
    }

    /// [`Db::find_all`], each document decoded by `decode` (the first that fails fails all).
    pub async fn find_decoded<T>(
        &self,
        op: &str,
        command: Document,
        decode: impl Fn(&Document) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.find_all(op, command)
            .await?
            .iter()
            .map(decode)
            .collect()
    }

    /// A cursor command (`find`, `aggregate`): every document, following `getMore`.
    pub async fn find_all(&self, op: &str, command: Document) -> Result<Vec<Document>> {
        let fallback = command
            .iter()
            .next()
            .and_then(|(_, v)| v.as_str())
            .map(str::to_string);
        let reply = self.run(op, command).await?;
        let (mut docs, mut id, collection) =
            cursor_batch(&reply).map_err(|e| store_error(op, e))?;
        let collection = collection.or(fallback).unwrap_or_default();
        while id != 0 {
            let reply = self.run(op, get_more_command(id, &collection)).await?;
            let (more, next, _) = cursor_batch(&reply).map_err(|e| store_error(op, e))?;
            docs.extend(more);
            id = next;
        }
        Ok(docs)
    }

    /// A single-batch `find`: its first document.
    pub async fn find_one(&self, op: &str, command: Document) -> Result<Option<Document>> {
        let reply = self.run(op, command).await?;
        let (docs, _, _) = cursor_batch(&reply).map_err(|e| store_error(op, e))?;
        Ok(docs.into_iter().next())
    }
}

/// The `value` of a `findAndModify` reply (`null` or absent: nothing matched).
pub(crate) fn find_and_modify_value(reply: &Document) -> Result<Option<Document>, TransportError> {
    match reply.get("value") {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Document(d)) => Ok(Some(d.clone())),
        Some(other) => Err(TransportError::other(format!(
            "findAndModify value is not a document: {other}"
        ))),
    }
}

/// `findAndModify` replies must carry a document when the caller knows one exists.
pub(crate) fn expect_doc(d: Option<Document>, what: &str) -> Result<Document, StoreError> {
    d.ok_or_else(|| corrupt(format!("{what}: the server returned no document")))
}

#[cfg(feature = "driver")]
pub use driver::DriverTransport;

#[cfg(feature = "driver")]
mod driver {
    use std::time::Duration;

    use async_trait::async_trait;
    use bson::Document;
    use evident_store::{Result, StoreError};

    use super::Transport;
    use crate::error::TransportError;

    /// Commands through the official driver: `Database::run_command`, on the primary (the
    /// driver ignores default read preferences for `run_command`), each bounded by a timeout.
    pub struct DriverTransport {
        client: mongodb::Client,
        timeout: Duration,
    }

    impl DriverTransport {
        /// A client for `uri` (which holds credentials: it is never logged or kept).
        pub async fn connect(uri: &str, timeout: Duration) -> Result<Self> {
            let mut options = mongodb::options::ClientOptions::parse(uri)
                .await
                .map_err(|e| {
                    StoreError::invalid(format!(
                        "mongo: the connection string could not be parsed: {}",
                        redact(&e.to_string(), uri)
                    ))
                })?;
            if options.app_name.is_none() {
                options.app_name = Some("evident".to_string());
            }
            if options.server_selection_timeout.is_none() {
                options.server_selection_timeout = Some(timeout);
            }
            if options.connect_timeout.is_none() {
                options.connect_timeout = Some(timeout);
            }
            let client = mongodb::Client::with_options(options).map_err(|e| {
                StoreError::invalid(format!(
                    "mongo: client options rejected: {}",
                    redact(&e.to_string(), uri)
                ))
            })?;
            Ok(DriverTransport { client, timeout })
        }

        /// Wraps an existing client.
        pub fn from_client(client: mongodb::Client, timeout: Duration) -> Self {
            DriverTransport { client, timeout }
        }
    }

    /// Commands that open a cursor. A cursor can only be continued (`getMore`) in the session
    /// that created it, and every `run_command` takes its own implicit session, so these run
    /// through `run_cursor_command`, which follows the cursor in one session; the reply is
    /// handed back as a single exhausted batch (`id: 0`).
    const CURSOR_COMMANDS: [&str; 2] = ["find", "aggregate"];

    async fn drained(
        database: &mongodb::Database,
        command: Document,
    ) -> mongodb::error::Result<Document> {
        let collection = command
            .iter()
            .next()
            .and_then(|(_, v)| v.as_str())
            .unwrap_or_default()
            .to_string();
        let mut cursor = database.run_cursor_command(command).await?;
        let mut docs = Vec::new();
        while cursor.advance().await? {
            docs.push(cursor.deserialize_current()?);
        }
        Ok(bson::doc! {
            "cursor": {
                "firstBatch": docs,
                "id": 0i64,
                "ns": format!("{}.{collection}", database.name()),
            },
            "ok": 1,
        })
    }

    #[async_trait]
    impl Transport for DriverTransport {
        async fn run(&self, db: &str, command: Document) -> Result<Document, TransportError> {
            let database = self.client.database(db);
            let cursor = command
                .keys()
                .next()
                .is_some_and(|name| CURSOR_COMMANDS.contains(&name.as_str()));
            let reply = tokio::time::timeout(self.timeout, async {
                if cursor {
                    drained(&database, command).await
                } else {
                    database.run_command(command).await
                }
            })
            .await;
            match reply {
                Err(_) => Err(TransportError::network(format!(
                    "no reply within {} s",
                    self.timeout.as_secs()
                ))),
                Ok(Ok(reply)) => Ok(reply),
                Ok(Err(e)) => Err(from_driver(&e)),
            }
        }
    }

    /// The transport error for a driver error: server errors keep their code and labels;
    /// I/O, pool, DNS and server-selection failures are network errors.
    pub(crate) fn from_driver(e: &mongodb::error::Error) -> TransportError {
        use mongodb::error::ErrorKind as K;
        let mut labels: Vec<String> = e.labels().iter().cloned().collect();
        labels.sort();
        let (code, network, message) = match e.kind.as_ref() {
            K::Command(c) => (
                Some(c.code),
                false,
                format!("{} ({}): {}", c.code_name, c.code, c.message),
            ),
            K::Io(io) => (None, true, format!("I/O: {io}")),
            K::ConnectionPoolCleared { .. } | K::ServerSelection { .. } | K::DnsResolve { .. } => {
                (None, true, e.kind.to_string())
            }
            K::Authentication { .. } => (
                Some(crate::error::codes::AUTHENTICATION_FAILED),
                false,
                e.kind.to_string(),
            ),
            K::InvalidArgument { .. } | K::BsonSerialization(_) | K::BsonDeserialization(_) => (
                Some(crate::error::codes::REFUSED_BY_DRIVER),
                false,
                e.kind.to_string(),
            ),
            _ => (None, false, e.kind.to_string()),
        };
        TransportError {
            code,
            labels,
            network,
            message,
        }
    }

    /// `message` without the connection string or its user-info part.
    pub(crate) fn redact(message: &str, uri: &str) -> String {
        let mut out = message.replace(uri, "<connection string>");
        if let Some((_, rest)) = uri.split_once("://")
            && let Some((user_info, _)) = rest.rsplit_once('@')
            && !user_info.is_empty()
        {
            out = out.replace(user_info, "<credentials>");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ok_zero_and_write_concern_errors_fail_the_reply() {
        let e = check_reply(doc! {"ok": 0, "code": 10107, "codeName": "NotWritablePrimary", "errmsg": "not primary"})
            .expect_err("ok 0");
        assert_eq!(e.code, Some(10107));
        let e = check_reply(doc! {
            "n": 1, "ok": 1,
            "writeConcernError": {"code": 64, "codeName": "WriteConcernFailed", "errmsg": "waiting for replication timed out", "errInfo": {"wtimeout": true}},
        })
        .expect_err("wce");
        assert_eq!(e.code, Some(64));
        assert!(e.message.starts_with("write concern error"));
        assert!(check_reply(doc! {"ok": 1.0, "n": 0}).is_ok());
    }

    #[test]
    fn write_summaries_and_cursors_are_read() {
        let s = write_summary(&doc! {
            "n": 0, "ok": 1,
            "writeErrors": [{"index": 0, "code": 11000, "errmsg": "E11000 duplicate key error"}],
        });
        assert!(s.has_error(11000));
        let s = write_summary(
            &doc! {"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": "x"}], "ok": 1},
        );
        assert_eq!((s.n, s.n_modified, s.upserted), (1, 0, 1));
        let (docs, id, coll) = cursor_batch(&doc! {
            "cursor": {"firstBatch": [{"_id": 1}], "id": 42i64, "ns": "evident.tasks"}, "ok": 1,
        })
        .expect("cursor");
        assert_eq!((docs.len(), id, coll.as_deref()), (1, 42, Some("tasks")));
        assert_eq!(
            get_more_command(42, "tasks"),
            doc! {"getMore": 42i64, "collection": "tasks"}
        );
    }
}
