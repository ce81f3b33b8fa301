//! Procedural memory through the real router (issue 15, part 3) over the built-in static
//! embedder, with a paused clock: user-defined procedures outrank learned ones, success rate
//! and usage decay order the learned ones, a miss answers the closest candidates, outcomes
//! count exactly under concurrency, scopes stay apart, bad input is refused with nothing
//! written, and the MCP tools do the same with audited writes.

use std::sync::Arc;

use axum::body::Body;
use evident_core::access::Role;
use evident_e2e::{Embed, TestApp, bearer, narrowed};
use evident_store::queue::ManualClock;
use serde_json::{Value, json};

const DAY_MS: i64 = 24 * 3600 * 1000;
const T0: i64 = 1_700_000_000_000;
const TASK: &str = "Users report that the login page crashes after the update";

/// A test app with the static embedder whose API reads time from a paused clock.
async fn app_with_clock() -> (TestApp, Arc<ManualClock>) {
    TestApp::with_clock(Embed::Static, T0).await
}

fn procedure(id: &str, trigger: &str, source: &str, project: Option<&str>) -> Value {
    let mut v = json!({
        "clientId": "acme", "id": id, "triggerPattern": trigger, "source": source,
        "steps": [
            {"agent": "Research", "action": "search_kb", "params": {"kinds": ["issue"]}},
            {"agent": "Coding", "action": "fix"},
            {"agent": "Test", "action": "run"},
            {"agent": "Git", "action": "open_pr"}
        ]
    });
    if let Some(p) = project {
        v["projectId"] = p.into();
    }
    v
}

fn ids(v: &Value, field: &str) -> Vec<String> {
    v[field]
        .as_array()
        .unwrap_or_else(|| panic!("{field} in {v}"))
        .iter()
        .filter_map(|p| p["id"].as_str().map(str::to_string))
        .collect()
}

async fn matched(app: &TestApp, body: Value) -> Value {
    app.post_ok("/api/v1/procedures/match", &body).await
}

