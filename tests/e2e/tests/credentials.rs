//! One credential rule on every stored string: each probe below is refused with
//! `422 credential_detected`, names the field, never echoes the secret, and changes nothing
//! (store fingerprint, memory and aliases compared).

use evident_e2e::{Embed, TestApp};
use serde_json::{Value, json};

/// Credentials built at run time, so this file holds nothing that looks like a live one.
fn aws() -> String {
    format!("AKIA{}", "Z3MHQ7RT2LQKXW5P")
}
fn jwt() -> String {
    format!(
        "{}.{}.{}",
        "eyJhbGciOiJIUzI1NiJ9",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    )
}
const PASSWORD: &str = "hunter2hunter2";

fn doc() -> Value {
    json!({"clientId": "acme", "sourceUrn": "doc:c1", "kind": "doc", "content": "Ordinary text about invoices."})
}

fn with(mut body: Value, field: &str, value: Value) -> Value {
    body[field] = value;
    body
}

/// Everything a probe could have changed: rows, memory of the session, aliases of the key.
async fn state(app: &TestApp) -> (Value, Value, Value) {
    let rows = app.fingerprint().await;
    let (_, memory) = app.get("/api/v1/memory/s1?clientId=acme").await;
    let (_, aliases) = app.get("/api/v1/alias/stats?clientId=acme").await;
    (json!([rows.0, rows.1, rows.2]), memory, aliases)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_route_refuses_credentials_in_any_stored_string() {
    let app = TestApp::new(Embed::Hashing).await;
    app.post_ok("/api/v1/ingest", &doc()).await;
    let before = state(&app).await;
    let (aws, jwt) = (aws(), jwt());

    let file = |path: &str, symbols: Value| {
        json!({"clientId": "acme", "repository": "acme/shop", "branch": "main",
               "files": [{"path": path, "language": "rust", "symbols": symbols}]})
    };
    let commit = |message: &str| {
        json!({"clientId": "acme", "repository": "acme/shop", "commits": [{
            "hash": "3f786850e387550fdab836ed7e6dc881de23001b", "authorName": "Jan",
            "authorEmail": "jan@example.com", "date": "2026-01-02T03:04:05Z", "message": message}]})
    };
    let probes: Vec<(&str, &str, String, Value, &str)> = vec![
        (
            "metadata value",
            "POST",
            "/api/v1/ingest".into(),
            with(doc(), "metadata", json!({"db": {"password": PASSWORD}})),
            "metadata.db.password",
        ),
        (
            "metadata list",
            "POST",
            "/api/v1/ingest".into(),
            with(doc(), "metadata", json!({"keys": ["x", aws]})),
            "metadata.keys[1]",
        ),
        (
            "sourceUrn",
            "POST",
            "/api/v1/ingest".into(),
            with(doc(), "sourceUrn", json!(format!("doc:{aws}"))),
            "sourceUrn",
        ),
        (
            "mainNodeKey",
            "POST",
            "/api/v1/ingest".into(),
            with(doc(), "mainNodeKey", json!(format!("token:{jwt}"))),
            "mainNodeKey",
        ),
        (
            "locator",
            "POST",
            "/api/v1/ingest".into(),
            with(
                doc(),
                "locator",
                json!({"type": "document", "uri": format!("https://x.example/?token={jwt}"), "charStart": 0, "charEnd": 1}),
            ),
            "locator",
        ),
        (
            "queued metadata",
            "POST",
            "/api/v1/ingest-queue".into(),
            with(doc(), "metadata", json!({"api_key": "Zx81bQ92kLm3Tq7"})),
            "metadata.api_key",
        ),
        (
            "memory value",
            "PUT",
            "/api/v1/memory/s1/creds".into(),
            json!({"clientId": "acme", "value": {"note": format!("password = \"{PASSWORD}\"")}}),
            "value.note",
        ),
        (
            "memory nested",
            "PUT",
            "/api/v1/memory/s1/creds".into(),
            json!({"clientId": "acme", "value": [{"jwt": jwt}]}),
            "value[0].jwt",
        ),
        (
            "alias register",
            "POST",
            "/api/v1/alias/register".into(),
            json!({"clientId": "acme", "alias": format!("key:{aws}"), "canonical": "person:jan"}),
            "alias",
        ),
        (
            "alias canonical",
            "POST",
            "/api/v1/alias/register".into(),
            json!({"clientId": "acme", "alias": "person:jn", "canonical": format!("person:{jwt}")}),
            "canonical",
        ),
        (
            "alias merge",
            "POST",
            "/api/v1/alias/merge".into(),
            json!({"clientId": "acme", "source": format!("key:{aws}"), "target": "person:jan"}),
            "source",
        ),
        (
            "pushed path",
            "POST",
            "/api/v1/ingest/git-structure".into(),
            file(
                &format!("config/{aws}.rs"),
                json!([{"kind": "function", "name": "main", "lineStart": 1}]),
            ),
            "files[0].path",
        ),
        (
            "pushed symbol",
            "POST",
            "/api/v1/ingest/git-structure".into(),
            file(
                "src/lib.rs",
                json!([{"kind": "function", "name": jwt, "lineStart": 1}]),
            ),
            "files[0].symbols",
        ),
        (
            "commit message",
            "POST",
            "/api/v1/ingest/git-commits".into(),
            commit(&format!("Rotate keys\n\npassword = \"{PASSWORD}\"")),
            "commits[0].message",
        ),
        (
            "cpg edge name",
            "POST",
            "/api/v1/ingest/cpg".into(),
            json!({"clientId": "acme", "repository": "acme/shop", "edges": [{"from": "app::main", "to": jwt, "type": "calls"}]}),
            "edges[0]",
        ),
    ];
    for (name, method, uri, body, field) in probes {
        let (s, v) = app
            .call(
                method,
                &uri,
                Some(axum::body::Body::from(body.to_string())),
                &[],
            )
            .await;
        assert_eq!(
            (s.as_u16(), v["code"].as_str()),
            (422, Some("credential_detected")),
            "{name}: {v}"
        );
        let msg = v["message"].as_str().unwrap_or("");
        assert!(msg.starts_with(field), "{name}: names {field}: {msg}");
        for secret in [aws.as_str(), jwt.as_str(), PASSWORD, "Zx81bQ92kLm3Tq7"] {
            assert!(!msg.contains(secret), "{name}: echoes the secret: {msg}");
        }
        assert_eq!(state(&app).await, before, "{name}: changed the store");
    }
    // Nothing was queued either.
    let (_, q) = app.get("/api/v1/queue?clientId=acme").await;
    assert_eq!(q["tasks"].as_array().map(Vec::len), Some(0), "{q}");

    // Ordinary values still go through.
    let ok = with(
        doc(),
        "metadata",
        json!({"team": "billing", "password_policy": "rotate yearly", "tokens": 3}),
    );
    app.post_ok("/api/v1/ingest", &ok).await;
    let (s, v) = app
        .call(
            "PUT",
            "/api/v1/memory/s1/goal",
            Some(axum::body::Body::from(
                json!({"clientId": "acme", "value": {"goal": "find the invoice bug"}}).to_string(),
            )),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{v}");
}
