//! Restart without re-reading every chunk: the BM25 text index and the row map are saved to
//! `text.index` beside the SQLite file and loaded at open.
//!
//! Consistency: SQLite is the truth; the file is derived state with two marks taken under the
//! writer lock — `high_water`, the newest row id given (AUTOINCREMENT: ids are never reused),
//! and `changes_seq`, the newest entry of the `chunk_changes` log, which triggers append to
//! in the same transaction as every delete of a chunk row and every change of what the
//! in-memory indexes hold (scope, kind, title, text, typed labels). Every commit up to the
//! marks is published in memory before the writer lock is released, so the file holds every
//! live row ≤ `high_water` as of at least `changes_seq`. At load: rows in the log after
//! `changes_seq` are dropped and, if still there, read again; rows above `high_water` are
//! read; anything else in the file stands. A missing, unreadable (checksum), foreign (another
//! data dir's id), outdated (format or tokeniser) or ahead-of-the-database file is ignored and
//! the indexes are rebuilt from SQLite. Saves run on their own thread (every
//! [`SAVE_EVERY`] when something changed, and at `close`) and hold the index's lock only in
//! short stretches, so writes never wait for a save; the log is pruned up to a saved mark.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use evident_core::Scope;
use evident_store::{Result, StoreError};
use parking_lot::{Condvar, Mutex};
use rusqlite::{Connection, OptionalExtension, params_from_iter};

use crate::text_index::{Analyzed, Fields, LoadError, Marks, Saved, TextIndex, heading_of};
use crate::vectors::VectorIndex;
use crate::{Inner, chunks, sqlite_err};

/// The saved text index and row map, beside `evident.db`.
pub(crate) const FILE: &str = "text.index";
/// How often the saver looks for changes to save.
const SAVE_EVERY: Duration = Duration::from_secs(60);

/// Where the text index came from at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextIndexOrigin {
    /// Loaded from `text.index` (then caught up from the change log and newer rows).
    Loaded,
    /// Rebuilt from every chunk row in SQLite (no usable file).
    Rebuilt,
}

struct Signal {
    stop: Mutex<bool>,
    wake: Condvar,
}

