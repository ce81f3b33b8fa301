//! Shared by the wire test binaries (`wire.rs`, `wire_labels.rs`): the recorded exchanges,
//! the adapter's config against the replaying server, and the requests it received.

use evident_store_weaviate::WeaviateConfig;
use evident_wire::{Exchange, Received, WireServer, fixtures};

const DIR: &str = env!("CARGO_MANIFEST_DIR");

/// The named fixtures of `tests/fixtures/`, in order.
pub fn load(names: &[&str]) -> Vec<Exchange> {
    fixtures(DIR, names)
}

/// The adapter pointed at `server`, two objects a batch (so paging and batching show).
pub fn config(server: &WireServer) -> WeaviateConfig {
    let mut cfg = WeaviateConfig::new(server.base.clone());
    cfg.batch_size = 2;
    cfg
}

/// The received requests of `method` to `path`, in order.
pub fn requests<'a>(received: &'a [Received], method: &str, path: &str) -> Vec<&'a Received> {
    received
        .iter()
        .filter(|r| r.method == method && r.path == path)
        .collect()
}
