//! The memory budget (`[store] memory_budget`): what the in-memory structures hold, measured
//! per structure, and the refusal of new chunks once they would outgrow the budget.
//!
//! Why refuse rather than degrade: every structure counted here is what makes a query fast
//! (postings, the row map every search filters with, the HNSW graph with its vectors); paging
//! them to disk would turn a 5 ms query into a disk-bound one without saying so. A write that
//! adds chunks past the budget fails with `capacity_exceeded` (HTTP 507, retryable: it succeeds
//! once data is purged or the budget raised); deletes, purges and every other write go on, so
//! the way back under the budget stays open. The SQLite page cache is sized from the budget
//! (a tenth of it over the connections, at most 64 MiB each) and counted at its configured
//! size. What is not counted: the process's own code and buffers, request working memory, the
//! transient copy of a save — `docs/capacity.md` says how much to leave for those.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use evident_store::{ErrorKind, Result, SourceWrite, StoreError};
use parking_lot::Mutex;

use crate::Inner;

/// Measurements are refreshed at most this often by writes (a measurement walks the term
/// list and the row map: ~10 ms at a million chunks).
const REMEASURE: Duration = Duration::from_secs(1);
/// Largest SQLite page cache per connection.
const MAX_CACHE_PER_CONNECTION: u64 = 64 << 20;

/// Bytes held by each in-memory structure of the embedded store (estimated from lengths and
/// capacities, not from the allocator).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// BM25 posting lists and the term dictionary.
    pub text_postings: u64,
    /// BM25 per-row maps (length, partition, title hash).
    pub text_rows: u64,
    /// The row map every search filters with (chunk id, scope, kind, typed labels per row).
    pub row_map: u64,
    /// The HNSW graph with its vectors, and the tail of vectors not yet in it.
    pub vectors: u64,
    /// SQLite page caches at their configured size (an upper bound).
    pub sqlite_cache: u64,
}

impl MemoryUsage {
    pub fn total(&self) -> u64 {
        self.text_postings + self.text_rows + self.row_map + self.vectors + self.sqlite_cache
    }
}

/// The configured budget and the last measurement.
#[derive(Default)]
pub(crate) struct Budget {
    /// Bytes; 0: no budget.
    limit: AtomicU64,
    cache_per_connection: AtomicU64,
    last: Mutex<Option<(Instant, MemoryUsage)>>,
}

impl Budget {
    pub(crate) fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }
}

/// The SQLite page cache per connection for a budget (`None`: keep the default).
pub(crate) fn cache_per_connection(limit: u64, connections: usize) -> Option<u64> {
    (limit > 0).then(|| (limit / 10 / connections as u64).clamp(1 << 20, MAX_CACHE_PER_CONNECTION))
}

/// Sets the budget and sizes every connection's page cache from it.
pub(crate) fn configure(inner: &Inner, limit: u64) -> Result<()> {
    let connections = inner.readers.len() + 1;
    let per = cache_per_connection(limit, connections).unwrap_or(MAX_CACHE_PER_CONNECTION);
    let kib = -((per >> 10) as i64);
    for conn in std::iter::once(&inner.writer).chain(&inner.readers) {
        conn.lock()
            .pragma_update(None, "cache_size", kib)
            .map_err(crate::sqlite_err)?;
    }
    inner
        .budget
        .cache_per_connection
        .store(per, Ordering::Relaxed);
    inner.budget.limit.store(limit, Ordering::Relaxed);
    *inner.budget.last.lock() = None;
    Ok(())
}

/// Measures every structure now.
pub(crate) fn measure(inner: &Inner) -> MemoryUsage {
    let (text_postings, text_rows) = inner.text.heap_bytes();
    let per = match inner.budget.cache_per_connection.load(Ordering::Relaxed) {
        0 => MAX_CACHE_PER_CONNECTION,
        n => n,
    };
    // One walk of the row map for both of the vector side's figures.
    let vectors = inner.vectors.memory();
    let usage = MemoryUsage {
        text_postings: text_postings as u64,
        text_rows: text_rows as u64,
        row_map: vectors.row_map as u64,
        vectors: (vectors.graph + vectors.tail) as u64,
        sqlite_cache: per * (inner.readers.len() as u64 + 1),
    };
    *inner.budget.last.lock() = Some((Instant::now(), usage));
    usage
}

/// What `chunks` new chunks of `dim`-d vectors and `text_bytes` of text will add, roughly: the
/// vector in the graph with its links, the row's entries, postings of its distinct terms.
fn incoming(chunks: usize, dim: usize, text_bytes: usize) -> u64 {
    (chunks * (dim * 4 + 160 + 200) + text_bytes * 2) as u64
}

/// Refuses a write that adds chunks when the store would outgrow its budget.
pub(crate) fn admit(inner: &Inner, write: &SourceWrite) -> Result<()> {
    let limit = inner.budget.limit();
    if limit == 0 || write.upsert_chunks.is_empty() {
        return Ok(());
    }
    let recent = *inner.budget.last.lock();
    let used = match recent {
        Some((at, usage)) if at.elapsed() < REMEASURE => usage,
        _ => measure(inner),
    };
    let text: usize = write
        .upsert_chunks
        .iter()
        .map(|(c, _)| c.content.len() + c.title.as_ref().map_or(0, String::len))
        .sum();
    let adds = incoming(write.upsert_chunks.len(), inner.vectors.space().dim, text);
    if used.total() + adds <= limit {
        return Ok(());
    }
    let mib = |b: u64| b >> 20;
    Err(StoreError::new(
        ErrorKind::CapacityExceeded,
        format!(
            "the store's memory budget ({} MiB, [store] memory_budget) would be exceeded: \
             {} MiB in use (text postings {}, text rows {}, row map {}, vectors {}, SQLite cache {} MiB) \
             and this write adds ~{} MiB; purge data or raise the budget",
            mib(limit),
            mib(used.total()),
            mib(used.text_postings),
            mib(used.text_rows),
            mib(used.row_map),
            mib(used.vectors),
            mib(used.sqlite_cache),
            mib(adds).max(1)
        ),
    ))
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
