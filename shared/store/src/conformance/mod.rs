//! The conformance suite: behaviour every backend must show, written once.
//!
//! A backend crate runs it with [`conformance_tests!`](crate::conformance_tests), giving an
//! async expression that builds a fresh, empty [`Harness`]. Production backends run the same
//! suite against a real server when their `EVIDENT_TEST_*_URL` variable is set.

use evident_core::{Chunk, EdgeWrite, Evidence, Locator, NodeKey, NodeWrite, Scope, Visibility};
use serde_json::Map;

use crate::{
    ChunkFilter, Direction, RecordUpdate, ScoredId, SourceRecord, SourceStatus, SourceWrite,
    Stores, TraverseOptions,
};

mod access;
mod aliases;
mod chunks;
mod claims;
mod gaps;
mod graph;
mod graph_count;
mod graph_links;
mod indexers;
mod memory;
mod procedures;
mod queue;
mod sources;
mod typed;

pub use access::*;
pub use aliases::*;
pub use chunks::*;
pub use claims::*;
pub use gaps::*;
pub use graph::*;
pub use graph_count::*;
pub use graph_links::*;
pub use indexers::*;
pub use memory::*;
pub use procedures::*;
pub use queue::*;
pub use sources::*;
pub use typed::*;

/// Dimension of the vectors every harness opens its stores for.
pub const DIM: usize = 16;

/// The vector space every harness opens its stores for (the suite's axis vectors).
pub fn vector_space() -> crate::VectorSpace {
    crate::VectorSpace {
        embedder: "test:axis".into(),
        dim: DIM,
    }
}

/// 16 lowercase hex digits no other case, thread, process or run uses: names per-case
/// databases and collections on a shared server.
pub fn unique_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // RandomState is seeded per process, so equal inputs in two runs still differ.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:016x}", h.finish())
}

/// A fresh store set plus whatever must live as long as it (a temp dir, a client).
pub struct Harness {
    pub stores: Stores,
    /// Dimension of the vectors the stores were opened for.
    pub dim: usize,
    pub keep: Box<dyn std::any::Any + Send>,
}

/// Every case of the suite, after the given arm and arguments (one list for every way of
/// running it).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_cases {
    ($($prefix:tt)*) => {
        $crate::conformance_tests!($($prefix)*;
            chunks_roundtrip_and_text_search,
            vector_search_finds_nearest_and_is_immediate,
            every_read_path_applies_visibility,
            kind_filters_are_exact,
            graph_merges_evidence_and_collects_garbage,
            traversal_respects_depth_direction_and_types,
            graph_visibility_follows_evidence,
            nodes_list_by_type_in_key_pages,
            alias_register_resolve_merge_list_stats,
            source_writer_applies_and_purges,
            relocate_updates_without_reembedding,
            mentions_never_overwrite_descriptions,
            edges_can_be_removed_explicitly,
            nodes_fold_into_their_canonical,
            sources_list_by_prefix,
            indexer_sources_leases_and_cursors,
            indexer_source_ids_are_per_client,
            queue_claims_by_priority_position_then_creation,
            queue_bands_separate_interactive_from_bulk,
            queue_same_source_runs_one_at_a_time_in_order,
            queue_leases_expire_and_stale_holders_are_refused,
            queue_failures_back_off_forever_or_end_in_error,
            queue_release_list_prune,
            memory_entries_expire_and_sessions_clear,
            session_log_evicts_expires_and_keeps_logs_apart,
            tokens_are_found_by_hash_listed_by_client_and_revoked_once,
            audit_events_are_kept_filtered_and_paged_newest_first,
            claims_keep_history_index_evidence_and_respect_visibility,
            procedures_keep_statistics_and_scopes,
            procedures_nearest_by_cosine,
            procedure_outcomes_are_atomic,
            gaps_claim_in_order_one_per_client_with_expiring_leases,
            gaps_move_by_the_state_machine_with_append_only_history,
            typed_filters_are_exact,
            source_write_registers_its_aliases,
            graph_counts_follow_visibility,
            evidence_back_links_follow_visibility,
        );
    };
}

/// Runs every conformance case as its own `#[tokio::test]`.
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::__conformance_cases!(@cases $make);
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness = $make.await;
                $crate::conformance::$case(&harness).await;
            }
        )*
    };
    (@skippable $var:literal, $make:expr; $($case:ident),* $(,)?) => {
        $(
            // Ignored, so a run without the server reports them skipped instead of green;
            // `.ci/run` adds `--run-ignored all` when a server URL is set.
            #[ignore = "needs a server: set its EVIDENT_TEST_*_URL and run ignored tests"]
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                match $make.await {
                    Some(harness) => $crate::conformance::$case(&harness).await,
                    None => eprintln!(
                        "SKIPPED conformance case `{}`: set {} to run it against a real server",
                        stringify!($case),
                        $var
                    ),
                }
            }
        )*
    };
}

