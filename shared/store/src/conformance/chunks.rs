//! Chunk store cases: round trip, text and vector search, visibility, kind filters.

use super::*;

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
    let hits = text_hits(h, &vis(&c1), "priority queue", 10).await;
    assert_eq!(ids(&hits).first(), Some(&"a1"));
    assert!(
        hits.iter().all(|h| h.score > 0.0),
        "bm25 scores are positive, higher is better"
    );
    let none = text_hits(h, &vis(&c1), "zebra", 10).await;
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
    let hits = vector_hits(h, &vis(&c1), &axis(h.dim, 1, 0.1), 2).await;
    assert_eq!(ids(&hits).first(), Some(&"v1"));
    assert!(
        hits[0].score > 0.9,
        "cosine similarity of near-identical vectors, got {}",
        hits[0].score
    );
    assert!(hits.len() <= 2);
}

/// Every chunk read path (get, by kind, listing, text search, vector search) admits only
/// what the reader's visibility admits. Long because it is one matrix over one set of
/// chunks: the paths are checked side by side so none is left out.
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
    let bm25: std::collections::BTreeSet<String> = text_hits(h, &reader, "visibility marker", 50)
        .await
        .into_iter()
        .map(|s| s.chunk_id)
        .collect();
    assert_eq!(bm25, expected, "bm25");
    let mut vec_ids = std::collections::BTreeSet::new();
    for i in 0..all.len() {
        for hit in vector_hits(h, &reader, &axis(h.dim, i, 0.0), 50).await {
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
                ..Default::default()
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
        ..Default::default()
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
                ..Default::default()
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
