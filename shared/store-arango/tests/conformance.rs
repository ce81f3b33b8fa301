//! The shared conformance suite with ArangoDB serving the graph and the alias registry and the
//! embedded store everything else, joined by the `SequencedWriter` mixed deployments use.
//!
//! Runs only when `EVIDENT_TEST_ARANGO_URL` is set (e.g. `http://localhost:8529`); credentials
//! come from `EVIDENT_TEST_ARANGO_USER` / `EVIDENT_TEST_ARANGO_PASSWORD` when set. Each case
//! gets a fresh database `evident_test_<random hex>`, dropped when the case ends.

use std::sync::Arc;

use evident_store::SequencedWriter;
use evident_store::conformance::{self, Harness};
use evident_store_arango::{ArangoConfig, ArangoStore};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

const URL_VAR: &str = "EVIDENT_TEST_ARANGO_URL";
const USER_VAR: &str = "EVIDENT_TEST_ARANGO_USER";
const PASSWORD_VAR: &str = "EVIDENT_TEST_ARANGO_PASSWORD";

/// Drops the case's database when the harness goes away.
struct DropDatabase(ArangoConfig);

impl Drop for DropDatabase {
    fn drop(&mut self) {
        let cfg = self.0.clone();
        // Drop runs inside the test's runtime: use a thread with its own runtime.
        let done = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            if let Err(e) = rt.block_on(ArangoStore::drop_database(&cfg)) {
                eprintln!("could not drop test database {}: {e}", cfg.database);
            }
        });
        let _ = done.join();
    }
}

/// What must outlive the stores of one case. Fields drop in order: stores first, then the
/// database, then the embedded store's directory.
#[allow(dead_code)]
struct Keep {
    arango: ArangoStore,
    embedded: EmbeddedStore,
    database: DropDatabase,
    dir: tempfile::TempDir,
}

async fn harness() -> Option<Harness> {
    let url = std::env::var(URL_VAR)
        .ok()
        .filter(|u| !u.trim().is_empty())?;
    let mut cfg = ArangoConfig::new(
        url,
        format!("evident_test_{}", conformance::unique_suffix()),
    );
    if std::env::var(USER_VAR).is_ok() {
        cfg.username_env = Some(USER_VAR.to_string());
        if std::env::var(PASSWORD_VAR).is_ok() {
            cfg.password_env = Some(PASSWORD_VAR.to_string());
        }
    }
    let arango = ArangoStore::connect(&cfg)
        .await
        .unwrap_or_else(|e| panic!("connect to the ArangoDB named by {URL_VAR}: {e}"));
    let database = DropDatabase(cfg);

    let dir = tempfile::tempdir().expect("temp dir");
    let embedded = EmbeddedStore::open(EmbeddedOptions::new(
        dir.path(),
        conformance::vector_space(),
    ))
    .expect("open embedded store");

    let mut stores = embedded.stores();
    let graph = Arc::new(arango.clone());
    let local = Arc::new(embedded.clone());
    stores.graph = graph.clone();
    stores.aliases = graph.clone();
    stores.writer = Arc::new(SequencedWriter {
        chunks: local.clone(),
        graph: graph.clone(),
        sources: local.clone(),
        aliases: graph.clone(),
    });
    stores.health = vec![local, graph];
    Some(Harness {
        stores,
        dim: conformance::DIM,
        keep: Box::new(Keep {
            arango,
            embedded,
            database,
            dir,
        }),
    })
}

evident_store::conformance_tests_if!("EVIDENT_TEST_ARANGO_URL", harness());
