//! Tokens, the audit log and request hygiene through the real router: token lifecycle,
//! single-client tokens, audit records, 415 / 405, CORS, rate limits, and the admin move of
//! a source.

use std::sync::Arc;

use axum::body::Body;
use axum::http::StatusCode;
use evident_ai::HashingEmbedder;
use evident_core::access::Role;
use evident_e2e::{Embed, TestApp, bearer, field_strs, narrowed};
use serde_json::json;

#[tokio::test]
async fn a_single_client_token_may_omit_the_client_and_the_queue_is_scoped() {
    let app = TestApp::new(Embed::Hashing).await;
    let c1 = app.client_token("c1", "c1", Role::Admin).await;
    let auth = bearer(&c1);
    let (status, out) = app
        .call_auth(
            &auth,
            "POST",
            "/api/v1/ingest-queue",
            Some(&json!({"sourceUrn": "doc:a", "kind": "doc", "content": "alpha"})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{out}");
    app.post(
        "/api/v1/ingest-queue",
        &json!({"clientId": "c2", "sourceUrn": "doc:b", "kind": "doc", "content": "beta"}),
    )
    .await;
    let (status, list) = app.call_auth(&auth, "GET", "/api/v1/queue", None).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let tasks = list["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 1, "{list}");
    assert_eq!(tasks[0]["clientId"], "c1");
    assert_eq!(
        list["counts"]["queued"], 1,
        "counts are the client's: {list}"
    );
    let (_, all) = app.get("/api/v1/queue").await;
    assert_eq!(
        all["tasks"].as_array().map(Vec::len),
        Some(2),
        "operators see every client"
    );
    let (status, _) = app
        .call_auth(&auth, "GET", "/api/v1/queue?clientId=c2", None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn tokens_are_created_shown_once_used_listed_and_revoked() {
    let app = TestApp::new(Embed::Hashing).await;
    let (status, created) = app
        .post(
            "/api/v1/tokens",
            &json!({"clientId": "c1", "role": "admin", "name": "c1 admin", "expiresInSecs": 3600}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let admin = created["secret"].as_str().expect("secret").to_string();
    assert!(admin.starts_with("evd_"));
    assert!(
        created["token"].get("secretHash").is_none(),
        "the hash is never shown"
    );
    let auth = bearer(&admin);
    // An admin mints narrower tokens of its client, never wider ones.
    let (status, out) = app
        .call_auth(
            &auth,
            "POST",
            "/api/v1/tokens",
            Some(&json!({"role": "read", "projects": ["p1"]})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{out}");
    assert_eq!(out["token"]["grant"]["clientId"], "c1");
    let reader = out["token"]["id"].as_str().expect("id").to_string();
    for wider in [
        json!({"role": "operator"}),
        json!({"clientId": "c2", "role": "read"}),
    ] {
        let (status, out) = app
            .call_auth(&auth, "POST", "/api/v1/tokens", Some(&wider))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{wider}: {out}");
    }
    let (status, who) = app.call_auth(&auth, "GET", "/api/v1/whoami", None).await;
    assert_eq!(
        (status, who["grant"]["role"].as_str()),
        (StatusCode::OK, Some("admin"))
    );
    let (_, list) = app.call_auth(&auth, "GET", "/api/v1/tokens", None).await;
    let ids = field_strs(&list["tokens"], "id");
    assert_eq!(ids.len(), 2, "{list}");
    assert!(
        !list.to_string().contains(&admin),
        "listings never hold secrets"
    );
    let (status, _) = app
        .call_auth(&auth, "DELETE", &format!("/api/v1/tokens/{reader}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app
        .call_auth(
            &auth,
            "DELETE",
            &format!(
                "/api/v1/tokens/{}",
                created["token"]["id"].as_str().expect("id")
            ),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "a token may revoke itself");
    let (status, out) = app.call_auth(&auth, "GET", "/api/v1/whoami", None).await;
    assert_eq!(
        (status, out["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("token_revoked")),
        "at once on this replica"
    );
    // Bad input.
    for bad in [
        json!({"role": "root", "clientId": "c1"}),
        json!({"role": "read"}),
        json!({"role": "read", "clientId": "c1", "expiresInSecs": 0}),
        json!({"role": "read", "clientId": "c1", "name": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}),
    ] {
        let (status, out) = app.post("/api/v1/tokens", &bad).await;
        assert!(status.is_client_error(), "{bad}: {status} {out}");
        assert!(out["code"].is_string());
    }
}

#[tokio::test]
async fn writes_and_admin_actions_are_audited_without_secrets() {
    let app = TestApp::new(Embed::Hashing).await;
    let c1 = app.client_token("c1-admin", "c1", Role::Admin).await;
    let reader = app.client_token("c1-reader", "c1", Role::Read).await;
    let auth = bearer(&c1);
    let (status, _) = app
        .call_auth(
            &auth,
            "POST",
            "/api/v1/ingest",
            Some(&json!({"sourceUrn": "doc:x", "kind": "doc", "content": "audited text"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    app.call_auth(
        &bearer(&reader),
        "POST",
        "/api/v1/purge",
        Some(&json!({"sourceUrn": "doc:x"})),
    )
    .await;
    app.call_auth(
        &auth,
        "POST",
        "/api/v1/retrieve",
        Some(&json!({"query": "audited"})),
    )
    .await;
    app.post(
        "/api/v1/ingest",
        &json!({"clientId": "c2", "sourceUrn": "doc:y", "kind": "doc", "content": "other"}),
    )
    .await;
    let (status, log) = app.call_auth(&auth, "GET", "/api/v1/audit", None).await;
    assert_eq!(status, StatusCode::OK, "{log}");
    let events = log["events"].as_array().expect("events");
    let summary: Vec<(String, String, String)> = events
        .iter()
        .map(|e| {
            (
                e["tokenId"].as_str().unwrap_or("").into(),
                e["route"].as_str().unwrap_or("").into(),
                e["outcome"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "c1-reader".to_string(),
                "/api/v1/purge".to_string(),
                "forbidden_role".to_string()
            ),
            (
                "c1-admin".to_string(),
                "/api/v1/ingest".to_string(),
                "ok".to_string()
            ),
        ],
        "c1's writes and refusals, newest first; reads and c2's writes are not listed"
    );
    let text = log.to_string();
    assert!(
        !text.contains(&c1) && !text.contains(&reader),
        "no secret in the log"
    );
    let (_, all) = app.get("/api/v1/audit").await;
    assert!(
        all["events"].as_array().map(Vec::len).unwrap_or(0) >= 3,
        "operators see every client"
    );
}

#[tokio::test]
async fn json_endpoints_refuse_other_content_types_and_change_nothing() {
    let app = TestApp::new(Embed::Hashing).await;
    app.post(
        "/api/v1/ingest",
        &json!({"clientId": "c1", "sourceUrn": "doc:k", "kind": "doc", "content": "kept"}),
    )
    .await;
    let before = app.fingerprint().await;
    for ct in ["text/plain", "application/x-www-form-urlencoded", ""] {
        let body = json!({"clientId": "c1", "sourceUrn": "doc:k"}).to_string();
        let (status, out) = app
            .call(
                "POST",
                "/api/v1/purge",
                Some(Body::from(body)),
                &[("content-type", ct)],
            )
            .await;
        assert_eq!(out["code"], "unsupported_media_type", "{ct}");
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{ct}");
    }
    assert_eq!(app.fingerprint().await, before);
    let (status, out) = app.call("PATCH", "/api/v1/ingest", None, &[]).await;
    assert_eq!(
        (status, out["code"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed"))
    );
    // No CORS unless configured.
    let req = axum::http::Request::builder()
        .method("GET")
        .uri("/healthz")
        .header("origin", "https://evil.example")
        .body(Body::empty())
        .expect("req");
    let resp = tower::ServiceExt::oneshot(app.router.clone(), req)
        .await
        .expect("answer");
    assert!(resp.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn cors_allows_listed_origins_and_rate_limits_answer_429_with_retry_after() {
    let embedder = Arc::new(HashingEmbedder::new(64).expect("dim"));
    let app = TestApp::with_api_config(
        embedder,
        tempfile::tempdir().expect("tmp"),
        evident_api::ApiConfig {
            cors_origins: vec!["https://console.example".into()],
            auth: evident_api::auth::AuthConfig {
                rate_limit: Some(evident_api::auth::rate::RateLimit {
                    per_sec: 0.01,
                    burst: 3.0,
                }),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await;
    let preflight = axum::http::Request::builder()
        .method("OPTIONS")
        .uri("/api/v1/retrieve")
        .header("origin", "https://console.example")
        .header("access-control-request-method", "POST")
        .body(Body::empty())
        .expect("req");
    let resp = tower::ServiceExt::oneshot(app.router.clone(), preflight)
        .await
        .expect("answer");
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        resp.headers()["access-control-allow-origin"],
        "https://console.example"
    );
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(app.get("/api/v1/whoami").await.0);
    }
    assert_eq!(statuses[..3], [StatusCode::OK; 3]);
    let req = axum::http::Request::builder()
        .uri("/api/v1/whoami")
        .header("authorization", bearer(&app.token))
        .body(Body::empty())
        .expect("req");
    let resp = tower::ServiceExt::oneshot(app.router.clone(), req)
        .await
        .expect("answer");
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(resp.headers().get("retry-after").is_some());
    assert_eq!(
        app.get("/healthz").await.0,
        StatusCode::OK,
        "public routes are not limited"
    );
}

#[tokio::test]
async fn an_admin_moves_a_source_only_between_scopes_it_holds() {
    let app = TestApp::new(Embed::Hashing).await;
    app
        .post_ok(
            "/api/v1/ingest",
            &json!({"clientId": "c1", "projectId": "p1", "sourceUrn": "doc:plan", "kind": "doc", "content": "the migration plan"}),
        )
        .await;
    let p1_admin = app
        .token("p1-admin", narrowed(Role::Admin, "c1", &["p1"], &[]))
        .await;
    let body = json!({"projectId": "p1", "sourceUrn": "doc:plan", "toProjectId": "p2"}).to_string();
    let (status, out) = app
        .call(
            "POST",
            "/api/v1/move",
            Some(Body::from(body.clone())),
            &[("authorization", &bearer(&p1_admin))],
        )
        .await;
    assert_eq!(
        (status, out["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("forbidden_scope")),
        "{out}"
    );
    let c1_admin = app.client_token("c1-admin", "c1", Role::Admin).await;
    let (status, out) = app
        .call(
            "POST",
            "/api/v1/move",
            Some(Body::from(body)),
            &[("authorization", &bearer(&c1_admin))],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert!(out["chunks"].as_u64().unwrap_or(0) >= 1, "{out}");
    let (_, pack) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "c1", "projectId": "p2", "query": "migration plan"}),
        )
        .await;
    assert_eq!(pack["items"][0]["sourceUrn"], "doc:plan", "{pack}");
    let (_, pack) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "c1", "projectId": "p1", "query": "migration plan"}),
        )
        .await;
    assert!(
        pack["items"].as_array().is_none_or(Vec::is_empty),
        "gone from p1: {pack}"
    );
}
