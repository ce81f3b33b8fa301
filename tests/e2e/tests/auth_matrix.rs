//! Authorisation through the real router: the route × caller matrix generated from the
//! route table, and an exhaustive check that no read path answers outside a grant and no
//! write lands outside it.

use axum::body::Body;
use axum::http::StatusCode;
use evident_api::auth::policy::{Access, ScopeFrom};
use evident_api::routes::ROUTES;
use evident_core::Scope;
use evident_core::access::{Grant, Role};
use evident_e2e::{Embed, TestApp, bearer, enc, mint, narrowed};
use serde_json::{Value, json};

/// A request for `route` addressing client c1 (and project `project`).
fn request_for(
    method: &str,
    path: &str,
    access: Access,
    task_id: &str,
    token_id: &str,
    project: Option<&str>,
) -> (String, String, Option<String>) {
    let mut uri = path
        .replace("{key}", "user:someone")
        .replace("{canonical}", "user:someone")
        .replace("{taskId}", task_id)
        .replace("{sessionId}", "s1")
        .replace("{kind}", "mbox");
    uri = if path.starts_with("/api/v1/tokens/") {
        uri.replace("{id}", token_id)
    } else {
        uri.replace("{id}", "c1.none")
    };
    let mut scope = json!({ "clientId": "c1" });
    if let Some(p) = project {
        scope["projectId"] = p.into();
    }
    let from = match access {
        Access::Scoped { from, .. } => Some(from),
        _ => None,
    };
    let body = match (method, from) {
        (_, Some(ScopeFrom::Body)) => Some(scope.to_string()),
        (_, Some(ScopeFrom::Handler)) if method == "post" => {
            Some(json!({"clientId": "c1", "role": "read"}).to_string())
        }
        _ => None,
    };
    if from == Some(ScopeFrom::Query) {
        uri.push_str(&format!(
            "?clientId=c1{}",
            project
                .map(|p| format!("&projectId={p}"))
                .unwrap_or_default()
        ));
    }
    (method.to_uppercase(), uri, body)
}

