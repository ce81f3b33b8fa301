//! The conformance suite: behaviour every backend must show, written once.
//!
//! A backend crate runs it with [`conformance_tests!`](crate::conformance_tests), giving an
//! async expression that builds a fresh, empty [`Harness`]. Production backends run the same
//! suite against a real server when their `EVIDENT_TEST_*_URL` variable is set.

use evident_core::{Chunk, EdgeWrite, Evidence, Locator, NodeKey, NodeWrite, Scope, Visibility};
use serde_json::Map;

use crate::{
    ChunkFilter, Direction, RecordUpdate, SourceRecord, SourceStatus, SourceWrite, Stores,
    TraverseOptions,
};

mod access_cases;
pub use access_cases::*;

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
            alias_register_resolve_merge_list_stats,
            source_writer_applies_and_purges,
            relocate_updates_without_reembedding,
            mentions_never_overwrite_descriptions,
            edges_can_be_removed_explicitly,
            nodes_fold_into_their_canonical,
            sources_list_by_prefix,
            indexer_sources_leases_and_cursors,
            queue_claims_by_priority_position_then_creation,
            queue_bands_separate_interactive_from_bulk,
            queue_same_source_runs_one_at_a_time_in_order,
            queue_leases_expire_and_stale_holders_are_refused,
            queue_failures_back_off_forever_or_end_in_error,
            queue_release_list_prune,
            memory_entries_expire_and_sessions_clear,
            tokens_are_found_by_hash_listed_by_client_and_revoked_once,
            audit_events_are_kept_filtered_and_paged_newest_first,
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

fn ids(v: &[crate::ScoredId]) -> Vec<&str> {
    v.iter().map(|s| s.chunk_id.as_str()).collect()
}

pub async fn chunks_roundtrip_and_text_search(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(
        h,
        &c1,
        "urn:a",
        &[
            ("a1", "doc", "The qualification queue drains by priority", 0),
            ("a2", "doc", "Leases expire and return tasks", 1),
        ],
    )
    .await;
    let got = h
        .stores
        .chunks
        .get(&vis(&c1), &["a2".into(), "a1".into(), "missing".into()])
        .await
        .expect("get");
    assert_eq!(
        got.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        vec!["a2", "a1"],
        "get keeps order, skips missing"
    );
    assert_eq!(got[1].content, "The qualification queue drains by priority");
    assert_eq!(
        got[1].locator,
        chunk(
            &c1,
            "urn:a",
            "a1",
            "doc",
            "The qualification queue drains by priority",
            0
        )
        .locator
    );
    let hits = h
        .stores
        .chunks
        .search_text(&vis(&c1), "priority queue", &ChunkFilter::default(), 10)
        .await
        .expect("bm25");
    assert_eq!(ids(&hits).first(), Some(&"a1"));
    assert!(
        hits.iter().all(|h| h.score > 0.0),
        "bm25 scores are positive, higher is better"
    );
    let none = h
        .stores
        .chunks
        .search_text(&vis(&c1), "zebra", &ChunkFilter::default(), 10)
        .await
        .expect("bm25");
    assert!(none.is_empty());
    let listed = h
        .stores
        .chunks
        .source_chunks("c1", "urn:a")
        .await
        .expect("source chunks");
    assert_eq!(
        listed.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        vec!["a1", "a2"]
    );
}

pub async fn vector_search_finds_nearest_and_is_immediate(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(
        h,
        &c1,
        "urn:v",
        &[
            ("v0", "doc", "zero", 0),
            ("v1", "doc", "one", 1),
            ("v2", "doc", "two", 2),
        ],
    )
    .await;
    // No waiting for any background indexing: findable as soon as the write returned.
    let hits = h
        .stores
        .chunks
        .search_vector(&vis(&c1), &axis(h.dim, 1, 0.1), &ChunkFilter::default(), 2)
        .await
        .expect("knn");
    assert_eq!(ids(&hits).first(), Some(&"v1"));
    assert!(
        hits[0].score > 0.9,
        "cosine similarity of near-identical vectors, got {}",
        hits[0].score
    );
    assert!(hits.len() <= 2);
}

