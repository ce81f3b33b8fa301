//! The memory budget: measured per structure, new chunks refused past it (nothing written),
//! deletes still allowed, writes accepted again once there is room.

use evident_core::{Scope, Visibility};
use evident_store::conformance::{DIM, axis, chunk, vector_space};
use evident_store::{ChunkFilter, ChunkStore, ErrorKind, RecordUpdate, SourceWrite, SourceWriter};

use super::{cache_per_connection, cache_size_pragma};
use crate::{EmbeddedOptions, EmbeddedStore};

fn write(urn: &str, n: usize) -> SourceWrite {
    let scope = Scope::client("a");
    SourceWrite {
        partition: "a".into(),
        source_urn: urn.into(),
        upsert_chunks: (0..n)
            .map(|i| {
                let id = format!("a:{urn}:{i}");
                let text = format!("budget ledger {urn} row {i} with some words to index");
                (
                    chunk(&scope, urn, &id, "doc", &text, i),
                    axis(DIM, i % 4, 0.1),
                )
            })
            .collect(),
        record: RecordUpdate::Keep,
        ..Default::default()
    }
}

#[test]
fn the_page_cache_is_a_tenth_of_the_budget_within_bounds() {
    let cases: [(u64, usize, u64); 6] = [
        (0, 5, 8 << 20),                  // no budget: the default
        (10 << 20, 5, 1 << 20),           // floor: 1 MiB
        (5 << 30, 5, 8 << 20),            // ceiling: the default, whatever the budget
        (200 << 20, 5, (200 << 20) / 50), // a tenth over five connections: 4 MiB
        (200 << 20, 1, 8 << 20),          // one connection gets the ceiling
        (200 << 20, 0, 8 << 20),          // no connections: no division by zero
    ];
    for (limit, connections, want) in cases {
        assert_eq!(
            cache_per_connection(limit, connections),
            want,
            "{limit} over {connections}"
        );
    }
    assert_eq!(cache_size_pragma(8 << 20), -8192, "KiB, negative");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_caches_are_the_default_without_a_budget_and_sized_by_one() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = EmbeddedStore::open(
        EmbeddedOptions::new(dir.path(), vector_space()).background_indexer(false),
    )
    .expect("open");
    let pragma = |store: &EmbeddedStore| -> Vec<i64> {
        let inner = &store.inner;
        std::iter::once(&inner.writer)
            .chain(&inner.readers)
            .map(|c| {
                c.lock()
                    .query_row("PRAGMA cache_size", [], |r| r.get(0))
                    .expect("pragma")
            })
            .collect()
    };
    assert_eq!(pragma(&store), vec![-8192; 5], "opened at the default");
    assert_eq!(store.memory_usage().sqlite_cache, 5 * (8 << 20));
    store.set_memory_budget(200 << 20).expect("budget");
    assert_eq!(pragma(&store), vec![-4096; 5]);
    assert_eq!(store.memory_usage().sqlite_cache, 5 * (4 << 20));
    store.set_memory_budget(0).expect("no budget");
    assert_eq!(pragma(&store), vec![-8192; 5]);
    // The caches as filled stay within their bound (a fresh store has read little).
    assert!(store.process_memory().sqlite_cache_used <= 5 * (8 << 20));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_past_the_budget_are_refused_whole_and_deletes_still_go_through() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = EmbeddedStore::open(
        EmbeddedOptions::new(dir.path(), vector_space()).background_indexer(false),
    )
    .expect("open");
    store.apply(write("doc:first", 200)).await.expect("first");
    let used = store.memory_usage();
    assert!(used.text_postings > 0 && used.text_rows > 0, "{used:?}");
    assert!(
        used.row_map > 0 && used.vectors > 0 && used.sqlite_cache > 0,
        "{used:?}"
    );

    // Below 50 MiB the page caches sit at their floor (1 MiB per connection), so usage
    // measured under one such budget holds under another: room for 4 KiB more.
    store.set_memory_budget(40 << 20).expect("budget");
    let budgeted = store.memory_usage().total();
    assert_eq!(store.memory_usage().sqlite_cache, 5 << 20);
    store.set_memory_budget(budgeted + 4096).expect("budget");
    let err = store
        .apply(write("doc:big", 500))
        .await
        .expect_err("refused");
    assert_eq!(err.kind, ErrorKind::CapacityExceeded);
    assert_eq!(err.code(), "capacity_exceeded");
    assert!(err.is_retryable());
    assert!(err.message.contains("memory_budget"), "{}", err.message);
    let vis = Visibility::of(Scope::client("a"));
    let found = store
        .search_text(&vis, "doc big", &ChunkFilter::default(), 10)
        .await
        .expect("search");
    assert!(
        found.iter().all(|h| !h.chunk_id.contains("doc:big")),
        "nothing written"
    );

    // Deleting is always allowed, and a raised budget takes the write.
    store
        .apply(SourceWrite {
            partition: "a".into(),
            source_urn: "doc:first".into(),
            delete_chunk_ids: vec!["a:doc:first:0".into()],
            ..Default::default()
        })
        .await
        .expect("delete");
    store
        .set_memory_budget(budgeted + (64 << 20))
        .expect("budget");
    store.apply(write("doc:big", 500)).await.expect("accepted");
    store.set_memory_budget(0).expect("no budget");
    store.apply(write("doc:more", 50)).await.expect("unlimited");
}
