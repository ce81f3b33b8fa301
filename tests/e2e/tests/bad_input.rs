//! Bad input gets a 4xx with a stable code, and the store is unchanged.

use axum::body::Body;
use evident_e2e::{Embed, TestApp};
use serde_json::json;

fn valid() -> serde_json::Value {
    json!({"clientId": "acme", "sourceUrn": "doc:1", "kind": "doc", "content": "Some ordinary text."})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_rejected_with_a_code_and_changes_nothing() {
    let app = TestApp::with_body_limit(Embed::Hashing, 64 * 1024).await;
    let (s, _) = app.post("/api/v1/ingest", &json!({"clientId": "acme", "sourceUrn": "doc:0", "kind": "doc", "content": "Baseline."})).await;
    assert_eq!(s, 200);
    let before = app.fingerprint().await;

    let with = |k: &str, v: serde_json::Value| {
        let mut b = valid();
        b[k] = v;
        b
    };
    let cases: Vec<(&str, Body, u16, &str)> = vec![
        ("malformed json", Body::from("{\"clientId\": \"acme\", "), 400, "malformed_json"),
        ("empty body", Body::empty(), 400, "malformed_json"),
        ("invalid utf-8", Body::from(vec![b'{', b'"', 0xff, 0xfe, b'"', b':', b'1', b'}']), 400, "malformed_json"),
        ("missing content", Body::from(json!({"clientId": "acme", "sourceUrn": "doc:1", "kind": "doc"}).to_string()), 400, "invalid_body"),
        ("unknown field", Body::from(with("colour", json!("red")).to_string()), 400, "invalid_body"),
        ("missing clientId", Body::from(json!({"sourceUrn": "doc:1", "kind": "doc", "content": "x"}).to_string()), 400, "missing_field"),
        ("oversize body", Body::from(with("content", json!("x".repeat(70 * 1024))).to_string()), 413, "payload_too_large"),
        ("nul in content", Body::from(with("content", json!("a\u{0}b")).to_string()), 400, "invalid_field"),
        ("nul in urn", Body::from(with("sourceUrn", json!("doc:\u{0}")).to_string()), 400, "invalid_field"),
        ("10k-char client", Body::from(with("clientId", json!("c".repeat(10_000))).to_string()), 400, "invalid_scope"),
        ("10k-char main key", Body::from(with("mainNodeKey", json!(format!("jira:{}", "k".repeat(10_000)))).to_string()), 400, "field_too_long"),
        ("bad kind", Body::from(with("kind", json!("Not A Kind")).to_string()), 400, "invalid_field"),
        ("bad relationship", Body::from(with("relationships", json!(["this is prose"])).to_string()), 400, "invalid_relationship"),
        ("bad observedAt", Body::from(with("observedAt", json!("yesterday")).to_string()), 400, "invalid_field"),
        ("aws key", Body::from(with("content", json!("deploy with AKIAZ3MHQ7RT2LQKXW5P today")).to_string()), 422, "credential_detected"),
        ("private key", Body::from(with("content", json!("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq3kQ9vJmYx2bH8cLqvF0d1Zt5nWc3sR9pLk2aXyE4fGhJk\nP0oQ8rT1uV2wX3yZ4aB5cD6eF7gH8iJ9kL0mN1oP2qR3sT4uV5wX6yZ7aB8cD9e\n-----END RSA PRIVATE KEY-----")).to_string()), 422, "credential_detected"),
        ("password", Body::from(with("content", json!("db_password = \"hunter2hunter2\"")).to_string()), 422, "credential_detected"),
        ("bearer", Body::from(with("content", json!("curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456' x")).to_string()), 422, "credential_detected"),
    ];
    for (name, body, status, code) in cases {
        let (s, v) = app.call("POST", "/api/v1/ingest", Some(body), &[]).await;
        assert_eq!(s.as_u16(), status, "{name}: {v}");
        assert_eq!(v["code"], code, "{name}: {v}");
        assert!(
            v["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{name}: message"
        );
        if code == "credential_detected" {
            let msg = v["message"].as_str().unwrap_or("");
            for secret in [
                "AKIAZ3MHQ7RT2LQKXW5P",
                "hunter2hunter2",
                "abcdefghijklmnopqrstuvwxyz123456",
                "MIIEowIBAAKCAQEA7bq3",
            ] {
                assert!(
                    !msg.contains(secret),
                    "{name}: the message must not echo the secret"
                );
            }
        }
    }
    let (s, v) = app
        .call(
            "POST",
            "/api/v1/ingest",
            Some(Body::from(valid().to_string())),
            &[("x-evident-priority", "12")],
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (400, Some("invalid_priority"))
    );
    // Other routes: the status and code of each refusal (a failure names the request).
    for (method, uri, body, status, code) in [
        (
            "POST",
            "/api/v1/retrieve",
            Some(json!({"clientId": "acme", "query": "x", "maxResults": 0})),
            400,
            "invalid_request",
        ),
        // A project without its client.
        (
            "POST",
            "/api/v1/retrieve",
            Some(json!({"projectId": "p", "query": "x"})),
            400,
            "invalid_scope",
        ),
        ("GET", "/api/v1/nope", None, 404, "route_not_found"),
        (
            "GET",
            "/api/v1/graph/node/jira:NOPE-1?clientId=acme",
            None,
            404,
            "not_found",
        ),
        // Unknown query parameters are refused.
        (
            "GET",
            "/api/v1/graph/node/jira:NOPE-1?clientId=acme&limit=5",
            None,
            400,
            "invalid_query",
        ),
        // The alias is required.
        (
            "GET",
            "/api/v1/alias/resolve?clientId=acme",
            None,
            400,
            "invalid_query",
        ),
        (
            "POST",
            "/api/v1/alias/merge",
            Some(json!({"clientId": "acme", "source": "user:a", "target": "User:A"})),
            400,
            "invalid_request",
        ),
    ] {
        let body = body.map(|b| Body::from(b.to_string()));
        let (s, v) = app.call(method, uri, body, &[]).await;
        assert_eq!(
            (s.as_u16(), v["code"].as_str()),
            (status, Some(code)),
            "{method} {uri}: {v}"
        );
    }

    assert_eq!(
        app.fingerprint().await,
        before,
        "nothing was written by any rejected request"
    );
    let (_, sources) = app.get("/api/v1/sources?clientId=acme").await;
    assert_eq!(sources["sources"].as_array().expect("sources").len(), 1);
}
