//! Claims (issue 16) through the real router: a repository is indexed, an agent learns a
//! fact with a chunk of the code as evidence, recall cites the file and lines, a later commit
//! changes that code → the claim is `evidenceStale` and in attention, a new claim supersedes
//! it, and the history shows every event. Plus the refusals and scope isolation.

use evident_e2e::{Embed, TestApp, bearer, field_strs};
use serde_json::{Value, json};

const C1: &str = "1111111111111111111111111111111111111111";
const C2: &str = "2222222222222222222222222222222222222222";

const RETRY_V1: &str = "use std::time::Duration;\n\n/// How long a failed upload is retried before giving up.\npub fn retry_cap() -> Duration {\n    // five minutes\n    Duration::from_secs(300)\n}\n";
const RETRY_V2: &str = "use std::time::Duration;\n\n/// How long a failed upload is retried before giving up.\npub fn retry_cap() -> Duration {\n    // ten minutes since the storage migration\n    Duration::from_secs(600)\n}\n";

async fn push(app: &TestApp, commit: &str, content: &str) {
    app.post_ok(
        "/api/v1/ingest/git-structure",
        &json!({"clientId": "acme", "repository": "uploader", "branch": "main", "commit": commit,
                    "files": [{"path": "src/retry.rs", "content": content}]}),
    )
    .await;
}

/// The chunk of `src/retry.rs` that holds `retry_cap`, found as an agent would: retrieve.
async fn retry_chunk(app: &TestApp) -> (String, Value) {
    let v = app
        .post_ok(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "retry_cap Duration from_secs", "maxResults": 10}),
        )
        .await;
    let item = v["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| {
            i["locator"]["path"] == "src/retry.rs"
                && i["content"].as_str().unwrap_or("").contains("from_secs")
        })
        .unwrap_or_else(|| panic!("no code chunk of src/retry.rs in {v}"))
        .clone();
    (item["chunkId"].as_str().expect("id").to_string(), item)
}

/// A call with `secret`'s token instead of the operator's.
async fn call_as(
    app: &TestApp,
    method: &str,
    uri: &str,
    body: Option<Value>,
    secret: &str,
) -> (axum::http::StatusCode, Value) {
    app.call_auth(&bearer(secret), method, uri, body.as_ref())
        .await
}

fn learn_body(text: &str, chunk: &str) -> Value {
    json!({
        "clientId": "acme", "text": text,
        "evidence": [{"kind": "chunk", "ref": chunk, "note": "the constant"}],
        "subject": {"scopeType": "repo", "scopeId": "uploader"},
        "actor": {"type": "agent", "id": "reviewer"},
        "sessionId": "s1", "domain": "codebase", "tags": ["retry"],
        "about": ["service:uploader"]
    })
}

