//! The shared conformance suite against a real MongoDB, when `EVIDENT_TEST_MONGO_URL` holds a
//! connection string (and the crate is built with `--features driver`): the queue, the source
//! registry (also as the last step of the `SequencedWriter`), indexer sources and memory come
//! from MongoDB, chunks, graph and aliases from a temporary embedded store. Each case gets a
//! fresh database `evident_test_<random hex>`, dropped afterwards.
//!
//! ```sh
//! EVIDENT_TEST_MONGO_URL=mongodb://localhost:27017 cargo test -p evident-store-mongo --features driver --test conformance
//! ```

#[cfg(feature = "driver")]
mod live {
    use std::sync::Arc;

    use evident_store::SequencedWriter;
    use evident_store::conformance::{self, Harness};
    use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};
    use evident_store_mongo::{MongoConfig, MongoStore};

    const VAR: &str = "EVIDENT_TEST_MONGO_URL";

    /// Drops the test database when the harness goes (inside the test's multi-thread runtime).
    struct DropDatabase(MongoStore);

    impl Drop for DropDatabase {
        fn drop(&mut self) {
            let store = self.0.clone();
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                tokio::task::block_in_place(|| {
                    if let Err(e) = handle.block_on(store.drop_database()) {
                        eprintln!("could not drop {}: {e}", store.database());
                    }
                });
            }
        }
    }

    pub async fn harness() -> Option<Harness> {
        std::env::var(VAR).ok()?;
        let cfg = MongoConfig {
            uri_env: VAR.to_string(),
            database: format!("evident_test_{}", conformance::unique_suffix()),
            timeout_secs: 30,
        };
        let mongo = MongoStore::connect(&cfg)
            .await
            .expect("connect to the server in EVIDENT_TEST_MONGO_URL");
        let dir = tempfile::tempdir().expect("temp dir");
        let embedded = EmbeddedStore::open(EmbeddedOptions::new(
            dir.path(),
            conformance::vector_space(),
        ))
        .expect("open embedded store");
        let mut stores = embedded.stores();
        let m = Arc::new(mongo.clone());
        stores.queue = m.clone();
        stores.sources = m.clone();
        stores.indexers = m.clone();
        stores.memory = m.clone();
        stores.access = m.clone();
        stores.claims = m.clone();
        stores.procedures = m.clone();
        stores.gaps = m.clone();
        stores.writer = Arc::new(SequencedWriter {
            chunks: Arc::new(embedded.clone()),
            graph: Arc::new(embedded.clone()),
            sources: m.clone(),
            aliases: Arc::new(embedded.clone()),
        });
        stores.health.push(m);
        Some(Harness {
            stores,
            dim: conformance::DIM,
            keep: Box::new((dir, embedded, DropDatabase(mongo))),
        })
    }

    evident_store::conformance_tests_if!("EVIDENT_TEST_MONGO_URL", harness());
}

#[cfg(not(feature = "driver"))]
#[test]
#[ignore = "the MongoDB conformance run needs --features driver and EVIDENT_TEST_MONGO_URL"]
fn conformance_needs_the_driver_feature() {
    eprintln!(
        "NOTICE: the MongoDB conformance run needs `--features driver` \
         (and EVIDENT_TEST_MONGO_URL set to a connection string)"
    );
}
