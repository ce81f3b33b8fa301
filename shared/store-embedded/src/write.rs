//! The transactional SourceWriter with group commit.
//!
//! Every write waiting at the moment is committed in one transaction — one fsync for many
//! ingests. The group commits with `synchronous=NORMAL` and its answers go to the syncer
//! thread, which fsyncs the WAL and only then answers them (`durable`, ADR 0009): the writer
//! applies the next group while the previous one's fsync runs. Source
//! writes run first and, optimistically, without savepoints: a savepoint per member journals
//! every page the member touches and frees that journal on release, which was a fifth of the
//! writer's time on large groups. If a source write fails (rare: a contract violation), the
//! attempt rolls back and the group runs again with each member in its own SAVEPOINT, so the
//! failure touches none of its neighbours. Small ops always run under a savepoint (their
//! closures run once). The caller is answered only after an fsync that started after the
//! COMMIT, so acknowledgement still means durable. The in-memory indexes are updated after
//! the commit, in the same writer critical section (ops' publish hooks too), so they receive
//! changes in commit order.

use std::sync::mpsc;

use async_trait::async_trait;
use evident_core::Typed;
use evident_store::{RecordUpdate, RemovedCounts, Result, SourceWrite, SourceWriter, StoreError};
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::{EmbeddedStore, Inner, chunks, graph, sources, sqlite_err};

/// Most writes committed together.
const MAX_GROUP: usize = 64;

/// One unit of work for the group-commit thread.
// Source writes are the common job; boxing them would allocate once more per write for no gain.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Job {
    /// A source's chunks, graph and registry record.
    Source {
        write: SourceWrite,
        /// The text analysis of each upserted chunk, done before the job reached the writer.
        analyzed: Vec<crate::text_index::Analyzed>,
        reply: oneshot::Sender<Result<RemovedCounts>>,
    },
    /// Any other small write (queue state changes): runs in the group's transaction under
    /// its own savepoint, answered after the commit.
    Op(Box<dyn GroupOp>),
}

/// A write that rides in a group commit. `apply` keeps its own result until `answer`.
pub(crate) trait GroupOp: Send {
    fn apply(&mut self, conn: &Connection) -> Result<()>;
    /// After the group committed, on the writer thread: publishes the op's result to derived
    /// in-memory state (in commit order, before any later group applies).
    fn publish(&mut self);
    /// Answers the caller: with the op's own result when the group committed and is durable,
    /// else `Err`.
    fn answer(self: Box<Self>, committed: Result<()>);
}

/// Publishes a committed result to in-memory state (an index derived from SQLite).
pub(crate) type Publish<T> = Box<dyn FnOnce(&T) + Send>;

/// A small write run in a group commit: `f` in the group's transaction, then, once the
/// group committed, `publish` (if any) on the writer thread — so derived state changes in
/// commit order, before the caller is answered.
pub(crate) struct Op<T, F> {
    pub(crate) f: Option<F>,
    pub(crate) out: Option<Result<T>>,
    pub(crate) publish: Option<Publish<T>>,
    pub(crate) reply: Option<oneshot::Sender<Result<T>>>,
}

impl<T, F> GroupOp for Op<T, F>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> Result<T> + Send + 'static,
{
    fn apply(&mut self, conn: &Connection) -> Result<()> {
        let f = self
            .f
            .take()
            .ok_or_else(|| StoreError::corrupt("group op applied twice"))?;
        let r = f(conn);
        let ok = r.as_ref().map(drop).map_err(Clone::clone);
        self.out = Some(r);
        ok
    }

    fn publish(&mut self) {
        if let (Some(Ok(v)), Some(publish)) = (&self.out, self.publish.take()) {
            publish(v);
        }
    }

    fn answer(mut self: Box<Self>, committed: Result<()>) {
        let answer = match committed {
            Ok(()) => self
                .out
                .take()
                .unwrap_or_else(|| Err(StoreError::corrupt("group op never ran"))),
            Err(e) => Err(e),
        };
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(answer);
        }
    }
}

