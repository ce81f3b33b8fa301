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
        dimensions: stored_len(dim),
        metric: usearch::MetricKind::Cos,
        quantization: usearch::ScalarKind::I8,
        connectivity: 16,
        expansion_add: 64,
        expansion_search: 64,
        multi: false,
    };
    let mut index = usearch::Index::new(&options)
        .map_err(|e| StoreError::corrupt(format!("creating vector index: {e}")))?;
    use_quantized_cosine(&mut index, dim);
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

/// The graph's storage format (saved in its state file): a graph saved in another (the f32
/// vectors of format 1) is rebuilt at open, never handed to a metric that reads it otherwise.
pub(super) const GRAPH_FORMAT: u32 = 2;

/// Bytes the scale of a stored vector takes after its components.
const SCALE_BYTES: usize = 4;

/// Length of a stored vector of `dim` dimensions: `dim` i8 components, then the f32 scale.
pub(super) fn stored_len(dim: usize) -> usize {
    dim + SCALE_BYTES
}

/// A normalised vector as the graph stores it: each component rounded to an i8 step of
/// `max |x| / 127`, that scale appended (its four bytes). A quarter of the f32 bytes (at 1M ×
/// 256 dims the graph held 1 GB of vectors); the scale per vector keeps the rounding error
/// within half a step of the vector's largest component (recall is measured by
/// `evident-bench retrieve` against the exact scan).
pub(super) fn quantize(v: &[f32]) -> Vec<i8> {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let mut out: Vec<i8> = v
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    out.extend(scale.to_le_bytes().map(|b| b as i8));
    out
}

/// The components and scale of a stored vector.
fn split(stored: &[i8]) -> (&[i8], f32) {
    let (components, scale) = stored.split_at(stored.len() - SCALE_BYTES);
    let bytes: [u8; SCALE_BYTES] = std::array::from_fn(|i| scale[i] as u8);
    (components, f32::from_le_bytes(bytes))
}

/// Dot product of i8 components in sixteen i32 lanes (vectorised like [`dot`]).
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let mut lanes = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| *x as i32 * *y as i32)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            lanes[i] += x[i] as i32 * y[i] as i32;
        }
    }
    lanes.iter().sum::<i32>() + tail
}

/// Cosine similarity of two stored (quantized, normalised) vectors.
pub(super) fn similarity(a: &[i8], b: &[i8]) -> f32 {
    let ((ca, sa), (cb, sb)) = (split(a), split(b));
    dot_i8(ca, cb) as f32 * sa * sb
}

/// Every vector in the graph and every query is normalised and quantized ([`quantize`]), so
/// cosine distance is `1 − scale_a · scale_b · dot` over the i8 components: the graph uses
/// that (usearch's own i8 cosine knows no per-vector scale). Not saved with the graph: set
/// again after every load.
#[allow(unsafe_code)] // usearch hands a custom metric raw pointers; see SAFETY below.
pub(super) fn use_quantized_cosine(index: &mut usearch::Index, dim: usize) {
    let len = stored_len(dim);
    index.change_metric::<i8>(Box::new(move |a, b| {
        // SAFETY: usearch calls the metric with two vectors of the index's dimension, `len`
        // i8 values (stored vectors, or a query it checked against that dimension).
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts(a, len),
                std::slice::from_raw_parts(b, len),
            )
        };
        1.0 - similarity(a, b)
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
    /// [`GRAPH_FORMAT`] of the saved graph (absent: format 1, f32 vectors).
    #[serde(default = "format_one")]
    pub(super) format: u32,
}

fn format_one() -> u32 {
    1
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
    if state.format != GRAPH_FORMAT {
        return Err(format!(
            "saved vector index is in format {} (this build stores format {GRAPH_FORMAT})",
            state.format
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
        Ok(()) if hnsw.dimensions() == stored_len(space.dim) => {
            use_quantized_cosine(&mut hnsw, space.dim);
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
    // usearch creates the file under the process's umask: owner only, like the database.
    std::fs::set_permissions(
        &tmp,
        std::os::unix::fs::PermissionsExt::from_mode(crate::private::FILE_MODE),
    )
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
        format: GRAPH_FORMAT,
    };
    let tmp = state_path.with_extension("json.tmp");
    let bytes = serde_json::to_vec(&state).map_err(|e| StoreError::corrupt(e.to_string()))?;
    crate::private::write_file(&tmp, &bytes)
        .and_then(|_| std::fs::rename(&tmp, state_path))
        .map_err(|e| StoreError::unavailable(format!("saving vector index state: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random normalised vectors (xorshift).
    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        normalize(&mut v);
        v
    }

    #[test]
    fn quantized_similarity_stays_within_a_hundredth_of_the_exact_cosine() {
        for (dim, seed) in [(256, 1), (256, 2), (8, 3), (17, 4), (384, 5)] {
            let (a, b) = (unit(seed, dim), unit(seed + 100, dim));
            let (qa, qb) = (quantize(&a), quantize(&b));
            assert_eq!(qa.len(), stored_len(dim));
            let exact = dot(&a, &b);
            assert!((similarity(&qa, &qb) - exact).abs() < 0.01, "dim {dim}");
            assert!((similarity(&qa, &qa) - 1.0).abs() < 0.01, "dim {dim}");
        }
        // A zero vector quantizes to zeros (similarity 0), not to NaN.
        assert_eq!(
            similarity(&quantize(&[0.0; 8]), &quantize(&unit(9, 8))),
            0.0
        );
    }

    #[test]
    fn a_graph_saved_in_the_f32_format_is_refused_and_a_current_one_loads() {
        let dir = tempfile::tempdir().expect("tmp");
        let (index_path, state_path) = (dir.path().join("v.usearch"), dir.path().join("v.json"));
        let space = VectorSpace {
            embedder: "test".into(),
            dim: 8,
        };
        let hnsw = new_hnsw(8).expect("new");
        for key in 1..=50u64 {
            hnsw.add(key, &quantize(&unit(key, 8))).expect("add");
        }
        write_saved(&hnsw, &index_path, &state_path, &space, 50).expect("save");
        let (loaded, mark) = load_saved(&index_path, &state_path, &space, 50).expect("load");
        assert_eq!((loaded.size(), mark), (50, 50));
        let q = quantize(&unit(7, 8));
        let hits = loaded.search(&q, 1).expect("search");
        assert_eq!(
            hits.keys,
            vec![7],
            "the loaded graph answers with its metric"
        );
        // The state of a format-1 graph (f32 vectors) has no `format`: rebuilt, never loaded.
        let mut state: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&state_path).expect("read")).expect("json");
        state.as_object_mut().expect("object").remove("format");
        std::fs::write(&state_path, serde_json::to_vec(&state).expect("json")).expect("write");
        let refused = load_saved(&index_path, &state_path, &space, 50).map(|_| ());
        assert!(
            matches!(&refused, Err(reason) if reason.contains("format 1")),
            "{refused:?}"
        );
    }
}