async fn outcome(app: &TestApp, id: &str, success: bool) -> Value {
    app.post_ok(
        &format!("/api/v1/procedures/{id}/outcome"),
        &json!({"clientId": "acme", "success": success}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_defined_first_then_success_rate_then_decay() {
    let (app, clock) = app_with_clock().await;
    for (id, source) in [
        ("reliable", "learned"),
        ("shaky", "learned"),
        ("told", "user_defined"),
    ] {
        let (s, v) = app
            .post(
                "/api/v1/procedures",
                &procedure(id, "bug_report", source, None),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["usageCount"], 0);
        assert_eq!(v["successRate"], Value::Null);
        assert_eq!(v["createdAt"], T0);
    }
    for _ in 0..3 {
        outcome(&app, "reliable", true).await;
    }
    outcome(&app, "shaky", true).await;
    outcome(&app, "shaky", false).await;
    let v = outcome(&app, "shaky", false).await;
    assert_eq!(
        (v["usageCount"].clone(), v["successCount"].clone()),
        (json!(3), json!(1))
    );

    // The user-defined one first though it was never used; then by success rate (equal
    // similarity: the same trigger).
    let m = matched(&app, json!({"clientId": "acme", "task": TASK})).await;
    assert_eq!(ids(&m, "procedures"), ["told", "reliable", "shaky"], "{m}");
    let sims: Vec<f64> = m["procedures"]
        .as_array()
        .expect("procedures")
        .iter()
        .map(|p| p["similarity"].as_f64().expect("similarity"))
        .collect();
    assert!(
        sims.iter().all(|s| (s - sims[0]).abs() < 1e-6 && *s >= 0.4),
        "{sims:?}"
    );
    assert_eq!(m["closest"], json!([]));
    assert_eq!(
        m["procedures"][0]["steps"][0]["params"],
        json!({"kinds": ["issue"]})
    );

    // Sixty days on (two half-lives), "shaky" is used again and succeeds: reliable's
    // score fell to a quarter (1.0 × 0.25), shaky's is 0.5 × 1 — the unused one drops.
    clock.advance(60 * DAY_MS);
    let v = outcome(&app, "shaky", true).await;
    assert_eq!(v["lastUsedAt"], T0 + 60 * DAY_MS);
    let m = matched(&app, json!({"clientId": "acme", "task": TASK, "limit": 2})).await;
    assert_eq!(ids(&m, "procedures"), ["told", "shaky"], "{m}");
    let m = matched(&app, json!({"clientId": "acme", "task": TASK})).await;
    let score = |i: usize| m["procedures"][i]["score"].as_f64().expect("score");
    assert!((score(2) / score(1) - 0.5).abs() < 1e-6, "{m}");

    // A task nothing matches: no procedures, the closest ones with their similarity.
    let m = matched(
        &app,
        json!({"clientId": "acme", "task": "What's the weather like in Prague?"}),
    )
    .await;
    assert_eq!(m["procedures"], json!([]), "{m}");
    assert_eq!(ids(&m, "closest").len(), 3);
    assert!(
        m["closest"]
            .as_array()
            .expect("closest")
            .iter()
            .all(|p| p["similarity"].as_f64().expect("similarity") < 0.4)
    );
    assert_eq!(
        m["minSimilarity"].as_f64().map(|f| (f * 10.0).round()),
        Some(4.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semantically_close_triggers_match_and_far_ones_do_not() {
    let (app, _clock) = app_with_clock().await;
    for (id, trigger) in [
        ("bug", "bug_report"),
        ("mail", "email_with_question"),
        ("invoice", "customer invoice dispute"),
        ("review", "code review request"),
    ] {
        app.post_ok(
            "/api/v1/procedures",
            &procedure(id, trigger, "learned", None),
        )
        .await;
    }
    for (task, best) in [
        (TASK, "bug"),
        (
            "The customer wrote an email asking when the feature will be ready",
            "mail",
        ),
        (
            "A customer disputes the amount on invoice 2024-17",
            "invoice",
        ),
        (
            "Please review my pull request for the cart service",
            "review",
        ),
    ] {
        let m = matched(&app, json!({"clientId": "acme", "task": task})).await;
        assert_eq!(
            ids(&m, "procedures").first().map(String::as_str),
            Some(best),
            "{task}: {m}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_outcomes_count_exactly_and_scopes_stay_apart() {
    let (app, _clock) = app_with_clock().await;
    let app = Arc::new(app);
    app.post_ok(
        "/api/v1/procedures",
        &procedure("client-wide", "bug_report", "learned", None),
    )
    .await;
    app.post_ok(
        "/api/v1/procedures",
        &procedure("p1-only", "bug_report", "user_defined", Some("p1")),
    )
    .await;

    // 32 outcomes at once, from project p1 on the client-wide procedure: exactly 32 uses.
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..32 {
        let app = app.clone();
        calls.spawn(async move {
            let body = json!({"clientId": "acme", "projectId": "p1", "success": i % 4 != 0});
            app.post("/api/v1/procedures/client-wide/outcome", &body)
                .await
        });
    }
    while let Some(r) = calls.join_next().await {
        let (s, v) = r.expect("task");
        assert_eq!(s, 200, "{v}");
    }
    let v = app
        .get_ok("/api/v1/procedures/client-wide?clientId=acme")
        .await;
    assert_eq!(
        (v["usageCount"].clone(), v["successCount"].clone()),
        (json!(32), json!(24))
    );
    assert_eq!(v["successRate"], 0.75);

    // Project p1 sees both; the client level and project p2 only the client's; another
    // client nothing.
    let (_, v) = app
        .get("/api/v1/procedures?clientId=acme&projectId=p1")
        .await;
    assert_eq!(ids(&v, "procedures"), ["client-wide", "p1-only"]);
    for (scope, want) in [
        (
            json!({"clientId": "acme", "projectId": "p1"}),
            vec!["p1-only", "client-wide"],
        ),
        (
            json!({"clientId": "acme", "projectId": "p2"}),
            vec!["client-wide"],
        ),
        (json!({"clientId": "acme"}), vec!["client-wide"]),
        (json!({"clientId": "globex"}), vec![]),
    ] {
        let mut body = scope.clone();
        body["task"] = TASK.into();
        let m = matched(&app, body).await;
        assert_eq!(ids(&m, "procedures"), want, "{scope}");
        if want.is_empty() {
            assert_eq!(m["closest"], json!([]), "another client has no candidates");
        }
    }
    for uri in [
        "/api/v1/procedures/p1-only?clientId=acme&projectId=p2",
        "/api/v1/procedures/p1-only?clientId=acme",
        "/api/v1/procedures/client-wide?clientId=globex",
    ] {
        let (s, v) = app.get(uri).await;
        assert_eq!(
            (s.as_u16(), v["code"].as_str()),
            (404, Some("not_found")),
            "{uri}"
        );
    }
    let (s, v) = app
        .post(
            "/api/v1/procedures/p1-only/outcome",
            &json!({"clientId": "acme", "projectId": "p2", "success": true}),
        )
        .await;
    assert_eq!(s, 404, "{v}");

    // Grants: a token narrowed to p2 can neither read nor write p1's procedures.
    let p2 = app
        .token("p2", narrowed(Role::Write, "acme", &["p2"], &[]))
        .await;
    let auth = bearer(&p2);
    for (method, uri, body) in [
        ("GET", "/api/v1/procedures?clientId=acme&projectId=p1", None),
        (
            "POST",
            "/api/v1/procedures/match",
            Some(json!({"clientId": "acme", "projectId": "p1", "task": TASK})),
        ),
        (
            "POST",
            "/api/v1/procedures/p1-only/outcome",
            Some(json!({"clientId": "acme", "projectId": "p1", "success": true})),
        ),
        (
            "DELETE",
            "/api/v1/procedures/p1-only?clientId=acme&projectId=p1",
            None,
        ),
    ] {
        let (s, v) = app
            .call(
                method,
                uri,
                body.map(|b| Body::from(b.to_string())),
                &[("authorization", auth.as_str())],
            )
            .await;
        assert_eq!(s, 403, "{method} {uri}: {v}");
    }
    // Deleting needs the procedure's own scope.
    let (s, v) = app
        .call(
            "DELETE",
            "/api/v1/procedures/client-wide?clientId=acme&projectId=p1",
            None,
            &[],
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (409, Some("procedure_scope_conflict")),
        "{v}"
    );
    let (s, v) = app
        .call(
            "DELETE",
            "/api/v1/procedures/p1-only?clientId=acme&projectId=p1",
            None,
            &[],
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let (_, v) = app
        .get("/api/v1/procedures?clientId=acme&projectId=p1")
        .await;
    assert_eq!(ids(&v, "procedures"), ["client-wide"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_nothing_written() {
    let (app, _clock) = app_with_clock().await;
    app.post_ok(
        "/api/v1/procedures",
        &procedure("keep", "bug_report", "learned", None),
    )
    .await;
    let bad = |f: fn(&mut Value)| {
        let mut v = procedure("bad", "deploy to production", "learned", None);
        f(&mut v);
        v
    };
    let cases: Vec<(Value, u16, &str)> = vec![
        (bad(|v| v["colour"] = "red".into()), 400, "invalid_body"),
        (bad(|v| v["source"] = "learnt".into()), 400, "invalid_field"),
        (bad(|v| v["steps"] = json!([])), 400, "invalid_field"),
        (
            bad(|v| v["steps"][0]["params"] = json!([1, 2])),
            400,
            "invalid_request",
        ),
        (
            bad(|v| v["steps"][0]["extra"] = json!(1)),
            400,
            "invalid_body",
        ),
        (bad(|v| v["id"] = "a/b".into()), 400, "invalid_field"),
        (
            bad(|v| v["triggerPattern"] = " ".into()),
            400,
            "invalid_field",
        ),
        (
            bad(|v| {
                v["steps"][1]["params"] =
                    json!({"token": "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c"})
            }),
            422,
            "credential_detected",
        ),
        (
            bad(|v| v["triggerPattern"] = "deploy with AKIAZ3MHQ7RT2LQKXW5P".into()),
            422,
            "credential_detected",
        ),
        (
            bad(|v| {
                v["id"] = "keep".into();
                v["projectId"] = "p1".into();
            }),
            409,
            "procedure_scope_conflict",
        ),
    ];
    for (body, status, code) in cases {
        let (s, v) = app.post("/api/v1/procedures", &body).await;
        assert_eq!(
            (s.as_u16(), v["code"].as_str()),
            (status, Some(code)),
            "{body}: {v}"
        );
        assert!(
            v["message"].as_str().is_some_and(|m| !m.contains("AKIA")),
            "{v}"
        );
    }
    let (_, v) = app
        .get("/api/v1/procedures?clientId=acme&projectId=p1")
        .await;
    assert_eq!(ids(&v, "procedures"), ["keep"], "nothing else was written");

    for (uri, body, code) in [
        (
            "/api/v1/procedures/match",
            json!({"clientId": "acme", "task": " "}),
            "invalid_field",
        ),
        (
            "/api/v1/procedures/match",
            json!({"clientId": "acme", "task": "x", "limit": 0}),
            "invalid_field",
        ),
        (
            "/api/v1/procedures/keep/outcome",
            json!({"clientId": "acme"}),
            "invalid_body",
        ),
        (
            "/api/v1/procedures/keep/outcome",
            json!({"clientId": "acme", "success": "yes"}),
            "invalid_body",
        ),
    ] {
        let (s, v) = app.post(uri, &body).await;
        assert_eq!(
            (s.as_u16(), v["code"].as_str()),
            (400, Some(code)),
            "{uri} {body}: {v}"
        );
    }
    let (s, v) = app
        .post(
            "/api/v1/procedures/nope/outcome",
            &json!({"clientId": "acme", "success": true}),
        )
        .await;
    assert_eq!(s, 404, "{v}");
    let (s, v) = app
        .call(
            "PUT",
            "/api/v1/procedures/keep",
            Some(Body::from(
                procedure("other", "x", "learned", None).to_string(),
            )),
            &[],
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (400, Some("invalid_field")),
        "{v}"
    );
    let mut update = procedure("keep", "bug report or crash", "user_defined", None);
    update.as_object_mut().expect("object").remove("id");
    let (s, v) = app
        .call(
            "PUT",
            "/api/v1/procedures/keep",
            Some(Body::from(update.to_string())),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["source"], "user_defined");
    let (s, v) = app
        .call(
            "PUT",
            "/api/v1/procedures/missing",
            Some(Body::from(update.to_string())),
            &[],
        )
        .await;
    assert_eq!(s, 404, "{v}");
}

/// One MCP `tools/call` through the router with the operator's token.
async fn mcp(app: &TestApp, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    let (s, v) = app
        .call(
            "POST",
            "/mcp",
            Some(Body::from(body.to_string())),
            &[
                ("host", "evident.example.com"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2025-06-18"),
            ],
        )
        .await;
    assert_eq!(s, 200, "{tool}: {v}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_save_match_count_and_are_audited() {
    let (app, _clock) = app_with_clock().await;
    let v = mcp(
        &app,
        "save_procedure",
        json!({"clientId": "acme", "triggerPattern": "bug_report", "source": "user_defined",
               "steps": [{"agent": "Research", "action": "search_kb", "params": {"depth": 2}},
                         {"agent": "Coding", "action": "fix"}]}),
    )
    .await;
    let saved = &v["result"]["structuredContent"];
    let id = saved["id"].as_str().expect("generated id").to_string();
    assert!(id.starts_with("proc-"), "{v}");
    let v = mcp(
        &app,
        "match_procedure",
        json!({"clientId": "acme", "task": TASK}),
    )
    .await;
    assert_eq!(
        ids(&v["result"]["structuredContent"], "procedures"),
        [id.as_str()],
        "{v}"
    );
    let v = mcp(
        &app,
        "record_procedure_outcome",
        json!({"clientId": "acme", "id": id, "success": true}),
    )
    .await;
    assert_eq!(v["result"]["structuredContent"]["usageCount"], 1, "{v}");
    let v = mcp(&app, "list_procedures", json!({"clientId": "acme"})).await;
    assert_eq!(
        ids(&v["result"]["structuredContent"], "procedures"),
        [id.as_str()]
    );
    let v = mcp(
        &app,
        "save_procedure",
        json!({"clientId": "acme", "triggerPattern": "x", "source": "learned",
               "steps": [{"agent": "A", "action": "b", "params": {"password": "hunter2hunter2"}}]}),
    )
    .await;
    assert_eq!(v["error"]["data"]["code"], "credential_detected", "{v}");
    let v = mcp(
        &app,
        "delete_procedure",
        json!({"clientId": "acme", "id": id}),
    )
    .await;
    assert_eq!(v["result"]["structuredContent"]["deleted"], true, "{v}");
    let v = mcp(
        &app,
        "match_procedure",
        json!({"clientId": "acme", "task": TASK}),
    )
    .await;
    assert_eq!(v["result"]["structuredContent"]["procedures"], json!([]));

    // `record_outcome` takes the REST body's `stepResults`.
    let v = mcp(
        &app,
        "record_outcome",
        json!({"clientId": "acme", "taskId": "T-1", "category": "single_task", "action": "code",
               "stepResults": [{"step": "fix", "ok": true}], "finalResult": "merged",
               "summary": "Fixed the crash."}),
    )
    .await;
    assert_eq!(v["result"]["structuredContent"]["ingested"], true, "{v}");

    // Every write tool call is in the audit log, the refused one with its code.
    let mut outcomes = Vec::new();
    for tool in [
        "save_procedure",
        "record_procedure_outcome",
        "delete_procedure",
    ] {
        let events = app
            .store
            .stores()
            .access
            .list_audit(&evident_store::access::AuditFilter {
                client_id: Some("acme".into()),
                token_id: None,
                route: Some(format!("mcp:{tool}")),
                since: None,
                before: None,
                limit: 10,
            })
            .await
            .expect("audit");
        outcomes.push((
            tool,
            events.iter().map(|e| e.outcome.clone()).collect::<Vec<_>>(),
        ));
    }
    assert_eq!(outcomes[0].1.len(), 2, "{outcomes:?}");
    assert!(
        outcomes[0]
            .1
            .iter()
            .any(|o| o.contains("credential_detected")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[1].1.len(), 1, "{outcomes:?}");
    assert_eq!(outcomes[2].1.len(), 1, "{outcomes:?}");
}
