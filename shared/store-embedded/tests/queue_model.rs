//! The shared queue model (`evident_store::queue_model`) against the embedded store, with
//! restarts that close and reopen the data directory.

use evident_store::VectorSpace;
use evident_store::queue::TaskQueue;
use evident_store::queue_model::{Subject, ops, run};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};
use proptest::prelude::*;

fn open(dir: &std::path::Path) -> EmbeddedStore {
    let space = VectorSpace {
        embedder: "test".into(),
        dim: 4,
    };
    EmbeddedStore::open(EmbeddedOptions::new(dir, space).background_indexer(false)).expect("open")
}

struct Embedded {
    dir: tempfile::TempDir,
    store: Option<EmbeddedStore>,
}

impl Subject for Embedded {
    fn queue(&self) -> &dyn TaskQueue {
        self.store.as_ref().expect("open")
    }

    fn restart(&mut self) {
        if let Some(store) = self.store.take() {
            store.close().expect("close");
        }
        self.store = Some(open(self.dir.path()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn queue_state_machine_matches_the_model(ops in ops()) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let dir = tempfile::tempdir().expect("tmp");
        let store = Some(open(dir.path()));
        let mut subject = Embedded { dir, store };
        rt.block_on(run(&mut subject, ops))?;
    }
}
