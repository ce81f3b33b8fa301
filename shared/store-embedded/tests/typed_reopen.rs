//! Typed-knowledge labels are rebuilt into the row map when a store is reopened (read back
//! from each chunk's stored metadata), so filters answer the same before and after.

use evident_core::{KnowledgeType, Scope, Typed, TypedFilter, Visibility};
use evident_store::conformance::{DIM, axis, chunk, vector_space};
use evident_store::{ChunkFilter, ChunkStore, RecordUpdate, SourceWrite, SourceWriter};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

fn open(dir: &std::path::Path) -> EmbeddedStore {
    EmbeddedStore::open(EmbeddedOptions::new(dir, vector_space()).background_indexer(false))
        .expect("open")
}

async fn listed(store: &EmbeddedStore, f: &ChunkFilter) -> Vec<String> {
    let vis = Visibility::of(Scope::client("c"));
    let mut ids: Vec<String> = store
        .by_kind(&vis, f, 10)
        .await
        .expect("list")
        .into_iter()
        .map(|c| c.id)
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_survive_a_reopen() {
    let dir = tempfile::tempdir().expect("tmp");
    let scope = Scope::client("c");
    let store = open(dir.path());
    let mut fact = chunk(&scope, "urn:t", "t1", "piece", "alpha", 0);
    Typed::from_raw(
        Some(KnowledgeType::Fact),
        Some("context"),
        &[],
        Some("user:a"),
    )
    .expect("labels")
    .insert_into(&mut fact.metadata);
    let plain = chunk(&scope, "urn:t", "t2", "piece", "beta", 1);
    store
        .apply(SourceWrite {
            partition: "c".into(),
            source_urn: "urn:t".into(),
            upsert_chunks: vec![(fact, axis(DIM, 0, 0.0)), (plain, axis(DIM, 1, 0.0))],
            record: RecordUpdate::Keep,
            ..Default::default()
        })
        .await
        .expect("write");
    let f = ChunkFilter {
        kinds: Vec::new(),
        typed: TypedFilter {
            knowledge_types: vec![KnowledgeType::Fact],
            ..Default::default()
        },
    };
    assert_eq!(listed(&store, &f).await, vec!["t1"]);
    drop(store);
    let store = open(dir.path());
    assert_eq!(listed(&store, &f).await, vec!["t1"], "after reopen");
    assert_eq!(
        listed(&store, &ChunkFilter::default()).await,
        vec!["t1", "t2"]
    );
}
