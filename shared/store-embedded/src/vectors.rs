//! The approximate vector index: HNSW (usearch) beside the SQLite file, kept consistent with it.
//!
//! Why this shape: HNSW queries are sub-millisecond, but inserts run at only hundreds to a
//! thousand per second on this class of machine. So the write path never waits on the
//! index: a chunk is acknowledged after its durable SQLite write, pushed onto an in-memory
//! *tail*, and a background thread moves the tail into the HNSW graph. Searches query the
//! graph and scan the tail exactly, so a chunk is findable the moment its write returns.
//!
//! Consistency: SQLite is the truth. Row ids are never reused (AUTOINCREMENT), so the saved
//! index records a high-water mark: every row id ≤ mark is in the saved graph. On open, rows
//! above the mark go to the tail; a missing, unreadable, foreign (other embedder) or
//! too-new (mark above the newest row) index is rebuilt from the stored embeddings. Keys of
//! deleted rows that linger in the graph are harmless: every hit is checked against the live
//! row map, which is updated in the same critical section as the SQLite commit.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use evident_core::{Scope, Typed, TypedFilter, Visibility};
use evident_store::{StoreError, VectorSpace};
use parking_lot::{Condvar, Mutex, RwLock};

use crate::dense::DenseMap;
use serde::{Deserialize, Serialize};

/// Rows moved from the tail into the graph per batch.
const BATCH: usize = 256;
/// Threads adding one batch to the graph.
const INDEX_THREADS: usize = 2;
/// Save the graph after this many additions (and whenever the tail drains after changes).
const SAVE_EVERY: usize = 20_000;
/// Searches that may run inside the graph at once (more wait for a slot).
const SEARCH_SLOTS: usize = 8;
/// usearch keeps one scratch context per concurrent caller and refuses a call when all are
/// taken ("Reserve capacity ahead of searches!"), so every call into the graph holds one of
/// these slots and the graph is always reserved for this many threads.
const GRAPH_SLOTS: usize = INDEX_THREADS + SEARCH_SLOTS;

/// A counting semaphore over the graph's per-thread contexts (blocking: graph calls run on
/// blocking threads).
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

struct SlotGuard<'a>(&'a Slots);

