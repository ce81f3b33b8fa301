//! Evident's embedded backend: everything in one data directory, no servers.
//!
//! - `evident.db`: SQLite in WAL mode — the system of record for chunks (with their
//!   embeddings), the graph, aliases, sources and the task queue. Group commits append to the
//!   WAL with `synchronous=NORMAL` and are answered after the syncer thread's fsync of the
//!   WAL ([`durable`], ADR 0009); every other write commits with `synchronous=FULL`.
//! - In memory, updated at every commit: the BM25 text index and the row map (visibility and
//!   kind per chunk row) that every search filters with. `text.index` holds both, saved in the
//!   background and at close and loaded at open (see [`restart`]); without a usable file
//!   they are rebuilt from SQLite.
//! - `vectors.usearch` + `vectors.json`: the HNSW index, derived from the stored embeddings
//!   and maintained in the background (see [`vectors`]).
//!
//! One writer connection serialises writes (SQLite allows one writer anyway) and source writes
//! are group-committed; a small pool of reader connections serves reads in parallel. All
//! SQLite work runs on blocking threads, never on the async runtime threads.
//!
//! Must not: know about HTTP, embedders or ingest rules — it stores what it is given.

mod access;
mod aliases;
mod budget;
mod chunks;
mod claims;
mod dense;
mod durable;
mod entity_index;
mod gaps;
mod graph;
mod graph_links;
mod graph_traverse;
mod graph_write;
mod indexers;
mod integrity;
mod memory;
mod memory_stats;
mod options;
mod private;
mod procedures;
mod queue;
mod recall;
mod restart;
mod schema;
mod sources;
mod sql;
mod text_index;
pub mod vectors;
mod write;
pub mod writer_stats;

use std::collections::HashMap;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use evident_store::{HealthReport, Result, StoreError, Stores, VectorSpace};
use parking_lot::{Mutex, MutexGuard};
use rusqlite::Connection;

pub use budget::MemoryUsage;
pub use integrity::IntegrityReport;
pub use memory_stats::{ProcessMemory, release_free_memory};
pub use restart::TextIndexOrigin;
use vectors::VectorIndex;

const READERS: usize = 4;

/// Options for opening a data directory.
#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    pub dir: PathBuf,
    /// The embedder whose vectors this store holds; a mismatch with the stored one refuses to open.
    pub vector_space: VectorSpace,
    /// Run the background HNSW indexer thread (tests may drive [`EmbeddedStore::drain_vector_index`] instead).
    pub background_indexer: bool,
}

pub(crate) struct Inner {
    dir: PathBuf,
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    pub(crate) vectors: Arc<VectorIndex>,
    /// BM25 over chunk text, loaded from `text.index` or rebuilt from SQLite at open.
    pub(crate) text: text_index::TextIndex,
    /// The saved text index and row map, and the thread saving them.
    pub(crate) persisted: restart::Persisted,
    /// Alias seen counts accumulated by `resolve`, flushed in batches (resolve stays a read).
    pub(crate) seen: Mutex<HashMap<(String, String), u64>>,
    indexer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Source writes go to the group-commit thread through this channel.
    pub(crate) writes: Mutex<Option<std::sync::mpsc::Sender<write::Job>>>,
    committer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Fsyncs the WAL: the syncer thread for group commits, inline for saves of derived state.
    pub(crate) durability: Arc<durable::Durability>,
    /// The syncer thread (ends after the committer, once every group it sent is answered).
    syncer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Held until `close` (or drop): one process per data directory.
    lock: Mutex<Option<std::fs::File>>,
    /// Every procedure with its vector, derived from SQLite (matching reads only this).
    pub(crate) procedures: Arc<procedures::ProcedureIndex>,
    /// `[store] memory_budget` and the last measurement against it.
    pub(crate) budget: budget::Budget,
}

impl Inner {
    fn reader(&self) -> MutexGuard<'_, Connection> {
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        for i in 0..self.readers.len() {
            if let Some(guard) = self.readers[(start + i) % self.readers.len()].try_lock() {
                return guard;
            }
        }
        self.readers[start % self.readers.len()].lock()
    }
}