/// The same suite against a backend that may be absent: `$make` yields `Option<Harness>`
/// (`None` when its server is not configured). The cases are `#[ignore]`d, so the test runner
/// reports them skipped unless ignored tests are asked for (`.ci/run` does when the server's
/// variable is set); asked for without a server, each passes with a notice naming `$var`.
#[macro_export]
macro_rules! conformance_tests_if {
    ($var:literal, $make:expr) => {
        $crate::__conformance_cases!(@skippable $var, $make);
    };
}

/// Checks a refused call's error: its kind, and words its message must hold (the backends'
/// wire tests, where each recorded refusal must map to its kind and say why).
#[track_caller]
pub fn assert_error(e: &crate::StoreError, kind: crate::ErrorKind, says: &str) {
    assert_eq!(e.kind, kind, "{}", e.message);
    assert!(
        e.message.contains(says),
        "{:?} should say {says:?}: {}",
        e.kind,
        e.message
    );
}

fn key(s: &str) -> NodeKey {
    NodeKey::from_canonical(s)
}

/// A unit vector along axis `i` (mod dim), nudged towards axis `i+1` by `tilt`.
pub fn axis(dim: usize, i: usize, tilt: f32) -> Vec<f32> {
    let mut v = vec![0.0; dim];
    v[i % dim] = 1.0;
    v[(i + 1) % dim] = tilt;
    v
}

pub fn chunk(
    scope: &Scope,
    urn: &str,
    id: &str,
    kind: &str,
    content: &str,
    ordinal: usize,
) -> Chunk {
    Chunk {
        id: id.to_string(),
        scope: scope.clone(),
        source_urn: urn.to_string(),
        kind: kind.to_string(),
        title: None,
        content: content.to_string(),
        content_hash: format!("sha256:{id}"),
        locator: Locator::Document {
            uri: urn.to_string(),
            char_start: 0,
            char_end: content.chars().count(),
            page: None,
            section: None,
        },
        graph_refs: Vec::new(),
        metadata: Map::new(),
        observed_at: None,
        ordinal,
    }
}

fn ev(id: &str, scope: &Scope) -> Evidence {
    Evidence {
        chunk_id: id.to_string(),
        scope: scope.clone(),
    }
}

fn record(scope: &Scope, urn: &str, chunks: usize) -> SourceRecord {
    SourceRecord {
        scope: scope.clone(),
        source_urn: urn.to_string(),
        kind: "doc".into(),
        title: None,
        content_hash: format!("sha256:{urn}"),
        status: SourceStatus::Indexed,
        chunk_count: chunks,
        last_indexed_at: "2026-11-22T00:00:00Z".into(),
        last_error: None,
    }
}

async fn write_source(h: &Harness, scope: &Scope, urn: &str, items: &[(&str, &str, &str, usize)]) {
    let upsert_chunks = items
        .iter()
        .enumerate()
        .map(|(i, (id, kind, content, ax))| {
            (
                chunk(scope, urn, id, kind, content, i),
                axis(h.dim, *ax, 0.0),
            )
        })
        .collect();
    h.stores
        .writer
        .apply(SourceWrite {
            partition: scope.partition().to_string(),
            source_urn: urn.to_string(),
            upsert_chunks,
            record: RecordUpdate::Put(record(scope, urn, items.len())),
            ..Default::default()
        })
        .await
        .expect("source write");
}

fn vis(s: &Scope) -> Visibility {
    Visibility::of(s.clone())
}

/// The reader's BM25 hits for `query`, unfiltered.
async fn text_hits(h: &Harness, reader: &Visibility, query: &str, limit: usize) -> Vec<ScoredId> {
    let all = ChunkFilter::default();
    let hits = h.stores.chunks.search_text(reader, query, &all, limit);
    hits.await.expect("bm25")
}

/// The reader's nearest chunks to `vector`, unfiltered.
async fn vector_hits(
    h: &Harness,
    reader: &Visibility,
    vector: &[f32],
    limit: usize,
) -> Vec<ScoredId> {
    let all = ChunkFilter::default();
    let hits = h.stores.chunks.search_vector(reader, vector, &all, limit);
    hits.await.expect("knn")
}

fn ids(v: &[crate::ScoredId]) -> Vec<&str> {
    v.iter().map(|s| s.chunk_id.as_str()).collect()
}