/// Row-level effects of an applied write, published to the vector index after commit.
struct Applied {
    removed: RemovedCounts,
    forgotten: Vec<u64>,
    inserted: Vec<u64>,
}

fn apply_in(conn: &Connection, w: &SourceWrite) -> Result<Applied> {
    // Evidence of deleted chunks goes; so does that of relocated chunks, whose refs may have
    // changed (an alias merge since) — the write's nodes and edges re-add what still holds.
    // Garbage is collected only after the upsert, so nothing still evidenced is deleted.
    // The source's new alias spellings, in its own transaction (`SourceWrite::register_aliases`).
    for (alias, canonical) in &w.register_aliases {
        crate::aliases::register_in(conn, &w.partition, alias, canonical)?;
    }
    let mut affected = graph::Affected::default();
    let mut forgotten = Vec::new();
    if !w.delete_chunk_ids.is_empty() {
        graph::drop_evidence(conn, &w.partition, &w.delete_chunk_ids, &mut affected)?;
        forgotten = chunks::delete_chunks(conn, &w.partition, &w.delete_chunk_ids)?;
    }
    let deleted = forgotten.len();
    if !w.relocate_chunks.is_empty() {
        let ids: Vec<String> = w.relocate_chunks.iter().map(|c| c.id.clone()).collect();
        graph::drop_evidence(conn, &w.partition, &ids, &mut affected)?;
    }
    let mut inserted = Vec::with_capacity(w.upsert_chunks.len());
    for (chunk, vector) in &w.upsert_chunks {
        let (rid, replaced) = chunks::insert_chunk(conn, chunk, vector)?;
        forgotten.extend(replaced);
        inserted.push(rid);
    }
    for chunk in &w.relocate_chunks {
        chunks::relocate_chunk(conn, chunk)?;
    }
    crate::graph_write::upsert_graph(conn, &w.partition, &w.nodes, &w.edges)?;
    match &w.record {
        RecordUpdate::Put(rec) => sources::put(conn, rec)?,
        RecordUpdate::Remove => sources::remove(conn, &w.partition, &w.source_urn)?,
        RecordUpdate::Keep => {}
    }
    let mut removed = graph::collect_garbage(conn, affected)?;
    removed.chunks = deleted;
    Ok(Applied {
        removed,
        forgotten,
        inserted,
    })
}

/// Removes deleted rows from the in-memory indexes (after their commit).
pub(crate) fn unpublish(inner: &Inner, rids: &[u64]) {
    inner.vectors.forget(rids);
    inner.text.remove(rids);
}

fn publish(
    conn: &Connection,
    inner: &Inner,
    w: SourceWrite,
    analyzed: Vec<crate::text_index::Analyzed>,
    applied: &Applied,
) -> Result<()> {
    unpublish(inner, &applied.forgotten);
    for ((rid, (chunk, vector)), terms) in
        applied.inserted.iter().zip(w.upsert_chunks).zip(analyzed)
    {
        inner.vectors.track_row_typed(
            *rid,
            &chunk.id,
            &chunk.scope,
            &chunk.kind,
            &Typed::from_metadata(&chunk.metadata),
        );
        inner.text.insert(*rid, chunk.scope.partition(), terms);
        inner.vectors.push(*rid, vector);
    }
    retrack(conn, inner, &w.relocate_chunks)
}

/// An answer to send once the store is let go of and the group is durable; called with the
/// outcome of the fsync.
type Reply = crate::durable::Ack;

fn reply<T: Send + 'static>(to: oneshot::Sender<Result<T>>, answer: Result<T>) -> Reply {
    Box::new(move |durable: Result<()>| {
        let _ = to.send(durable.and(answer));
    })
}

/// Runs `f` under a savepoint: on error only its own changes roll back.
fn in_savepoint<T>(conn: &Connection, f: impl FnOnce() -> Result<T>) -> Result<Result<T>> {
    conn.execute_batch("SAVEPOINT group_member")
        .map_err(sqlite_err)?;
    let r = f();
    if r.is_err() {
        conn.execute_batch("ROLLBACK TO group_member")
            .map_err(sqlite_err)?;
    }
    conn.execute_batch("RELEASE group_member")
        .map_err(sqlite_err)?;
    Ok(r)
}

