use super::*;
use evident_core::Locator;

fn sample() -> Chunk {
    let mut metadata = Map::new();
    metadata.insert("lang".into(), json!("cs"));
    Chunk {
        id: "d1".into(),
        scope: Scope::client("c1").with_project("p1"),
        source_urn: "urn:doc".into(),
        kind: "doc".into(),
        title: Some("Úvod".into()),
        content: "Příliš žluťoučký kůň".into(),
        content_hash: "sha256:d1".into(),
        locator: Locator::Document {
            uri: "urn:doc".into(),
            char_start: 0,
            char_end: 20,
            page: Some(2),
            section: None,
        },
        graph_refs: vec![NodeKey::from_canonical("jira:abc-1")],
        metadata,
        observed_at: Some("2026-01-02T03:04:05Z".into()),
        ordinal: 3,
    }
}

#[test]
fn chunks_round_trip_through_object_properties() {
    let chunk = sample();
    let props =
        chunk_properties(&chunk, 1_700_000_000_000, 1_700_000_000_000_000).expect("properties");
    assert_eq!(props["partition"], "c1");
    assert!(props.get("groupId").is_none(), "absent fields are left out");
    assert_eq!(props["graphRefs"], json!(["jira:abc-1"]));
    assert_eq!(decode_chunk(&props).expect("decodes"), chunk);
}

#[test]
fn relocation_clears_absent_fields_and_keeps_text() {
    let mut chunk = sample();
    chunk.title = None;
    let props = relocation_properties(&chunk).expect("properties");
    assert_eq!(props["title"], Value::Null, "null removes the stored title");
    assert_eq!(props["groupId"], Value::Null);
    for kept in ["content", "contentHash", "chunkId", "seq", "createdAt"] {
        assert!(props.get(kept).is_none(), "{kept} is not relocated");
    }
}

#[test]
fn scores_are_read_from_strings_and_numbers() {
    assert_eq!(number(Some(&json!("0.5"))), Some(0.5));
    assert_eq!(number(Some(&json!(0.25))), Some(0.25));
    assert_eq!(number(Some(&json!(null))), None);
    assert_eq!(number(None), None);
}

#[test]
fn bad_stored_values_are_corrupt() {
    let mut props = chunk_properties(&sample(), 0, 0).expect("properties");
    props["locator"] = json!("{not json");
    let err = decode_chunk(&props).expect_err("corrupt");
    assert_eq!(err.kind, evident_store::ErrorKind::Corrupt);
}

#[test]
fn kinds_narrow_the_visibility_filter() {
    let vis = Filter::IsNull("clientId");
    assert_eq!(with_kinds(vis.clone(), &[]), vis);
    assert_eq!(
        with_kinds(vis.clone(), &["a".into(), "a".into(), "b".into()]),
        Filter::And(vec![
            vis,
            Filter::ContainsAny("kind", vec!["a".into(), "b".into()])
        ])
    );
}

fn labelled(chunk: &mut Chunk) {
    evident_core::Typed::from_raw(
        Some(evident_core::KnowledgeType::Procedure),
        Some("skills"),
        &["CFL".into(), "les".into()],
        Some("User:Alice"),
    )
    .expect("labels")
    .insert_into(&mut chunk.metadata);
}

/// The labels are copied from the metadata into properties of their own (left out when
/// absent on insert, `null` on relocation so a PATCH removes labels that were dropped).
#[test]
fn typed_labels_become_properties() {
    let mut chunk = sample();
    labelled(&mut chunk);
    let props = chunk_properties(&chunk, 0, 0).expect("properties");
    assert_eq!(props["knowledgeType"], "procedure");
    assert_eq!(props["infoType"], "skills");
    assert_eq!(props["tags"], json!(["cfl", "les"]));
    assert_eq!(props["entity"], "user:alice");
    assert_eq!(
        decode_chunk(&props).expect("decodes"),
        chunk,
        "metadata kept"
    );
    let plain = chunk_properties(&sample(), 0, 0).expect("properties");
    for name in ["knowledgeType", "infoType", "tags", "entity"] {
        assert!(plain.get(name).is_none(), "{name} left out");
    }
    let moved = relocation_properties(&sample()).expect("properties");
    for name in ["knowledgeType", "infoType", "tags", "entity"] {
        assert_eq!(moved[name], Value::Null, "{name} cleared");
    }
    assert_eq!(
        relocation_properties(&chunk).expect("p")["tags"],
        json!(["cfl", "les"])
    );
}

/// Each non-empty label group is one condition of the `where` filter, next to visibility
/// and kinds: single values are `Equal`, several (and tags, an array) `ContainsAny`.
#[test]
fn typed_filters_go_into_where() {
    use evident_core::{KnowledgeType, NodeKey, TypedFilter};
    let vis = Filter::IsNull("clientId");
    let filter = ChunkFilter {
        kinds: vec!["doc".into()],
        typed: TypedFilter {
            knowledge_types: vec![KnowledgeType::Fact, KnowledgeType::Procedure],
            info_types: vec!["skills".into()],
            tags: vec!["les".into()],
            entities: vec![NodeKey::from_canonical("user:alice")],
        },
    };
    assert_eq!(
        labels::with_filter(vis.clone(), &filter),
        Filter::And(vec![
            vis.clone(),
            Filter::ContainsAny("kind", vec!["doc".into()]),
            Filter::And(vec![
                Filter::ContainsAny("knowledgeType", vec!["fact".into(), "procedure".into()]),
                Filter::EqualText("infoType", "skills".into()),
                Filter::ContainsAny("tags", vec!["les".into()]),
                Filter::EqualText("entity", "user:alice".into()),
            ]),
        ])
    );
    let only_info = ChunkFilter {
        kinds: Vec::new(),
        typed: TypedFilter {
            info_types: vec!["skills".into()],
            ..Default::default()
        },
    };
    assert_eq!(
        labels::with_filter(vis.clone(), &only_info),
        Filter::And(vec![
            vis.clone(),
            Filter::EqualText("infoType", "skills".into())
        ])
    );
    assert_eq!(
        labels::with_filter(vis.clone(), &ChunkFilter::default()),
        vis
    );
}
