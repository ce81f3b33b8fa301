use super::*;
use serde_json::json;

/// Built at run time, so this file holds nothing that looks like a live key.
fn aws() -> String {
    format!("AKIA{}", "Z3MHQ7RT2LQKXW5P")
}

fn refused_field(r: Result<(), ApiError>) -> Option<String> {
    let e = r.err()?;
    assert_eq!((e.status.as_u16(), e.code), (422, "credential_detected"));
    assert!(!e.message.contains(&aws()), "{}", e.message);
    Some(e.message.split(' ').next().unwrap_or("").to_string())
}

#[test]
fn path_parameters_are_decoded_and_named() {
    let m = "/api/v1/memory/{session_id}/{key}";
    assert!(scan_path(m, "/api/v1/memory/s1/goal").is_ok());
    let plain = format!("/api/v1/memory/{}/goal", aws());
    assert_eq!(
        refused_field(scan_path(m, &plain)).as_deref(),
        Some("sessionId")
    );
    // Percent-encoded, and lower-cased after decoding by a handler: refused before that.
    let encoded = format!("/api/v1/memory/s1/%41{}", &aws()[1..]);
    assert_eq!(
        refused_field(scan_path(m, &encoded)).as_deref(),
        Some("key")
    );
    assert_eq!(
        percent_decode("a%20b%2Fc%zz%4"),
        "a b/c%zz%4",
        "invalid escapes are kept"
    );
}

#[test]
fn query_pairs_are_scanned_with_their_key() {
    assert!(scan_query(Some("clientId=acme&limit=3")).is_ok());
    assert!(scan_query(None).is_ok());
    let q = format!("clientId=acme&projectId={}", aws());
    assert_eq!(
        refused_field(scan_query(Some(&q))).as_deref(),
        Some("projectId")
    );
    let q = "clientId=acme&db_pass=Qz7W7hipTgad%21";
    assert_eq!(
        refused_field(scan_query(Some(q))).as_deref(),
        Some("db_pass")
    );
}

#[test]
fn json_bodies_at_any_depth_forms_and_text() {
    let ok = json!({"clientId": "acme", "content": "ordinary text", "n": 3});
    assert!(scan_body("/api/v1/ingest", None, ok.to_string().as_bytes()).is_ok());
    for (body, field) in [
        (
            json!({"repo": format!("own/ghp_{}", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c")}),
            "repo",
        ),
        (
            json!({"settings": {"db_pass": "Qz7W7hipTgad!"}}),
            "settings.db_pass",
        ),
        (
            json!({"items": ["x", {"note": "pwd: db_password = Qz7W7hipTgad!"}]}),
            "items[1].note",
        ),
        (json!({"projectId": aws()}), "projectId"),
        (json!({ aws(): 1 }), "AKIAZ3MHQ7RT2LQKXW5P"),
    ] {
        let r = scan_body(
            "/api/v1/ingest",
            Some("application/json"),
            body.to_string().as_bytes(),
        );
        let got = r.err().map(|e| e.message).unwrap_or_default();
        assert!(got.starts_with(field), "{body}: {got}");
    }
    let form = format!("name=x&path={}", aws());
    let r = scan_body(
        "/ui/sources",
        Some("application/x-www-form-urlencoded"),
        form.as_bytes(),
    );
    assert_eq!(refused_field(r).as_deref(), Some("path"));
    let text = format!("not json: {}", aws());
    assert_eq!(
        refused_field(scan_body("/x", Some("text/plain"), text.as_bytes())).as_deref(),
        Some("body")
    );
}

#[test]
fn redacted_fields_are_left_to_their_indexer_and_nothing_else() {
    let content = "db:\n  password: \"Qz7W7hipTgad!\"\n";
    let push = json!({"clientId": "acme", "repository": "r", "branch": "main",
                      "files": [{"path": "a.yaml", "content": content}]});
    let bytes = push.to_string();
    assert!(scan_body("/api/v1/ingest/git-structure", None, bytes.as_bytes()).is_ok());
    // The same field on another route, and another field on this one, are refused.
    assert!(scan_body("/api/v1/ingest", None, bytes.as_bytes()).is_err());
    let path = json!({"clientId": "acme", "repository": "r", "branch": "main",
                      "files": [{"path": aws(), "content": "x"}]});
    let r = scan_body(
        "/api/v1/ingest/git-structure",
        None,
        path.to_string().as_bytes(),
    );
    assert_eq!(refused_field(r).as_deref(), Some("files[0].path"));
    for (route, _) in REDACTED_FIELDS {
        assert!(
            super::super::policy::ROUTES
                .iter()
                .any(|(_, p, _)| p == route),
            "{route} is a route"
        );
    }
}

#[test]
fn audit_records_are_redacted_decoded() {
    let mut event = AuditEvent {
        id: "1".into(),
        at: 0,
        token_id: "tok".into(),
        token_name: "ci".into(),
        method: "PUT".into(),
        route: "/api/v1/memory/{sessionId}/{key}".into(),
        target: format!("/api/v1/memory/%41{}/goal", &aws()[1..]),
        client_id: Some("acme".into()),
        project_id: Some(aws()),
        group_id: None,
        status: 422,
        outcome: "credential_detected".into(),
    };
    redact_audit(&mut event);
    assert_eq!(
        event.target,
        "/api/v1/memory/[REDACTED:aws_access_key]/goal"
    );
    assert_eq!(
        event.project_id.as_deref(),
        Some("[REDACTED:aws_access_key]")
    );
    assert_eq!(event.client_id.as_deref(), Some("acme"));
    let mut clean = event.clone();
    clean.target = "/api/v1/memory/s%201/goal".into();
    redact_audit(&mut clean);
    assert_eq!(
        clean.target, "/api/v1/memory/s%201/goal",
        "kept as requested"
    );
}