/// A job after it ran inside the (not yet committed) group transaction.
#[allow(clippy::large_enum_variant)] // as for `Job`
enum Ran {
    Source(
        SourceWrite,
        Vec<crate::text_index::Analyzed>,
        oneshot::Sender<Result<RemovedCounts>>,
        Result<Applied>,
    ),
    Op(Box<dyn GroupOp>),
}

/// What applying a group produced: each applied member, the commit's result, and the members
/// not reached when the transaction failed.
struct Attempt {
    ran: Vec<Ran>,
    committed: Result<()>,
    pending: Vec<Job>,
}

/// Applies `jobs` (source writes first) in one transaction and commits. With `careful`, every
/// member runs under its own savepoint; without, source writes run bare and the first one that
/// fails rolls everything back and hands the jobs back (`Err`), none of them answered yet.
fn apply_group(
    conn: &mut Connection,
    jobs: Vec<Job>,
    careful: bool,
) -> std::result::Result<Attempt, Vec<Job>> {
    let mut ran: Vec<Ran> = Vec::with_capacity(jobs.len());
    let mut pending = jobs.into_iter();
    let mut failed: Option<Job> = None;
    let started = std::time::Instant::now();
    let committed = (|| -> Result<()> {
        let tx = conn.transaction().map_err(sqlite_err)?;
        for job in pending.by_ref() {
            match job {
                Job::Source {
                    write,
                    analyzed,
                    reply,
                } => {
                    if careful {
                        let r = in_savepoint(&tx, || apply_in(&tx, &write))?;
                        ran.push(Ran::Source(write, analyzed, reply, r));
                    } else {
                        match apply_in(&tx, &write) {
                            Ok(a) => ran.push(Ran::Source(write, analyzed, reply, Ok(a))),
                            Err(e) => {
                                failed = Some(Job::Source {
                                    write,
                                    analyzed,
                                    reply,
                                });
                                return Err(e); // drops `tx`: rolled back
                            }
                        }
                    }
                }
                Job::Op(mut op) => {
                    // The op keeps its own result (Ok or the error it answers with).
                    let _ = in_savepoint(&tx, || op.apply(&tx))?;
                    ran.push(Ran::Op(op));
                }
            }
        }
        crate::writer_stats::applied(started.elapsed());
        let committing = std::time::Instant::now();
        let done = tx.commit().map_err(sqlite_err);
        crate::writer_stats::committed(committing.elapsed());
        done
    })();
    if let Some(failed) = failed {
        // Only source writes ran before it (they come first), and nothing was committed.
        let again = ran
            .into_iter()
            .map(|r| match r {
                Ran::Source(write, analyzed, reply, _) => Job::Source {
                    write,
                    analyzed,
                    reply,
                },
                Ran::Op(op) => Job::Op(op),
            })
            .chain(std::iter::once(failed))
            .chain(pending)
            .collect();
        return Err(again);
    }
    Ok(Attempt {
        ran,
        committed,
        pending: pending.collect(),
    })
}