#[tokio::test]
async fn a_learned_fact_follows_its_evidence_through_a_commit() {
    let app = TestApp::new(Embed::Static).await;
    push(&app, C1, RETRY_V1).await;
    let (chunk, item) = retry_chunk(&app).await;

    let claim = app
        .post_ok(
            "/api/v1/claims",
            &learn_body("the retry cap is five minutes", &chunk),
        )
        .await;
    let id = claim["id"].as_str().expect("id").to_string();
    assert!(id.starts_with("clm_"), "{claim}");
    assert_eq!(claim["status"], "observed");
    assert_eq!(
        claim["evidence"][0]["locator"], item["locator"],
        "locator kept with the claim"
    );

    // Recall finds it, with the file and line range of its evidence.
    let v = app
        .post_ok(
            "/api/v1/claims/recall",
            &json!({"clientId": "acme", "question": "what is the retry cap?"}),
        )
        .await;
    let hit = &v["claims"][0];
    assert_eq!(hit["id"], id.as_str(), "{v}");
    let cite = hit["citations"][0]["citation"].as_str().expect("citation");
    assert!(cite.starts_with("src/retry.rs:"), "{cite}");
    assert_eq!(
        hit["citations"][0]["locator"]["lineStart"],
        item["locator"]["lineStart"]
    );
    assert_eq!(hit["citations"][0]["live"], true);

    // The claim's node is about the service it names, evidenced by the claim's own chunk.
    let v = app
        .get_ok(&format!("/api/v1/graph/node/claim:{id}?clientId=acme"))
        .await;
    assert!(v.to_string().contains("service:uploader"), "{v}");

    // Retrieve answers with the claim as its own item type, not as a passage; a question
    // naming what it is about finds it through the graph (`about` edge).
    let v = app
        .post_ok(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "retry cap five minutes"}),
        )
        .await;
    assert_eq!(v["claims"][0]["claim"]["id"], id.as_str(), "{v}");
    assert!(
        v["items"]
            .as_array()
            .expect("items")
            .iter()
            .all(|i| i["kind"] != "claim"),
        "{v}"
    );
    let (_, v) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "what about service:uploader"}),
        )
        .await;
    assert_eq!(
        v["claims"][0]["claim"]["id"],
        id.as_str(),
        "graph expansion: {v}"
    );

    // Nothing needs attention yet.
    let (_, v) = app.get("/api/v1/claims/attention?clientId=acme").await;
    assert_eq!(v["items"].as_array().map(Vec::len), Some(0), "{v}");

    // A later commit changes that code: the chunk's text is gone, the claim is stale.
    push(&app, C2, RETRY_V2).await;
    let v = app
        .get_ok(&format!("/api/v1/claims/{id}?clientId=acme"))
        .await;
    assert_eq!(v["evidenceStale"], true, "{v}");
    assert_eq!(v["status"], "observed", "stale is not a status change");
    assert_eq!(v["citations"][0]["live"], false);
    assert!(
        v["citations"][0]["citation"]
            .as_str()
            .unwrap_or("")
            .starts_with("src/retry.rs:"),
        "{v}"
    );
    let (_, v) = app
        .get("/api/v1/claims/attention?clientId=acme&subjectType=repo&subjectId=uploader")
        .await;
    assert_eq!(v["items"][0]["id"], id.as_str(), "{v}");
    assert_eq!(v["items"][0]["reasons"], json!(["evidence_stale"]));
    assert_eq!(v["items"][0]["severity"], "warning");

    // A new claim with the new code supersedes it.
    let (new_chunk, _) = retry_chunk(&app).await;
    assert_ne!(new_chunk, chunk);
    let mut body = learn_body("the retry cap is ten minutes", &new_chunk);
    body["supersedes"] = json!(id);
    let newer = app.post_ok("/api/v1/claims", &body).await;
    let new_id = newer["id"].as_str().expect("id");
    let v = app
        .post_ok(
            &format!("/api/v1/claims/{id}/supersede"),
            &json!({"clientId": "acme", "by": new_id, "reason": "the cap changed in the storage migration"}),
        )
        .await;
    assert_eq!(v["status"], "superseded");
    assert_eq!(v["supersededBy"], new_id);

    // History: learned, evidence went stale, superseded.
    let v = app
        .get_ok(&format!("/api/v1/claims/{id}/history?clientId=acme"))
        .await;
    let changes = field_strs(&v["events"], "change");
    assert_eq!(changes, ["learned", "evidence_stale", "transition"], "{v}");
    assert_eq!(v["events"][1]["staleChunks"], json!([chunk]));
    assert_eq!(v["events"][2]["to"], "superseded");
    assert_eq!(v["events"][2]["supersededBy"], new_id);

    // Recall now answers with the new claim; the superseded one only when asked for.
    let (_, v) = app
        .post(
            "/api/v1/claims/recall",
            &json!({"clientId": "acme", "question": "what is the retry cap?"}),
        )
        .await;
    let ids = field_strs(&v["claims"], "id");
    assert_eq!(ids, [new_id], "{v}");
    let (_, v) = app
        .post(
            "/api/v1/claims/recall",
            &json!({"clientId": "acme", "question": "retry cap", "status": ["superseded"]}),
        )
        .await;
    assert_eq!(v["claims"][0]["id"], id.as_str(), "{v}");
    // Attention no longer lists a superseded claim.
    let (_, v) = app.get("/api/v1/claims/attention?clientId=acme").await;
    assert_eq!(v["items"].as_array().map(Vec::len), Some(0), "{v}");
}

