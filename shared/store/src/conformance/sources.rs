//! Source registry and writer cases: listing by prefix, applying and purging, relocating.

use super::*;

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

/// The source writer applies a source's chunks, graph and record in one write (twice is
/// idempotent) and a purge removes them all. Long because it is one source's story: each
/// write is checked against what the one before left.
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
    assert!(text_hits(h, &vis(&c1), "alpha", 5).await.is_empty());
    assert!(
        vector_hits(h, &vis(&c1), &axis(h.dim, 3, 0.0), 5)
            .await
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
        ids(&text_hits(h, &vis(&c1), "renamed", 5).await),
        vec!["r1"],
        "title re-indexed"
    );
    assert_eq!(
        ids(&vector_hits(h, &vis(&c1), &axis(h.dim, 0, 0.0), 5).await),
        vec!["r1"]
    );
}

/// A source write carries its new alias spellings (`SourceWrite::register_aliases`): once the
/// write is acknowledged the source is stored *and* its spellings resolve — in its own
/// partition only, at the end of the chain, and re-applying the write changes nothing.
pub async fn source_write_registers_its_aliases(h: &Harness) {
    let c1 = Scope::client("c1");
    let urn = "git:s:blob:main:src/Cart.java";
    let write = |aliases: Vec<(NodeKey, NodeKey)>| SourceWrite {
        partition: "c1".into(),
        source_urn: urn.into(),
        upsert_chunks: vec![(
            chunk(&c1, urn, "cart#0", "code", "class Cart {}", 0),
            axis(h.dim, 3, 0.0),
        )],
        nodes: vec![super::graph::node(
            "file:s/src/Cart.java",
            vec![ev("cart#0", &c1)],
        )],
        record: RecordUpdate::Put(record(&c1, urn, 1)),
        register_aliases: aliases,
        ..Default::default()
    };
    let pairs = vec![
        (key("file:s_src_cart_java"), key("file:s/src/Cart.java")),
        (key("symbol:cart"), key("symbol:Cart")),
    ];
    h.stores
        .writer
        .apply(write(pairs.clone()))
        .await
        .expect("write with aliases");
    assert!(
        h.stores
            .sources
            .get("c1", urn)
            .await
            .expect("get")
            .is_some(),
        "source stored"
    );
    let spellings: Vec<NodeKey> = pairs.iter().map(|(a, _)| a.clone()).collect();
    let canonical: Vec<NodeKey> = pairs.iter().map(|(_, c)| c.clone()).collect();
    let a = &h.stores.aliases;
    assert_eq!(
        a.resolve("c1", &spellings).await.expect("resolve"),
        canonical
    );
    assert_eq!(
        a.resolve("c2", &spellings).await.expect("other partition"),
        spellings,
        "registrations stay in the write's partition"
    );
    // Idempotent: the same write again (a redone ingest) leaves the same resolution.
    h.stores
        .writer
        .apply(write(pairs.clone()))
        .await
        .expect("write again");
    assert_eq!(a.resolve("c1", &spellings).await.expect("again"), canonical);
    // A later registration of the canonical key re-points the write's spelling (one lookup).
    a.register("c1", &key("symbol:Cart"), &key("symbol:shop.Cart"))
        .await
        .expect("re-point");
    assert_eq!(
        a.resolve("c1", &[key("symbol:cart")]).await.expect("chain"),
        vec![key("symbol:shop.Cart")]
    );
}