/// Commits a group of writes and returns each one's answer (sent by the caller, after it has
/// let go of the store, so that a caller who drops the store right after its write returns
/// really releases it).
fn commit_group(inner: &Inner, jobs: Vec<Job>) -> Vec<Reply> {
    let mut conn = inner.writer.lock();
    // Pages written outside group commits (direct writes) are not this group's.
    crate::writer_stats::take_pages_written(&conn);
    // COMMIT appends without fsync; the syncer's fsync makes the group durable before any of
    // its writes is answered. Every other write on this connection keeps `FULL`.
    let pipelined = conn
        .pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| tracing::warn!(error = %e, "group commit stays synchronous=FULL"))
        .is_ok();
    // Source writes first: they can be applied again, an op's closure only once. The members
    // of a group were submitted concurrently and none is answered before the commit, so their
    // order within it is not observable.
    let (mut ordered, mut ops): (Vec<Job>, Vec<Job>) = jobs
        .into_iter()
        .partition(|j| matches!(j, Job::Source { .. }));
    crate::writer_stats::group(ordered.len(), ops.len());
    ordered.append(&mut ops);
    let Attempt {
        ran,
        committed,
        pending,
    } = match apply_group(&mut conn, ordered, false) {
        Ok(attempt) => attempt,
        Err(jobs) => match apply_group(&mut conn, jobs, true) {
            Ok(attempt) => attempt,
            // A careful attempt never hands jobs back; answer them rather than lose them.
            Err(jobs) => Attempt {
                ran: Vec::new(),
                committed: Err(StoreError::corrupt(
                    "group commit attempt returned its jobs",
                )),
                pending: jobs,
            },
        },
    };
    if pipelined && let Err(e) = conn.pragma_update(None, "synchronous", "FULL") {
        // Left at NORMAL, a direct write's commit would not be durable when it returns.
        tracing::error!(error = %e, "restoring synchronous=FULL failed");
    }
    crate::writer_stats::wal_pages(crate::writer_stats::take_pages_written(&conn));
    let publishing = std::time::Instant::now();
    let replies = answers(&conn, inner, ran, committed, pending);
    crate::writer_stats::published(publishing.elapsed());
    replies
}

/// Publishes a committed group's writes and makes each one's answer; after a failed commit
/// every write of the group, run or still pending, answers with the cause.
fn answers(
    conn: &Connection,
    inner: &Inner,
    ran: Vec<Ran>,
    committed: Result<()>,
    pending: Vec<Job>,
) -> Vec<Reply> {
    match committed {
        Ok(()) => ran
            .into_iter()
            .map(|r| match r {
                Ran::Source(write, analyzed, to, Ok(a)) => reply(
                    to,
                    publish(conn, inner, write, analyzed, &a).map(|_| a.removed),
                ),
                Ran::Source(_, _, to, Err(e)) => reply(to, Err(e)),
                Ran::Op(mut op) => {
                    op.publish();
                    Box::new(move |durable| op.answer(durable)) as Reply
                }
            })
            .collect(),
        Err(e) => {
            // Nothing of the group is durable (the transaction rolled back): every write fails
            // with the cause, and may be retried.
            tracing::error!(error = %e, "group commit failed; no write of this group was applied");
            ran.into_iter()
                .map(|r| match r {
                    Ran::Source(_, _, to, _) => reply(to, Err(e.clone())),
                    Ran::Op(op) => {
                        let e = e.clone();
                        Box::new(move |_| op.answer(Err(e))) as Reply
                    }
                })
                .chain(pending.into_iter().map(|job| match job {
                    Job::Source { reply: to, .. } => reply(to, Err(e.clone())),
                    Job::Op(op) => {
                        let e = e.clone();
                        Box::new(move |_| op.answer(Err(e))) as Reply
                    }
                }))
                .collect()
        }
    }
}

/// The writer thread: takes every waiting write and commits them together, then hands the
/// group's answers to the syncer (`durable`), which releases them once an fsync covers them.
pub(crate) fn run_writer(
    inner: std::sync::Weak<Inner>,
    jobs: mpsc::Receiver<Job>,
    durable: mpsc::Sender<Vec<Reply>>,
) {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(j) => group.push(j),
                Err(_) => break,
            }
        }
        let replies = {
            let Some(inner) = inner.upgrade() else { return };
            commit_group(&inner, group)
        };
        if let Err(mpsc::SendError(replies)) = durable.send(replies) {
            for answer in replies {
                answer(Err(StoreError::unavailable(
                    "the WAL syncer stopped; the write may not be durable",
                )));
            }
        }
    }
}

