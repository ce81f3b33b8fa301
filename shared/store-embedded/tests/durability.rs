//! Crash and restart paths of the embedded store: the vector index is derived state and is
//! rebuilt or caught up from SQLite; a different embedder is refused.

use evident_store::conformance::{axis, chunk};
use evident_store::{ChunkFilter, ErrorKind, SourceWrite, VectorSpace};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

const DIM: usize = 16;

fn open(
    dir: &std::path::Path,
    embedder: &str,
    background: bool,
) -> evident_store::Result<EmbeddedStore> {
    let space = VectorSpace {
        embedder: embedder.into(),
        dim: DIM,
    };
    EmbeddedStore::open(EmbeddedOptions::new(dir, space).background_indexer(background))
}

async fn write(store: &EmbeddedStore, ids: std::ops::Range<usize>) {
    let scope = evident_core::Scope::client("c");
    let chunks = ids
        .map(|i| {
            (
                chunk(
                    &scope,
                    "urn:d",
                    &format!("d{i}"),
                    "doc",
                    &format!("text {i}"),
                    i,
                ),
                axis(DIM, i, 0.0),
            )
        })
        .collect();
    store
        .stores()
        .writer
        .apply(SourceWrite {
            partition: "c".into(),
            source_urn: "urn:d".into(),
            upsert_chunks: chunks,
            ..Default::default()
        })
        .await
        .expect("write");
}

async fn nearest(store: &EmbeddedStore, i: usize) -> Option<String> {
    let vis = evident_core::Visibility::of(evident_core::Scope::client("c"));
    store
        .stores()
        .chunks
        .search_vector(&vis, &axis(DIM, i, 0.0), &ChunkFilter::default(), 1)
        .await
        .expect("knn")
        .first()
        .map(|h| h.chunk_id.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsaved_index_is_caught_up_from_sqlite_after_a_crash() {
    let dir = tempfile::tempdir().expect("tmp");
    {
        let store = open(dir.path(), "e1", false).expect("open");
        write(&store, 0..8).await;
        store.drain_vector_index().expect("drain");
        store.close().expect("close saves the index");
        let store = open(dir.path(), "e1", false).expect("reopen");
        write(&store, 8..12).await;
        // Dropped without close: a crash. The saved index lacks d8..d11.
    }
    let store = open(dir.path(), "e1", false).expect("reopen after crash");
    let (indexed, pending) = store.vector_index_status();
    assert_eq!(
        (indexed, pending),
        (8, 4),
        "saved graph loaded, newer rows in the exact tail"
    );
    assert_eq!(nearest(&store, 10).await.as_deref(), Some("d10"));
    assert_eq!(nearest(&store, 3).await.as_deref(), Some("d3"));
    store.drain_vector_index().expect("drain");
    assert_eq!(store.vector_index_status(), (12, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_corrupt_index_is_rebuilt() {
    let dir = tempfile::tempdir().expect("tmp");
    {
        let store = open(dir.path(), "e1", false).expect("open");
        write(&store, 0..6).await;
        store.drain_vector_index().expect("drain");
        store.close().expect("close");
    }
    // Damage of two kinds: foreign bytes, and a real index cut short. Neither may reach the
    // C++ loader (it trusts what it reads); both are rebuilt from the stored embeddings.
    let index = dir.path().join("vectors.usearch");
    let intact = std::fs::read(&index).expect("read index");
    for damaged in [
        b"not an index".to_vec(),
        intact[..intact.len() / 2].to_vec(),
    ] {
        std::fs::write(&index, &damaged).expect("damage it");
        let store = open(dir.path(), "e1", true).expect("reopen");
        assert_eq!(nearest(&store, 5).await.as_deref(), Some("d5"));
        store.close().expect("close");
    }
    std::fs::remove_file(dir.path().join("vectors.usearch")).expect("remove");
    let store = open(dir.path(), "e1", false).expect("reopen");
    assert_eq!(
        store.vector_index_status(),
        (0, 6),
        "everything rebuilt from stored embeddings"
    );
    assert_eq!(nearest(&store, 2).await.as_deref(), Some("d2"));
    let report = store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_embedder_is_refused_rather_than_mixing_vectors() {
    let dir = tempfile::tempdir().expect("tmp");
    open(dir.path(), "e1", false)
        .expect("open")
        .close()
        .expect("close");
    let err = open(dir.path(), "e2", false).err().expect("refused");
    assert_eq!(err.kind, ErrorKind::Incompatible);
    assert!(
        err.message.contains("e1") && err.message.contains("e2"),
        "{}",
        err.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_atomic_a_failed_write_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = open(dir.path(), "e1", false).expect("open");
    let scope = evident_core::Scope::client("c");
    // An edge without evidence violates the contract: the whole write must roll back.
    let bad = SourceWrite {
        partition: "c".into(),
        source_urn: "urn:x".into(),
        upsert_chunks: vec![(
            chunk(&scope, "urn:x", "x1", "doc", "atomic text", 0),
            axis(DIM, 1, 0.0),
        )],
        edges: vec![evident_core::EdgeWrite {
            from: evident_core::NodeKey::from_canonical("a:b"),
            to: evident_core::NodeKey::from_canonical("c:d"),
            edge_type: "rel".into(),
            props: Default::default(),
            evidence: vec![],
        }],
        ..Default::default()
    };
    assert!(store.stores().writer.apply(bad).await.is_err());
    let report = store.check_integrity().await.expect("integrity");
    assert_eq!((report.chunks, report.nodes, report.edges), (0, 0, 0));
    assert_eq!(
        nearest(&store, 1).await,
        None,
        "nothing reached the vector index either"
    );
}
