//! Wire tests of the typed-knowledge labels (`src/chunks/labels.rs`): the back-fill of a
//! collection from before them and label filters inside `where`, against recorded exchanges
//! (`tests/fixtures/`, see `SOURCE.txt`; the other exchanges are in `wire.rs`).

use evident_core::{Scope, Visibility};
use evident_store::{ChunkFilter, ChunkStore};
use evident_store_weaviate::{WeaviateStore, object_id};
use evident_wire::WireServer;
use serde_json::{Value, json};

mod common;

use common::{config, load, requests};

/// A populated collection from before the typed labels: the marker is recorded first, the
/// four properties added, every object walked with the cursor API and the labelled ones
/// patched (exact bodies), then the marker removed.
#[tokio::test]
async fn connect_backfills_typed_labels_of_a_populated_collection() {
    let server = WireServer::start(load(&["connect_backfill"])).await;
    WeaviateStore::connect(&config(&server))
        .await
        .expect("connect");
    server.assert_exhausted();
    let received = server.received();
    let step = |method: &str, path_end: &str| {
        received
            .iter()
            .position(|r| r.method == method && r.path.ends_with(path_end))
            .unwrap_or_else(|| panic!("{method} …{path_end} sent"))
    };
    let marker = step("POST", "/v1/objects");
    let first_property = step("POST", "/properties");
    let first_patch = step("PATCH", &object_id("c1", "d1"));
    let unmarked = step("DELETE", "");
    assert!(marker < first_property && first_property < first_patch && first_patch < unmarked);
    let patches: Vec<&Value> = received
        .iter()
        .filter(|r| r.method == "PATCH")
        .map(|r| &r.body)
        .collect();
    assert_eq!(
        patches,
        vec![
            &json!({"class": "EvidentChunk", "id": object_id("c1", "d1"), "properties":
                {"knowledgeType": "procedure", "infoType": "skills", "tags": ["cfl", "les"]}}),
            &json!({"class": "EvidentChunk", "id": object_id("", "g1"), "properties":
                {"entity": "user:alice"}}),
        ],
        "only labelled objects, only their labels"
    );
}

/// A marker left by a process that stopped midway: the walk runs again, per tenant.
#[tokio::test]
async fn connect_resumes_an_unfinished_backfill_per_tenant() {
    let server = WireServer::start(load(&["connect_backfill_resume_mt"])).await;
    let mut cfg = config(&server);
    cfg.multi_tenancy = true;
    WeaviateStore::connect(&cfg).await.expect("connect");
    server.assert_exhausted();
    let received = server.received();
    let patch = requests(
        &received,
        "PATCH",
        &format!("/v1/objects/EvidentChunk/{}", object_id("c1", "d1")),
    );
    assert_eq!(patch.len(), 1);
    assert_eq!(patch[0].body["tenant"], "c-c1");
    assert!(
        requests(&received, "POST", "/v1/schema/EvidentChunk/properties").is_empty(),
        "the properties exist already"
    );
}

/// Label filters are `where` conditions (pinned in the fixture's GraphQL text), so the
/// search's `limit` counts only chunks that carry the labels.
#[tokio::test]
async fn typed_filters_are_part_of_where() {
    let server = WireServer::start(load(&["connect_existing", "typed_filter"])).await;
    let store = WeaviateStore::connect(&config(&server))
        .await
        .expect("connect");
    let reader = Visibility::of(Scope::client("c1"));
    let typed = evident_core::TypedFilter {
        info_types: vec!["skills".into()],
        tags: vec!["cfl".into(), "les".into()],
        ..Default::default()
    };
    let filter = ChunkFilter {
        kinds: Vec::new(),
        typed: typed.clone(),
    };
    let hits = store
        .search_text(&reader, "courant", &filter, 1)
        .await
        .expect("bm25");
    assert_eq!(
        hits.iter().map(|h| h.chunk_id.as_str()).collect::<Vec<_>>(),
        vec!["s1"]
    );
    let listed = store
        .by_kind(
            &reader,
            &ChunkFilter {
                kinds: vec!["doc".into()],
                typed,
            },
            1,
        )
        .await
        .expect("by kind");
    assert_eq!(listed.len(), 1);
    assert_eq!(
        evident_core::Typed::from_metadata(&listed[0].metadata).info_type,
        Some("skills".into())
    );
    server.assert_exhausted();
}
