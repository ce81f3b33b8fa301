//! The memory budget (`[store] memory_budget`): what the in-memory structures hold, measured
//! per structure, and the refusal of new chunks once they would outgrow the budget.
//!
//! Why refuse rather than degrade: every structure counted here is what makes a query fast
//! (postings, the row map every search filters with, the HNSW graph with its vectors); paging
//! them to disk would turn a 5 ms query into a disk-bound one without saying so. A write that
//! adds chunks past the budget fails with `capacity_exceeded` (HTTP 507, retryable: it succeeds
//! once data is purged or the budget raised); deletes, purges and every other write go on, so
//! the way back under the budget stays open. The SQLite page caches are sized here: 8 MiB per
//! connection without a budget, and with one a tenth of it over the connections, between
//! 1 MiB and those 8 MiB each; they are counted at that configured size (SQLite keeps a
//! connection's cache within it). What is not counted: the process's own code and buffers,
//! request working memory, the allocator's free-but-kept pages, the transient copy of a
//! save — `docs/capacity.md` says how much to leave for those.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use evident_store::{ErrorKind, Result, SourceWrite, StoreError};
use parking_lot::Mutex;

use crate::Inner;

/// Measurements are refreshed at most this often by writes (a measurement walks the term
/// list and the row map: ~10 ms at a million chunks).
const REMEASURE: Duration = Duration::from_secs(1);
/// SQLite page cache per connection without a budget, and the most a budget gives one.
/// Measured (`docs/benchmarks.md`, 2026-11-27 memory section): at 300k chunks 8 MiB instead
/// of 64 MiB per connection left retrieve as fast (p50/p99 5.30/14.94 → 4.96/13.88 ms) and
/// ingest no slower, and took 274 MiB off the RSS — the five caches had filled their 320 MiB.
/// A miss reads the page from the OS page cache (a copy, not a disk read), which holds the
/// database file outside the process's RSS; a larger cache only moved those pages inside it.
pub(crate) const DEFAULT_CACHE_PER_CONNECTION: u64 = 8 << 20;
/// Smallest page cache a budget sizes a connection to.
const MIN_CACHE_PER_CONNECTION: u64 = 1 << 20;

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

/// The SQLite page cache per connection for a budget (0: none): a tenth of the budget over
/// the connections, between 1 MiB and the default.
pub(crate) fn cache_per_connection(limit: u64, connections: usize) -> u64 {
    if limit == 0 {
        return DEFAULT_CACHE_PER_CONNECTION;
    }
    (limit / 10 / connections.max(1) as u64)
        .clamp(MIN_CACHE_PER_CONNECTION, DEFAULT_CACHE_PER_CONNECTION)
}

/// `PRAGMA cache_size` for `bytes` (negative: KiB rather than pages).
pub(crate) fn cache_size_pragma(bytes: u64) -> i64 {
    -((bytes >> 10) as i64)
}

/// Sets the budget and sizes every connection's page cache from it.
pub(crate) fn configure(inner: &Inner, limit: u64) -> Result<()> {
    let connections = inner.readers.len() + 1;
    let per = cache_per_connection(limit, connections);
    set_page_caches(inner, per)?;
    inner.budget.limit.store(limit, Ordering::Relaxed);
    *inner.budget.last.lock() = None;
    Ok(())
}

/// Sizes every connection's page cache to `per` bytes (lowering it frees pages at once).
fn set_page_caches(inner: &Inner, per: u64) -> Result<()> {
    let kib = cache_size_pragma(per);
    for conn in std::iter::once(&inner.writer).chain(&inner.readers) {
        conn.lock()
            .pragma_update(None, "cache_size", kib)
            .map_err(crate::sqlite_err)?;
    }
    inner
        .budget
        .cache_per_connection
        .store(per, Ordering::Relaxed);
    *inner.budget.last.lock() = None;
    Ok(())
}

/// Measures every structure now.
pub(crate) fn measure(inner: &Inner) -> MemoryUsage {
    let (text_postings, text_rows) = inner.text.heap_bytes();
    let per = match inner.budget.cache_per_connection.load(Ordering::Relaxed) {
        0 => DEFAULT_CACHE_PER_CONNECTION, // no budget configured yet: the open's size
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
    // The graph holds i8 vectors with a scale (`dim + 4`) and ~540 B of links per vector.
    (chunks * (dim + 4 + 540 + 200) + text_bytes * 2) as u64
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
