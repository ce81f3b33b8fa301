//! Pipelined durability (ADR 0009): group commits run with `synchronous=NORMAL` — COMMIT
//! appends the group's WAL frames without waiting for the disk — and a thread of its own
//! fsyncs the WAL file and only then answers the group's writes. The writer applies and
//! commits the next group while the previous one's fsync runs.
//!
//! The rule that keeps "acknowledged ⇒ durable": a group's answers are released only after
//! an fsync of the `-wal` file that *started after the group's COMMIT returned* has
//! completed. The writer hands a group's answers to the syncer after its COMMIT (and its
//! publishing), and the syncer starts its fsync after taking them off the channel, so every
//! fsync covers every group it answers. On Linux, fsync of any descriptor of a file flushes
//! the file's dirty pages, so our own descriptor of `evident.db-wal` suffices; SQLite takes no
//! POSIX locks on the WAL file, so opening and closing it here releases none of SQLite's.
//! The WAL is a log: an fsync covering group N covers every earlier group too.
//!
//! Checkpoints and WAL restarts keep the rule: under `NORMAL` SQLite still fsyncs the WAL
//! before a checkpoint copies it into the database, fsyncs the database after, and fsyncs the
//! WAL header when it starts reusing the file; frames are overwritten only after they reached
//! the (synced) database file. So a committed group's frames are either in the WAL file our
//! fsync flushes or already durable in `evident.db`. A missing WAL file means SQLite closed
//! it after a complete (synced) checkpoint: nothing to flush.
//!
//! A failed fsync poisons the store's durability: the pages it could not write may have been
//! dropped from the page cache, so a later fsync that succeeds proves nothing. Every write
//! answered after it fails (the rows may be visible; writes are idempotent and may be
//! retried after the store is reopened).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use evident_store::{Result, StoreError};
use parking_lot::{Mutex, RwLock};

/// Makes everything written to the WAL file so far durable.
pub(crate) trait SyncWal: Send + Sync {
    fn sync(&self) -> io::Result<()>;
}

/// The real one: `fdatasync` of `evident.db-wal` (and of the directory the first time a WAL
/// file is seen, so that its name survives too).
pub(crate) struct WalFile {
    wal: PathBuf,
    dir: PathBuf,
    /// Inode of the WAL file whose directory entry was synced.
    dir_synced_for: Mutex<Option<u64>>,
}

impl WalFile {
    pub(crate) fn new(dir: &std::path::Path) -> WalFile {
        WalFile {
            wal: dir.join("evident.db-wal"),
            dir: dir.to_path_buf(),
            dir_synced_for: Mutex::new(None),
        }
    }
}

impl SyncWal for WalFile {
    fn sync(&self) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let file = match std::fs::File::open(&self.wal) {
            Ok(f) => f,
            // Deleted by SQLite only after a complete, synced checkpoint at close.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        file.sync_data()?;
        let inode = file.metadata()?.ino();
        let mut synced = self.dir_synced_for.lock();
        if *synced != Some(inode) {
            std::fs::File::open(&self.dir)?.sync_all()?;
            *synced = Some(inode);
        }
        Ok(())
    }
}

/// The store's WAL syncing: inline (`sync_now`) or through the syncer thread.
pub(crate) struct Durability {
    syncer: RwLock<Arc<dyn SyncWal>>,
    /// Set by the first failed fsync; every later sync fails with it.
    failed: Mutex<Option<String>>,
}

/// A write's answer, released once its group is durable (or with the reason it is not).
pub(crate) type Ack = Box<dyn FnOnce(Result<()>) + Send>;

impl Durability {
    pub(crate) fn new(syncer: Arc<dyn SyncWal>) -> Durability {
        Durability {
            syncer: RwLock::new(syncer),
            failed: Mutex::new(None),
        }
    }

    /// Replaces how the WAL is synced (tests hold the fsync to watch the answers wait).
    #[cfg(test)]
    pub(crate) fn set_syncer(&self, syncer: Arc<dyn SyncWal>) {
        *self.syncer.write() = syncer;
    }

    /// Fsyncs the WAL now, on this thread: everything committed before the call is durable
    /// when it returns `Ok`.
    pub(crate) fn sync_now(&self) -> Result<()> {
        if let Some(why) = self.failed.lock().as_ref() {
            return Err(poisoned(why));
        }
        let syncer = self.syncer.read().clone();
        let started = Instant::now();
        let done = syncer.sync();
        crate::writer_stats::synced(started.elapsed());
        done.map_err(|e| {
            tracing::error!(error = %e, "fsync of the WAL failed; no further write is acknowledged until the store is reopened");
            poisoned(self.failed.lock().get_or_insert(e.to_string()))
        })
    }
}

fn poisoned(why: &str) -> StoreError {
    StoreError::unavailable(format!(
        "the write was committed but its fsync failed ({why}); reopen the store and retry"
    ))
}

/// Starts the syncer thread; the writer sends each committed group's answers to the sender.
pub(crate) fn start(
    durability: Arc<Durability>,
) -> Result<(mpsc::Sender<Vec<Ack>>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<Vec<Ack>>();
    let handle = std::thread::Builder::new()
        .name("evident-wal-sync".into())
        .spawn(move || run(&durability, rx))
        .map_err(|e| StoreError::unavailable(format!("starting the WAL syncer: {e}")))?;
    Ok((tx, handle))
}

/// Takes every group committed so far, fsyncs once (started after all of them committed),
/// answers them. Ends when the writer is gone and everything it sent is answered.
fn run(durability: &Durability, groups: mpsc::Receiver<Vec<Ack>>) {
    while let Ok(mut acks) = groups.recv() {
        while let Ok(more) = groups.try_recv() {
            acks.extend(more);
        }
        let durable = durability.sync_now();
        for ack in acks {
            ack(durable.clone());
        }
    }
}

#[cfg(test)]
#[path = "durable_tests.rs"]
mod tests;