#[tokio::test]
async fn refusals_change_nothing() {
    let app = TestApp::new(Embed::Hashing).await;
    push(&app, C1, RETRY_V1).await;
    let (chunk, _) = retry_chunk(&app).await;
    let cases = [
        (
            json!({"clientId": "acme", "text": "x is y", "evidence": []}),
            422,
            "evidence_required",
        ),
        (
            json!({"clientId": "acme", "text": "x is y"}),
            422,
            "evidence_required",
        ),
        (
            json!({"clientId": "acme", "text": "x is y", "evidence": [{"kind": "chunk", "ref": "nope"}]}),
            422,
            "evidence_not_visible",
        ),
        (
            json!({"clientId": "other", "text": "x is y", "evidence": [{"kind": "chunk", "ref": chunk}]}),
            422,
            "evidence_not_visible",
        ),
        (
            json!({"clientId": "acme", "text": "x is y", "evidence": [{"kind": "model_inference", "ref": "m1"}]}),
            422,
            "invalid_evidence",
        ),
        (
            json!({"clientId": "acme", "text": "x is y", "status": "verified", "evidence": [{"kind": "url", "ref": "https://x"}]}),
            400,
            "invalid_field",
        ),
        (
            json!({"clientId": "acme", "text": "the key is AKIAZ3MHQ7RT2LQKXW5P", "evidence": [{"kind": "url", "ref": "https://x"}]}),
            422,
            "credential_detected",
        ),
        (
            json!({"clientId": "acme", "text": "x", "evidence": [{"kind": "rumour", "ref": "r"}]}),
            400,
            "invalid_body",
        ),
    ];
    for (body, status, code) in cases {
        let (s, v) = app.post("/api/v1/claims", &body).await;
        assert_eq!(
            (s.as_u16(), v["code"].as_str()),
            (status, Some(code)),
            "{body} → {v}"
        );
    }
    // A hypothesis may rest on model reasoning alone.
    let h = app
        .post_ok(
            "/api/v1/claims",
            &json!({"clientId": "acme", "text": "uploads may be retried twice", "status": "hypothesis", "confidence": 0.3,
                "evidence": [{"kind": "model_inference", "ref": "msg-9", "note": "guess from the logs"}]}),
        )
        .await;
    let id = h["id"].as_str().expect("id");
    // hypothesis → verified is not in the table.
    let (s, v) = app
        .post(
            &format!("/api/v1/claims/{id}/verify"),
            &json!({"clientId": "acme", "evidence": [{"kind": "user_statement", "ref": "m2"}]}),
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (409, Some("invalid_transition")),
        "{v}"
    );
    app
        .post_ok(
            &format!("/api/v1/claims/{id}/transition"),
            &json!({"clientId": "acme", "to": "observed", "evidence": [{"kind": "tool_result", "ref": "tc-1"}]}),
        )
        .await;
    let (s, v) = app
        .post(
            &format!("/api/v1/claims/{id}/dispute"),
            &json!({"clientId": "acme", "reason": "logs show three retries"}),
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["status"].as_str()),
        (200, Some("disputed")),
        "{v}"
    );
    let (s, v) = app
        .post(
            &format!("/api/v1/claims/{id}/supersede"),
            &json!({"clientId": "acme", "by": "clm_missing"}),
        )
        .await;
    assert_eq!(s, 404, "{v}");
    let (_, v) = app
        .get(&format!("/api/v1/claims/{id}/history?clientId=acme"))
        .await;
    assert_eq!(v["events"].as_array().map(Vec::len), Some(3), "{v}");
    // Disputed claims are in attention; recall leaves them out unless asked.
    let (_, v) = app
        .get("/api/v1/claims/attention?clientId=acme&actor=operator")
        .await;
    assert_eq!(v["items"][0]["reasons"], json!(["disputed"]), "{v}");
    let (_, v) = app
        .post(
            "/api/v1/claims/recall",
            &json!({"clientId": "acme", "question": "uploads retried"}),
        )
        .await;
    assert_eq!(v["claims"].as_array().map(Vec::len), Some(0), "{v}");
}