/// Relocated chunks may have changed scope, kind or title: refresh the in-memory indexes.
pub(crate) fn retrack(
    conn: &Connection,
    inner: &Inner,
    relocated: &[evident_core::Chunk],
) -> Result<()> {
    use rusqlite::OptionalExtension;
    let mut retitle = Vec::with_capacity(relocated.len());
    for chunk in relocated {
        let rid: Option<i64> = conn
            .query_row("SELECT rid FROM chunks WHERE id = ?1", [&chunk.id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sqlite_err)?;
        if let Some(rid) = rid {
            let rid = rid as u64;
            inner.vectors.track_row_typed(
                rid,
                &chunk.id,
                &chunk.scope,
                &chunk.kind,
                &Typed::from_metadata(&chunk.metadata),
            );
            retitle.push((
                rid,
                chunk.scope.partition(),
                crate::text_index::Fields {
                    title: chunk.title.as_deref(),
                    heading: crate::text_index::heading_of(&chunk.locator),
                    body: chunk.content.as_str(),
                    refs: &chunk.graph_refs,
                },
            ));
        }
    }
    // The title or heading may have changed: re-index the text of the rows whose did.
    inner.text.retitle(&retitle);
    Ok(())
}

/// Chunk-only upsert (the ChunkStore trait method): the same path as a source write.
pub(crate) async fn apply_chunks_only(
    store: &EmbeddedStore,
    chunks: Vec<(evident_core::Chunk, Vec<f32>)>,
) -> Result<()> {
    let Some(first) = chunks.first() else {
        return Ok(());
    };
    let (partition, urn) = (
        first.0.scope.partition().to_string(),
        first.0.source_urn.clone(),
    );
    let write = SourceWrite {
        partition,
        source_urn: urn,
        upsert_chunks: chunks,
        record: RecordUpdate::Keep,
        ..Default::default()
    };
    store.submit(write).await.map(drop)
}

impl EmbeddedStore {
    /// Sends a write to the group-commit thread and waits for its durable outcome.
    pub(crate) async fn submit(&self, write: SourceWrite) -> Result<RemovedCounts> {
        let dim = self.inner.vectors.space().dim;
        for (chunk, v) in &write.upsert_chunks {
            if v.len() != dim {
                return Err(StoreError::invalid(format!(
                    "chunk {} has a {}-d vector; the store holds {dim}-d vectors",
                    chunk.id,
                    v.len()
                )));
            }
        }
        crate::budget::admit(&self.inner, &write)?;
        // A full vector backlog makes the write wait here, before anything is written.
        self.inner
            .vectors
            .wait_for_room(write.upsert_chunks.len())
            .await;
        // Tokenizing for the text index happens here, on the caller's side, so the writer
        // (one thread for the whole store) only inserts postings.
        let analyzed = write
            .upsert_chunks
            .iter()
            .map(|(c, _)| {
                crate::text_index::Analyzed::of_fields(crate::text_index::Fields {
                    title: c.title.as_deref(),
                    heading: crate::text_index::heading_of(&c.locator),
                    body: &c.content,
                    refs: &c.graph_refs,
                })
            })
            .collect();
        let (reply, answer) = oneshot::channel();
        self.send_job(Job::Source {
            write,
            analyzed,
            reply,
        })?;
        answer.await.map_err(|_| {
            StoreError::unavailable("the write was not committed (see the log); retry")
        })?
    }

    /// Runs a small write in the next group commit (one fsync shared by every write waiting
    /// at that moment) and returns its result once durable. `f` runs inside a transaction:
    /// on error its changes are rolled back without touching its neighbours.
    pub(crate) async fn write_grouped<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.send_job(Job::Op(Box::new(Op {
            f: Some(f),
            out: None,
            publish: None,
            reply: Some(reply),
        })))?;
        answer.await.map_err(|_| {
            StoreError::unavailable("the write was not committed (see the log); retry")
        })?
    }

    pub(crate) fn send_job(&self, job: Job) -> Result<()> {
        self.inner
            .writes
            .lock()
            .as_ref()
            .ok_or_else(|| StoreError::unavailable("store is closed"))?
            .send(job)
            .map_err(|_| StoreError::unavailable("store writer stopped"))
    }
}