pub async fn every_read_path_applies_visibility(h: &Harness) {
    let global = Scope::global();
    let client = Scope::client("c1");
    let group = Scope::client("c1").with_group("g1");
    let own = Scope::client("c1").with_project("p1").with_group("g1");
    let other_project = Scope::client("c1").with_project("p2").with_group("g1");
    let other_client = Scope::client("c2");
    let all = [
        (&global, "g"),
        (&client, "c"),
        (&group, "gr"),
        (&own, "own"),
        (&other_project, "op"),
        (&other_client, "oc"),
    ];
    for (i, (scope, name)) in all.iter().enumerate() {
        write_source(
            h,
            scope,
            &format!("urn:{name}"),
            &[(
                &format!("vis-{name}"),
                "note",
                "shared visibility marker text",
                i,
            )],
        )
        .await;
    }
    let reader = vis(&Scope::client("c1").with_project("p1").with_group("g1"));
    let expected: std::collections::BTreeSet<String> = ["vis-g", "vis-c", "vis-gr", "vis-own"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let bm25: std::collections::BTreeSet<String> = h
        .stores
        .chunks
        .search_text(&reader, "visibility marker", &ChunkFilter::default(), 50)
        .await
        .expect("bm25")
        .into_iter()
        .map(|s| s.chunk_id)
        .collect();
    assert_eq!(bm25, expected, "bm25");
    let mut vec_ids = std::collections::BTreeSet::new();
    for i in 0..all.len() {
        for hit in h
            .stores
            .chunks
            .search_vector(&reader, &axis(h.dim, i, 0.0), &ChunkFilter::default(), 50)
            .await
            .expect("knn")
        {
            vec_ids.insert(hit.chunk_id);
        }
    }
    assert_eq!(vec_ids, expected, "vector");
    let by_kind: std::collections::BTreeSet<String> = h
        .stores
        .chunks
        .by_kind(
            &reader,
            &ChunkFilter {
                kinds: vec!["note".into()],
            },
            50,
        )
        .await
        .expect("by kind")
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(by_kind, expected, "by kind");
    let all_ids: Vec<String> = all.iter().map(|(_, n)| format!("vis-{n}")).collect();
    let got: std::collections::BTreeSet<String> = h
        .stores
        .chunks
        .get(&reader, &all_ids)
        .await
        .expect("get")
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(got, expected, "get");
    let sources: std::collections::BTreeSet<String> = h
        .stores
        .sources
        .list(&reader, 100)
        .await
        .expect("sources")
        .into_iter()
        .map(|s| s.source_urn)
        .collect();
    assert_eq!(
        sources,
        ["urn:g", "urn:c", "urn:gr", "urn:own"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        "sources"
    );
}

pub async fn kind_filters_are_exact(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(
        h,
        &c1,
        "urn:k",
        &[
            ("k1", "email", "release notes alpha", 0),
            ("k2", "email-draft", "release notes beta", 1),
            ("k3", "doc", "release notes gamma", 2),
        ],
    )
    .await;
    let f = ChunkFilter {
        kinds: vec!["email".into()],
    };
    assert_eq!(
        ids(&h
            .stores
            .chunks
            .search_text(&vis(&c1), "release notes", &f, 10)
            .await
            .expect("bm25")),
        vec!["k1"]
    );
    let listed = h
        .stores
        .chunks
        .by_kind(
            &vis(&c1),
            &ChunkFilter {
                kinds: vec!["email".into(), "doc".into()],
            },
            10,
        )
        .await
        .expect("by kind");
    assert_eq!(
        listed.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        vec!["k3", "k1"],
        "newest first, exact kinds"
    );
    let knn = h
        .stores
        .chunks
        .search_vector(&vis(&c1), &axis(h.dim, 1, 0.0), &f, 10)
        .await
        .expect("knn");
    assert_eq!(ids(&knn), vec!["k1"]);
    let limited = h
        .stores
        .chunks
        .by_kind(&vis(&c1), &ChunkFilter::default(), 2)
        .await
        .expect("by kind");
    assert_eq!(limited.len(), 2);
}

fn node(k: &str, evidence: Vec<Evidence>) -> NodeWrite {
    let key = key(k);
    NodeWrite {
        node_type: key.namespace().to_string(),
        label: key.value().to_string(),
        key,
        props: Map::new(),
        evidence,
        mention_only: false,
    }
}

fn edge(from: &str, t: &str, to: &str, evidence: Vec<Evidence>) -> EdgeWrite {
    EdgeWrite {
        from: key(from),
        to: key(to),
        edge_type: t.to_string(),
        props: Map::new(),
        evidence,
    }
}

pub async fn graph_merges_evidence_and_collects_garbage(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(
        h,
        &c1,
        "urn:g1",
        &[("e1", "doc", "one", 0), ("e2", "doc", "two", 1)],
    )
    .await;
    let g = &h.stores.graph;
    g.upsert(
        "c1",
        vec![node("jira:a-1", vec![ev("e1", &c1)])],
        vec![edge("jira:a-1", "blocks", "jira:a-2", vec![ev("e1", &c1)])],
    )
    .await
    .expect("upsert");
    // Same edge, more evidence: merged, not replaced. Upserting twice is idempotent.
    g.upsert(
        "c1",
        vec![],
        vec![edge("jira:a-1", "blocks", "jira:a-2", vec![ev("e2", &c1)])],
    )
    .await
    .expect("upsert");
    g.upsert(
        "c1",
        vec![],
        vec![edge("jira:a-1", "blocks", "jira:a-2", vec![ev("e2", &c1)])],
    )
    .await
    .expect("upsert");
    let sub = g
        .traverse(
            &vis(&c1),
            &[key("jira:a-1")],
            &TraverseOptions {
                max_depth: 1,
                ..Default::default()
            },
        )
        .await
        .expect("traverse");
    assert_eq!(sub.edges.len(), 1);
    let mut evidence = sub.edges[0].evidence_chunk_ids.clone();
    evidence.sort();
    assert_eq!(evidence, vec!["e1", "e2"]);
    // Endpoint created by the edge exists.
    assert_eq!(
        g.get_nodes(&vis(&c1), &[key("jira:a-2")])
            .await
            .expect("get")
            .len(),
        1
    );
    let removed = g
        .remove_evidence("c1", &["e1".into()])
        .await
        .expect("remove");
    assert_eq!((removed.edges, removed.nodes), (0, 0), "edge still has e2");
    let removed = g
        .remove_evidence("c1", &["e2".into()])
        .await
        .expect("remove");
    assert_eq!(
        (removed.edges, removed.nodes),
        (1, 2),
        "edge and both nodes lost their last evidence"
    );
    assert!(
        g.get_nodes(&vis(&c1), &[key("jira:a-1"), key("jira:a-2")])
            .await
            .expect("get")
            .is_empty()
    );
}

pub async fn mentions_never_overwrite_descriptions(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(
        h,
        &c1,
        "urn:m",
        &[("m1", "doc", "one", 0), ("m2", "doc", "two", 1)],
    )
    .await;
    let g = &h.stores.graph;
    let mut person = node("user:jan_example_com", vec![ev("m1", &c1)]);
    person.node_type = "person".into();
    person.label = "Jan Novák".into();
    person
        .props
        .insert("email".into(), "jan@example.com".into());
    g.upsert("c1", vec![person], vec![])
        .await
        .expect("describe");
    let mut mention = node("user:jan_example_com", vec![ev("m2", &c1)]);
    mention.mention_only = true;
    g.upsert("c1", vec![mention], vec![])
        .await
        .expect("mention");
    let got = g
        .get_nodes(&vis(&c1), &[key("user:jan_example_com")])
        .await
        .expect("get");
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].node_type.as_str(), got[0].label.as_str()),
        ("person", "Jan Novák")
    );
    assert_eq!(got[0].props["email"], "jan@example.com");
    let mut evidence = got[0].evidence_chunk_ids.clone();
    evidence.sort();
    assert_eq!(
        evidence,
        vec!["m1", "m2"],
        "the mention still adds its evidence"
    );
    // A mention of an unknown key creates it as written.
    let mut fresh = node("jira:x-9", vec![ev("m2", &c1)]);
    fresh.mention_only = true;
    fresh.label = "x 9".into();
    g.upsert("c1", vec![fresh], vec![]).await.expect("mention");
    let got = g
        .get_nodes(&vis(&c1), &[key("jira:x-9")])
        .await
        .expect("get");
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].node_type.as_str(), got[0].label.as_str()),
        ("jira", "x 9")
    );
}