#[tokio::test]
async fn every_route_answers_each_kind_of_caller_as_its_policy_says() {
    // Three bad credentials per route, on purpose: no limit on failed authentications here
    // (`attacks.rs` tests it).
    let app = TestApp::with_auth(
        Embed::Hashing,
        evident_api::auth::AuthConfig {
            failed_auth: None,
            ..Default::default()
        },
    )
    .await;
    // A task and a token of client c1 for the routes that name one.
    let (s, task) = app
        .post(
            "/api/v1/ingest-queue",
            &json!({"clientId": "c1", "sourceUrn": "doc:q", "kind": "doc", "content": "queued text"}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{task}");
    let task_id = task["taskId"].as_str().expect("task id").to_string();
    let c1_read = app.client_token("c1-read", "c1", Role::Read).await;
    let c1_write = app.client_token("c1-write", "c1", Role::Write).await;
    let c2_admin = app.client_token("c2-admin", "c2", Role::Admin).await;
    let p2_admin = app
        .token("p2-admin", narrowed(Role::Admin, "c1", &["p2"], &[]))
        .await;
    let expired = mint(
        &app.store,
        "expired",
        Grant::client("c1", Role::Admin),
        Some(1),
    )
    .await;
    let revoked = app.client_token("revoked", "c1", Role::Admin).await;
    app.store
        .stores()
        .access
        .revoke_token("revoked", 2)
        .await
        .expect("revoke");
    // Revoked by the operator's call to `DELETE /api/v1/tokens/{id}`, so used for nothing else.
    app.client_token("victim", "c1", Role::Read).await;
    let victim = "victim";

    for (method, path, access) in ROUTES {
        let role = access.role();
        let call = |token: Option<String>, project: Option<&'static str>| {
            let (m, uri, body) = request_for(method, path, *access, &task_id, victim, project);
            let app = &app;
            async move {
                let auth = token.map(|t| bearer(&t)).unwrap_or_default();
                app.call(
                    &m,
                    &uri,
                    body.map(Body::from),
                    &[("authorization", auth.as_str())],
                )
                .await
            }
        };
        let what = format!("{method} {path}");
        let (status, body) = call(None, None).await;
        if role.is_none() {
            assert_ne!(status, StatusCode::UNAUTHORIZED, "{what} is public: {body}");
            continue;
        }
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{what} without a token: {body}"
        );
        assert_eq!(body["code"], "unauthenticated", "{what}");
        for (name, token, code) in [
            ("expired", &expired, "token_expired"),
            ("revoked", &revoked, "token_revoked"),
        ] {
            let (status, body) = call(Some(token.clone()), None).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{what} {name}: {body}");
            assert_eq!(body["code"], code, "{what} {name}");
        }
        let (status, body) = call(Some("evd_not_a_token".into()), None).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("invalid_token")),
            "{what}"
        );

        let (status, body) = call(Some(app.token.clone()), None).await;
        assert!(
            status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN,
            "{what} as operator: {status} {body}"
        );
        let Access::Scoped { role, from, .. } = access else {
            continue;
        };
        // Another client's admin: refused (a task of c1 does not exist for it).
        let (status, body) = call(Some(c2_admin.clone()), None).await;
        match from {
            ScopeFrom::Task => {
                assert_eq!(status, StatusCode::NOT_FOUND, "{what} other client: {body}")
            }
            ScopeFrom::Handler if *method == "delete" => {
                assert_eq!(status, StatusCode::NOT_FOUND, "{what} other client: {body}")
            }
            _ => assert_eq!(status, StatusCode::FORBIDDEN, "{what} other client: {body}"),
        }
        // An admin of another project of the same client, naming project p1.
        if matches!(from, ScopeFrom::Body | ScopeFrom::Query) {
            let (status, body) = call(Some(p2_admin.clone()), Some("p1")).await;
            assert_eq!(
                status,
                StatusCode::FORBIDDEN,
                "{what} other project: {body}"
            );
            assert_eq!(body["code"], "forbidden_scope", "{what}");
        }
        if *role >= Role::Write {
            let (status, body) = call(Some(c1_read.clone()), None).await;
            assert_eq!(
                (status, body["code"].as_str()),
                (StatusCode::FORBIDDEN, Some("forbidden_role")),
                "{what} read role"
            );
        }
        if *role >= Role::Admin {
            let (status, body) = call(Some(c1_write.clone()), None).await;
            assert_eq!(
                (status, body["code"].as_str()),
                (StatusCode::FORBIDDEN, Some("forbidden_role")),
                "{what} write role"
            );
        }
    }
}

fn scopes() -> Vec<Scope> {
    let mut out = vec![Scope::global()];
    for c in ["c1", "c2"] {
        for p in [None, Some("p1"), Some("p2")] {
            for g in [None, Some("g1")] {
                out.push(Scope {
                    client_id: Some(c.into()),
                    project_id: p.map(str::to_string),
                    group_id: g.map(str::to_string),
                });
            }
        }
    }
    out
}

fn urn_of(s: &Scope) -> String {
    format!(
        "doc:{}-{}-{}",
        s.client_id.as_deref().unwrap_or("global"),
        s.project_id.as_deref().unwrap_or("none"),
        s.group_id.as_deref().unwrap_or("none")
    )
}

fn scope_fields(s: &Scope) -> Value {
    let mut v = json!({});
    if let Some(c) = &s.client_id {
        v["clientId"] = c.as_str().into();
    }
    if let Some(p) = &s.project_id {
        v["projectId"] = p.as_str().into();
    }
    if let Some(g) = &s.group_id {
        v["groupId"] = g.as_str().into();
    }
    v
}

fn grants() -> Vec<Grant> {
    let mut out = Vec::new();
    for c in ["c1", "c2"] {
        for projects in [&[][..], &["p1"][..], &["p2"][..], &["p1", "p2"][..]] {
            for groups in [&[][..], &["g1"][..]] {
                out.push(narrowed(Role::Write, c, projects, groups));
            }
        }
    }
    out
}

