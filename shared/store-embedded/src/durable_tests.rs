//! A write is answered only after an fsync that started after its commit (ADR 0009).

use std::sync::Arc;
use std::sync::mpsc;

use evident_store::conformance::vector_space;
use evident_store::{ChunkStore, SourceWrite};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::SyncWal;
use crate::EmbeddedStore;
use crate::write::Job;
use crate::write::tests::source;

/// A syncer that says when an fsync starts and finishes it only when told to (or fails it).
struct Held {
    entered: Mutex<mpsc::Sender<()>>,
    release: Mutex<mpsc::Receiver<std::io::Result<()>>>,
}

impl SyncWal for Held {
    fn sync(&self) -> std::io::Result<()> {
        self.entered.lock().send(()).expect("test listening");
        self.release
            .lock()
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("test gone")))
    }
}

fn open(dir: &std::path::Path) -> EmbeddedStore {
    EmbeddedStore::open(crate::EmbeddedOptions::new(dir, vector_space()).background_indexer(false))
        .expect("open")
}

/// Holds the store's fsyncs: returns (fsync started, finish the fsync with this result).
fn hold(store: &EmbeddedStore) -> (mpsc::Receiver<()>, mpsc::Sender<std::io::Result<()>>) {
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    store.inner.durability.set_syncer(Arc::new(Held {
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
    }));
    (entered, release)
}

fn send(
    store: &EmbeddedStore,
    write: SourceWrite,
) -> oneshot::Receiver<evident_store::Result<evident_store::RemovedCounts>> {
    let (reply, answer) = oneshot::channel();
    store
        .send_job(Job::Source {
            write,
            analyzed: Vec::new(),
            reply,
        })
        .expect("writer running");
    answer
}

async fn visible(store: &EmbeddedStore, id: &str) -> bool {
    let vis = evident_core::Visibility::of(evident_core::Scope::client("c"));
    !store
        .get(&vis, &[id.to_string()])
        .await
        .expect("get")
        .is_empty()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_is_answered_only_after_the_fsync_that_covers_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = open(dir.path());
    let (entered, release) = hold(&store);

    let mut first = send(&store, source(1));
    // The syncer got the group: it was committed and published before it was handed over.
    entered.recv().expect("fsync started");
    assert!(visible(&store, "d1").await, "committed and published");
    assert!(
        matches!(first.try_recv(), Err(oneshot::error::TryRecvError::Empty)),
        "answered before its fsync completed"
    );

    // The writer does not wait for the fsync: the next group commits meanwhile.
    let mut second = send(&store, source(2));
    let vis = evident_core::Visibility::of(evident_core::Scope::client("c"));
    while store
        .get(&vis, &["d2".to_string()])
        .await
        .expect("get")
        .is_empty()
    {
        tokio::task::yield_now().await;
    }
    assert!(matches!(
        second.try_recv(),
        Err(oneshot::error::TryRecvError::Empty)
    ));

    // The first fsync started before the second group committed: it answers only the first.
    release.send(Ok(())).expect("syncer waiting");
    first.await.expect("answered").expect("durable");
    entered.recv().expect("a second fsync for the second group");
    assert!(matches!(
        second.try_recv(),
        Err(oneshot::error::TryRecvError::Empty)
    ));
    release.send(Ok(())).expect("syncer waiting");
    second.await.expect("answered").expect("durable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_fsync_fails_its_writes_and_every_later_one() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = open(dir.path());
    let (entered, release) = hold(&store);

    let first = send(&store, source(1));
    entered.recv().expect("fsync started");
    release
        .send(Err(std::io::Error::other("EIO")))
        .expect("syncer waiting");
    let err = first.await.expect("answered").expect_err("not durable");
    assert!(err.to_string().contains("EIO"), "{err}");

    // Poisoned: no later fsync is trusted (nor even tried), so no later write is acknowledged.
    let second = send(&store, source(2));
    let err = second.await.expect("answered").expect_err("not durable");
    assert!(err.to_string().contains("EIO"), "{err}");
    assert!(
        entered.try_recv().is_err(),
        "a poisoned store tried another fsync"
    );
}

/// The real syncer on a real store: writes are answered, survive a reopen, and the WAL
/// frames of group commits are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commits_are_durable_and_counted() {
    let dir = tempfile::tempdir().expect("tmp");
    let before = crate::writer_stats::WriterStats::now();
    {
        let store = open(dir.path());
        for i in 0..3 {
            send(&store, source(i))
                .await
                .expect("answered")
                .expect("durable");
        }
        store.close().expect("close");
    }
    let stats = crate::writer_stats::WriterStats::now().since(&before);
    assert!(stats.syncs >= 1 && stats.wal_pages >= 3, "{stats}");
    let store = open(dir.path());
    for id in ["d0", "d1", "d2"] {
        assert!(visible(&store, id).await, "{id} after reopen");
    }
}