pub async fn edges_can_be_removed_explicitly(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(h, &c1, "urn:r", &[("r1", "doc", "one", 0)]).await;
    let g = &h.stores.graph;
    g.upsert(
        "c1",
        vec![],
        vec![
            edge(
                "branch:main",
                "has_commit",
                "commit:a1",
                vec![ev("r1", &c1)],
            ),
            edge("branch:dev", "has_commit", "commit:a1", vec![ev("r1", &c1)]),
        ],
    )
    .await
    .expect("upsert");
    let gone = crate::EdgeKey {
        from: key("branch:main"),
        edge_type: "has_commit".into(),
        to: key("commit:a1"),
    };
    assert_eq!(
        g.remove_edges("c1", std::slice::from_ref(&gone))
            .await
            .expect("remove"),
        1
    );
    assert_eq!(
        g.remove_edges("c1", &[gone]).await.expect("again"),
        0,
        "idempotent"
    );
    let sub = g
        .traverse(
            &vis(&c1),
            &[key("commit:a1")],
            &TraverseOptions {
                max_depth: 1,
                ..Default::default()
            },
        )
        .await
        .expect("traverse");
    let edges: Vec<(&str, &str)> = sub
        .edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    assert_eq!(edges, vec![("branch:dev", "commit:a1")]);
    assert_eq!(
        g.get_nodes(&vis(&c1), &[key("branch:main")])
            .await
            .expect("get")
            .len(),
        1,
        "endpoints stay while evidenced"
    );
}

pub async fn nodes_fold_into_their_canonical(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(
        h,
        &c1,
        "urn:f",
        &[("f1", "doc", "one", 0), ("f2", "doc", "two", 1)],
    )
    .await;
    let g = &h.stores.graph;
    let mut speaker = node("user:ann", vec![ev("f1", &c1)]);
    speaker.props.insert("name".into(), "Ann".into());
    speaker.props.insert("role".into(), "speaker".into());
    let mut canonical = node("user:ann@x.io", vec![ev("f2", &c1)]);
    canonical.props.insert("role".into(), "author".into());
    g.upsert(
        "c1",
        vec![speaker, canonical],
        vec![
            edge("user:ann", "spoke_in", "meeting:m1", vec![ev("f1", &c1)]),
            edge("user:ann", "same_as", "user:ann@x.io", vec![ev("f1", &c1)]),
            edge("commit:a1", "authored_by", "user:ann", vec![ev("f1", &c1)]),
            edge(
                "commit:a1",
                "authored_by",
                "user:ann@x.io",
                vec![ev("f2", &c1)],
            ),
        ],
    )
    .await
    .expect("upsert");
    assert!(
        g.fold_node("c1", &key("user:ann"), &key("user:ann@x.io"))
            .await
            .expect("fold")
    );
    assert!(
        !g.fold_node("c1", &key("user:ann"), &key("user:ann@x.io"))
            .await
            .expect("again"),
        "idempotent"
    );
    let v = vis(&c1);
    assert!(
        g.get_nodes(&v, &[key("user:ann")])
            .await
            .expect("get")
            .is_empty(),
        "the alias node is gone"
    );
    let got = g.get_nodes(&v, &[key("user:ann@x.io")]).await.expect("get");
    assert_eq!(got.len(), 1);
    let mut ev_ids = got[0].evidence_chunk_ids.clone();
    ev_ids.sort();
    assert_eq!(ev_ids, vec!["f1", "f2"], "evidence moved over");
    assert_eq!(got[0].props["role"], "author", "the canonical's props win");
    assert_eq!(
        got[0].props["name"], "Ann",
        "the alias fills what is missing"
    );
    let sub = g
        .traverse(
            &v,
            &[key("user:ann@x.io")],
            &TraverseOptions {
                max_depth: 1,
                ..Default::default()
            },
        )
        .await
        .expect("traverse");
    let mut edges: Vec<(String, String, String, usize)> = sub
        .edges
        .iter()
        .map(|e| {
            (
                e.from.to_string(),
                e.edge_type.clone(),
                e.to.to_string(),
                e.evidence_chunk_ids.len(),
            )
        })
        .collect();
    edges.sort();
    assert_eq!(
        edges,
        vec![
            (
                "commit:a1".into(),
                "authored_by".into(),
                "user:ann@x.io".into(),
                2
            ),
            (
                "user:ann@x.io".into(),
                "spoke_in".into(),
                "meeting:m1".into(),
                1
            ),
        ],
        "edges re-pointed and merged; the self-loop dropped"
    );
    // Folding into a key with no node yet creates it from the alias.
    assert!(
        g.fold_node("c1", &key("meeting:m1"), &key("meeting:m-1"))
            .await
            .expect("fold")
    );
    let moved = g.get_nodes(&v, &[key("meeting:m-1")]).await.expect("get");
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].node_type, "meeting");
}