impl Slots {
    fn new(n: usize) -> Slots {
        Slots {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    fn take(&self) -> SlotGuard<'_> {
        let mut free = self.free.lock();
        while *free == 0 {
            self.freed.wait(&mut free);
        }
        *free -= 1;
        SlotGuard(self)
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        *self.0.free.lock() += 1;
        self.0.freed.notify_one();
    }
}

/// What the filter needs to know about a live row, kept in memory for every chunk.
#[derive(Debug, Clone)]
pub struct RowMeta {
    pub id: Arc<str>,
    pub scope: u32,
    pub kind: u32,
    /// Interned typed-knowledge labels (`0`: none).
    pub typed: u32,
}

/// Interns small repeated values (scopes, kinds) so the row map stays compact.
#[derive(Default)]
struct Interner<T: std::hash::Hash + Eq + Clone> {
    ids: HashMap<T, u32>,
    values: Vec<T>,
}

impl<T: std::hash::Hash + Eq + Clone> Interner<T> {
    fn intern(&mut self, v: &T) -> u32 {
        if let Some(id) = self.ids.get(v) {
            return *id;
        }
        let id = self.values.len() as u32;
        self.values.push(v.clone());
        self.ids.insert(v.clone(), id);
        id
    }
}

/// The typed-label interner with "no labels" at index 0 (what rows tracked without labels get).
fn none_typed() -> Interner<Typed> {
    let mut i = Interner::default();
    i.intern(&Typed::default());
    i
}

#[derive(Serialize, Deserialize)]
struct SavedState {
    space: VectorSpace,
    high_water: u64,
    /// Length and SHA-256 of the saved graph file. usearch trusts the bytes it loads (a
    /// truncated or foreign file can crash the process inside the C++ loader), so a file is
    /// handed to it only when it is exactly the one this state describes.
    #[serde(default)]
    index_len: u64,
    #[serde(default)]
    index_sha256: String,
}

/// Length and hex SHA-256 of a file, streamed (the graph can be hundreds of MB).
fn file_digest(path: &Path) -> std::io::Result<(u64, String)> {
    use sha2::Digest;
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        len += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((len, hex::encode(hasher.finalize())))
}

/// Whether the graph file at `path` is byte for byte the one `state` was saved with.
fn matches_saved(path: &Path, state: &SavedState) -> bool {
    match file_digest(path) {
        Ok((len, sha)) => len == state.index_len && sha == state.index_sha256,
        Err(_) => false,
    }
}

struct Tail {
    pending: BTreeMap<u64, Arc<[f32]>>,
    /// Highest row id ever pushed (or loaded).
    last_pushed: u64,
    added_since_save: usize,
}

pub struct VectorIndex {
    space: VectorSpace,
    index_path: PathBuf,
    state_path: PathBuf,
    hnsw: RwLock<usearch::Index>,
    tail: Mutex<Tail>,
    wake: Condvar,
    rows: RwLock<DenseMap<RowMeta>>,
    /// Held by every add and search inside the graph (see [`GRAPH_SLOTS`]).
    slots: Slots,
    /// Serialises `index_batch` (background thread vs. `drain`), so a batch is added once.
    indexing: Mutex<()>,
    scopes: RwLock<Interner<Scope>>,
    kinds: RwLock<Interner<String>>,
    /// Typed-knowledge labels of rows; index 0 is "none" (see [`VectorIndex::open`]).
    typed: RwLock<Interner<Typed>>,
    stop: AtomicBool,
}

fn new_hnsw(dim: usize) -> Result<usearch::Index, StoreError> {
    let options = usearch::IndexOptions {
        dimensions: dim,
        metric: usearch::MetricKind::Cos,
        quantization: usearch::ScalarKind::F32,
        connectivity: 16,
        expansion_add: 64,
        expansion_search: 64,
        multi: false,
    };
    let mut index = usearch::Index::new(&options)
        .map_err(|e| StoreError::corrupt(format!("creating vector index: {e}")))?;
    use_normalised_cosine(&mut index, dim);
    reserve(&index, 1024)?;
    Ok(index)
}

/// Room for `capacity` vectors and [`GRAPH_SLOTS`] concurrent callers.
fn reserve(index: &usearch::Index, capacity: usize) -> Result<(), StoreError> {
    index
        .reserve_capacity_and_threads(capacity, GRAPH_SLOTS)
        .map_err(|e| StoreError::corrupt(format!("reserving vector index: {e}")))
}

pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Dot product in eight independent lanes: the compiler vectorises this (a single running
/// sum is a serial chain of dependent additions it may not reorder).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Every vector in the graph and every query is normalised, so cosine distance is `1 − dot`:
/// the graph uses that instead of usearch's portable cosine kernel (three serial
/// accumulations per pair; the SIMD kernels are not built). Not saved with the graph: set
/// again after every load.
#[allow(unsafe_code)] // usearch hands a custom metric raw pointers; see SAFETY below.
fn use_normalised_cosine(index: &mut usearch::Index, dim: usize) {
    index.change_metric::<f32>(Box::new(move |a, b| {
        // SAFETY: usearch calls the metric with two vectors of the index's dimension `dim`
        // (stored f32 vectors, or a query it checked against that dimension).
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts(a, dim),
                std::slice::from_raw_parts(b, dim),
            )
        };
        1.0 - dot(a, b)
    }));
}

/// The visibility and kind filter over live rows, evaluated from the in-memory row map (no
/// SQLite access): used by vector search, full-text search and by-kind listing alike.
pub struct RowFilter<'a> {
    rows: parking_lot::RwLockReadGuard<'a, DenseMap<RowMeta>>,
    allowed_scopes: Vec<bool>,
    allowed_kinds: Option<Vec<bool>>,
    allowed_typed: Option<Vec<bool>>,
}

