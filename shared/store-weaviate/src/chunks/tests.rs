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

/// Typed-knowledge filters are tested on each row's stored metadata, over a deeper list.
#[test]
fn typed_filters_read_the_stored_metadata() {
    let mut chunk = sample();
    evident_core::Typed::from_raw(None, Some("skills"), &["cfl".into()], None)
        .expect("labels")
        .insert_into(&mut chunk.metadata);
    let row = chunk_properties(&chunk, 0, 0).expect("properties");
    let filter = |info: &str| ChunkFilter {
        kinds: Vec::new(),
        typed: evident_core::TypedFilter {
            info_types: vec![info.to_string()],
            ..Default::default()
        },
    };
    assert!(read::admits_typed(&filter("skills"), &row));
    assert!(!read::admits_typed(&filter("context"), &row));
    assert!(!read::admits_typed(
        &filter("skills"),
        &chunk_properties(&sample(), 0, 0).expect("p")
    ));
    assert_eq!(read::typed_depth(&ChunkFilter::default(), 10), 10);
    assert_eq!(read::typed_depth(&filter("skills"), 10), 100);
}
