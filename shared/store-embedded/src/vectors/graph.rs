//! The HNSW graph (usearch) itself: its options and distance, the per-thread contexts every
//! call holds, and the checksummed file it is saved to and loaded from.

use std::path::Path;

use evident_store::{StoreError, VectorSpace};
use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};

/// Searches that may run inside the graph at once (more wait for a slot).
pub(super) const SEARCH_SLOTS: usize = 8;

/// Threads adding one batch to the graph: every core (HNSW insertion is the slow part of
/// keeping up with a bulk ingest; the write path itself mostly waits on fsync).
pub(super) fn index_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 16))
}

/// usearch keeps one scratch context per concurrent caller and refuses a call when all are
/// taken ("Reserve capacity ahead of searches!"), so every call into the graph holds one of
/// these slots and the graph is always reserved for this many threads.
pub(super) fn graph_slots() -> usize {
    index_threads() + SEARCH_SLOTS
}

/// A counting semaphore over the graph's per-thread contexts (blocking: graph calls run on
/// blocking threads).
pub(super) struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

pub(super) struct SlotGuard<'a>(&'a Slots);

impl Slots {
    pub(super) fn new(n: usize) -> Slots {
        Slots {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    pub(super) fn take(&self) -> SlotGuard<'_> {
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

pub(super) fn new_hnsw(dim: usize) -> Result<usearch::Index, StoreError> {
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

/// Room for `capacity` vectors and [`graph_slots`] concurrent callers.
pub(super) fn reserve(index: &usearch::Index, capacity: usize) -> Result<(), StoreError> {
    index
        .reserve_capacity_and_threads(capacity, graph_slots())
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
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
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
pub(super) fn use_normalised_cosine(index: &mut usearch::Index, dim: usize) {
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

#[derive(Serialize, Deserialize)]
pub(super) struct SavedState {
    pub(super) space: VectorSpace,
    pub(super) high_water: u64,
    /// Length and SHA-256 of the saved graph file. usearch trusts the bytes it loads (a
    /// truncated or foreign file can crash the process inside the C++ loader), so a file is
    /// handed to it only when it is exactly the one this state describes.
    #[serde(default)]
    pub(super) index_len: u64,
    #[serde(default)]
    pub(super) index_sha256: String,
}

/// Length and hex SHA-256 of a file, streamed (the graph can be hundreds of MB).
pub(super) fn file_digest(path: &Path) -> std::io::Result<(u64, String)> {
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

/// How the graph came to be at open: loaded from its file, or rebuilt from the stored
/// embeddings (and why). Reported by the store's health check and its status call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphOrigin {
    /// An empty store: nothing to load or rebuild.
    Empty,
    /// The saved graph passed its checksum and was loaded with this many vectors; rows above
    /// its high-water mark went to the tail.
    Loaded { vectors: usize, high_water: u64 },
    /// The graph is rebuilt from scratch from the record store, for this reason.
    Rebuilt { reason: String },
}

/// Loads the saved graph if `state_path` describes the file at `index_path` exactly and it
/// fits this store (same embedder, mark not above the newest row). Returns the graph with
/// its high-water mark, or why it was not loaded.
pub(super) fn load_saved(
    index_path: &Path,
    state_path: &Path,
    space: &VectorSpace,
    max_rid: u64,
) -> Result<(usearch::Index, u64), String> {
    let bytes = std::fs::read(state_path).map_err(|_| "no saved vector index".to_string())?;
    let state: SavedState = serde_json::from_slice(&bytes)
        .map_err(|e| format!("saved vector index state unreadable: {e}"))?;
    if &state.space != space {
        return Err(format!(
            "saved vector index is of embedder `{}`",
            state.space.embedder
        ));
    }
    if state.high_water > max_rid {
        return Err(format!(
            "saved vector index is newer (row {}) than the record store (row {max_rid})",
            state.high_water
        ));
    }
    match file_digest(index_path) {
        Ok((len, sha)) if len == state.index_len && sha == state.index_sha256 => {}
        Ok(_) => return Err("saved vector index fails its checksum".into()),
        Err(e) => return Err(format!("saved vector index unreadable: {e}")),
    }
    let mut hnsw = new_hnsw(space.dim).map_err(|e| e.to_string())?;
    match hnsw.load(index_path.to_string_lossy().as_ref()) {
        Ok(()) if hnsw.dimensions() == space.dim => {
            use_normalised_cosine(&mut hnsw, space.dim);
            // Loading sizes the graph to its contents and the default thread count.
            reserve(&hnsw, (hnsw.size() * 2).max(1024)).map_err(|e| e.to_string())?;
            Ok((hnsw, state.high_water))
        }
        Ok(()) => Err("saved vector index has another dimension".into()),
        Err(e) => Err(format!("saved vector index unreadable: {e}")),
    }
}

/// Writes the graph and its state (high-water mark, length, checksum), each through a temp
/// file and a rename, the graph first: a crash in between leaves the old state, which no
/// longer matches the new file, so the next open rebuilds rather than trusting either.
pub(super) fn write_saved(
    hnsw: &usearch::Index,
    index_path: &Path,
    state_path: &Path,
    space: &VectorSpace,
    high_water: u64,
) -> Result<(), StoreError> {
    let tmp = index_path.with_extension("usearch.tmp");
    hnsw.save(tmp.to_string_lossy().as_ref())
        .map_err(|e| StoreError::unavailable(format!("saving vector index: {e}")))?;
    let (index_len, index_sha256) = file_digest(&tmp)
        .map_err(|e| StoreError::unavailable(format!("checksumming vector index: {e}")))?;
    std::fs::rename(&tmp, index_path)
        .map_err(|e| StoreError::unavailable(format!("saving vector index: {e}")))?;
    let state = SavedState {
        space: space.clone(),
        high_water,
        index_len,
        index_sha256,
    };
    let tmp = state_path.with_extension("json.tmp");
    let bytes = serde_json::to_vec(&state).map_err(|e| StoreError::corrupt(e.to_string()))?;
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, state_path))
        .map_err(|e| StoreError::unavailable(format!("saving vector index state: {e}")))
}
