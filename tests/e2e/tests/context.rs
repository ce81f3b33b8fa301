//! Prompt context through the real router (issue 17): typed ingest and its filters on
//! retrieve and by-kind, profiles, the structured loader, `POST /context` (sections,
//! citations, budgets, determinism), bad input answered 4xx with nothing written, and grants.

use axum::body::Body;
use evident_core::access::Role;
use evident_e2e::{Embed, TestApp, bearer, field_strs};
use serde_json::{Value, json};

fn piece(urn: &str, content: &str, kt: &str, it: &str, tags: &[&str], entity: &str) -> Value {
    json!({
        "clientId": "acme", "sourceUrn": urn, "kind": "piece", "content": content,
        "knowledgeType": kt, "infoType": it, "tags": tags, "entity": entity
    })
}

async fn fixture(app: &TestApp) {
    for body in [
        piece(
            "piece:mesh",
            "Always check mesh quality before conjugate heat transfer runs.",
            "instruction",
            "instructions",
            &["mesh"],
            "user:alice",
        ),
        piece(
            "piece:smag",
            "A Smagorinsky constant of 0.1 works better than the default.",
            "fact",
            "context",
            &["les"],
            "User:Alice",
        ),
        piece(
            "piece:ramp",
            "Ramp the CFL number from 0.3 to 0.8 over the first steps.",
            "procedure",
            "skills",
            &["cfl"],
            "user:bob",
        ),
    ] {
        app.post_ok("/api/v1/ingest", &body).await;
    }
    let (s, out) = app
        .call(
            "PUT",
            "/api/v1/graph/node/user%3Aalice/profile",
            Some(Body::from(
                json!({"clientId": "acme", "label": "Alice",
                       "properties": {"team": "aero", "specialization": "turbomachinery"}})
                .to_string(),
            )),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{out}");
    assert_eq!(out["sourceUrn"], "profile:user:alice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_pieces_route_into_cited_sections_within_budgets() {
    let app = TestApp::new(Embed::Hashing).await;
    fixture(&app).await;

    // Typed filters on retrieve and by-kind.
    let pack = app
        .post_ok(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "mesh quality Smagorinsky CFL", "infoTypes": ["instructions", "skills"]}),
        )
        .await;
    let urns = field_strs(&pack["items"], "sourceUrn");
    assert!(
        urns.contains(&"piece:mesh") && urns.contains(&"piece:ramp"),
        "{urns:?}"
    );
    assert!(!urns.contains(&"piece:smag"), "{urns:?}");
    let listed = app
        .post_ok(
            "/api/v1/chunks/by-kind",
            &json!({"clientId": "acme", "kinds": ["piece"], "entity": "user:alice", "knowledgeTypes": ["fact"]}),
        )
        .await;
    let chunks = listed["chunks"].as_array().expect("chunks");
    assert_eq!(chunks.len(), 1, "{listed}");
    assert_eq!(chunks[0]["sourceUrn"], "piece:smag");
    assert_eq!(chunks[0]["metadata"]["knowledge"]["entity"], "user:alice");

    let body = json!({"clientId": "acme", "activeEntity": "user:alice", "query": "mesh"});
    let a = app.post_ok("/api/v1/context", &body).await;
    assert_eq!(
        a["sections"]["user_profile"],
        "specialization: turbomachinery [1]\nteam: aero [2]"
    );
    assert!(
        a["sections"]["instructions"]
            .as_str()
            .expect("text")
            .starts_with("[instruction] Always check mesh quality"),
        "{a}"
    );
    assert_eq!(a["items"]["instructions"][0]["marker"], "[1]");
    assert_eq!(a["items"]["instructions"][0]["sourceUrn"], "piece:mesh");
    let (_, again) = app.post("/api/v1/context", &body).await;
    assert_eq!(again.to_string(), a.to_string(), "byte-identical");

    // Budgets: each section within its own, the best-ranked line kept.
    let first = evident_kb::context::tokens::count("specialization: turbomachinery [1]");
    let cut = app
        .post_ok(
            "/api/v1/context",
            &json!({"clientId": "acme", "activeEntity": "user:alice",
                    "sections": {"user_profile": {"budgetTokens": first + 1}}}),
        )
        .await;
    assert_eq!(cut["tokens"]["user_profile"], first);
    assert_eq!(
        cut["sections"]["user_profile"],
        "specialization: turbomachinery [1]"
    );
    assert_eq!(cut["truncated"]["user_profile"], true);
    assert_eq!(cut["sections"].as_object().expect("obj").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_whole_and_grants_hold() {
    let app = TestApp::new(Embed::Hashing).await;
    fixture(&app).await;
    let before = app.fingerprint().await;
    let cases = [
        (
            "/api/v1/ingest",
            json!({"clientId": "acme", "sourceUrn": "p:x", "kind": "piece", "content": "x", "knowledgeType": "rumour"}),
        ),
        (
            "/api/v1/ingest",
            json!({"clientId": "acme", "sourceUrn": "p:x", "kind": "piece", "content": "x", "metadata": {"knowledge": 1}}),
        ),
        (
            "/api/v1/ingest",
            json!({"clientId": "acme", "sourceUrn": "p:x", "kind": "piece", "content": "x", "entity": "!!!"}),
        ),
        (
            "/api/v1/ingest",
            json!({"clientId": "acme", "sourceUrn": "p:x", "kind": "piece", "content": "x", "tags": [format!("AKIA{}", "Z3MHQ7RT2LQKXW5P")]}),
        ),
        (
            "/api/v1/context",
            json!({"clientId": "acme", "maxDepth": 9}),
        ),
        (
            "/api/v1/context",
            json!({"clientId": "acme", "sections": {"x": {"budgetTokens": 0}}}),
        ),
        (
            "/api/v1/context",
            json!({"clientId": "acme", "include": ["everything"]}),
        ),
        (
            "/api/v1/retrieve",
            json!({"clientId": "acme", "query": "q", "infoTypes": [""]}),
        ),
        (
            "/api/v1/ingest/structured",
            json!({"clientId": "acme", "pieces": []}),
        ),
    ];
    for (uri, body) in cases {
        let (s, e) = app.post(uri, &body).await;
        assert!(s.is_client_error(), "{uri} {body}: {s} {e}");
        assert!(e["code"].is_string() && e["message"].is_string(), "{e}");
    }
    let (s, e) = app
        .call(
            "PUT",
            "/api/v1/graph/node/user%3Aalice/profile",
            Some(Body::from(
                json!({"clientId": "acme", "properties": {"password": format!("AKIA{}", "Z3MHQ7RT2LQKXW5P")}})
                    .to_string(),
            )),
            &[],
        )
        .await;
    assert_eq!(s, 422, "{e}");
    assert_eq!(app.fingerprint().await, before, "nothing half-written");

    // A token of another client sees nothing of acme's, a reader writes no profile.
    let outsider = app.client_token("globex", "globex", Role::Write).await;
    let (s, _) = app
        .call_auth(
            &bearer(&outsider),
            "POST",
            "/api/v1/context",
            Some(&json!({"clientId": "acme", "activeEntity": "user:alice"})),
        )
        .await;
    assert_eq!(s, 403);
    let (s, own) = app
        .call_auth(
            &bearer(&outsider),
            "POST",
            "/api/v1/context",
            Some(&json!({"clientId": "globex", "activeEntity": "user:alice"})),
        )
        .await;
    assert_eq!(s, 200, "{own}");
    assert!(
        own["sections"]
            .as_object()
            .expect("obj")
            .values()
            .all(|t| t == ""),
        "{own}"
    );
    let reader = app.client_token("reader", "acme", Role::Read).await;
    let (s, _) = app
        .call_auth(
            &bearer(&reader),
            "PUT",
            "/api/v1/graph/node/user%3Aalice/profile",
            Some(&json!({"clientId": "acme", "properties": {"a": "b"}})),
        )
        .await;
    assert_eq!(s, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_structured_loader_writes_valid_items_in_one_source() {
    let app = TestApp::new(Embed::Hashing).await;
    let file = json!({
        "clientId": "acme",
        "sourceUrn": "file:alice.json",
        "metadata": {
            "entities": [{"entity_id": "user:alice", "entity_type": "user", "properties": {"team": "aero"}}],
            "global": {"organization": "NASA"}
        },
        "pieces": [
            {"piece_id": "les", "content": "Initialize LES from converged RANS.", "knowledge_type": "procedure",
             "info_type": "instructions", "tags": ["les"], "entity_id": "user:alice"},
            {"piece_id": "bad", "content": "x", "info_type": ""}
        ],
        "graph": {
            "nodes": [{"node_id": "technique:les", "node_type": "technique", "label": "LES"}],
            "edges": [{"source_id": "user:alice", "target_id": "technique:les", "edge_type": "SPECIALIZES_IN",
                       "properties": {"piece_id": "les"}}]
        }
    });
    let report = app.post_ok("/api/v1/ingest/structured", &file).await;
    assert_eq!(
        report["written"],
        json!({"pieces": 1, "entities": 2, "nodes": 1, "edges": 1})
    );
    assert_eq!(
        report["skipped"].as_array().expect("list").len(),
        1,
        "{report}"
    );
    assert_eq!(report["skipped"][0]["id"], "bad");
    assert_eq!(report["outcome"]["chunks"]["total"], 3);
    let (s, again) = app.post("/api/v1/ingest/structured", &file).await;
    assert_eq!(s, 200);
    assert_eq!(again["outcome"]["status"], "skipped_unchanged", "{again}");

    let a = app
        .post_ok(
            "/api/v1/context",
            &json!({"clientId": "acme", "activeEntity": "user:alice"}),
        )
        .await;
    assert_eq!(
        a["sections"]["user_profile"], "team: aero [1]\norganization: NASA [2]",
        "{a}"
    );
    let ctx = a["sections"]["instructions"].as_str().expect("text");
    assert!(
        ctx.contains("[procedure] Initialize LES from converged RANS."),
        "{a}"
    );
    app.get_ok("/api/v1/graph/node/technique%3Ales?clientId=acme")
        .await;
}