pub async fn sources_list_by_prefix(h: &Harness) {
    let c1 = Scope::client("c1");
    for urn in [
        "git:s:blob:main:b.rs",
        "git:s:blob:main:a.rs",
        "git:s:blob:main/x:c.rs",
        "git:s:blob:mainz:d.rs",
        "git:s:commit:0a1",
    ] {
        write_source(h, &c1, urn, &[(&format!("{urn}#0"), "code", "text", 0)]).await;
    }
    write_source(
        h,
        &Scope::client("c2"),
        "git:s:blob:main:z.rs",
        &[("other", "code", "x", 0)],
    )
    .await;
    let urns = |v: Vec<SourceRecord>| v.into_iter().map(|r| r.source_urn).collect::<Vec<_>>();
    let s = &h.stores.sources;
    assert_eq!(
        urns(
            s.list_prefix("c1", "git:s:blob:main:", None, 100)
                .await
                .expect("list")
        ),
        vec!["git:s:blob:main:a.rs", "git:s:blob:main:b.rs"],
        "exact prefix, URN order, one partition"
    );
    assert_eq!(
        urns(
            s.list_prefix("c1", "git:s:blob:main:", None, 1)
                .await
                .expect("page 1")
        ),
        vec!["git:s:blob:main:a.rs"]
    );
    assert_eq!(
        urns(
            s.list_prefix("c1", "git:s:blob:main:", Some("git:s:blob:main:a.rs"), 1)
                .await
                .expect("page 2")
        ),
        vec!["git:s:blob:main:b.rs"]
    );
    assert_eq!(
        s.list_prefix("c1", "git:s:blob:", None, 100)
            .await
            .expect("all")
            .len(),
        4
    );
}

pub async fn indexer_sources_leases_and_cursors(h: &Harness) {
    use crate::indexers::{IndexerSource, PollStatus};
    let ix = &h.stores.indexers;
    let mut src = IndexerSource {
        id: "acme.repo".into(),
        kind: "git".into(),
        scope: Scope::client("acme"),
        config: serde_json::json!({"url": "https://example.com/r.git", "branches": ["main"]}),
        interval_secs: 60,
        enabled: true,
        created_at: 0,
        updated_at: 0,
        status: PollStatus::default(),
    };
    let stored = ix.put_source(&src, 1_000).await.expect("register");
    assert_eq!(
        (stored.created_at, stored.config["branches"][0].as_str()),
        (1_000, Some("main"))
    );
    let other = IndexerSource {
        id: "acme.mail".into(),
        kind: "mbox".into(),
        ..src.clone()
    };
    ix.put_source(&other, 1_000).await.expect("register");
    let git: Vec<String> = ix
        .list_sources(Some("git"))
        .await
        .expect("list")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(git, vec!["acme.repo"]);
    assert_eq!(ix.list_sources(None).await.expect("all").len(), 2);

    // One holder at a time; an expired lease moves; only the holder writes.
    assert!(ix.acquire("acme.repo", "a", 1_000, 2_000).await.expect("a"));
    assert!(
        !ix.acquire("acme.repo", "b", 1_000, 2_500)
            .await
            .expect("b refused")
    );
    assert!(
        ix.acquire("acme.repo", "a", 1_000, 2_600)
            .await
            .expect("a renews")
    );
    assert!(
        !ix.acquire("missing", "a", 1_000, 2_600)
            .await
            .expect("missing")
    );
    assert!(
        ix.put_cursor("acme.repo", "a", "main", &serde_json::json!({"tip": "c1"}))
            .await
            .expect("cursor")
    );
    assert!(
        ix.acquire("acme.repo", "b", 1_000, 3_600)
            .await
            .expect("b takes over after expiry")
    );
    assert!(
        !ix.put_cursor("acme.repo", "a", "main", &serde_json::json!({"tip": "old"}))
            .await
            .expect("stale")
    );
    assert!(
        !ix.record_poll("acme.repo", "a", 3_700, None, &serde_json::json!({}))
            .await
            .expect("stale")
    );
    assert!(
        ix.put_cursor("acme.repo", "b", "main", &serde_json::json!({"tip": "c2"}))
            .await
            .expect("cursor")
    );
    assert!(
        ix.put_cursor("acme.repo", "b", "dev", &serde_json::json!({"tip": "d1"}))
            .await
            .expect("cursor")
    );
    assert_eq!(
        ix.get_cursor("acme.repo", "main").await.expect("get"),
        Some(serde_json::json!({"tip": "c2"}))
    );
    assert!(
        ix.record_poll(
            "acme.repo",
            "b",
            3_800,
            Some("fetch failed"),
            &serde_json::json!({"commits": 0})
        )
        .await
        .expect("poll")
    );
    assert!(
        ix.record_poll(
            "acme.repo",
            "b",
            3_900,
            None,
            &serde_json::json!({"commits": 7})
        )
        .await
        .expect("poll")
    );
    let now = ix
        .get_source("acme.repo")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(now.status.last_poll_at, Some(3_900));
    assert_eq!(now.status.last_success_at, Some(3_900));
    assert_eq!(now.status.last_error, None);
    assert_eq!(now.status.stats["commits"], 7);
    assert_eq!(now.status.owner.as_deref(), Some("b"));

    // New settings keep status and cursors.
    src.interval_secs = 5;
    let updated = ix.put_source(&src, 4_000).await.expect("update");
    assert_eq!(
        (
            updated.interval_secs,
            updated.created_at,
            updated.updated_at
        ),
        (5, 1_000, 4_000)
    );
    assert_eq!(updated.status.stats["commits"], 7);
    assert!(
        ix.delete_cursor("acme.repo", "b", "dev")
            .await
            .expect("delete cursor")
    );
    let keys: Vec<String> = ix
        .list_cursors("acme.repo")
        .await
        .expect("cursors")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, vec!["main"]);

    ix.release("acme.repo", "a")
        .await
        .expect("not the holder: nothing happens");
    assert!(
        !ix.acquire("acme.repo", "a", 1_000, 4_100)
            .await
            .expect("still b's")
    );
    ix.release("acme.repo", "b").await.expect("release");
    assert!(
        ix.acquire("acme.repo", "a", 1_000, 4_100)
            .await
            .expect("free again")
    );

    assert!(ix.delete_source("acme.repo").await.expect("delete"));
    assert!(!ix.delete_source("acme.repo").await.expect("gone"));
    assert!(ix.get_source("acme.repo").await.expect("get").is_none());
    assert!(
        ix.list_cursors("acme.repo")
            .await
            .expect("cursors")
            .is_empty()
    );
}

