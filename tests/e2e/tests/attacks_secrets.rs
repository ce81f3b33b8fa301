//! Issue 29, item 2 ("secrets stored despite the scanner"): each probe of the report, table-
//! driven through the router. Every one was accepted on `main` before the fix.
//!
//! 1. Decoy pairs and sentence forms (`pwd: db_password = …`, "The password is …",
//!    `Password: … (prod db)`, `pass=`, `pw=`, `db_pass:`) in every REST field and MCP tool
//!    argument of the table.
//! 2. AWS key ids and GitHub tokens in `projectId`, `groupId`, memory session ids in the
//!    path, and source settings (`"repo": "own/ghp_…"`): refused, and not in chunk scopes,
//!    `text.index` or the audit log.
//! 3. A request refused for a credential is audited with the credential redacted.
//! 4. Node keys, profile keys and procedure ids holding an AWS key id: refused before they
//!    are lower-cased (nothing stored, lower-cased or not).

mod secret_targets;

use evident_e2e::{Embed, TestApp, enc};
use secret_targets::*;
use serde_json::{Value, json};

/// Built at run time, so this file holds nothing that looks like a live credential.
fn aws() -> String {
    format!("AKIA{}", "Q4MZ7RT2LHKXW5PB")
}
fn github() -> String {
    format!("ghp_{}", "Zk3dWf6hPj9kLm2nRp5qRs8tVv1wXy4zCb7c")
}
const PASSWORD: &str = "Qz7W7hipTgad!";

/// The report's forms, each around [`PASSWORD`].
fn forms() -> Vec<String> {
    vec![
        format!("pwd: db_password = {PASSWORD}"),
        format!("The password is {PASSWORD}"),
        format!("Password: {PASSWORD} (prod db)"),
        format!("pass={PASSWORD}"),
        format!("pw={PASSWORD}"),
        format!("db_pass: {PASSWORD}"),
    ]
}

fn refused(what: &str, status: u16, v: &Value, secret: &str) {
    assert_eq!(
        (status, v["code"].as_str()),
        (422, Some("credential_detected")),
        "{what}: {v}"
    );
    let msg = v["message"].as_str().unwrap_or("");
    assert!(!msg.contains(secret), "{what}: echoes the secret: {msg}");
}