/// The embedded store. Cheap to clone; implements every storage trait.
#[derive(Clone)]
pub struct EmbeddedStore {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) fn sqlite_err(e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode as C;
    match &e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            C::DatabaseBusy
            | C::DatabaseLocked
            | C::DiskFull
            | C::SystemIoFailure
            | C::CannotOpen
            | C::OutOfMemory => StoreError::unavailable(format!("sqlite: {e}")),
            C::ConstraintViolation => {
                StoreError::new(evident_store::ErrorKind::Conflict, format!("sqlite: {e}"))
            }
            C::DatabaseCorrupt | C::NotADatabase => StoreError::corrupt(format!("sqlite: {e}")),
            _ => StoreError::invalid(format!("sqlite: {e}")),
        },
        _ => StoreError::corrupt(format!("sqlite: {e}")),
    }
}

pub(crate) fn json_err(e: serde_json::Error) -> StoreError {
    StoreError::corrupt(format!("stored JSON: {e}"))
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Creates the data directory (owner only, [`private`]) and takes its `LOCK` file: one
/// Evident process per directory.
fn lock_data_dir(dir: &std::path::Path) -> Result<std::fs::File> {
    private::secure_dir(dir)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(private::FILE_MODE)
        .open(dir.join("LOCK"))
        .map_err(|e| {
            StoreError::unavailable(format!("opening {}: {e}", dir.join("LOCK").display()))
        })?;
    lock.try_lock().map_err(|_| {
        StoreError::unavailable(format!(
            "data dir {} is in use by another Evident process",
            dir.display()
        ))
    })?;
    Ok(lock)
}

impl EmbeddedStore {
    /// Opens or creates the store in `opts.dir`. Blocking; call before serving.
    pub fn open(opts: EmbeddedOptions) -> Result<EmbeddedStore> {
        let lock = lock_data_dir(&opts.dir)?;
        let db_path = opts.dir.join("evident.db");
        private::create_database(&db_path)?;
        let writer = Connection::open(&db_path).map_err(sqlite_err)?;
        schema::configure(&writer).map_err(sqlite_err)?;
        schema::create(&writer).map_err(sqlite_err)?;
        entity_index::ensure_built(&writer)?;

        check_meta(&writer, &opts.vector_space)?;

        let max_rid: u64 = writer
            .query_row("SELECT coalesce(max(rid), 0) FROM chunks", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(sqlite_err)? as u64;
        let vectors = VectorIndex::open(&opts.dir, opts.vector_space.clone(), max_rid, |above| {
            chunks::load_embeddings_above(&writer, above)
        })?;
        let text = text_index::TextIndex::default();
        let persisted = restart::open_derived(&writer, &opts.dir, &vectors, &text)?;
        let procedures = Arc::new(procedures::ProcedureIndex::load(&writer)?);
        let durability = Arc::new(durable::Durability::new(Arc::new(durable::WalFile::new(
            &opts.dir,
        ))));
        {
            // A saved graph may hold only durable rows (row ids of lost commits are reused).
            let d = durability.clone();
            vectors.set_durable_barrier(Box::new(move || d.sync_now()));
        }

        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let conn = Connection::open(&db_path).map_err(sqlite_err)?;
            schema::configure(&conn).map_err(sqlite_err)?;
            readers.push(Mutex::new(conn));
        }
        let store = EmbeddedStore {
            inner: Arc::new(Inner {
                dir: opts.dir.clone(),
                writer: Mutex::new(writer),
                readers,
                next_reader: AtomicUsize::new(0),
                vectors: Arc::new(vectors),
                text,
                persisted,
                seen: Mutex::new(HashMap::new()),
                indexer: Mutex::new(None),
                writes: Mutex::new(None),
                committer: Mutex::new(None),
                durability,
                syncer: Mutex::new(None),
                lock: Mutex::new(Some(lock)),
                procedures,
                budget: budget::Budget::default(),
            }),
        };
        store.start_threads(opts.background_indexer)?;
        tracing::info!(dir = %opts.dir.display(), chunks = store.inner.vectors.live_rows(), pending_vectors = store.inner.vectors.pending(), "embedded store open");
        Ok(store)
    }

    /// The store's threads: the group committer, the snapshot saver and, when asked for, the
    /// background vector indexer.
    fn start_threads(&self, background_indexer: bool) -> Result<()> {
        let (tx, rx) = std::sync::mpsc::channel();
        let weak = Arc::downgrade(&self.inner);
        let (durable, syncer) = durable::start(self.inner.durability.clone())?;
        *self.inner.syncer.lock() = Some(syncer);
        let committer = std::thread::Builder::new()
            .name("evident-group-commit".into())
            .spawn(move || write::run_writer(weak, rx, durable))
            .map_err(|e| StoreError::unavailable(format!("starting writer: {e}")))?;
        *self.inner.writes.lock() = Some(tx);
        *self.inner.committer.lock() = Some(committer);
        restart::start_saver(&self.inner)?;
        if background_indexer {
            let vectors = self.inner.vectors.clone();
            let handle = std::thread::Builder::new()
                .name("evident-vector-indexer".into())
                .spawn(move || vectors.run_indexer())
                .map_err(|e| StoreError::unavailable(format!("starting vector indexer: {e}")))?;
            *self.inner.indexer.lock() = Some(handle);
        }
        Ok(())
    }

    /// All roles served by this one store.
    pub fn stores(&self) -> Stores {
        let me = Arc::new(self.clone());
        Stores {
            graph: me.clone(),
            chunks: me.clone(),
            aliases: me.clone(),
            sources: me.clone(),
            writer: me.clone(),
            queue: me.clone(),
            indexers: me.clone(),
            memory: me.clone(),
            access: me.clone(),
            claims: me.clone(),
            procedures: me.clone(),
            gaps: me.clone(),
            health: vec![me],
        }
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Moves every pending vector into the HNSW graph now (benchmarks, tests, shutdown).
    pub fn drain_vector_index(&self) -> Result<()> {
        self.inner.vectors.drain()
    }

    /// (indexed in HNSW, waiting in the exact-scan tail).
    pub fn vector_index_status(&self) -> (usize, usize) {
        (self.inner.vectors.indexed(), self.inner.vectors.pending())
    }

    /// Caps the bytes the in-memory structures may hold (`[store] memory_budget`; 0: no cap)
    /// and sizes the SQLite page caches from it. Writes adding chunks past it are refused
    /// with `capacity_exceeded` (see `budget.rs`).
    pub fn set_memory_budget(&self, bytes: u64) -> Result<()> {
        budget::configure(&self.inner, bytes)
    }

    /// Bytes held by each in-memory structure, measured now.
    pub fn memory_usage(&self) -> MemoryUsage {
        budget::measure(&self.inner)
    }

    /// What SQLite and the allocator hold now (page caches as filled, free arena bytes):
    /// the part of the RSS `memory_usage` does not measure from lengths.
    pub fn process_memory(&self) -> ProcessMemory {
        let conns = std::iter::once(&self.inner.writer).chain(&self.inner.readers);
        let sqlite_cache_used = conns.map(|c| memory_stats::cache_used(&c.lock())).sum();
        let (heap_in_use, heap_free, heap_mmapped) = memory_stats::heap();
        ProcessMemory {
            sqlite_cache_used,
            sqlite_total: memory_stats::sqlite_total(),
            heap_in_use,
            heap_free,
            heap_mmapped,
        }
    }

    /// Live chunk rows.
    pub fn chunk_count(&self) -> usize {
        self.inner.vectors.live_rows()
    }

    /// How long loading (or rebuilding) the text index and the row map took at open.
    pub fn text_index_open_time(&self) -> std::time::Duration {
        self.inner.persisted.open_time()
    }

    /// Where the text index came from at open (loaded from `text.index`, or rebuilt).
    pub fn text_index_origin(&self) -> TextIndexOrigin {
        self.inner.persisted.origin()
    }

    /// Saves the text index and row map now if they changed since the last save (tests,
    /// benchmarks; the store also saves in the background and at `close`).
    pub async fn save_text_index(&self) -> Result<()> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || restart::save(&inner).map(drop))
            .await
            .map_err(|e| StoreError::unavailable(format!("store task failed: {e}")))?
    }

    /// The vector index itself: how its graph came to be at open ([`vectors::GraphOrigin`]),
    /// its memory, its backlog bound (`[store] vector_backlog`).
    pub fn vector_index(&self) -> &VectorIndex {
        &self.inner.vectors
    }

    /// Flushes alias counters, stops the indexer and saves the text and vector indexes.
    pub fn close(&self) -> Result<()> {
        // Stop taking writes; the committer finishes what it has and exits.
        drop(self.inner.writes.lock().take());
        if let Some(h) = self.inner.committer.lock().take() {
            let _ = h.join();
        }
        // Every group the committer sent is answered once durable.
        if let Some(h) = self.inner.syncer.lock().take() {
            let _ = h.join();
        }
        aliases::flush_seen(&self.inner)?;
        restart::stop_saver(&self.inner);
        if let Err(e) = restart::save(&self.inner) {
            tracing::warn!(error = %e, "text index not saved; the next open rebuilds it");
        }
        self.inner.vectors.shutdown();
        if let Some(h) = self.inner.indexer.lock().take() {
            let _ = h.join();
        }
        let saved = self.inner.vectors.save();
        drop(self.inner.lock.lock().take());
        saved
    }

    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &Inner) -> Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let conn = inner.reader();
            f(&conn, &inner)
        })
        .await
        .map_err(|e| StoreError::unavailable(format!("store task failed: {e}")))?
    }

    /// CPU work on the in-memory indexes (no SQLite connection), off the runtime threads.
    pub(crate) async fn compute<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|e| StoreError::unavailable(format!("store task failed: {e}")))?
    }

    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &Inner) -> Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = inner.writer.lock();
            f(&mut conn, &inner)
        })
        .await
        .map_err(|e| StoreError::unavailable(format!("store task failed: {e}")))?
    }
}