pub async fn traversal_respects_depth_direction_and_types(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(h, &c1, "urn:t", &[("t1", "doc", "chain", 0)]).await;
    let e = || vec![ev("t1", &c1)];
    h.stores
        .graph
        .upsert(
            "c1",
            vec![],
            vec![
                edge("file:a", "imports", "file:b", e()),
                edge("file:b", "imports", "file:c", e()),
                edge("commit:x", "modifies", "file:a", e()),
            ],
        )
        .await
        .expect("upsert");
    let g = &h.stores.graph;
    let names = |sub: &crate::Subgraph| {
        let mut v: Vec<(String, usize)> = sub
            .nodes
            .iter()
            .map(|(n, d)| (n.key.to_string(), *d))
            .collect();
        v.sort();
        v
    };
    let one = g
        .traverse(
            &vis(&c1),
            &[key("file:a")],
            &TraverseOptions {
                max_depth: 1,
                ..Default::default()
            },
        )
        .await
        .expect("t");
    assert_eq!(
        names(&one),
        vec![
            ("commit:x".into(), 1),
            ("file:a".into(), 0),
            ("file:b".into(), 1)
        ]
    );
    let two_out = g
        .traverse(
            &vis(&c1),
            &[key("file:a")],
            &TraverseOptions {
                max_depth: 2,
                direction: Direction::Out,
                ..Default::default()
            },
        )
        .await
        .expect("t");
    assert_eq!(
        names(&two_out),
        vec![
            ("file:a".into(), 0),
            ("file:b".into(), 1),
            ("file:c".into(), 2)
        ]
    );
    let incoming = g
        .traverse(
            &vis(&c1),
            &[key("file:a")],
            &TraverseOptions {
                max_depth: 3,
                direction: Direction::In,
                ..Default::default()
            },
        )
        .await
        .expect("t");
    assert_eq!(
        names(&incoming),
        vec![("commit:x".into(), 1), ("file:a".into(), 0)]
    );
    let typed = g
        .traverse(
            &vis(&c1),
            &[key("file:a")],
            &TraverseOptions {
                max_depth: 3,
                edge_types: vec!["modifies".into()],
                ..Default::default()
            },
        )
        .await
        .expect("t");
    assert_eq!(typed.edges.len(), 1);
    assert_eq!(typed.edges[0].edge_type, "modifies");
    let capped = g
        .traverse(
            &vis(&c1),
            &[key("file:a")],
            &TraverseOptions {
                max_depth: 3,
                max_nodes: 2,
                ..Default::default()
            },
        )
        .await
        .expect("t");
    assert_eq!(capped.nodes.len(), 2);
    let found = g
        .search_nodes(&vis(&c1), "FILE:B", None, 10)
        .await
        .expect("search");
    assert_eq!(
        found.iter().map(|n| n.key.as_str()).collect::<Vec<_>>(),
        vec!["file:b"]
    );
    assert!(
        g.search_nodes(&vis(&c1), "file", Some("commit"), 10)
            .await
            .expect("search")
            .is_empty()
    );
}

pub async fn graph_visibility_follows_evidence(h: &Harness) {
    let p1 = Scope::client("c1").with_project("p1");
    let p2 = Scope::client("c1").with_project("p2");
    write_source(h, &p1, "urn:p1", &[("gp1", "doc", "p1 text", 0)]).await;
    write_source(h, &p2, "urn:p2", &[("gp2", "doc", "p2 text", 1)]).await;
    let g = &h.stores.graph;
    g.upsert(
        "c1",
        vec![node("user:jan", vec![ev("gp1", &p1)])],
        vec![edge(
            "user:jan",
            "works_on",
            "project:alpha",
            vec![ev("gp1", &p1)],
        )],
    )
    .await
    .expect("u");
    g.upsert(
        "c1",
        vec![node("user:jan", vec![ev("gp2", &p2)])],
        vec![edge(
            "user:jan",
            "works_on",
            "project:secret",
            vec![ev("gp2", &p2)],
        )],
    )
    .await
    .expect("u");
    let r1 = vis(&p1);
    let jan = g.get_nodes(&r1, &[key("user:jan")]).await.expect("get");
    assert_eq!(jan.len(), 1);
    assert_eq!(
        jan[0].evidence_chunk_ids,
        vec!["gp1"],
        "only the reader's evidence is shown"
    );
    assert!(
        g.get_nodes(&r1, &[key("project:secret")])
            .await
            .expect("get")
            .is_empty()
    );
    let sub = g
        .traverse(&r1, &[key("user:jan")], &TraverseOptions::default())
        .await
        .expect("t");
    assert!(
        sub.nodes
            .iter()
            .all(|(n, _)| n.key.as_str() != "project:secret")
    );
    assert_eq!(sub.edges.len(), 1);
    assert!(
        g.search_nodes(&r1, "secret", None, 10)
            .await
            .expect("search")
            .is_empty()
    );
    assert!(
        g.get_nodes(&vis(&Scope::client("c2")), &[key("user:jan")])
            .await
            .expect("get")
            .is_empty()
    );
}

