//! Where the writer thread's time goes, counted process-wide (every store of the process
//! adds to the same counters): groups committed, their members, and the time spent applying
//! them, committing (WAL append; the fsync runs on the syncer thread, `durable`) and
//! publishing to the in-memory indexes, the WAL frames (pages) each group appended, and the
//! syncer's fsyncs. Read by the benchmarks to attribute the single writer's time; costs two
//! clock reads per phase.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static GROUPS: AtomicU64 = AtomicU64::new(0);
static SOURCES: AtomicU64 = AtomicU64::new(0);
static OPS: AtomicU64 = AtomicU64::new(0);
static APPLY_NS: AtomicU64 = AtomicU64::new(0);
static COMMIT_NS: AtomicU64 = AtomicU64::new(0);
static PUBLISH_NS: AtomicU64 = AtomicU64::new(0);
static WAL_PAGES: AtomicU64 = AtomicU64::new(0);
static SYNCS: AtomicU64 = AtomicU64::new(0);
static SYNC_NS: AtomicU64 = AtomicU64::new(0);

/// A snapshot of the counters; subtract two to measure a span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Group commits (transactions) run.
    pub groups: u64,
    /// Source writes in them.
    pub sources: u64,
    /// Small writes (queue, aliases, graph upserts) in them.
    pub ops: u64,
    /// Applying members inside the transaction.
    pub apply: Duration,
    /// `COMMIT`: WAL append and fsync.
    pub commit: Duration,
    /// Publishing committed rows to the text and vector indexes.
    pub publish: Duration,
    /// WAL frames (pages) the group commits appended (SQLite's `SQLITE_DBSTATUS_CACHE_WRITE`).
    pub wal_pages: u64,
    /// Fsyncs of the WAL by the syncer (and inline barriers).
    pub syncs: u64,
    /// Time in them (on the syncer thread, overlapping the writer's next group).
    pub sync: Duration,
}

impl WriterStats {
    /// The counters now.
    pub fn now() -> WriterStats {
        let d = |a: &AtomicU64| Duration::from_nanos(a.load(Ordering::Relaxed));
        WriterStats {
            groups: GROUPS.load(Ordering::Relaxed),
            sources: SOURCES.load(Ordering::Relaxed),
            ops: OPS.load(Ordering::Relaxed),
            apply: d(&APPLY_NS),
            commit: d(&COMMIT_NS),
            publish: d(&PUBLISH_NS),
            wal_pages: WAL_PAGES.load(Ordering::Relaxed),
            syncs: SYNCS.load(Ordering::Relaxed),
            sync: d(&SYNC_NS),
        }
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &WriterStats) -> WriterStats {
        WriterStats {
            groups: self.groups - earlier.groups,
            sources: self.sources - earlier.sources,
            ops: self.ops - earlier.ops,
            apply: self.apply.saturating_sub(earlier.apply),
            commit: self.commit.saturating_sub(earlier.commit),
            publish: self.publish.saturating_sub(earlier.publish),
            wal_pages: self.wal_pages - earlier.wal_pages,
            syncs: self.syncs - earlier.syncs,
            sync: self.sync.saturating_sub(earlier.sync),
        }
    }
}

impl std::fmt::Display for WriterStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let per = |n: u64| {
            if self.groups == 0 {
                0.0
            } else {
                n as f64 / self.groups as f64
            }
        };
        let per_source = if self.sources == 0 {
            0.0
        } else {
            self.wal_pages as f64 / self.sources as f64
        };
        write!(
            f,
            "writer: {} groups ({:.1} source writes + {:.1} small writes each); apply {:.2} s, commit {:.2} s, publish {:.2} s; WAL {} pages ({:.1} per group, {:.1} per source write); {} fsyncs, {:.2} s",
            self.groups,
            per(self.sources),
            per(self.ops),
            self.apply.as_secs_f64(),
            self.commit.as_secs_f64(),
            self.publish.as_secs_f64(),
            self.wal_pages,
            per(self.wal_pages),
            per_source,
            self.syncs,
            self.sync.as_secs_f64()
        )
    }
}

fn add(a: &AtomicU64, d: Duration) {
    a.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
}

pub(crate) fn group(sources: usize, ops: usize) {
    GROUPS.fetch_add(1, Ordering::Relaxed);
    SOURCES.fetch_add(sources as u64, Ordering::Relaxed);
    OPS.fetch_add(ops as u64, Ordering::Relaxed);
}

pub(crate) fn applied(d: Duration) {
    add(&APPLY_NS, d);
}

pub(crate) fn committed(d: Duration) {
    add(&COMMIT_NS, d);
}

pub(crate) fn published(d: Duration) {
    add(&PUBLISH_NS, d);
}

pub(crate) fn synced(d: Duration) {
    SYNCS.fetch_add(1, Ordering::Relaxed);
    add(&SYNC_NS, d);
}

pub(crate) fn wal_pages(pages: u64) {
    WAL_PAGES.fetch_add(pages, Ordering::Relaxed);
}

/// The WAL frames `conn` wrote since the last call (SQLite's per-connection counter of pages
/// written, which in WAL mode counts WAL frames; read and reset).
pub(crate) fn take_pages_written(conn: &rusqlite::Connection) -> u64 {
    let (mut current, mut highwater) = (0, 0);
    // SAFETY: `handle` is this open connection's pointer, used on the thread holding it, and
    // `sqlite3_db_status` only reads (and resets) a counter of it into the two integers.
    #[allow(unsafe_code)]
    let rc = unsafe {
        rusqlite::ffi::sqlite3_db_status(
            conn.handle(),
            rusqlite::ffi::SQLITE_DBSTATUS_CACHE_WRITE,
            &mut current,
            &mut highwater,
            1,
        )
    };
    if rc == rusqlite::ffi::SQLITE_OK {
        current.max(0) as u64
    } else {
        0
    }
}