#[tokio::test]
async fn another_client_never_sees_a_claim_and_only_admins_or_the_learner_supersede() {
    let app = TestApp::new(Embed::Hashing).await;
    use evident_core::access::Role;
    let writer = app.client_token("w-acme", "acme", Role::Write).await;
    let other_writer = app.client_token("w2-acme", "acme", Role::Write).await;
    let outsider = app.client_token("w-other", "other", Role::Admin).await;
    let learn = |text: &str| json!({"clientId": "acme", "text": text, "evidence": [{"kind": "url", "ref": "https://docs.example/retry"}]});
    let mut ids = Vec::new();
    for text in [
        "retries back off exponentially",
        "retries back off linearly",
    ] {
        let (s, v) = call_as(&app, "POST", "/api/v1/claims", Some(learn(text)), &writer).await;
        assert_eq!(s, 200, "{text}: {v}");
        ids.push(v["id"].as_str().expect("id").to_string());
    }
    let (a, b) = (ids[0].as_str(), ids[1].as_str());
    // Its learner reads claim `a`; another client is forbidden by its grant, and finds
    // nothing under its own client id.
    for (who, secret, client, want) in [
        ("the learner", &writer, "acme", 200),
        ("another client", &outsider, "acme", 403),
        ("another client", &outsider, "other", 404),
    ] {
        let uri = format!("/api/v1/claims/{a}?clientId={client}");
        let (s, v) = call_as(&app, "GET", &uri, None, secret).await;
        assert_eq!(s, want, "{who} reads {uri}: {v}");
    }
    let (_, v) = call_as(
        &app,
        "POST",
        "/api/v1/claims/recall",
        Some(json!({"clientId": "other", "question": "retries back off"})),
        &outsider,
    )
    .await;
    assert_eq!(v["claims"].as_array().map(Vec::len), Some(0), "{v}");
    // A project reader does not see another project's claim.
    let p = app
        .post_ok(
            "/api/v1/claims",
            &json!({"clientId": "acme", "projectId": "p1", "text": "p1 uses saga", "evidence": [{"kind": "file", "ref": "src/saga.rs"}]}),
        )
        .await;
    let pid = p["id"].as_str().expect("id");
    assert_eq!(
        app.get(&format!("/api/v1/claims/{pid}?clientId=acme&projectId=p2"))
            .await
            .0,
        404
    );
    assert_eq!(
        app.get(&format!("/api/v1/claims/{pid}?clientId=acme&projectId=p1"))
            .await
            .0,
        200
    );
    // Supersede: another writer of the client may not; the learner may.
    let sup = json!({"clientId": "acme", "by": b});
    let (s, v) = call_as(
        &app,
        "POST",
        &format!("/api/v1/claims/{a}/supersede"),
        Some(sup.clone()),
        &other_writer,
    )
    .await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (403, Some("forbidden_supersede")),
        "{v}"
    );
    let (s, v) = call_as(
        &app,
        "POST",
        &format!("/api/v1/claims/{a}/supersede"),
        Some(sup),
        &writer,
    )
    .await;
    assert_eq!(s, 200, "{v}");
}
