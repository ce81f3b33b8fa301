//! The shared conformance suite on the embedded backend: once with its transactional writer,
//! once with the `SequencedWriter` that mixed deployments use, over the same traits.

use std::sync::Arc;

use evident_store::SequencedWriter;
use evident_store::conformance::{DIM, Harness, vector_space};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

fn open() -> (tempfile::TempDir, EmbeddedStore) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store =
        EmbeddedStore::open(EmbeddedOptions::new(dir.path(), vector_space())).expect("open store");
    (dir, store)
}

async fn harness() -> Harness {
    let (dir, store) = open();
    Harness {
        stores: store.stores(),
        dim: DIM,
        keep: Box::new((dir, store)),
    }
}

async fn sequenced_harness() -> Harness {
    let (dir, store) = open();
    let mut stores = store.stores();
    let me = Arc::new(store.clone());
    stores.writer = Arc::new(SequencedWriter {
        chunks: me.clone(),
        graph: me.clone(),
        sources: me.clone(),
        aliases: me,
    });
    Harness {
        stores,
        dim: DIM,
        keep: Box::new((dir, store)),
    }
}

evident_store::conformance_tests!(harness());

mod sequenced {
    use super::*;
    evident_store::conformance_tests!(sequenced_harness());
}
