use super::*;
use serde_json::json;

/// Built at run time: nothing in this file looks like a live credential.
fn aws() -> String {
    format!("AKIA{}", "Z3MHQ7RT2LQKXW5P")
}

fn refused_field(r: Result<impl Sized>) -> Option<String> {
    match r {
        Err(KbError::CredentialDetected { field, .. }) => Some(field),
        _ => None,
    }
}

fn request() -> Document {
    Document {
        client_id: Some("acme".into()),
        source_urn: "doc:1".into(),
        kind: "doc".into(),
        content: "Ordinary text.".into(),
        ..Default::default()
    }
}

#[test]
fn a_document_request_is_checked_in_every_stored_string() {
    assert!(check(&request()).is_ok());
    let key = aws();
    let cases: Vec<(Document, &str)> = vec![
        (
            Document {
                content: format!("key {key}"),
                ..request()
            },
            "content",
        ),
        (
            Document {
                title: Some(format!("key {key}")),
                ..request()
            },
            "title",
        ),
        (
            Document {
                source_urn: format!("doc:{key}"),
                ..request()
            },
            "sourceUrn",
        ),
        (
            Document {
                main_node_key: Some(format!("k:{key}")),
                ..request()
            },
            "mainNodeKey",
        ),
        (
            Document {
                relationships: Some(vec![format!("a:{key}|rel|b:c")]),
                ..request()
            },
            "relationships",
        ),
        (
            Document {
                metadata: json!({"a": [{"secret": "s3cr3t-Value!"}]})
                    .as_object()
                    .cloned(),
                ..request()
            },
            "metadata.a[0].secret",
        ),
        (
            Document {
                locator: Some(Locator::for_chunk(
                    None,
                    &format!("https://x/{key}"),
                    None,
                    0,
                    1,
                    0,
                    0,
                )),
                ..request()
            },
            "locator.uri",
        ),
    ];
    for (req, field) in cases {
        assert_eq!(
            refused_field(check(&req)).as_deref(),
            Some(field),
            "{req:?}"
        );
    }
}

fn prepared() -> PreparedSource {
    PreparedSource {
        scope: Scope::client("acme"),
        source_urn: "git:1".into(),
        kind: "git-commit".into(),
        title: None,
        fingerprint: "f1".into(),
        observed_at: None,
        chunks: vec![PreparedChunk::new(
            "Ordinary text.",
            Locator::for_chunk(None, "git:1", None, 0, 14, 0, 0),
        )],
        nodes: Vec::new(),
        edges: Vec::new(),
        aliases: Vec::new(),
        merges: Vec::new(),
    }
}

#[test]
fn a_prepared_source_is_checked_in_every_stored_string() {
    assert!(check_prepared(&prepared()).is_ok());
    let key = aws();
    let node = |props: Map<String, Value>, label: &str| PreparedNode {
        key: NodeKey::from_canonical("commit:abc"),
        node_type: "commit".into(),
        label: label.into(),
        props,
        evidence: EvidenceSpec::AllChunks,
    };
    let mut cases: Vec<(PreparedSource, &str)> = Vec::new();
    let mut s = prepared();
    s.title = Some(format!("t {key}"));
    cases.push((s, "title"));
    let mut s = prepared();
    s.chunks[0].metadata = json!({"token": key})
        .as_object()
        .cloned()
        .unwrap_or_default();
    cases.push((s, "metadata.token"));
    let mut s = prepared();
    s.chunks[0].title = Some(format!("t {key}"));
    cases.push((s, "title"));
    let mut s = prepared();
    s.nodes.push(node(
        json!({"message": "password = \"hunter2hunter2\""})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        "commit abc",
    ));
    cases.push((s, "props.message"));
    let mut s = prepared();
    s.nodes.push(node(Map::new(), &format!("commit {key}")));
    cases.push((s, "nodeKey"));
    let mut s = prepared();
    s.edges.push(PreparedEdge {
        from: NodeKey::from_canonical("symbol:a"),
        to: NodeKey::from_canonical(format!("symbol:{key}")),
        edge_type: "calls".into(),
        props: Map::new(),
        evidence: EvidenceSpec::AllChunks,
    });
    cases.push((s, "edges"));
    let mut s = prepared();
    s.aliases.push((
        NodeKey::from_canonical(format!("key:{key}")),
        NodeKey::from_canonical("person:jan"),
    ));
    cases.push((s, "aliases"));
    for (src, field) in cases {
        assert_eq!(
            refused_field(check_prepared(&src)).as_deref(),
            Some(field),
            "{field}"
        );
    }
}
