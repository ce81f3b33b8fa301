//! The shared conformance suite on the embedded backend.

use evident_store::VectorSpace;
use evident_store::conformance::Harness;
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

async fn harness() -> Harness {
    let dir = tempfile::tempdir().expect("temp dir");
    let dim = 16;
    let store = EmbeddedStore::open(EmbeddedOptions {
        dir: dir.path().to_path_buf(),
        vector_space: VectorSpace {
            embedder: "test:axis".into(),
            dim,
        },
        background_indexer: true,
    })
    .expect("open store");
    Harness {
        stores: store.stores(),
        dim,
        keep: Box::new((dir, store)),
    }
}

evident_store::conformance_tests!(harness());