fn check_meta(conn: &Connection, space: &VectorSpace) -> Result<()> {
    let get = |key: &str| -> Result<Option<String>> {
        use rusqlite::OptionalExtension;
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(sqlite_err)
    };
    match get("schema_version")? {
        Some(v) if v.parse::<i64>().unwrap_or(i64::MAX) > schema::SCHEMA_VERSION => {
            return Err(StoreError::incompatible(format!(
                "data dir has schema version {v}; this build understands up to {}",
                schema::SCHEMA_VERSION
            )));
        }
        Some(_) => {}
        None => {
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?1)",
                [schema::SCHEMA_VERSION.to_string()],
            )
            .map_err(sqlite_err)?;
        }
    }
    let wanted = serde_json::to_string(space).map_err(json_err)?;
    match get("vector_space")? {
        Some(stored) if stored != wanted => {
            let stored: VectorSpace = serde_json::from_str(&stored).map_err(json_err)?;
            Err(StoreError::incompatible(format!(
                "this data dir holds vectors of embedder `{}` ({} dims) but the configured embedder is `{}` ({} dims); \
                 configure the same embedder, or re-embed into a new data dir",
                stored.embedder, stored.dim, space.embedder, space.dim
            )))
        }
        Some(_) => Ok(()),
        None => {
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('vector_space', ?1)",
                [wanted],
            )
            .map_err(sqlite_err)?;
            Ok(())
        }
    }
}

