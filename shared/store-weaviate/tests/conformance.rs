//! The shared conformance suite with chunks on a real Weaviate.
//!
//! Runs when `EVIDENT_TEST_WEAVIATE_URL` is set (e.g. `http://127.0.0.1:8080`), with
//! `EVIDENT_TEST_WEAVIATE_API_KEY` when the server needs a key; otherwise every case passes
//! with a notice. Each case gets a fresh, uniquely named collection (`EvidentTest<hex>` and
//! its `…Meta`), dropped again when the case ends. Everything but chunks lives in a temporary
//! embedded store, joined by the `SequencedWriter` that mixed deployments use. The suite runs
//! twice: one shared collection, and one tenant per client.

use std::sync::Arc;

use evident_store::conformance::{DIM, Harness, unique_suffix, vector_space};
use evident_store::{ChunkStore, SequencedWriter};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};
use evident_store_weaviate::{WeaviateConfig, WeaviateStore};

const URL_VAR: &str = "EVIDENT_TEST_WEAVIATE_URL";
const KEY_VAR: &str = "EVIDENT_TEST_WEAVIATE_API_KEY";

/// Deletes the test collections when the harness is dropped.
struct DropCollections {
    url: String,
    api_key: Option<String>,
    classes: Vec<String>,
}

impl Drop for DropCollections {
    fn drop(&mut self) {
        let url = self.url.clone();
        let api_key = self.api_key.clone();
        let classes = std::mem::take(&mut self.classes);
        // Drop runs inside the test's runtime: clean up from a thread with its own.
        let cleanup = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                let http = reqwest::Client::new();
                for class in classes {
                    let mut request = http.delete(format!("{url}/v1/schema/{class}"));
                    if let Some(key) = &api_key {
                        request = request.bearer_auth(key);
                    }
                    if let Err(e) = request.send().await {
                        eprintln!("could not drop test collection {class}: {e}");
                    }
                }
            });
        });
        let _ = cleanup.join();
    }
}

async fn harness(multi_tenancy: bool) -> Option<Harness> {
    let url = std::env::var(URL_VAR)
        .ok()
        .map(|u| u.trim().trim_end_matches('/').to_string())
        .filter(|u| !u.is_empty())?;
    let api_key = std::env::var(KEY_VAR).ok().filter(|k| !k.trim().is_empty());
    let collection = format!("EvidentTest{}", unique_suffix());
    let mut cfg = WeaviateConfig::new(url.clone());
    cfg.collection = collection.clone();
    cfg.multi_tenancy = multi_tenancy;
    cfg.api_key_env = api_key.as_ref().map(|_| KEY_VAR.to_string());
    let cleanup = DropCollections {
        url,
        api_key: api_key.map(|k| k.trim().to_string()),
        classes: vec![collection.clone(), format!("{collection}Meta")],
    };
    let weaviate = WeaviateStore::connect(&cfg)
        .await
        .unwrap_or_else(|e| panic!("connect to Weaviate at {}: {e}", cfg.url));
    weaviate
        .bind_vector_space(&vector_space())
        .await
        .expect("bind the vector space");

    let dir = tempfile::tempdir().expect("temp dir");
    let embedded = EmbeddedStore::open(EmbeddedOptions::new(dir.path(), vector_space()))
        .expect("open embedded store");
    let chunks = Arc::new(weaviate.clone());
    let local = Arc::new(embedded.clone());
    let mut stores = embedded.stores();
    stores.chunks = chunks.clone();
    stores.writer = Arc::new(SequencedWriter {
        chunks: chunks.clone(),
        graph: local.clone(),
        sources: local.clone(),
        aliases: local,
    });
    stores.health.push(chunks);
    Some(Harness {
        stores,
        dim: DIM,
        // Dropped in order: the collections go first, then the embedded store and its dir.
        keep: Box::new((cleanup, weaviate, embedded, dir)),
    })
}

evident_store::conformance_tests_if!("EVIDENT_TEST_WEAVIATE_URL", harness(false));

mod multi_tenant {
    use super::*;
    evident_store::conformance_tests_if!("EVIDENT_TEST_WEAVIATE_URL", harness(true));
}
