use super::*;
use evident_core::Scope;

fn ev(id: &str) -> Evidence {
    Evidence {
        chunk_id: id.into(),
        scope: Scope::client("c1"),
    }
}

fn write(k: &str, mention_only: bool, props: Value, evidence: &[&str]) -> NodeWrite {
    let key = NodeKey::from_canonical(k);
    NodeWrite {
        node_type: "person".into(),
        label: "Described".into(),
        key,
        props: props.as_object().cloned().unwrap_or_default(),
        evidence: evidence.iter().map(|e| ev(e)).collect(),
        mention_only,
    }
}

#[test]
fn one_entry_per_key_with_endpoints_evidenced() {
    let names = keys::partition_names("c1");
    let nodes = vec![
        write("user:a", true, json!({}), &["m1"]),
        write(
            "user:a",
            false,
            json!({"x": 1, "y": {"a": 1}}),
            &["m2", "m1"],
        ),
        write("user:a", false, json!({"y": {"b": null}}), &[]),
    ];
    let edges = vec![EdgeWrite {
        from: NodeKey::from_canonical("user:a"),
        to: NodeKey::from_canonical("jira:x-1"),
        edge_type: "reported".into(),
        props: Map::new(),
        evidence: vec![ev("m3")],
    }];
    let (n, e) = plan_upsert(&names, &nodes, &edges);
    assert_eq!(n.len(), 2);
    assert_eq!(n[0]["describe"], json!(true));
    assert_eq!(n[0]["type"], json!("person"));
    assert_eq!(n[0]["props"], json!({"x": 1, "y": {"a": 1, "b": null}}));
    assert_eq!(
        n[0]["insertProps"],
        json!({"x": 1, "y": {"a": 1}}),
        "a new node is inserted without the patch's nulls"
    );
    let chunks: Vec<&str> = n[0]["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["chunkId"].as_str())
        .collect();
    assert_eq!(chunks, vec!["m1", "m2", "m3"]);
    assert_eq!(n[1]["describe"], json!(false));
    assert_eq!(
        (n[1]["type"].clone(), n[1]["label"].clone()),
        (json!("jira"), json!("x-1"))
    );
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["insertProps"], json!({}));
    assert_eq!(e[0]["_from"], json!("cc1_nodes/user:a"));
    assert_eq!(e[0]["_to"], json!("cc1_nodes/jira:x-1"));
    assert_eq!(
        e[0]["evidence"],
        json!([{"chunkId": "m3", "clientId": "c1", "projectId": null, "groupId": null}])
    );
}

/// Merge-patch onto nothing: nulls go at every depth of nested objects; arrays are
/// values and keep theirs; an object emptied by it stays (as RFC 7386 leaves it).
#[test]
fn insert_props_drop_nulls_like_a_merge_patch_onto_nothing() {
    let patch = json!({
        "gone": null,
        "keep": 0,
        "nested": {"gone": null, "deep": {"gone": null, "keep": false}},
        "emptied": {"gone": null},
        "list": [null, {"x": null}],
    });
    let patch = patch.as_object().cloned().unwrap_or_default();
    assert_eq!(
        Value::Object(without_nulls(&patch)),
        json!({
            "keep": 0,
            "nested": {"deep": {"keep": false}},
            "emptied": {},
            "list": [null, {"x": null}],
        })
    );
}

#[test]
fn edge_props_with_nulls_insert_without_them() {
    let names = keys::partition_names("c1");
    let edges = vec![EdgeWrite {
        from: NodeKey::from_canonical("user:a"),
        to: NodeKey::from_canonical("jira:x-1"),
        edge_type: "reported".into(),
        props: json!({"w": null, "role": "owner"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        evidence: vec![ev("m3")],
    }];
    let (_, e) = plan_upsert(&names, &[], &edges);
    assert_eq!(e[0]["props"], json!({"w": null, "role": "owner"}));
    assert_eq!(e[0]["insertProps"], json!({"role": "owner"}));
}