/// No file of the data directory holds `needle` (case-insensitive: `text.index` and
/// normalised keys lower-case).
async fn not_stored(app: &TestApp, needle: &str) {
    app.store.save_text_index().await.expect("text index saved");
    let needle = needle.to_ascii_lowercase();
    for (path, bytes) in stored_bytes(app) {
        let lower = bytes.to_ascii_lowercase();
        assert!(
            !lower.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "{path} holds {needle}"
        );
    }
    let (_, audit) = app.get("/api/v1/audit?limit=1000").await;
    assert!(
        !audit.to_string().to_ascii_lowercase().contains(&needle),
        "the audit log holds {needle}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decoy_and_sentence_forms_are_refused_in_every_field_and_tool() {
    let app = TestApp::new(Embed::Hashing).await;
    let f = setup(&app).await;
    let rest = rest_entries(&f);
    let tools = tool_entries(&f);
    for form in forms() {
        for e in rest.iter().filter(|e| e.expect == Expect::Refused) {
            let (s, v) = send(&app, e, &form).await;
            refused(
                &format!("{} {} {form:?}", e.method, e.uri),
                s.as_u16(),
                &v,
                PASSWORD,
            );
        }
        for e in &tools {
            let v = call_tool(&app, e, &form).await;
            assert_eq!(
                v.pointer("/error/data/code").and_then(Value::as_str),
                Some("credential_detected"),
                "mcp {} {form:?}: {v}",
                e.tool
            );
        }
    }
    not_stored(&app, PASSWORD).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_ids_and_tokens_in_ids_paths_and_settings_are_refused() {
    let app = TestApp::new(Embed::Hashing).await;
    let (aws, gh) = (aws(), github());
    let doc = |extra: Value| {
        let mut b =
            json!({"clientId": "acme", "sourceUrn": "doc:x", "kind": "doc", "content": "ordinary"});
        for (k, v) in extra.as_object().expect("object") {
            b[k] = v.clone();
        }
        b
    };
    let probes: Vec<(&str, &str, String, Option<Value>, &str)> = vec![
        (
            "projectId",
            "POST",
            "/api/v1/ingest".into(),
            Some(doc(json!({"projectId": aws}))),
            &aws,
        ),
        (
            "groupId",
            "POST",
            "/api/v1/ingest".into(),
            Some(doc(json!({"groupId": gh}))),
            &gh,
        ),
        (
            "memory session id",
            "PUT",
            format!("/api/v1/memory/{aws}/goal"),
            Some(json!({"clientId": "acme", "value": "x"})),
            &aws,
        ),
        (
            "memory session id, encoded",
            "PUT",
            format!("/api/v1/memory/{}/goal", enc(&gh)),
            Some(json!({"clientId": "acme", "value": "x"})),
            &gh,
        ),
        (
            "source settings",
            "POST",
            "/api/v1/sources/github".into(),
            Some(json!({"clientId": "acme", "repo": format!("own/{gh}")})),
            &gh,
        ),
        (
            "source id",
            "POST",
            "/api/v1/sources/github".into(),
            Some(json!({"clientId": "acme", "id": format!("acme.{aws}"), "repo": "own/repo"})),
            &aws,
        ),
        (
            "query scope of a write",
            "DELETE",
            format!("/api/v1/memory/s1?clientId=acme&projectId={aws}"),
            None,
            &aws,
        ),
    ];
    for (what, method, uri, body, secret) in probes {
        let (s, v) = app
            .call(
                method,
                &uri,
                body.map(|b| axum::body::Body::from(b.to_string())),
                &[],
            )
            .await;
        refused(what, s.as_u16(), &v, secret);
    }
    let (s, sources) = app.get("/api/v1/sources/github?clientId=acme").await;
    assert_eq!(s, 200, "{sources}");
    assert_eq!(sources.to_string().matches("own/").count(), 0, "{sources}");
    not_stored(&app, &aws).await;
    not_stored(&app, &gh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_for_a_credential_is_audited_redacted() {
    let app = TestApp::new(Embed::Hashing).await;
    let aws = aws();
    for uri in [
        format!("/api/v1/memory/sess/{aws}"),
        format!("/api/v1/memory/sess/%41{}", &aws[1..]),
    ] {
        let (s, v) = app
            .call(
                "PUT",
                &uri,
                Some(axum::body::Body::from(
                    json!({"clientId": "acme", "value": "x"}).to_string(),
                )),
                &[],
            )
            .await;
        refused(&uri, s.as_u16(), &v, &aws);
    }
    let (s, audit) = app.get("/api/v1/audit?limit=100").await;
    assert_eq!(s, 200, "{audit}");
    let events: Vec<&Value> = audit["events"]
        .as_array()
        .or_else(|| audit.as_array())
        .expect("events")
        .iter()
        .filter(|e| e["outcome"] == "credential_detected")
        .collect();
    assert_eq!(events.len(), 2, "{audit}");
    for e in events {
        assert_eq!(e["status"], 422, "{e}");
        assert_eq!(
            e["target"], "/api/v1/memory/sess/[REDACTED:aws_access_key]",
            "{e}"
        );
    }
    not_stored(&app, &aws).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_and_ids_are_refused_before_they_are_lower_cased() {
    let app = TestApp::new(Embed::Hashing).await;
    app.post_ok(
        "/api/v1/ingest",
        &json!({"clientId": "acme", "sourceUrn": "doc:base", "kind": "doc", "content": "The payments team."}),
    )
    .await;
    let aws = aws();
    let evidence = json!({"text": "The payments team."});
    let probes: Vec<(&str, &str, String, Value)> = vec![
        (
            "node key",
            "POST",
            "/api/v1/graph/nodes".into(),
            json!({"clientId": "acme", "key": format!("Team:{aws}"), "type": "team", "evidence": evidence}),
        ),
        (
            "profile key",
            "PUT",
            format!("/api/v1/graph/node/person:{aws}/profile"),
            json!({"clientId": "acme", "properties": {"team": "payments"}}),
        ),
        (
            "procedure id",
            "POST",
            "/api/v1/procedures".into(),
            json!({"clientId": "acme", "id": aws, "triggerPattern": "deploy", "source": "user_defined",
                   "steps": [{"agent": "A", "action": "b"}]}),
        ),
        (
            "procedure id in the path",
            "PUT",
            format!("/api/v1/procedures/{aws}"),
            json!({"clientId": "acme", "triggerPattern": "deploy", "source": "user_defined",
                   "steps": [{"agent": "A", "action": "b"}]}),
        ),
    ];
    for (what, method, uri, body) in probes {
        let (s, v) = app
            .call(
                method,
                &uri,
                Some(axum::body::Body::from(body.to_string())),
                &[],
            )
            .await;
        refused(what, s.as_u16(), &v, &aws);
    }
    // Neither as sent nor lower-cased.
    not_stored(&app, &aws).await;
}
