//! Task outcomes through the real router (issue 15, part 1 of its list): the significance
//! filter's answers, the queued write at priority 4, one document per task whose re-run
//! re-embeds only changed sections, and the outcome's graph.

use evident_e2e::{CountingEmbedder, Embed, TestApp, enc, field_strs};
use evident_qualifier::Outcome;
use serde_json::{Value, json};

/// Processes every queued task; how many.
async fn drain(app: &TestApp) -> usize {
    let q = app.qualifier();
    let mut n = 0;
    while let Outcome::Processed { state, .. } = q.process_next().await.expect("process") {
        assert_eq!(state.as_str(), "done");
        n += 1;
    }
    n
}

fn outcome(task: &str) -> Value {
    json!({
        "clientId": "acme",
        "taskId": task,
        "category": "single_task",
        "action": "code",
        "finalResult": "Retries added and deployed.",
        "summary": "Added exponential backoff to the background engine's retries.",
        "keyDecisions": ["backoff with jitter over a fixed delay: avoids thundering herds"],
        "patternsUsed": ["exponential backoff", "circuit breaker"],
        "artifacts": ["BackgroundEngine.kt", "PAY-12"],
        "lessonsLearned": ["non-retryable errors should not have backoff"],
        "topics": ["retry", "resilience"]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_outcomes_answer_why_and_write_nothing() {
    let app = TestApp::new(Embed::Hashing).await;
    let cases: [(&str, Value, &str); 5] = [
        ("advice", json!({"category": "advice"}), "advice"),
        (
            "respond-no-steps",
            json!({"action": "respond"}),
            "respond_without_steps",
        ),
        ("error", json!({"error": "timed out"}), "error_present"),
        ("empty", json!({"finalResult": ""}), "empty_final_result"),
        ("chat", json!({"action": "chat"}), "action_not_significant"),
    ];
    for (task, change, reason) in cases {
        let mut body = outcome(task);
        for (k, v) in change.as_object().expect("object") {
            body[k] = v.clone();
        }
        let (s, v) = app.post("/api/v1/outcomes", &body).await;
        assert_eq!(s, 200, "{task}: {v}");
        assert_eq!(v, json!({"ingested": false, "reason": reason}), "{task}");
    }
    let (_, queue) = app.get("/api/v1/queue?clientId=acme").await;
    assert_eq!(queue["tasks"], json!([]), "nothing queued: {queue}");
    // `respond` with step results is significant.
    let mut body = outcome("respond-steps");
    body["action"] = "respond".into();
    body["stepResults"] = json!([{"step": "search", "ok": true}]);
    let (s, v) = app.post("/api/v1/outcomes", &body).await;
    assert_eq!(s, 202, "{v}");
    assert_eq!(v["ingested"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_is_queued_at_priority_4_replaced_on_re_run_and_linked_in_the_graph() {
    let counting = CountingEmbedder::hashing();
    let app =
        TestApp::with_embedder(counting.clone(), 1 << 20, tempfile::tempdir().expect("tmp")).await;
    // The artifact's spelling is an alias of an indexed file (as the git indexer registers
    // the folded spelling of every exact file key): the edge goes to the file's node.
    let file = evident_core::keys::file("engine", "src/BackgroundEngine.kt");
    app.kb
        .stores()
        .aliases
        .register(
            "acme",
            &evident_core::refs::NodeKey::from_canonical("file:backgroundengine_kt"),
            &file,
        )
        .await
        .expect("alias");

    let (s, v) = app.post("/api/v1/outcomes", &outcome("T-42")).await;
    assert_eq!(s, 202, "{v}");
    assert_eq!(v["ingested"], true);
    assert_eq!(v["sourceUrn"], "task-outcome:T-42");
    let task = v["queueTaskId"].as_str().expect("queue task").to_string();
    let (_, t) = app.get(&format!("/api/v1/queue/{task}")).await;
    assert_eq!(t["priority"], 4, "{t}");
    assert_eq!(t["sourceUrn"], "task-outcome:T-42");
    assert_eq!(counting.count(), 0, "nothing embedded before a worker runs");
    assert_eq!(drain(&app).await, 1);
    assert_eq!(counting.count(), 5, "one chunk per section");

    let (_, chunks) = app
        .post(
            "/api/v1/chunks/by-kind",
            &json!({"clientId": "acme", "kinds": ["task_outcome"]}),
        )
        .await;
    let sections: Vec<String> = chunks["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .filter_map(|c| c["locator"]["section"].as_str().map(str::to_string))
        .collect();
    let mut sorted = sections.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "Artifacts",
            "Key Decisions",
            "Lessons",
            "Patterns",
            "Summary"
        ]
    );

    // Graph: the outcome node and its typed links, each edge with evidence.
    let view = app
        .post_ok(
            "/api/v1/traverse",
            &json!({"clientId": "acme", "startKey": "task_outcome:t-42", "maxDepth": 1}),
        )
        .await;
    let edges = view["edges"].as_array().expect("edges");
    let targets = |t: &str| -> Vec<String> {
        edges
            .iter()
            .filter(|e| e["edgeType"] == t)
            .filter_map(|e| e["to"].as_str().map(str::to_string))
            .collect()
    };
    assert!(
        targets("touched").contains(&"file:engine/src/BackgroundEngine.kt".to_string()),
        "artifact resolved through the alias registry: {view}"
    );
    assert!(
        targets("touched").contains(&"jira:pay-12".to_string()),
        "{view}"
    );
    assert_eq!(targets("about").len(), 2, "{view}");
    assert_eq!(targets("used_pattern").len(), 2, "{view}");
    assert_eq!(targets("decided").len(), 1, "{view}");
    for e in edges {
        assert!(
            !e["evidenceChunkIds"]
                .as_array()
                .expect("evidence")
                .is_empty(),
            "{e}"
        );
    }

    // A re-run: only the Lessons section changed → one chunk embedded, one document.
    let mut rerun = outcome("T-42");
    rerun["lessonsLearned"] = json!(["non-retryable errors should fail fast, without backoff"]);
    let (s, v) = app.post("/api/v1/outcomes", &rerun).await;
    assert_eq!(s, 202, "{v}");
    assert_eq!(drain(&app).await, 1);
    assert_eq!(counting.count(), 6, "only the changed section is embedded");
    let (_, sources) = app.get("/api/v1/sources?clientId=acme").await;
    let outcomes: Vec<&Value> = sources["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .filter(|s| s["kind"] == "task_outcome")
        .collect();
    assert_eq!(outcomes.len(), 1, "{sources}");
    assert_eq!(outcomes[0]["chunkCount"], 5);
    let (_, pack) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "non-retryable errors backoff", "kinds": ["task_outcome"]}),
        )
        .await;
    let texts = field_strs(&pack["items"], "content");
    assert!(texts.iter().any(|t| t.contains("fail fast")), "{pack}");
    assert!(
        !texts.iter().any(|t| t.contains("should not have backoff")),
        "the old lesson is gone: {pack}"
    );
    let (_, node) = app
        .get(&format!(
            "/api/v1/graph/node/{}?clientId=acme",
            enc("task_outcome:t-42")
        ))
        .await;
    assert_eq!(node["type"], "task_outcome", "{node}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_outcomes_are_refused_before_anything_is_queued() {
    let app = TestApp::new(Embed::Hashing).await;
    let with = |k: &str, v: Value| {
        let mut b = outcome("T-bad");
        b[k] = v;
        b
    };
    for (body, status, code) in [
        (with("category", json!("chore")), 400, "invalid_field"),
        (with("summary", json!("")), 400, "invalid_field"),
        (
            with(
                "artifacts",
                json!((0..51).map(|i| format!("f{i}.rs")).collect::<Vec<_>>()),
            ),
            400,
            "field_too_long",
        ),
        (
            with(
                "lessonsLearned",
                json!(["the deploy key is AKIAZ3MHQ7RT2LQKXW5P, rotate it"]),
            ),
            422,
            "credential_detected",
        ),
        (with("unknown", json!(1)), 400, "invalid_body"),
    ] {
        let (s, v) = app.post("/api/v1/outcomes", &body).await;
        assert_eq!(s.as_u16(), status, "{v}");
        assert_eq!(v["code"], code, "{v}");
    }
    let (_, queue) = app.get("/api/v1/queue?clientId=acme").await;
    assert_eq!(queue["tasks"], json!([]), "{queue}");
}
