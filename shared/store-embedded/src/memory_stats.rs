//! What the process's memory holds beside the structures `budget` counts from lengths and
//! capacities: SQLite's page caches as filled (the budget counts their configured bound), all
//! of SQLite's own allocations, and the C allocator's view (bytes handed out, bytes freed but
//! kept in its arenas). Read by benchmarks and `EmbeddedStore::memory_report`, so the RSS can
//! be accounted for per structure; and `release_free_memory`, which hands the allocator's
//! free pages back to the OS after a burst of building (a bulk ingest, a backlog drained).
//!
//! The C calls are a few `unsafe` lines: rusqlite has no safe `sqlite3_db_status`, and the
//! allocator statistics and trim are glibc functions (other targets report zeros and trim
//! nothing).

use rusqlite::Connection;

/// Memory the allocator and SQLite report, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    /// Pages held in the SQLite page caches of all the store's connections now.
    pub sqlite_cache_used: u64,
    /// Everything SQLite has allocated (caches, schemas, prepared statements), process-wide.
    pub sqlite_total: u64,
    /// Bytes the C allocator has handed out and not got back (Rust's heap included).
    pub heap_in_use: u64,
    /// Bytes freed but kept by the allocator in its arenas (fragmentation and slack): RSS
    /// as far as they were touched, until trimmed.
    pub heap_free: u64,
    /// Of `heap_in_use`, blocks the allocator mapped on their own (large buffers).
    pub heap_mmapped: u64,
}

/// The bytes of `conn`'s page cache in use now.
#[allow(unsafe_code)] // sqlite3_db_status: see SAFETY below.
pub(crate) fn cache_used(conn: &Connection) -> u64 {
    let (mut current, mut high) = (0i32, 0i32);
    // SAFETY: the handle is valid while `conn` is borrowed (and its mutex held by the caller),
    // and the two out-pointers are live locals.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_db_status(
            conn.handle(),
            rusqlite::ffi::SQLITE_DBSTATUS_CACHE_USED,
            &mut current,
            &mut high,
            0,
        )
    };
    if rc == rusqlite::ffi::SQLITE_OK {
        current.max(0) as u64
    } else {
        0
    }
}

/// Everything SQLite holds now, process-wide.
#[allow(unsafe_code)] // a plain FFI read of a counter.
pub(crate) fn sqlite_total() -> u64 {
    // SAFETY: no arguments; SQLite reads its own counter under its mutex.
    unsafe { rusqlite::ffi::sqlite3_memory_used() }.max(0) as u64
}

/// The allocator's statistics: (in use, free in arenas, mapped on their own).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // glibc's mallinfo2: see SAFETY below.
pub(crate) fn heap() -> (u64, u64, u64) {
    // SAFETY: mallinfo2 takes no arguments and returns a plain struct by value.
    let m = unsafe { libc::mallinfo2() };
    (
        (m.uordblks + m.hblkhd) as u64,
        m.fordblks as u64,
        m.hblkhd as u64,
    )
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn heap() -> (u64, u64, u64) {
    (0, 0, 0)
}

/// Returns the allocator's free pages to the OS (glibc `malloc_trim`: the top of every arena
/// and whole free pages inside them). Takes the arenas' locks while it walks them; call it
/// from a background thread after a burst of freeing, not on a query path.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // glibc's malloc_trim: see SAFETY below.
pub fn release_free_memory() {
    // SAFETY: malloc_trim only walks and releases the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() {}

/// Trims the allocator after `what` (a save, a drained backlog) freed its buffers, logging
/// what it cost.
pub(crate) fn trim_after(what: &'static str) {
    let started = std::time::Instant::now();
    let (_, free_before, _) = heap();
    release_free_memory();
    tracing::debug!(
        after = what,
        free_before_mib = free_before >> 20,
        free_after_mib = heap().1 >> 20,
        ms = started.elapsed().as_secs_f64() * 1e3,
        "allocator trimmed"
    );
}