/// The saved file's state, and the saver thread's controls.
pub(crate) struct Persisted {
    path: PathBuf,
    store_id: String,
    origin: TextIndexOrigin,
    /// How long loading (or rebuilding) the text index and the row map took at open.
    open_time: Duration,
    /// Marks of the file on disk (`None`: no usable file). Held for the whole of a save.
    saved: Mutex<Option<(u64, u64)>>,
    signal: Arc<Signal>,
    saver: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for Persisted {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Persisted {
    pub(crate) fn origin(&self) -> TextIndexOrigin {
        self.origin
    }

    pub(crate) fn open_time(&self) -> Duration {
        self.open_time
    }

    fn stop(&self) {
        *self.signal.stop.lock() = true;
        self.signal.wake.notify_all();
    }
}

/// This data dir's identity (created on first open): a saved file from another is foreign.
fn store_id(conn: &Connection) -> Result<String> {
    let get = || {
        conn.query_row("SELECT value FROM meta WHERE key = 'store_id'", [], |r| {
            r.get::<_, String>(0)
        })
        .optional()
        .map_err(sqlite_err)
    };
    if let Some(id) = get()? {
        return Ok(id);
    }
    use sha2::Digest;
    let seed = format!(
        "{:?} {} {:?}",
        std::time::SystemTime::now(),
        std::process::id(),
        std::thread::current().id()
    );
    let id = hex::encode(&sha2::Sha256::digest(seed.as_bytes())[..16]);
    conn.execute(
        "INSERT OR IGNORE INTO meta(key, value) VALUES ('store_id', ?1)",
        [&id],
    )
    .map_err(sqlite_err)?;
    Ok(get()?.unwrap_or(id))
}

/// (newest row id ever given, newest change-log sequence): AUTOINCREMENT counters.
fn marks(conn: &Connection) -> Result<(u64, u64)> {
    conn.query_row(
        "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0), \
                coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'chunk_changes'), 0)",
        [],
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
    )
    .map_err(sqlite_err)
}

/// Loads the saved indexes (or rebuilds them from SQLite) before the store is shared.
pub(crate) fn open_derived(
    conn: &Connection,
    dir: &Path,
    vectors: &VectorIndex,
    text: &TextIndex,
) -> Result<Persisted> {
    let started = Instant::now();
    let store_id = store_id(conn)?;
    let (rid_seq, changes_seq) = marks(conn)?;
    let path = dir.join(FILE);
    let (origin, saved) = match text.load(&path, &store_id, rid_seq, changes_seq) {
        Ok((rows, m)) => {
            let loaded = rows.rows.len();
            vectors.import_rows(rows);
            let changed = replay(conn, &m, vectors, text)?;
            let added = track_rows(conn, "rid > ?1", &[m.high_water as i64], vectors, text)?;
            prune(conn, m.changes_seq)?;
            tracing::info!(
                rows = loaded,
                changed,
                added,
                ms = started.elapsed().as_millis() as u64,
                "text index loaded"
            );
            (TextIndexOrigin::Loaded, Some((m.high_water, m.changes_seq)))
        }
        Err(e) => {
            if !matches!(e, LoadError::Missing) || rid_seq > 0 {
                tracing::warn!(reason = %e, "rebuilding the text index from the record store");
            }
            let rows = track_rows(conn, "1", &[], vectors, text)?;
            tracing::info!(
                rows,
                ms = started.elapsed().as_millis() as u64,
                "text index rebuilt"
            );
            (TextIndexOrigin::Rebuilt, None)
        }
    };
    Ok(Persisted {
        path,
        store_id,
        origin,
        open_time: started.elapsed(),
        saved: Mutex::new(saved),
        signal: Arc::new(Signal {
            stop: Mutex::new(false),
            wake: Condvar::new(),
        }),
        saver: Mutex::new(None),
    })
}

/// Applies the changes logged after the file's mark to rows the file holds: every such row is
/// dropped, and read again if it still exists. Returns how many rows were re-read.
fn replay(conn: &Connection, m: &Marks, vectors: &VectorIndex, text: &TextIndex) -> Result<usize> {
    let rids: Vec<u64> = conn
        .prepare("SELECT DISTINCT rid FROM chunk_changes WHERE seq > ?1 AND rid <= ?2 ORDER BY rid")
        .map_err(sqlite_err)?
        .query_map([m.changes_seq as i64, m.high_water as i64], |r| {
            r.get::<_, i64>(0).map(|v| v as u64)
        })
        .map_err(sqlite_err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(sqlite_err)?;
    if rids.is_empty() {
        return Ok(0);
    }
    text.remove(&rids);
    // One sweep for all of them (re-adding a row with stale postings sweeps per row).
    text.compact_all();
    let mut found = 0;
    for batch in rids.chunks(500) {
        let ids: Vec<i64> = batch.iter().map(|r| *r as i64).collect();
        let cond = format!("rid IN {}", crate::sql::placeholders(ids.len()));
        found += track_rows(conn, &cond, &ids, vectors, text)?;
    }
    let live: std::collections::HashSet<u64> = {
        let mut stmt = conn
            .prepare_cached("SELECT 1 FROM chunks WHERE rid = ?1")
            .map_err(sqlite_err)?;
        let mut live = std::collections::HashSet::new();
        for rid in &rids {
            if stmt.exists([*rid as i64]).map_err(sqlite_err)? {
                live.insert(*rid);
            }
        }
        live
    };
    let gone: Vec<u64> = rids.into_iter().filter(|r| !live.contains(r)).collect();
    vectors.forget(&gone);
    Ok(found)
}

/// Rows handed from the SQLite reader to the analysers at a time.
const BATCH: usize = 512;

/// A row's text on its way to the text index: (row id, partition, title, locator, content,
/// graph refs), the locator and refs as stored (JSON).
type TextRow = (u64, String, Option<String>, String, String, String);

/// Reads the chunk rows matching `cond` into the row map and the text index. Returns how many.
/// The reading thread fills the row map; two others tokenise and index the text (tokenising
/// is most of a rebuild's time).
fn track_rows(
    conn: &Connection,
    cond: &str,
    params: &[i64],
    vectors: &VectorIndex,
    text: &TextIndex,
) -> Result<usize> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<TextRow>>(16);
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let Ok(batch) = rx.lock().recv() else { return };
                    for (rid, part, title, locator, content, refs) in batch {
                        // An unreadable locator or refs (never written so) only lose their
                        // fields.
                        let locator = serde_json::from_str::<evident_core::Locator>(&locator);
                        let refs: Vec<evident_core::NodeKey> =
                            serde_json::from_str::<Vec<String>>(&refs)
                                .unwrap_or_default()
                                .into_iter()
                                .map(evident_core::NodeKey::from_canonical)
                                .collect();
                        let fields = Fields {
                            title: title.as_deref(),
                            heading: locator.as_ref().ok().and_then(heading_of),
                            body: &content,
                            refs: &refs,
                        };
                        text.insert(rid, &part, Analyzed::of_fields(fields));
                    }
                }
            });
        }
        let read = read_rows(conn, cond, params, vectors, &tx);
        drop(tx);
        read
    })
}