pub async fn alias_register_resolve_merge_list_stats(h: &Harness) {
    let a = &h.stores.aliases;
    let unknown = a
        .resolve("c1", &[key("user:nobody")])
        .await
        .expect("resolve");
    assert_eq!(
        unknown,
        vec![key("user:nobody")],
        "unknown resolves to itself"
    );
    a.register("c1", &key("user:jnovak"), &key("user:jan_novak"))
        .await
        .expect("register");
    a.register(
        "c1",
        &key("user:jan_novak_example_com"),
        &key("user:jan_novak"),
    )
    .await
    .expect("register");
    assert_eq!(
        a.resolve("c1", &[key("user:jnovak")])
            .await
            .expect("resolve"),
        vec![key("user:jan_novak")]
    );
    assert_eq!(
        a.resolve("c2", &[key("user:jnovak")])
            .await
            .expect("resolve"),
        vec![key("user:jnovak")],
        "per client"
    );
    let moved = a
        .merge("c1", &key("user:jan_novak"), &key("user:jan"))
        .await
        .expect("merge");
    assert_eq!(moved, 3, "two aliases re-pointed plus the source itself");
    for k in [
        "user:jnovak",
        "user:jan_novak_example_com",
        "user:jan_novak",
    ] {
        assert_eq!(
            a.resolve("c1", &[key(k)]).await.expect("resolve"),
            vec![key("user:jan")],
            "{k}"
        );
    }
    let listed: Vec<String> = a
        .list("c1", &key("user:jan"))
        .await
        .expect("list")
        .into_iter()
        .map(|e| e.alias.to_string())
        .collect();
    assert_eq!(
        listed,
        vec![
            "user:jan_novak",
            "user:jan_novak_example_com",
            "user:jnovak"
        ]
    );
    assert!(
        a.merge("c1", &key("user:jan"), &key("user:jnovak"))
            .await
            .is_err(),
        "cycle refused"
    );
    for _ in 0..3 {
        a.resolve("c1", &[key("user:jnovak")])
            .await
            .expect("resolve");
    }
    let stats = a.stats("c1", 1).await.expect("stats");
    assert_eq!((stats.total_aliases, stats.unique_canonicals), (3, 1));
    assert_eq!(
        stats.top_aliases[0].alias,
        key("user:jnovak"),
        "seen counts were flushed"
    );
}

pub async fn source_writer_applies_and_purges(h: &Harness) {
    let c1 = Scope::client("c1");
    let chunks = vec![
        (
            chunk(&c1, "urn:w", "w1", "doc", "alpha text", 0),
            axis(h.dim, 3, 0.0),
        ),
        (
            chunk(&c1, "urn:w", "w2", "doc", "beta text", 1),
            axis(h.dim, 4, 0.0),
        ),
    ];
    let write = SourceWrite {
        partition: "c1".into(),
        source_urn: "urn:w".into(),
        upsert_chunks: chunks,
        nodes: vec![node("doc:w", vec![ev("w1", &c1), ev("w2", &c1)])],
        edges: vec![edge(
            "doc:w",
            "mentions",
            "concept:alpha",
            vec![ev("w1", &c1)],
        )],
        record: RecordUpdate::Put(record(&c1, "urn:w", 2)),
        ..Default::default()
    };
    h.stores.writer.apply(write.clone()).await.expect("apply");
    h.stores
        .writer
        .apply(write)
        .await
        .expect("apply twice is idempotent");
    assert_eq!(
        h.stores
            .chunks
            .source_chunks("c1", "urn:w")
            .await
            .expect("chunks")
            .len(),
        2
    );
    assert_eq!(
        h.stores
            .sources
            .get("c1", "urn:w")
            .await
            .expect("get")
            .expect("record")
            .chunk_count,
        2
    );
    let purge = SourceWrite {
        partition: "c1".into(),
        source_urn: "urn:w".into(),
        delete_chunk_ids: vec!["w1".into(), "w2".into()],
        record: RecordUpdate::Remove,
        ..Default::default()
    };
    let removed = h.stores.writer.apply(purge).await.expect("purge");
    assert_eq!((removed.chunks, removed.edges, removed.nodes), (2, 1, 2));
    assert!(
        h.stores
            .sources
            .get("c1", "urn:w")
            .await
            .expect("get")
            .is_none()
    );
    assert!(
        h.stores
            .chunks
            .search_text(&vis(&c1), "alpha", &ChunkFilter::default(), 5)
            .await
            .expect("bm25")
            .is_empty()
    );
    assert!(
        h.stores
            .chunks
            .search_vector(&vis(&c1), &axis(h.dim, 3, 0.0), &ChunkFilter::default(), 5)
            .await
            .expect("knn")
            .is_empty()
    );
}

pub async fn relocate_updates_without_reembedding(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(h, &c1, "urn:r", &[("r1", "doc", "stable paragraph", 0)]).await;
    let mut moved = chunk(&c1, "urn:r", "r1", "doc", "stable paragraph", 5);
    moved.title = Some("Renamed heading".into());
    moved.locator = Locator::Document {
        uri: "urn:r".into(),
        char_start: 100,
        char_end: 116,
        page: None,
        section: None,
    };
    h.stores
        .chunks
        .relocate(vec![moved.clone()])
        .await
        .expect("relocate");
    let got = h
        .stores
        .chunks
        .get(&vis(&c1), &["r1".into()])
        .await
        .expect("get");
    assert_eq!(got[0].ordinal, 5);
    assert_eq!(got[0].locator, moved.locator);
    assert_eq!(
        ids(&h
            .stores
            .chunks
            .search_text(&vis(&c1), "renamed", &ChunkFilter::default(), 5)
            .await
            .expect("bm25")),
        vec!["r1"],
        "title re-indexed"
    );
    assert_eq!(
        ids(&h
            .stores
            .chunks
            .search_vector(&vis(&c1), &axis(h.dim, 0, 0.0), &ChunkFilter::default(), 5)
            .await
            .expect("knn")),
        vec!["r1"]
    );
}

// ---------------------------------------------------------------------------------------
// The qualification queue.

use crate::queue::{
    BackoffPolicy, Failure, NewTask, PriorityBand, TaskFilter, TaskQueue, TaskState,
};

fn task(urn: &str, priority: u8) -> NewTask {
    NewTask {
        kind: "ingest".into(),
        scope: Scope::client("c1"),
        source_urn: urn.into(),
        priority,
        payload: serde_json::json!({"type": "ingest", "v": 1, "urn": urn}),
    }
}

const LEASE: i64 = 60_000;

async fn claim_id(q: &dyn TaskQueue, now: i64) -> Option<String> {
    q.claim("w", PriorityBand::ALL, LEASE, now)
        .await
        .expect("claim")
        .map(|c| c.task.task_id)
}

