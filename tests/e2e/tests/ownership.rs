//! A `sourceUrn` belongs to one scope (client + project + group): ingest or purge of it from
//! another scope is `409 scope_conflict` and changes nothing; only an explicit move changes
//! the owner. Same-scope re-ingest behaves as before.

use evident_ai::Priority;
use evident_core::{PreparedChunk, PreparedSource, Scope};
use evident_e2e::{Embed, TestApp, field_strs};
use evident_qualifier::Outcome;
use evident_store::queue::TaskState;
use serde_json::{Value, json};

fn doc(project: &str, content: &str) -> Value {
    json!({
        "clientId": "acme", "projectId": project, "sourceUrn": "doc:owned", "kind": "doc",
        "content": content,
        "relationships": ["team:alpha|owns|jira:OWN-1"],
    })
}

/// `POST /api/v1/purge` of `doc:owned` from `project` (`None`: the client level).
async fn purge(app: &TestApp, project: Option<&str>) -> (axum::http::StatusCode, Value) {
    let mut body = json!({"clientId": "acme", "sourceUrn": "doc:owned"});
    if let Some(p) = project {
        body["projectId"] = json!(p);
    }
    app.post("/api/v1/purge", &body).await
}

/// What p1 sees of the source: its registry scope and the chunk texts retrieve returns.
async fn seen_by(app: &TestApp, project: &str) -> (Value, Vec<String>) {
    let v = app
        .get_ok(&format!(
            "/api/v1/sources?clientId=acme&projectId={project}"
        ))
        .await;
    let record = v["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .find(|r| r["sourceUrn"] == "doc:owned")
        .cloned()
        .unwrap_or(Value::Null);
    let pack = app
        .post_ok(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "projectId": project, "query": "lighthouse keeper"}),
        )
        .await;
    let texts = pack["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["sourceUrn"] == "doc:owned")
        .map(|i| i["content"].as_str().unwrap_or("").to_string())
        .collect();
    (record, texts)
}