fn read_rows(
    conn: &Connection,
    cond: &str,
    params: &[i64],
    vectors: &VectorIndex,
    to_text: &std::sync::mpsc::SyncSender<Vec<TextRow>>,
) -> Result<usize> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT rid, id, client_id, project_id, group_id, kind, title, content, metadata, \
             locator, graph_refs FROM chunks WHERE {cond}"
        ))
        .map_err(sqlite_err)?;
    let mut rows = stmt.query(params_from_iter(params)).map_err(sqlite_err)?;
    let (mut n, mut batch) = (0, Vec::with_capacity(BATCH));
    let e = sqlite_err;
    while let Some(r) = rows.next().map_err(e)? {
        let scope = Scope {
            client_id: r.get(2).map_err(e)?,
            project_id: r.get(3).map_err(e)?,
            group_id: r.get(4).map_err(e)?,
        };
        let rid = r.get::<_, i64>(0).map_err(e)? as u64;
        let id: String = r.get(1).map_err(e)?;
        let kind: String = r.get(5).map_err(e)?;
        let metadata: String = r.get(8).map_err(e)?;
        vectors.track_row_typed(rid, &id, &scope, &kind, &chunks::typed_of(&metadata));
        batch.push((
            rid,
            scope.partition().to_string(),
            r.get(6).map_err(e)?,
            r.get(9).map_err(e)?,
            r.get(7).map_err(e)?,
            r.get(10).map_err(e)?,
        ));
        if batch.len() == BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
            to_text
                .send(full)
                .map_err(|_| StoreError::unavailable("text indexing thread stopped"))?;
        }
        n += 1;
    }
    if !batch.is_empty() {
        to_text
            .send(batch)
            .map_err(|_| StoreError::unavailable("text indexing thread stopped"))?;
    }
    Ok(n)
}

fn prune(conn: &Connection, upto: u64) -> Result<()> {
    conn.prepare_cached("DELETE FROM chunk_changes WHERE seq <= ?1")
        .map_err(sqlite_err)?
        .execute([upto as i64])
        .map_err(sqlite_err)?;
    Ok(())
}

/// Saves the text index and the row map if anything changed since the file on disk, then
/// prunes the change log up to the saved mark. `None`: nothing to save.
pub(crate) fn save(inner: &Arc<Inner>) -> Result<Option<Saved>> {
    let p = &inner.persisted;
    let mut saved = p.saved.lock();
    let (high_water, changes_seq) = published_marks(inner)?;
    if *saved == Some((high_water, changes_seq)) {
        return Ok(None);
    }
    let started = Instant::now();
    let rows = inner.vectors.export_rows(high_water);
    let m = Marks {
        store_id: p.store_id.clone(),
        high_water,
        changes_seq,
    };
    let done = inner
        .text
        .save(&p.path, rows, &m, &|| {
            inner
                .durability
                .sync_now()
                .map_err(|e| std::io::Error::other(e.to_string()))
        })
        .map_err(|e| StoreError::unavailable(format!("saving the text index: {e}")))?;
    *saved = Some((high_water, changes_seq));
    prune(&inner.writer.lock(), changes_seq)?;
    tracing::info!(
        rows = done.rows,
        postings = done.postings,
        bytes = done.bytes,
        ms = started.elapsed().as_millis() as u64,
        "text index saved"
    );
    Ok(Some(done))
}

/// The marks, read once every commit they cover is published in memory. Source writes publish
/// under the writer lock, but small grouped writes (`Op`) publish on the writer thread after
/// it: so the marks are read by an `Op` of their own, whose answer comes after the publishing
/// of every write before it. Once the store is closed (no writer thread) they are read directly.
/// Blocking: not on an async runtime thread.
fn published_marks(inner: &Arc<Inner>) -> Result<(u64, u64)> {
    use crate::write::{Job, Op};
    let store = crate::EmbeddedStore {
        inner: inner.clone(),
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job = Job::Op(Box::new(Op {
        f: Some(|conn: &Connection| marks(conn)),
        out: None,
        publish: None,
        reply: Some(reply),
    }));
    if inner.writes.lock().is_none() {
        return marks(&inner.writer.lock());
    }
    store.send_job(job)?;
    answer
        .blocking_recv()
        .map_err(|_| StoreError::unavailable("the store's writer stopped"))?
}

/// Starts the thread that saves every [`SAVE_EVERY`] while something changed.
pub(crate) fn start_saver(inner: &Arc<Inner>) -> Result<()> {
    let weak: Weak<Inner> = Arc::downgrade(inner);
    let signal = inner.persisted.signal.clone();
    let handle = std::thread::Builder::new()
        .name("evident-text-saver".into())
        .spawn(move || {
            loop {
                {
                    let mut stop = signal.stop.lock();
                    if !*stop {
                        signal.wake.wait_for(&mut stop, SAVE_EVERY);
                    }
                    if *stop {
                        return;
                    }
                }
                // Holds the store only while saving, so dropping it is never held up by a wait.
                let Some(inner) = weak.upgrade() else { return };
                match save(&inner) {
                    // A save copies the row table (~100 B per chunk) and writes through
                    // buffers: hand what it freed, and what the writes since freed, back.
                    Ok(Some(_)) => crate::memory_stats::trim_after("text index save"),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "text index save failed; will retry"),
                }
            }
        })
        .map_err(|e| StoreError::unavailable(format!("starting the text index saver: {e}")))?;
    *inner.persisted.saver.lock() = Some(handle);
    Ok(())
}

/// Stops the saver thread and waits for it (a save in progress finishes).
pub(crate) fn stop_saver(inner: &Inner) {
    inner.persisted.stop();
    if let Some(h) = inner.persisted.saver.lock().take() {
        let _ = h.join();
    }
}

#[cfg(test)]
#[path = "restart_tests.rs"]
mod tests;
