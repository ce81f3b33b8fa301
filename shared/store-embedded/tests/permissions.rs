//! The data directory is the owner's only: 0700, and every file in it (database, WAL,
//! shared memory, text index, vector index, lock) 0600 — on a fresh directory whatever the
//! process's umask, and on an existing one left wider, which open tightens.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use evident_core::Scope;
use evident_store::conformance::{DIM, axis, chunk, vector_space};
use evident_store::{RecordUpdate, SourceWrite, SourceWriter};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

fn open(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open(EmbeddedOptions::new(dir, vector_space()).background_indexer(false))
        .expect("open")
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("stat").permissions().mode() & 0o777
}

/// Every file and folder under `dir` (recursively) with a group or other bit, and the names
/// of the files seen.
fn wide_and_seen(dir: &Path) -> (Vec<String>, Vec<String>) {
    let (mut wide, mut seen) = (Vec::new(), Vec::new());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("list").flatten() {
            let p = e.path();
            let name = p.strip_prefix(dir).expect("under").display().to_string();
            if mode(&p) & 0o077 != 0 {
                wide.push(format!("{name} {:o}", mode(&p)));
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                seen.push(name);
            }
        }
    }
    (wide, seen)
}

async fn write_something(store: &EmbeddedStore) {
    let scope = Scope::client("c");
    let c = chunk(&scope, "urn:p", "p1", "doc", "private ledger", 0);
    store
        .apply(SourceWrite {
            partition: "c".into(),
            source_urn: "urn:p".into(),
            upsert_chunks: vec![(c, axis(DIM, 0, 0.0))],
            record: RecordUpdate::Keep,
            ..Default::default()
        })
        .await
        .expect("write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_data_dir_is_the_owners_only() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("data");
    let store = open(&dir);
    write_something(&store).await;
    store.close().expect("close"); // saves text.index and the vector index
    let (wide, seen) = wide_and_seen(&dir);
    assert!(wide.is_empty(), "readable by others: {wide:?}");
    assert_eq!(mode(&dir), 0o700);
    for f in ["evident.db", "evident.db-wal", "LOCK", "text.index"] {
        assert!(seen.iter().any(|s| s == f), "{f} written: {seen:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wider_data_dir_is_tightened_at_open() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("data");
    {
        let store = open(&dir);
        write_something(&store).await;
        store.close().expect("close");
    }
    // As an older build (or a hand-made directory) left it.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for e in std::fs::read_dir(&dir).expect("list").flatten() {
        if e.path().is_file() {
            std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o644))
                .expect("chmod");
        }
    }
    assert!(!wide_and_seen(&dir).0.is_empty());
    let store = open(&dir);
    write_something(&store).await;
    let (wide, _) = wide_and_seen(&dir);
    assert!(wide.is_empty(), "still readable by others: {wide:?}");
    drop(store);
}