fn assert_conflict(s: axum::http::StatusCode, v: &Value) {
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (409, Some("scope_conflict")),
        "{v}"
    );
    let msg = v["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("project=p1") && msg.contains("project=p2"),
        "names both scopes: {msg}"
    );
    assert!(!msg.contains("lighthouse"), "no data of the owner: {msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_projects_ingest_and_purge_are_refused_and_change_nothing() {
    let app = TestApp::new(Embed::Hashing).await;
    let original = "The lighthouse keeper logs the lamp hours for jira:OWN-1.";
    let (s, v) = app.post("/api/v1/ingest", &doc("p1", original)).await;
    assert_eq!((s.as_u16(), v["status"].as_str()), (200, Some("ingested")));
    let fingerprint = app.fingerprint().await;
    let before = seen_by(&app, "p1").await;
    assert_eq!(before.1.len(), 1, "{before:?}");

    // Ingest of p1's URN from p2: refused, whatever the content (same or different).
    for content in [
        original,
        "The lighthouse keeper was replaced by project two.",
    ] {
        let (s, v) = app.post("/api/v1/ingest", &doc("p2", content)).await;
        assert_conflict(s, &v);
    }
    // From the client level and from another group too.
    let mut client_level = doc("p1", original);
    client_level.as_object_mut().map(|o| o.remove("projectId"));
    let (s, v) = app.post("/api/v1/ingest", &client_level).await;
    assert_eq!(s, 409, "{v}");
    let mut grouped = doc("p1", original);
    grouped["groupId"] = json!("g9");
    let (s, v) = app.post("/api/v1/ingest", &grouped).await;
    assert_eq!(s, 409, "{v}");

    // Purge from p2 (and from the client level): refused, nothing removed.
    let (s, v) = purge(&app, Some("p2")).await;
    assert_conflict(s, &v);
    let (s, v) = purge(&app, None).await;
    assert_eq!(s, 409, "{v}");

    assert_eq!(app.fingerprint().await, fingerprint);
    assert_eq!(seen_by(&app, "p1").await, before, "p1's data unchanged");
    assert!(
        seen_by(&app, "p2").await.1.is_empty(),
        "nothing moved to p2"
    );

    // The same URN in another client is another source: no conflict.
    let mut other = doc("p2", "The lighthouse keeper of another client.");
    other["clientId"] = json!("other");
    let (s, v) = app.post("/api/v1/ingest", &other).await;
    assert_eq!((s.as_u16(), v["status"].as_str()), (200, Some("ingested")));

    // The owner: re-ingest unchanged → skipped; changed → updated; purge works.
    let (s, v) = app.post("/api/v1/ingest", &doc("p1", original)).await;
    assert_eq!(
        (s.as_u16(), v["status"].as_str()),
        (200, Some("skipped_unchanged"))
    );
    let (s, v) = app
        .post(
            "/api/v1/ingest",
            &doc("p1", "The lighthouse keeper logs the lamp hours twice."),
        )
        .await;
    assert_eq!((s.as_u16(), v["status"].as_str()), (200, Some("updated")));
    let (s, v) = purge(&app, Some("p1")).await;
    assert_eq!((s.as_u16(), v["found"].as_bool()), (200, Some(true)), "{v}");
    // Once purged, the URN is free: p2 may ingest it.
    let (s, v) = app.post("/api/v1/ingest", &doc("p2", original)).await;
    assert_eq!((s.as_u16(), v["status"].as_str()), (200, Some("ingested")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_and_prepared_ingest_refuse_another_scopes_source() {
    let app = TestApp::new(Embed::Hashing).await;
    let original = "The lighthouse keeper logs the lamp hours for jira:OWN-1.";
    let (s, _) = app.post("/api/v1/ingest", &doc("p1", original)).await;
    assert_eq!(s, 200);
    let fingerprint = app.fingerprint().await;
    let before = seen_by(&app, "p1").await;

    // A producer's prepared source (git, mail, trackers…) from another scope.
    let src = PreparedSource {
        scope: Scope::client("acme").with_project("p2"),
        source_urn: "doc:owned".into(),
        kind: "doc".into(),
        title: None,
        fingerprint: "f1".into(),
        observed_at: None,
        chunks: vec![PreparedChunk::new(
            "Prepared lighthouse text.",
            evident_core::Locator::for_chunk(None, "doc:owned", None, 0, 25, 0, 0),
        )],
        nodes: Vec::new(),
        edges: Vec::new(),
        aliases: Vec::new(),
        merges: Vec::new(),
    };
    let err = app
        .kb
        .ingest_prepared(src, Priority::DEFAULT)
        .await
        .expect_err("refused");
    assert_eq!((err.code(), err.http_status()), ("scope_conflict", 409));

    // Queued ingest: the route refuses it before enqueuing…
    let queued = doc("p2", "The lighthouse keeper, queued.");
    let (s, v) = app.post("/api/v1/ingest-queue", &queued).await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (409, Some("scope_conflict")),
        "{v}"
    );
    // …and a task that was queued before the owner existed is refused by the worker (a
    // permanent error, never a move).
    let rec = evident_kb::TaskSubmitter::new(app.kb.stores().queue.clone())
        .enqueue_ingest(
            serde_json::from_value::<evident_kb::Document>(queued).expect("request"),
            Priority::DEFAULT,
            0,
        )
        .await
        .expect("enqueue");
    let v = json!({ "taskId": rec.task_id });
    let q = app.qualifier();
    let task_id = v["taskId"].as_str().expect("task id").to_string();
    match q.process_next().await.expect("process") {
        Outcome::Processed { state, .. } => assert_eq!(state, TaskState::Error),
        Outcome::Empty => panic!("expected a processed task"),
    }
    let task = app
        .kb
        .stores()
        .queue
        .get(&task_id)
        .await
        .expect("get")
        .expect("task");
    let err = task.last_error.unwrap_or_default();
    assert!(err.contains("scope_conflict"), "{err}");
    // The check callers can make before enqueuing.
    let p2 = Scope::client("acme").with_project("p2");
    assert!(app.kb.check_source_owner(&p2, "doc:owned").await.is_err());
    let p1 = Scope::client("acme").with_project("p1");
    app.kb
        .check_source_owner(&p1, "doc:owned")
        .await
        .expect("owner passes");

    assert_eq!(app.fingerprint().await, fingerprint);
    assert_eq!(seen_by(&app, "p1").await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_moves_a_source_explicitly() {
    let app = TestApp::new(Embed::Hashing).await;
    let original = "The lighthouse keeper logs the lamp hours for jira:OWN-1.";
    let (s, _) = app.post("/api/v1/ingest", &doc("p1", original)).await;
    assert_eq!(s, 200);
    let fingerprint = app.fingerprint().await;
    let (p1, p2) = (
        Scope::client("acme").with_project("p1"),
        Scope::client("acme").with_project("p2"),
    );
    // Only from the owner, only within the client, only an existing source.
    let e = app
        .kb
        .move_source(&p2, "doc:owned", &p1, Priority::DEFAULT)
        .await
        .expect_err("not the owner");
    assert_eq!(e.code(), "scope_conflict");
    let e = app
        .kb
        .move_source(&p1, "doc:owned", &Scope::client("other"), Priority::DEFAULT)
        .await
        .expect_err("across clients");
    assert_eq!(e.code(), "invalid_request");
    let e = app
        .kb
        .move_source(&p1, "doc:missing", &p2, Priority::DEFAULT)
        .await
        .expect_err("missing");
    assert_eq!(e.code(), "not_found");

    let moved = app
        .kb
        .move_source(&p1, "doc:owned", &p2, Priority::DEFAULT)
        .await
        .expect("move");
    assert_eq!(moved, 1);
    assert_eq!(app.fingerprint().await, fingerprint, "same rows, new scope");
    let (record, texts) = seen_by(&app, "p2").await;
    assert_eq!(record["scope"]["projectId"], "p2", "{record}");
    assert_eq!(texts, vec![original.to_string()]);
    assert_eq!(seen_by(&app, "p1").await, (Value::Null, Vec::new()));
    // The graph evidence moved too: p2 sees the node, p1 no longer does.
    let (s, _) = app
        .get("/api/v1/graph/node/jira:OWN-1?clientId=acme&projectId=p2")
        .await;
    assert_eq!(s, 200);
    let (s, _) = app
        .get("/api/v1/graph/node/jira:OWN-1?clientId=acme&projectId=p1")
        .await;
    assert_eq!(s, 404);
    // Now p2 owns it: p1 is refused, p2 purges it.
    let (s, v) = app.post("/api/v1/ingest", &doc("p1", original)).await;
    assert_eq!(s, 409, "{v}");
    let (s, v) = purge(&app, Some("p2")).await;
    assert_eq!((s.as_u16(), v["found"].as_bool()), (200, Some(true)), "{v}");
    let r = app.store.check_integrity().await.expect("integrity");
    assert!(r.is_ok(), "{r:?}");
    assert_eq!((r.chunks, r.nodes, r.edges), (0, 0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_by_prefix_removes_only_its_own_scopes_sources() {
    let app = TestApp::new(Embed::Hashing).await;
    for (project, urn) in [("p1", "doc:x:1"), ("p1", "doc:x:2"), ("p2", "doc:x:3")] {
        let mut body = doc(project, "The lighthouse keeper's log.");
        body["sourceUrn"] = json!(urn);
        app.post_ok("/api/v1/ingest", &body).await;
    }
    let p1 = Scope::client("acme").with_project("p1");
    let purged = app
        .kb
        .purge_prefix(&p1, "doc:x:", Priority::DEFAULT)
        .await
        .expect("purge");
    assert_eq!(purged, 2);
    let (_, v) = app.get("/api/v1/sources?clientId=acme&projectId=p2").await;
    let urns = field_strs(&v["sources"], "sourceUrn");
    assert_eq!(urns, vec!["doc:x:3"], "{v}");
}