#[async_trait]
impl evident_store::Health for EmbeddedStore {
    async fn check(&self) -> HealthReport {
        let result = self
            .read(|conn, _| {
                conn.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))
                    .map_err(sqlite_err)
            })
            .await;
        HealthReport {
            backend: "embedded".into(),
            // Every role: a deployment that gives it fewer wraps it in `ServingRoles`.
            roles: ["graph", "aliases", "chunks"]
                .into_iter()
                .chain(evident_store::QUEUE_SIDE_ROLES)
                .map(String::from)
                .collect(),
            ready: result.is_ok(),
            detail: match result {
                Ok(_) => {
                    let (indexed, pending) = self.vector_index_status();
                    let budget = match self.inner.budget.limit() {
                        0 => String::new(),
                        limit => format!(", memory budget {} MiB", limit >> 20),
                    };
                    let graph = match self.inner.vectors.origin() {
                        vectors::GraphOrigin::Empty => "new".to_string(),
                        vectors::GraphOrigin::Loaded { .. } => "loaded from disk".to_string(),
                        vectors::GraphOrigin::Rebuilt { reason } => format!("rebuilt: {reason}"),
                    };
                    Some(format!(
                        "{} ({indexed} vectors indexed, {pending} pending; graph {graph}{budget})",
                        self.inner.dir.display()
                    ))
                }
                Err(e) => Some(e.to_string()),
            },
        }
    }
}
