//! Every probe of issue 11's attack report, replayed through the real router on a store with
//! data in it: each answers a 4xx JSON error `{code, message}` and changes nothing (the
//! store fingerprint, the registered sources and the queue are compared before and after).

use axum::body::Body;
use evident_core::access::{Grant, Role};
use evident_e2e::{Embed, TestApp};
use serde_json::{Value, json};

/// (what, method, uri, content type, body, token: None = the operator's, Some("") = none).
type Probe = (
    &'static str,
    &'static str,
    String,
    &'static str,
    Value,
    Option<String>,
);

#[tokio::test]
async fn each_probe_is_a_4xx_json_error_and_changes_nothing() {
    let app = TestApp::new(Embed::Hashing).await;
    for (client, project, urn) in [
        ("c1", "p1", "doc:p1"),
        ("c1", "p2", "doc:p2"),
        ("c2", "p1", "doc:c2"),
    ] {
        app.post_ok(
            "/api/v1/ingest",
            &json!({"clientId": client, "projectId": project, "sourceUrn": urn, "kind": "doc",
                        "content": format!("the {client} {project} ledger, owned by user:ann")}),
        )
        .await;
    }
    app.post(
        "/api/v1/ingest-queue",
        &json!({"clientId": "c2", "sourceUrn": "doc:c2-queued", "kind": "doc", "content": "queued"}),
    )
    .await;
    let p1_admin = app
        .token(
            "p1-admin",
            Grant {
                role: Role::Admin,
                client_id: Some("c1".into()),
                projects: vec!["p1".into()],
                groups: vec![],
            },
        )
        .await;
    let c1_admin = app.client_token("c1-admin", "c1", Role::Admin).await;
    let jwt = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4IiwiZXhwIjo5OTk5OTk5OTk5LCJldmlkZW50X3JvbGUiOiJvcGVyYXRvciJ9.";
    let fake_github = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let ingest = |extra: Value| {
        let mut b = json!({"clientId": "c1", "projectId": "p1", "sourceUrn": "doc:new", "kind": "doc", "content": "harmless"});
        for (k, v) in extra.as_object().expect("object") {
            b[k] = v.clone();
        }
        b
    };
    let none = Some(String::new());
    let probes: Vec<Probe> = vec![
        // No authentication.
        (
            "anonymous retrieve",
            "POST",
            "/api/v1/retrieve".into(),
            "application/json",
            json!({"clientId": "c1", "query": "ledger"}),
            none.clone(),
        ),
        (
            "anonymous purge",
            "POST",
            "/api/v1/purge".into(),
            "application/json",
            json!({"clientId": "c1", "sourceUrn": "doc:p1"}),
            none.clone(),
        ),
        (
            "anonymous memory",
            "PUT",
            "/api/v1/memory/s1/k".into(),
            "application/json",
            json!({"clientId": "c1", "value": 1}),
            none.clone(),
        ),
        (
            "anonymous alias merge",
            "POST",
            "/api/v1/alias/merge".into(),
            "application/json",
            json!({"clientId": "c1", "source": "user:ann", "target": "user:bob"}),
            none.clone(),
        ),
        (
            "anonymous source registration",
            "POST",
            "/api/v1/sources/mbox".into(),
            "application/json",
            json!({"clientId": "c1", "path": "/tmp/x.mbox"}),
            none.clone(),
        ),
        (
            "unsigned JWT",
            "POST",
            "/api/v1/retrieve".into(),
            "application/json",
            json!({"clientId": "c1", "query": "x"}),
            Some(jwt.into()),
        ),
        // Another client's data and queue.
        (
            "other client's queue",
            "GET",
            "/api/v1/queue?clientId=c2".into(),
            "",
            Value::Null,
            Some(c1_admin.clone()),
        ),
        (
            "other client's purge",
            "POST",
            "/api/v1/purge".into(),
            "application/json",
            json!({"clientId": "c2", "sourceUrn": "doc:c2"}),
            Some(c1_admin.clone()),
        ),
        // Projects inside a client.
        (
            "p1 admin purges p2's document",
            "POST",
            "/api/v1/purge".into(),
            "application/json",
            json!({"clientId": "c1", "projectId": "p2", "sourceUrn": "doc:p2"}),
            Some(p1_admin.clone()),
        ),
        (
            "p1 purges p2's urn from p1",
            "POST",
            "/api/v1/purge".into(),
            "application/json",
            json!({"clientId": "c1", "projectId": "p1", "sourceUrn": "doc:p2"}),
            Some(c1_admin.clone()),
        ),
        (
            "p1 ingests over p2's urn",
            "POST",
            "/api/v1/ingest".into(),
            "application/json",
            ingest(json!({"sourceUrn": "doc:p2"})),
            Some(c1_admin.clone()),
        ),
        // CSRF: bodies that are not JSON.
        (
            "text/plain purge",
            "POST",
            "/api/v1/purge".into(),
            "text/plain",
            json!({"clientId": "c1", "projectId": "p1", "sourceUrn": "doc:p1"}),
            None,
        ),
        (
            "form purge",
            "POST",
            "/api/v1/purge".into(),
            "application/x-www-form-urlencoded",
            json!({"clientId": "c1", "projectId": "p1", "sourceUrn": "doc:p1"}),
            None,
        ),
        // SSRF and arbitrary files.
        (
            "crawl the server's own API",
            "POST",
            "/api/v1/sources/web".into(),
            "application/json",
            json!({"clientId": "c1", "urls": ["http://127.0.0.1:7878/api/v1/sources"]}),
            None,
        ),
        (
            "crawl the metadata service",
            "POST",
            "/api/v1/sources/web".into(),
            "application/json",
            json!({"clientId": "c1", "urls": ["http://169.254.169.254/latest/meta-data/"]}),
            None,
        ),
        (
            "crawl a private range",
            "POST",
            "/api/v1/sources/web".into(),
            "application/json",
            json!({"clientId": "c1", "urls": ["http://10.0.0.8/"]}),
            None,
        ),
        (
            "crawl [::1]",
            "POST",
            "/api/v1/sources/web".into(),
            "application/json",
            json!({"clientId": "c1", "urls": ["http://[::1]:7878/"]}),
            None,
        ),
        (
            "crawl a decimal IP",
            "POST",
            "/api/v1/sources/web".into(),
            "application/json",
            json!({"clientId": "c1", "urls": ["http://2130706433/"]}),
            None,
        ),
        (
            "documents under /etc",
            "POST",
            "/api/v1/sources/documents".into(),
            "application/json",
            json!({"clientId": "c1", "path": "/etc"}),
            None,
        ),
        (
            "mbox /etc/passwd",
            "POST",
            "/api/v1/sources/mbox".into(),
            "application/json",
            json!({"clientId": "c1", "path": "/etc/passwd"}),
            None,
        ),
        (
            "github on loopback",
            "POST",
            "/api/v1/sources/github".into(),
            "application/json",
            json!({"clientId": "c1", "repo": "a/b", "baseUrl": "http://127.0.0.1:9/"}),
            None,
        ),
        (
            "git over ssh",
            "POST",
            "/api/v1/sources/git".into(),
            "application/json",
            json!({"clientId": "c1", "url": "ssh://git@example.com/a.git"}),
            None,
        ),
        (
            "git ext:: transport",
            "POST",
            "/api/v1/sources/git".into(),
            "application/json",
            json!({"clientId": "c1", "url": "ext::sh -c touch% /tmp/pwned"}),
            None,
        ),
        (
            "git --upload-pack branch",
            "POST",
            "/api/v1/sources/git".into(),
            "application/json",
            json!({"clientId": "c1", "url": "https://example.com/a.git", "branches": ["--upload-pack=touch /tmp/pwned"]}),
            None,
        ),
        (
            "git --exec branch",
            "POST",
            "/api/v1/sources/git".into(),
            "application/json",
            json!({"clientId": "c1", "url": "https://example.com/a.git", "branches": ["--exec=id"]}),
            None,
        ),
        // Secrets in every stored string.
        (
            "secret in metadata",
            "POST",
            "/api/v1/ingest".into(),
            "application/json",
            ingest(json!({"metadata": {"note": {"deep": format!("token {fake_github}")}}})),
            None,
        ),
        (
            "secret in sourceUrn",
            "POST",
            "/api/v1/ingest".into(),
            "application/json",
            ingest(json!({"sourceUrn": format!("doc:{fake_github}")})),
            None,
        ),
        (
            "secret in mainNodeKey",
            "POST",
            "/api/v1/ingest".into(),
            "application/json",
            ingest(json!({"mainNodeKey": format!("doc:{fake_github}")})),
            None,
        ),
        (
            "secret in a memory value",
            "PUT",
            "/api/v1/memory/s1/k".into(),
            "application/json",
            json!({"clientId": "c1", "value": {"token": fake_github}}),
            None,
        ),
        (
            "secret in an alias",
            "POST",
            "/api/v1/alias/register".into(),
            "application/json",
            json!({"clientId": "c1", "alias": format!("user:{fake_github}"), "canonical": "user:ann"}),
            None,
        ),
        (
            "JWT in a CPG edge name",
            "POST",
            "/api/v1/ingest/cpg".into(),
            "application/json",
            json!({"clientId": "c1", "repository": "shop", "edges": [{"from": format!("a.{jwt}x"), "to": "b.c", "kind": "calls"}]}),
            None,
        ),
    ];

    let before = (app.fingerprint().await, registered(&app).await);
    for (what, method, uri, ct, body, token) in probes {
        let auth = match &token {
            None => format!("Bearer {}", app.token),
            Some(t) if t.is_empty() => String::new(),
            Some(t) => format!("Bearer {t}"),
        };
        let body = (!body.is_null()).then(|| Body::from(body.to_string()));
        let (status, out) = app
            .call(
                method,
                &uri,
                body,
                &[("authorization", &auth), ("content-type", ct)],
            )
            .await;
        assert!(status.is_client_error(), "{what}: {status} {out}");
        assert!(
            out["code"].is_string() && out["message"].is_string(),
            "{what}: not a JSON error: {out}"
        );
        for secret in [fake_github, jwt] {
            assert!(
                !out.to_string().contains(secret),
                "{what}: the answer echoes the secret"
            );
        }
    }
    let after = (app.fingerprint().await, registered(&app).await);
    assert_eq!(before, after, "a probe changed the store");
}

/// What the probes must not change beside the store's rows: sources, indexers, the queue.
async fn registered(app: &TestApp) -> (Value, Value, Option<usize>) {
    let (_, s) = app.get("/api/v1/sources?clientId=c1&limit=1000").await;
    let (_, i) = app.get("/api/v1/indexers?clientId=c1").await;
    let (_, q) = app.get("/api/v1/queue?limit=1000").await;
    (s, i, q["tasks"].as_array().map(Vec::len))
}