pub async fn queue_claims_by_priority_position_then_creation(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let a = q
        .enqueue(task("urn:a", 4), 0)
        .await
        .expect("enqueue")
        .task_id;
    let b = q
        .enqueue(task("urn:b", 4), 1)
        .await
        .expect("enqueue")
        .task_id;
    let c = q
        .enqueue(task("urn:c", 1), 2)
        .await
        .expect("enqueue")
        .task_id;
    let d = q
        .enqueue(task("urn:d", 4), 3)
        .await
        .expect("enqueue")
        .task_id;
    q.reorder(&d, 1, 4).await.expect("reorder").expect("exists");
    let order: Vec<String> = [
        claim_id(q, 10).await,
        claim_id(q, 10).await,
        claim_id(q, 10).await,
        claim_id(q, 10).await,
    ]
    .into_iter()
    .flatten()
    .collect();
    assert_eq!(
        order,
        vec![c, d, a, b],
        "priority, then explicit position, then creation"
    );
    assert_eq!(claim_id(q, 10).await, None);
    let counts = q.counts(None).await.expect("counts");
    assert_eq!(counts.state(TaskState::Processing), 4);
    let mut other = task("urn:other-client", 4);
    other.scope = Scope::client("c2");
    q.enqueue(other, 11).await.expect("enqueue");
    let c1 = q.counts(Some("c1")).await.expect("counts");
    assert_eq!(
        (c1.state(TaskState::Processing), c1.state(TaskState::Queued)),
        (4, 0),
        "one client's counts"
    );
    let c2 = q.counts(Some("c2")).await.expect("counts");
    assert_eq!(
        (c2.state(TaskState::Processing), c2.state(TaskState::Queued)),
        (0, 1)
    );
    assert_eq!(
        q.counts(None)
            .await
            .expect("counts")
            .state(TaskState::Queued),
        1
    );
}

pub async fn queue_bands_separate_interactive_from_bulk(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let bulk = q
        .enqueue(task("urn:bulk", 6), 0)
        .await
        .expect("enqueue")
        .task_id;
    assert!(
        q.claim("w", PriorityBand::INTERACTIVE, LEASE, 1)
            .await
            .expect("claim")
            .is_none(),
        "interactive workers skip bulk work"
    );
    let urgent = q
        .enqueue(task("urn:urgent", 1), 2)
        .await
        .expect("enqueue")
        .task_id;
    assert_eq!(
        q.claim("w", PriorityBand::INTERACTIVE, LEASE, 3)
            .await
            .expect("claim")
            .map(|c| c.task.task_id),
        Some(urgent)
    );
    assert_eq!(
        q.claim("w", PriorityBand::BULK, LEASE, 3)
            .await
            .expect("claim")
            .map(|c| c.task.task_id),
        Some(bulk)
    );
}

pub async fn queue_same_source_runs_one_at_a_time_in_order(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let first = q
        .enqueue(task("urn:s", 4), 0)
        .await
        .expect("enqueue")
        .task_id;
    let second = q
        .enqueue(task("urn:s", 1), 1)
        .await
        .expect("enqueue")
        .task_id;
    let other = q
        .enqueue(task("urn:o", 4), 2)
        .await
        .expect("enqueue")
        .task_id;
    let c1 = q
        .claim("w1", PriorityBand::ALL, LEASE, 5)
        .await
        .expect("claim")
        .expect("task");
    assert_eq!(
        c1.task.task_id, first,
        "the older task of a source goes first, whatever the priority"
    );
    let c2 = q
        .claim("w2", PriorityBand::ALL, LEASE, 5)
        .await
        .expect("claim")
        .expect("task");
    assert_eq!(
        c2.task.task_id, other,
        "the same source's next task waits for the running one"
    );
    assert!(
        q.claim("w3", PriorityBand::ALL, LEASE, 5)
            .await
            .expect("claim")
            .is_none()
    );
    assert!(q.complete(&c1.token, 6).await.expect("complete"));
    assert_eq!(claim_id(q, 7).await, Some(second));
}

pub async fn queue_leases_expire_and_stale_holders_are_refused(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let id = q
        .enqueue(task("urn:l", 4), 0)
        .await
        .expect("enqueue")
        .task_id;
    let first = q
        .claim("w1", PriorityBand::ALL, LEASE, 0)
        .await
        .expect("claim")
        .expect("task");
    assert_eq!(
        first.payload["urn"], "urn:l",
        "payload comes with the claim"
    );
    assert!(
        q.claim("w2", PriorityBand::ALL, LEASE, LEASE - 1)
            .await
            .expect("claim")
            .is_none(),
        "a live lease is never taken"
    );
    assert!(
        q.heartbeat(&first.token, LEASE, LEASE - 1)
            .await
            .expect("heartbeat")
    );
    assert!(
        q.claim("w2", PriorityBand::ALL, LEASE, 2 * LEASE - 2)
            .await
            .expect("claim")
            .is_none(),
        "heartbeat extended the lease"
    );
    let second = q
        .claim("w2", PriorityBand::ALL, LEASE, 2 * LEASE)
        .await
        .expect("claim")
        .expect("expired lease returns to the queue");
    assert_eq!(second.task.task_id, id);
    assert_eq!(second.task.attempts, 2);
    assert!(
        !q.complete(&first.token, 2 * LEASE + 1)
            .await
            .expect("complete"),
        "the stale holder cannot complete"
    );
    assert!(
        !q.heartbeat(&first.token, LEASE, 2 * LEASE + 1)
            .await
            .expect("heartbeat")
    );
    assert!(
        q.complete(&second.token, 2 * LEASE + 2)
            .await
            .expect("complete")
    );
    assert_eq!(
        q.get(&id).await.expect("get").expect("task").state,
        TaskState::Done
    );
}