/// `method uri` (with `body`) as `auth`: the status, the answer, and when it answered 200,
/// the `sourceUrn` of each element of its array `list`.
async fn read_urns(
    app: &TestApp,
    auth: &str,
    method: &str,
    uri: &str,
    body: Option<&Value>,
    list: &str,
) -> (StatusCode, Value, Vec<String>) {
    let body = body.map(|b| Body::from(b.to_string()));
    let (status, v) = app
        .call(method, uri, body, &[("authorization", auth)])
        .await;
    let mut urns = Vec::new();
    if status == StatusCode::OK {
        urns.extend(
            v[list]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["sourceUrn"].as_str().map(str::to_string)),
        );
    }
    (status, v, urns)
}

#[tokio::test]
async fn no_read_answers_and_no_write_lands_outside_the_grant() {
    let app = TestApp::new(Embed::Hashing).await;
    for s in scopes() {
        let mut body = scope_fields(&s);
        if s.client_id.is_none() {
            body["global"] = true.into();
        }
        body["sourceUrn"] = urn_of(&s).into();
        body["kind"] = "doc".into();
        body["content"] = format!(
            "shared harbour ledger entry for {} ref user:alice",
            urn_of(&s)
        )
        .into();
        app.post_ok("/api/v1/ingest", &body).await;
    }
    let mut by_urn: std::collections::HashMap<String, Scope> =
        scopes().into_iter().map(|s| (urn_of(&s), s)).collect();
    for (i, grant) in grants().into_iter().enumerate() {
        let token = app.token(&format!("g{i}"), grant.clone()).await;
        let auth = bearer(&token);
        for reader in scopes() {
            let mut q = scope_fields(&reader);
            let authorised = grant
                .authorize(Role::Read, &reader, evident_core::access::Intent::Read)
                .is_ok()
                || reader.client_id.is_none();
            // Reads: retrieve, by-kind, the source registry, node evidence.
            q["query"] = "harbour ledger".into();
            q["maxResults"] = 50.into();
            let (status, pack, mut seen) =
                read_urns(&app, &auth, "POST", "/api/v1/retrieve", Some(&q), "items").await;
            if status != StatusCode::OK {
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{grant:?} {reader:?}: {pack}"
                );
                assert!(!authorised, "{grant:?} refused {reader:?}");
            }
            let mut bk = scope_fields(&reader);
            bk["kinds"] = json!(["doc"]);
            let by_kind = "/api/v1/chunks/by-kind";
            seen.extend(
                read_urns(&app, &auth, "POST", by_kind, Some(&bk), "chunks")
                    .await
                    .2,
            );
            let mut query = String::new();
            for (k, v) in scope_fields(&reader).as_object().into_iter().flatten() {
                query.push_str(&format!("{k}={}&", enc(v.as_str().unwrap_or(""))));
            }
            let sources = format!("/api/v1/sources?{query}");
            seen.extend(
                read_urns(&app, &auth, "GET", &sources, None, "sources")
                    .await
                    .2,
            );
            let evidence = format!("/api/v1/graph/node/user:alice/evidence?{query}");
            seen.extend(
                read_urns(&app, &auth, "GET", &evidence, None, "chunks")
                    .await
                    .2,
            );
            for urn in seen {
                let data = by_urn
                    .get(&urn)
                    .unwrap_or_else(|| panic!("unknown source {urn}"));
                assert!(
                    grant.sees(data),
                    "{grant:?} reading as {reader:?} got {urn}"
                );
            }
        }
        // Writes: accepted exactly where the grant covers the target.
        for target in scopes() {
            let mut body = scope_fields(&target);
            if target.client_id.is_none() {
                body["global"] = true.into();
            }
            body["sourceUrn"] = format!("doc:write-{i}-{}", urn_of(&target)).into();
            body["kind"] = "doc".into();
            body["content"] = "a written note".into();
            let (status, out) = app
                .call_auth(&auth, "POST", "/api/v1/ingest", Some(&body))
                .await;
            if grant.covers_data(&target) {
                assert_eq!(status, StatusCode::OK, "{grant:?} → {target:?}: {out}");
                by_urn.insert(
                    body["sourceUrn"].as_str().unwrap_or("").to_string(),
                    target.clone(),
                );
            } else {
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{grant:?} → {target:?}: {out}"
                );
            }
        }
    }
}