impl RowFilter<'_> {
    pub fn admits(&self, rid: u64) -> bool {
        self.rows.get(rid).is_some_and(|m| {
            self.allowed_scopes
                .get(m.scope as usize)
                .copied()
                .unwrap_or(false)
                && self
                    .allowed_kinds
                    .as_ref()
                    .is_none_or(|ks| ks.get(m.kind as usize).copied().unwrap_or(false))
                && self
                    .allowed_typed
                    .as_ref()
                    .is_none_or(|ts| ts.get(m.typed as usize).copied().unwrap_or(false))
        })
    }

    pub fn id(&self, rid: u64) -> Option<Arc<str>> {
        self.rows.get(rid).map(|m| m.id.clone())
    }
}

impl VectorIndex {
    /// A filter admitting live rows visible to `vis`, of one of `kinds` (all when empty) and
    /// whose typed labels `typed` admits.
    pub fn row_filter(
        &self,
        vis: &Visibility,
        kinds: &[String],
        typed: &TypedFilter,
    ) -> RowFilter<'_> {
        let allowed_scopes = self
            .scopes
            .read()
            .values
            .iter()
            .map(|s| vis.admits(s))
            .collect();
        let allowed_kinds = (!kinds.is_empty()).then(|| {
            self.kinds
                .read()
                .values
                .iter()
                .map(|k| kinds.iter().any(|x| x == k))
                .collect()
        });
        let allowed_typed = (!typed.is_empty()).then(|| {
            self.typed
                .read()
                .values
                .iter()
                .map(|t| typed.admits(t))
                .collect()
        });
        RowFilter {
            rows: self.rows.read(),
            allowed_scopes,
            allowed_kinds,
            allowed_typed,
        }
    }

    /// Opens (or prepares to rebuild) the index for `dir`. `max_rid` is the newest row id in
    /// SQLite; `load_vectors` fetches the stored embeddings of rows above a given row id, which
    /// become the tail. Live rows are registered afterwards with [`VectorIndex::track_row`].
    pub fn open(
        dir: &Path,
        space: VectorSpace,
        max_rid: u64,
        load_vectors: impl FnOnce(u64) -> Result<Vec<(u64, Vec<f32>)>, StoreError>,
    ) -> Result<VectorIndex, StoreError> {
        let index_path = dir.join("vectors.usearch");
        let state_path = dir.join("vectors.json");
        let saved: Option<SavedState> = std::fs::read(&state_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let mut hnsw = new_hnsw(space.dim)?;
        let mut high_water = 0;
        match saved {
            Some(s)
                if s.space == space
                    && s.high_water <= max_rid
                    && matches_saved(&index_path, &s) =>
            {
                match hnsw.load(index_path.to_string_lossy().as_ref()) {
                    Ok(()) if hnsw.dimensions() == space.dim => {
                        use_normalised_cosine(&mut hnsw, space.dim);
                        // Loading sizes the graph to its contents and the default thread count.
                        reserve(&hnsw, (hnsw.size() * 2).max(1024))?;
                        high_water = s.high_water;
                    }
                    Ok(()) | Err(_) => {
                        tracing::warn!(path = %index_path.display(), "vector index unreadable; rebuilding from the record store");
                        hnsw = new_hnsw(space.dim)?;
                    }
                }
            }
            Some(_) => tracing::warn!(
                "vector index is missing, damaged, stale or from another embedder; rebuilding from the record store"
            ),
            None => {
                if max_rid > 0 {
                    tracing::info!(
                        "no vector index on disk; building it from the record store in the background"
                    )
                }
            }
        }
        let mut pending = BTreeMap::new();
        for (rid, mut v) in load_vectors(high_water)? {
            if v.len() != space.dim {
                return Err(StoreError::corrupt(format!(
                    "row {rid} has a {}-d embedding, expected {}",
                    v.len(),
                    space.dim
                )));
            }
            normalize(&mut v);
            pending.insert(rid, Arc::from(v));
        }
        Ok(VectorIndex {
            space,
            index_path,
            state_path,
            hnsw: RwLock::new(hnsw),
            tail: Mutex::new(Tail {
                pending,
                last_pushed: max_rid,
                added_since_save: 0,
            }),
            wake: Condvar::new(),
            rows: RwLock::new(DenseMap::default()),
            slots: Slots::new(GRAPH_SLOTS),
            indexing: Mutex::new(()),
            scopes: RwLock::new(Interner::default()),
            kinds: RwLock::new(Interner::default()),
            typed: RwLock::new(none_typed()),
            stop: AtomicBool::new(false),
        })
    }

    pub fn space(&self) -> &VectorSpace {
        &self.space
    }

    /// Registers a live row in the filter map (at open, and after each commit), keeping the
    /// typed labels it already has (none for a new row).
    pub fn track_row(&self, rid: u64, id: &str, scope: &Scope, kind: &str) {
        let typed = self.rows.read().get(rid).map_or(0, |m| m.typed);
        self.insert_row(rid, id, scope, kind, typed);
    }

    /// [`VectorIndex::track_row`] with the row's typed-knowledge labels.
    pub fn track_row_typed(&self, rid: u64, id: &str, scope: &Scope, kind: &str, typed: &Typed) {
        let typed = self.typed.write().intern(typed);
        self.insert_row(rid, id, scope, kind, typed);
    }

    fn insert_row(&self, rid: u64, id: &str, scope: &Scope, kind: &str, typed: u32) {
        let scope = self.scopes.write().intern(scope);
        let kind = self.kinds.write().intern(&kind.to_string());
        self.rows.write().insert(
            rid,
            RowMeta {
                id: Arc::from(id),
                scope,
                kind,
                typed,
            },
        );
    }

    /// Called with the writer lock held, right after the SQLite commit, in row-id order.
    pub fn push(&self, rid: u64, mut vector: Vec<f32>) {
        normalize(&mut vector);
        let mut tail = self.tail.lock();
        tail.pending.insert(rid, Arc::from(vector));
        tail.last_pushed = tail.last_pushed.max(rid);
        drop(tail);
        self.wake.notify_one();
    }

    /// Called with the writer lock held, right after the SQLite commit that deleted the rows.
    pub fn forget(&self, rids: &[u64]) {
        if rids.is_empty() {
            return;
        }
        {
            let mut rows = self.rows.write();
            for rid in rids {
                rows.remove(*rid);
            }
        }
        let mut tail = self.tail.lock();
        for rid in rids {
            tail.pending.remove(rid);
        }
        drop(tail);
        let hnsw = self.hnsw.write();
        for rid in rids {
            // A key may be absent (still in the tail, or never indexed): nothing to do then.
            let _ = hnsw.remove(*rid);
        }
    }

    pub fn pending(&self) -> usize {
        self.tail.lock().pending.len()
    }

    pub fn indexed(&self) -> usize {
        self.hnsw.read().size()
    }

    pub fn live_rows(&self) -> usize {
        self.rows.read().len()
    }

    /// Top `k` visible rows by cosine similarity: graph search plus an exact scan of the tail.
    pub fn search(
        &self,
        vis: &Visibility,
        kinds: &[String],
        typed: &TypedFilter,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(Arc<str>, f32)>, StoreError> {
        if query.len() != self.space.dim {
            return Err(StoreError::invalid(format!(
                "query vector has {} dimensions, the index {}",
                query.len(),
                self.space.dim
            )));
        }
        if k == 0 {
            return Ok(Vec::new());
        }
        let mut q = query.to_vec();
        normalize(&mut q);
        let filter = self.row_filter(vis, kinds, typed);
        let admits = |rid: u64| filter.admits(rid);
        let mut best: HashMap<u64, f32> = HashMap::new();
        // The tail before the graph: the indexer adds a row to the graph before taking it off
        // the tail, so a row missing from this tail scan is already in the graph searched next.
        {
            let tail = self.tail.lock();
            for (rid, v) in tail.pending.iter() {
                if admits(*rid) {
                    best.insert(*rid, dot(&q, v));
                }
            }
        }
        {
            let hnsw = self.hnsw.read();
            if hnsw.size() > 0 {
                let _slot = self.slots.take();
                let matches = hnsw
                    .filtered_search(&q, k, admits)
                    .map_err(|e| StoreError::corrupt(format!("vector search: {e}")))?;
                for (key, dist) in matches.keys.iter().zip(matches.distances.iter()) {
                    let sim = 1.0 - *dist;
                    let e = best.entry(*key).or_insert(sim);
                    *e = e.max(sim);
                }
            }
        }
        let mut hits: Vec<(u64, f32)> = best.into_iter().collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(k);
        Ok(hits
            .into_iter()
            .filter_map(|(rid, s)| filter.id(rid).map(|id| (id, s)))
            .collect())
    }

    /// Moves up to one batch from the tail into the graph. Returns how many were moved.
    pub fn index_batch(&self) -> Result<usize, StoreError> {
        let _one_at_a_time = self.indexing.lock();
        let batch: Vec<(u64, Arc<[f32]>)> = {
            let tail = self.tail.lock();
            tail.pending
                .iter()
                .take(BATCH)
                .map(|(k, v)| (*k, v.clone()))
                .collect()
        };
        if batch.is_empty() {
            return Ok(0);
        }
        {
            let needed = self.hnsw.read().size() + batch.len();
            if needed > self.hnsw.read().capacity() {
                reserve(&self.hnsw.write(), (needed * 2).max(4096))?;
            }
        }
        let mut batch_rest: &[(u64, Arc<[f32]>)] = &batch;
        if self.hnsw.read().size() == 0 {
            // usearch counts the first vector before its node exists, and a search that sees
            // a non-empty graph starts at that node: the first add must exclude searches.
            let hnsw = self.hnsw.write();
            let (rid, v) = &batch[0];
            let _slot = self.slots.take();
            hnsw.add(*rid, v)
                .map_err(|e| StoreError::corrupt(format!("adding to vector index: {e}")))?;
            batch_rest = &batch[1..];
        }
        {
            // HNSW insertion is the slow part; usearch takes concurrent adds, so split the batch.
            let hnsw = self.hnsw.read();
            let fresh: Vec<&(u64, Arc<[f32]>)> = batch_rest
                .iter()
                .filter(|(rid, _)| !hnsw.contains(*rid))
                .collect();
            let per_thread = fresh.len().div_ceil(INDEX_THREADS).max(1);
            std::thread::scope(|scope| {
                let workers: Vec<_> = fresh
                    .chunks(per_thread)
                    .map(|part| {
                        let hnsw = &hnsw;
                        let slots = &self.slots;
                        scope.spawn(move || -> Result<(), StoreError> {
                            let _slot = slots.take();
                            for (rid, v) in part {
                                hnsw.add(*rid, v).map_err(|e| {
                                    StoreError::corrupt(format!("adding to vector index: {e}"))
                                })?;
                            }
                            Ok(())
                        })
                    })
                    .collect();
                workers.into_iter().try_for_each(|w| {
                    w.join().unwrap_or_else(|_| {
                        Err(StoreError::corrupt("vector indexing thread panicked"))
                    })
                })
            })?;
        }
        let mut tail = self.tail.lock();
        for (rid, _) in &batch {
            tail.pending.remove(rid);
        }
        tail.added_since_save += batch.len();
        Ok(batch.len())
    }

    /// Persists the graph and its high-water mark (atomically: temp file + rename).
    pub fn save(&self) -> Result<(), StoreError> {
        let hnsw = self.hnsw.write(); // no additions while saving
        let high_water = {
            let mut tail = self.tail.lock();
            tail.added_since_save = 0;
            match tail.pending.keys().next() {
                Some(first) => first - 1,
                None => tail.last_pushed,
            }
        };
        let tmp = self.index_path.with_extension("usearch.tmp");
        hnsw.save(tmp.to_string_lossy().as_ref())
            .map_err(|e| StoreError::unavailable(format!("saving vector index: {e}")))?;
        let (index_len, index_sha256) = file_digest(&tmp)
            .map_err(|e| StoreError::unavailable(format!("checksumming vector index: {e}")))?;
        std::fs::rename(&tmp, &self.index_path)
            .map_err(|e| StoreError::unavailable(format!("saving vector index: {e}")))?;
        let state = SavedState {
            space: self.space.clone(),
            high_water,
            index_len,
            index_sha256,
        };
        let tmp = self.state_path.with_extension("json.tmp");
        let bytes = serde_json::to_vec(&state).map_err(|e| StoreError::corrupt(e.to_string()))?;
        std::fs::write(&tmp, bytes)
            .and_then(|_| std::fs::rename(&tmp, &self.state_path))
            .map_err(|e| StoreError::unavailable(format!("saving vector index state: {e}")))?;
        tracing::debug!(high_water, indexed = hnsw.size(), "vector index saved");
        Ok(())
    }

    /// Background loop: index the tail, save now and then. Returns when `shutdown` is called.
    pub fn run_indexer(self: &Arc<Self>) {
        let mut last_save = Instant::now();
        while !self.stop.load(Ordering::Acquire) {
            match self.index_batch() {
                Ok(0) => {
                    let dirty = self.tail.lock().added_since_save;
                    if dirty > 0 && last_save.elapsed() > Duration::from_secs(30) {
                        if let Err(e) = self.save() {
                            tracing::warn!(error = %e, "vector index save failed; will retry");
                        }
                        last_save = Instant::now();
                    }
                    let mut tail = self.tail.lock();
                    if tail.pending.is_empty() && !self.stop.load(Ordering::Acquire) {
                        self.wake.wait_for(&mut tail, Duration::from_secs(5));
                    }
                }
                Ok(_) => {
                    if self.tail.lock().added_since_save >= SAVE_EVERY {
                        if let Err(e) = self.save() {
                            tracing::warn!(error = %e, "vector index save failed; will retry");
                        }
                        last_save = Instant::now();
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "vector indexing failed; the tail stays searchable exactly");
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
    }

    /// Blocks until the tail is empty (tests and benchmarks use this to measure the graph).
    pub fn drain(&self) -> Result<(), StoreError> {
        while self.index_batch()? > 0 {}
        Ok(())
    }

    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Release);
        self.wake.notify_all();
    }
}

// The row map as plain data (saved beside the text index) and memory measurements.
#[path = "vectors_export.rs"]
mod export;
pub use export::RowsExport;

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> VectorSpace {
        VectorSpace {
            embedder: "test:axis".into(),
            dim: 8,
        }
    }

    fn vector(i: u64) -> Vec<f32> {
        (0..8).map(|d| ((i * 7 + d) % 11) as f32 + 1.0).collect()
    }

    /// Searches racing the graph's first insertion (usearch counts the node before it
    /// exists) and more concurrent callers than indexing threads (usearch refuses a call
    /// when its per-thread contexts are taken) must neither crash nor fail.
    #[test]
    fn searches_while_indexing_from_empty_neither_crash_nor_fail() {
        let scope = Scope::client("c");
        let vis = Visibility::of(scope.clone());
        for round in 0..100 {
            let dir = tempfile::tempdir().expect("tmp");
            let index =
                VectorIndex::open(dir.path(), space(), 0, |_| Ok(Vec::new())).expect("open");
            for rid in 1..=40 {
                index.track_row(rid, &format!("r{rid}"), &scope, "doc");
                index.push(rid, vector(rid));
            }
            let query = vector(round % 40 + 1);
            std::thread::scope(|s| {
                s.spawn(|| index.drain().expect("drain"));
                let searchers: Vec<_> = (0..4)
                    .map(|_| {
                        s.spawn(|| {
                            for _ in 0..20 {
                                let hits = index
                                    .search(&vis, &[], &TypedFilter::default(), &query, 3)
                                    .expect("search");
                                assert!(!hits.is_empty(), "the tail or the graph answers");
                            }
                        })
                    })
                    .collect();
                for searcher in searchers {
                    searcher.join().expect("searcher");
                }
            });
            assert_eq!((index.pending(), index.indexed()), (0, 40));
        }
    }
}