#[async_trait]
impl SourceWriter for EmbeddedStore {
    async fn apply(&self, write: SourceWrite) -> Result<RemovedCounts> {
        self.submit(write).await
    }

    async fn move_source(
        &self,
        partition: &str,
        source_urn: &str,
        to: &evident_core::Scope,
    ) -> Result<Option<usize>> {
        if to.partition() != partition {
            return Err(StoreError::invalid(
                "a source moves only between scopes of its own partition (client)",
            ));
        }
        let (p, urn, scope) = (partition.to_string(), source_urn.to_string(), to.clone());
        // The row map answers visibility for searches: it follows the committed scope, on the
        // writer thread before the writer lock is let go (a saved row map holds every commit
        // up to its marks: `restart.rs`).
        let (to, inner) = (to.clone(), std::sync::Arc::downgrade(&self.inner));
        let publish: Publish<Option<Vec<(u64, String, String)>>> = Box::new(move |moved| {
            if let (Some(rows), Some(inner)) = (moved, inner.upgrade()) {
                for (rid, id, kind) in rows {
                    inner.vectors.track_row(*rid, id, &to, kind);
                }
            }
        });
        let (reply, answer) = oneshot::channel();
        self.send_job(Job::Op(Box::new(Op {
            f: Some(move |conn: &Connection| move_in(conn, &p, &urn, &scope)),
            out: None,
            publish: Some(publish),
            reply: Some(reply),
        })))?;
        let moved = answer.await.map_err(|_| {
            StoreError::unavailable("the write was not committed (see the log); retry")
        })??;
        Ok(moved.map(|rows| rows.len()))
    }
}

/// Re-scopes a source in one transaction: its record, its chunks and the evidence rows its
/// chunks give (ids, text, vectors and graph shape unchanged). Returns the moved rows
/// (row id, chunk id, kind), or `None` when the source is not registered in `partition`.
fn move_in(
    conn: &Connection,
    partition: &str,
    source_urn: &str,
    to: &evident_core::Scope,
) -> Result<Option<Vec<(u64, String, String)>>> {
    use crate::sqlite_err as e;
    let scope = rusqlite::params![
        to.client_id,
        to.project_id,
        to.group_id,
        partition,
        source_urn
    ];
    let found = conn
        .prepare_cached(
            "UPDATE sources SET client_id = ?1, project_id = ?2, group_id = ?3 \
             WHERE partition = ?4 AND source_urn = ?5",
        )
        .map_err(e)?
        .execute(scope)
        .map_err(e)?;
    if found == 0 {
        return Ok(None);
    }
    let rows: Vec<(u64, String, String)> = conn
        .prepare_cached("SELECT rid, id, kind FROM chunks WHERE partition = ?1 AND source_urn = ?2")
        .map_err(e)?
        .query_map([partition, source_urn], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?))
        })
        .map_err(e)?
        .collect::<rusqlite::Result<_>>()
        .map_err(e)?;
    conn.prepare_cached(
        "UPDATE chunks SET client_id = ?1, project_id = ?2, group_id = ?3 \
         WHERE partition = ?4 AND source_urn = ?5",
    )
    .map_err(e)?
    .execute(scope)
    .map_err(e)?;
    for table in ["node_evidence", "edge_evidence"] {
        let (owner, id) = if table == "node_evidence" {
            ("nodes", "nid")
        } else {
            ("edges", "eid")
        };
        let mut update = conn
            .prepare_cached(&format!(
                "UPDATE {table} SET client_id = ?1, project_id = ?2, group_id = ?3 \
                 WHERE chunk_id = ?4 AND {id} IN (SELECT {id} FROM {owner} WHERE partition = ?5)"
            ))
            .map_err(e)?;
        for (_, chunk_id, _) in &rows {
            update
                .execute(rusqlite::params![
                    to.client_id,
                    to.project_id,
                    to.group_id,
                    chunk_id,
                    partition
                ])
                .map_err(e)?;
        }
    }
    Ok(Some(rows))
}

#[cfg(test)]
#[path = "write_tests.rs"]
pub(crate) mod tests;
