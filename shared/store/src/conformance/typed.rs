//! Typed-knowledge filters (`ChunkFilter::typed`): exact on every read path, and following a
//! relocation that changes the labels.

use evident_core::{KnowledgeType, Typed, TypedFilter};

use super::*;

fn typed_chunk(
    h: &Harness,
    scope: &Scope,
    id: &str,
    text: &str,
    t: &Typed,
    ax: usize,
) -> (Chunk, Vec<f32>) {
    let mut c = chunk(scope, "urn:typed", id, "piece", text, ax);
    t.insert_into(&mut c.metadata);
    (c, axis(h.dim, ax, 0.0))
}

/// The ids `by_kind` lists for the reader under `f`, sorted.
async fn listed_ids(h: &Harness, reader: &Visibility, f: &ChunkFilter) -> Vec<String> {
    let listed = h.stores.chunks.by_kind(reader, f, 10).await;
    let mut listed: Vec<String> = listed.expect("by kind").into_iter().map(|c| c.id).collect();
    listed.sort();
    listed
}

fn labels(
    kt: Option<KnowledgeType>,
    it: Option<&str>,
    tags: &[&str],
    entity: Option<&str>,
) -> Typed {
    let tags: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
    Typed::from_raw(kt, it, &tags, entity).expect("labels")
}

/// Typed labels (knowledge type, info type, tags, entity) filter exactly on every read path,
/// and a relocation that changes them moves the chunk between filters. Long because the
/// filters are checked against one shared set of chunks, written once at the start.
pub async fn typed_filters_are_exact(h: &Harness) {
    let c1 = Scope::client("c1");
    let a = labels(
        Some(KnowledgeType::Fact),
        Some("context"),
        &["les"],
        Some("user:alice"),
    );
    let b = labels(
        Some(KnowledgeType::Procedure),
        Some("instructions"),
        &["rans"],
        Some("user:bob"),
    );
    let upsert_chunks = vec![
        typed_chunk(h, &c1, "t1", "solver settings alpha", &a, 0),
        typed_chunk(h, &c1, "t2", "solver settings beta", &b, 1),
        typed_chunk(h, &c1, "t3", "solver settings gamma", &Typed::default(), 2),
    ];
    h.stores
        .writer
        .apply(SourceWrite {
            partition: c1.partition().to_string(),
            source_urn: "urn:typed".into(),
            upsert_chunks,
            record: RecordUpdate::Put(record(&c1, "urn:typed", 3)),
            ..Default::default()
        })
        .await
        .expect("write");
    let by = |typed: TypedFilter| ChunkFilter {
        kinds: Vec::new(),
        typed,
    };
    let cases: Vec<(TypedFilter, Vec<&str>)> = vec![
        (TypedFilter::default(), vec!["t1", "t2", "t3"]),
        (
            TypedFilter {
                knowledge_types: vec![KnowledgeType::Procedure],
                ..Default::default()
            },
            vec!["t2"],
        ),
        (
            TypedFilter {
                info_types: vec!["context".into(), "instructions".into()],
                ..Default::default()
            },
            vec!["t1", "t2"],
        ),
        (
            TypedFilter {
                tags: vec!["les".into()],
                entities: vec![evident_core::typed::entity_key("e", "user:alice").expect("k")],
                ..Default::default()
            },
            vec!["t1"],
        ),
        (
            TypedFilter {
                tags: vec!["les".into()],
                entities: vec![evident_core::typed::entity_key("e", "user:bob").expect("k")],
                ..Default::default()
            },
            vec![],
        ),
    ];
    for (typed, want) in cases {
        let f = by(typed.clone());
        let mut text = ids(&h
            .stores
            .chunks
            .search_text(&vis(&c1), "solver settings", &f, 10)
            .await
            .expect("bm25"))
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
        text.sort();
        assert_eq!(text, want, "text search under {typed:?}");
        let mut near: Vec<String> = h
            .stores
            .chunks
            .search_vector(&vis(&c1), &axis(h.dim, 0, 0.0), &f, 10)
            .await
            .expect("knn")
            .into_iter()
            .map(|s| s.chunk_id)
            .collect();
        near.sort();
        assert_eq!(near, want, "vector search under {typed:?}");
        let listed = listed_ids(h, &vis(&c1), &f).await;
        assert_eq!(listed, want, "listing under {typed:?}");
    }

    // A relocation that changes the labels moves the chunk between filters.
    let (mut moved, _) = typed_chunk(h, &c1, "t3", "solver settings gamma", &b, 2);
    moved.ordinal = 2;
    h.stores
        .writer
        .apply(SourceWrite {
            partition: c1.partition().to_string(),
            source_urn: "urn:typed".into(),
            relocate_chunks: vec![moved],
            record: RecordUpdate::Keep,
            ..Default::default()
        })
        .await
        .expect("relocate");
    let f = by(TypedFilter {
        info_types: vec!["instructions".into()],
        ..Default::default()
    });
    let listed = listed_ids(h, &vis(&c1), &f).await;
    assert_eq!(listed, vec!["t2", "t3"], "relabelled by relocation");
}
