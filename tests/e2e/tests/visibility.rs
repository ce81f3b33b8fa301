//! One visibility rule on every read path: search, expansion, by-kind, node, sources.

use evident_e2e::{Embed, TestApp, enc};
use serde_json::{Value, json};

async fn seed(app: &TestApp) {
    let docs = [
        (json!({"global": true}), "g", "global"),
        (json!({"clientId": "acme"}), "c", "client"),
        (json!({"clientId": "acme", "groupId": "g1"}), "gr", "group"),
        (
            json!({"clientId": "acme", "projectId": "p1", "groupId": "g1"}),
            "own",
            "own",
        ),
        (
            json!({"clientId": "acme", "projectId": "p2", "groupId": "g1"}),
            "op",
            "other-project",
        ),
        (json!({"clientId": "other"}), "oc", "other-client"),
    ];
    for (scope, name, label) in docs {
        let mut body = json!({
            "sourceUrn": format!("urn:{name}"),
            "kind": "note",
            "content": format!("Lighthouse marker note from the {label} scope. It links team:{name}team to jira:VIS-1."),
            "relationships": [format!("team:{name}team|owns|jira:VIS-1")],
        });
        for (k, v) in scope.as_object().expect("scope") {
            body[k] = v.clone();
        }
        app.post_ok("/api/v1/ingest", &body).await;
    }
}

fn sources_of(items: &[Value], field: &str) -> std::collections::BTreeSet<String> {
    items
        .iter()
        .map(|i| i[field].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_reader_sees_global_client_group_and_own_project_only() {
    let app = TestApp::new(Embed::Hashing).await;
    seed(&app).await;
    let visible: std::collections::BTreeSet<String> = ["urn:g", "urn:c", "urn:gr", "urn:own"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let scope = "clientId=acme&projectId=p1&groupId=g1";

    let (_, pack) = app.post("/api/v1/retrieve", &json!({"clientId": "acme", "projectId": "p1", "groupId": "g1", "query": "lighthouse marker note", "maxResults": 50})).await;
    assert_eq!(
        sources_of(pack["items"].as_array().expect("items"), "sourceUrn"),
        visible,
        "search"
    );
    // `team` is an entity-type alias of `organization`.
    let graph_teams: std::collections::BTreeSet<String> = pack["graph"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["key"].as_str())
        .filter(|k| k.starts_with("organization:"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        graph_teams,
        [
            "organization:cteam",
            "organization:grteam",
            "organization:gteam",
            "organization:ownteam"
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        "expansion"
    );

    let (_, by_kind) = app
        .post(
            "/api/v1/chunks/by-kind",
            &json!({"clientId": "acme", "projectId": "p1", "groupId": "g1", "kinds": ["note"]}),
        )
        .await;
    assert_eq!(
        sources_of(by_kind["chunks"].as_array().expect("chunks"), "sourceUrn"),
        visible,
        "by-kind"
    );

    for (key, whose) in [
        ("team:opteam", "another project's"),
        ("team:octeam", "another client's"),
    ] {
        let uri = format!("/api/v1/graph/node/{}?{scope}", enc(key));
        let (s, _) = app.get(&uri).await;
        assert_eq!(s, 404, "{whose} node {key} is invisible");
    }
    let (s, node) = app
        .get(&format!("/api/v1/graph/node/{}?{scope}", enc("jira:VIS-1")))
        .await;
    assert_eq!(s, 200);
    let evidence = node["evidenceChunkIds"].as_array().expect("ids").len();
    assert_eq!(
        evidence, 4,
        "only visible evidence of a shared node is shown: {node}"
    );
    let (_, ev) = app
        .get(&format!(
            "/api/v1/graph/node/{}/evidence?{scope}",
            enc("jira:VIS-1")
        ))
        .await;
    assert_eq!(
        sources_of(ev["chunks"].as_array().expect("chunks"), "sourceUrn"),
        visible,
        "node evidence"
    );

    let (_, sources) = app.get(&format!("/api/v1/sources?{scope}")).await;
    assert_eq!(
        sources_of(sources["sources"].as_array().expect("sources"), "sourceUrn"),
        visible,
        "sources"
    );

    let (_, other) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "other", "query": "lighthouse marker note", "maxResults": 50}),
        )
        .await;
    assert_eq!(
        sources_of(other["items"].as_array().expect("items"), "sourceUrn"),
        ["urn:g", "urn:oc"].iter().map(|s| s.to_string()).collect(),
        "another client sees global and its own"
    );
}