pub async fn queue_failures_back_off_forever_or_end_in_error(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let policy = BackoffPolicy {
        initial_ms: 5_000,
        cap_ms: 300_000,
        jitter: 0.0,
    };
    let id = q
        .enqueue(task("urn:f", 4), 0)
        .await
        .expect("enqueue")
        .task_id;
    let mut now = 0;
    let mut delays = Vec::new();
    for _ in 0..9 {
        let c = q
            .claim("w", PriorityBand::ALL, LEASE, now)
            .await
            .expect("claim")
            .expect("claimable once due");
        assert!(
            q.fail(
                &c.token,
                Failure::Retryable("connection refused".into()),
                &policy,
                now
            )
            .await
            .expect("fail")
        );
        let t = q.get(&id).await.expect("get").expect("task");
        assert_eq!(t.state, TaskState::RetryWait);
        let due = t.next_retry_at.expect("next retry");
        assert!(
            q.claim("w", PriorityBand::ALL, LEASE, due - 1)
                .await
                .expect("claim")
                .is_none(),
            "not before nextRetryAt"
        );
        delays.push(due - now);
        now = due;
    }
    assert_eq!(
        delays,
        vec![
            5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000
        ]
    );
    assert_eq!(q.get(&id).await.expect("get").expect("task").retries, 9);
    let c = q
        .claim("w", PriorityBand::ALL, LEASE, now)
        .await
        .expect("claim")
        .expect("task");
    assert!(
        q.fail(
            &c.token,
            Failure::Permanent("invalid_field: bad kind".into()),
            &policy,
            now
        )
        .await
        .expect("fail")
    );
    let t = q.get(&id).await.expect("get").expect("task");
    assert_eq!(
        (t.state, t.last_error.as_deref()),
        (TaskState::Error, Some("invalid_field: bad kind"))
    );
    assert!(
        q.claim("w", PriorityBand::ALL, LEASE, now + 1_000_000)
            .await
            .expect("claim")
            .is_none(),
        "error tasks are not retried by themselves"
    );
    let later = q
        .enqueue(task("urn:f", 4), now)
        .await
        .expect("enqueue")
        .task_id;
    assert_eq!(
        claim_id(q, now).await,
        Some(later.clone()),
        "an error task does not block its source"
    );
    let t = q.retry(&id, now).await.expect("retry").expect("task");
    assert_eq!(t.state, TaskState::Queued);
    assert!(
        q.retry(&later, now).await.is_err(),
        "only error tasks can be retried"
    );
}

pub async fn queue_release_list_prune(h: &Harness) {
    let q = h.stores.queue.as_ref();
    let id = q
        .enqueue(task("urn:r", 4), 0)
        .await
        .expect("enqueue")
        .task_id;
    let c = q
        .claim("w", PriorityBand::ALL, LEASE, 0)
        .await
        .expect("claim")
        .expect("task");
    assert!(q.release(&c.token, 1).await.expect("release"));
    let t = q.get(&id).await.expect("get").expect("task");
    assert_eq!(
        (t.state, t.retries),
        (TaskState::Queued, 0),
        "release counts no retry"
    );
    let c = q
        .claim("w", PriorityBand::ALL, LEASE, 2)
        .await
        .expect("claim")
        .expect("task");
    assert!(q.complete(&c.token, 3).await.expect("complete"));
    let other = q
        .enqueue(task("urn:r2", 4), 4)
        .await
        .expect("enqueue")
        .task_id;
    let done = q
        .list(&TaskFilter {
            state: Some(TaskState::Done),
            limit: 10,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(
        done.iter().map(|t| t.task_id.clone()).collect::<Vec<_>>(),
        vec![id.clone()]
    );
    let page = q
        .list(&TaskFilter {
            after: Some(id.clone()),
            limit: 10,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(
        page.iter().map(|t| t.task_id.clone()).collect::<Vec<_>>(),
        vec![other]
    );
    assert_eq!(
        q.prune_done(3).await.expect("prune"),
        0,
        "kept for the retention"
    );
    assert_eq!(q.prune_done(4).await.expect("prune"), 1);
    assert!(q.get(&id).await.expect("get").is_none());
    assert_eq!(q.next_wakeup(5).await.expect("wakeup"), None);
}

pub async fn memory_entries_expire_and_sessions_clear(h: &Harness) {
    use crate::memory::MemoryEntry;
    let m = &h.stores.memory;
    let entry =
        |session: &str, key: &str, value: serde_json::Value, at: i64, ttl: i64| MemoryEntry {
            client_id: "c1".into(),
            session_id: session.into(),
            key: key.into(),
            value,
            created_at: at,
            updated_at: at,
            expires_at: at + ttl,
        };
    let now = 1_000_000;
    m.put(entry(
        "s1",
        "goal",
        serde_json::json!({"text": "ship the importer"}),
        now,
        60_000,
    ))
    .await
    .expect("put");
    m.put(entry("s1", "step", serde_json::json!(3), now, 1_000))
        .await
        .expect("put");
    m.put(entry(
        "s2",
        "goal",
        serde_json::json!("other session"),
        now,
        60_000,
    ))
    .await
    .expect("put");
    let got = m
        .get("c1", "s1", "goal", now + 10)
        .await
        .expect("get")
        .expect("live");
    assert_eq!(got.value["text"], "ship the importer");
    assert!(
        m.get("c2", "s1", "goal", now).await.expect("get").is_none(),
        "clients are apart"
    );
    // Replacing keeps the creation time and moves the expiry.
    let replaced = m
        .put(entry(
            "s1",
            "goal",
            serde_json::json!("changed"),
            now + 500,
            60_000,
        ))
        .await
        .expect("replace");
    assert_eq!(replaced.created_at, now);
    assert_eq!(replaced.expires_at, now + 500 + 60_000);
    // Expired entries are invisible at once, purged or not.
    let live: Vec<String> = m
        .list("c1", "s1", now + 1_000)
        .await
        .expect("list")
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(live, vec!["goal"]);
    assert!(
        m.get("c1", "s1", "step", now + 1_000)
            .await
            .expect("get")
            .is_none()
    );
    m.purge_expired(now + 1_000).await.expect("purge");
    assert!(
        !m.delete("c1", "s1", "step").await.expect("delete"),
        "purged"
    );
    assert_eq!(m.delete_session("c1", "s1").await.expect("clear"), 1);
    assert!(m.list("c1", "s1", now).await.expect("list").is_empty());
    assert_eq!(
        m.list("c1", "s2", now).await.expect("list").len(),
        1,
        "other sessions stay"
    );
}
