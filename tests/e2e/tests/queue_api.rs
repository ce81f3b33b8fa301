//! The queue over HTTP: 202 + task id, listing with counts, prioritize, reorder, retry of an
//! error task; bad input refused at enqueue time.

use evident_e2e::{Embed, TestApp};
use evident_qualifier::Outcome;
use evident_store::queue::{NewTask, TaskState};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_list_prioritize_process_and_retry() {
    let app = TestApp::new(Embed::Hashing).await;
    let body = |i: usize| json!({"clientId": "acme", "sourceUrn": format!("doc:{i}"), "kind": "doc", "content": format!("Queued document {i}.")});
    let mut ids = Vec::new();
    for i in 0..3 {
        let (s, v) = app.post("/api/v1/ingest-queue", &body(i)).await;
        assert_eq!(s, 202, "{v}");
        assert_eq!(v["state"], "queued");
        ids.push(v["taskId"].as_str().expect("task id").to_string());
    }
    // Bad input is refused at once, nothing enqueued.
    let (s, v) = app.post("/api/v1/ingest-queue", &json!({"clientId": "acme", "sourceUrn": "x", "kind": "doc", "content": "password = \"hunter2hunter2\""})).await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (422, Some("credential_detected"))
    );

    let v = app.get_ok("/api/v1/queue?state=queued").await;
    assert_eq!(v["tasks"].as_array().expect("tasks").len(), 3);
    assert_eq!(v["counts"]["queued"], 3);
    let (s, v) = app.get("/api/v1/queue?state=bogus").await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (400, Some("invalid_query"))
    );

    let v = app
        .post_ok(&format!("/api/v1/queue/{}/prioritize", ids[2]), &json!({}))
        .await;
    assert_eq!(v["queuePosition"], 1);
    app.post_ok(
        &format!("/api/v1/queue/{}/reorder", ids[1]),
        &json!({"position": 1}),
    )
    .await;
    let (s, v) = app
        .post(
            &format!("/api/v1/queue/{}/reorder", ids[1]),
            &json!({"position": 0}),
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (400, Some("invalid_field"))
    );
    let (s, _) = app
        .post("/api/v1/queue/t999999999999/prioritize", &json!({}))
        .await;
    assert_eq!(s, 404);

    let q = app.qualifier();
    let mut order = Vec::new();
    while let Outcome::Processed { task_id, state } = q.process_next().await.expect("process") {
        assert_eq!(state, TaskState::Done);
        order.push(task_id);
    }
    assert_eq!(
        order,
        vec![ids[1].clone(), ids[2].clone(), ids[0].clone()],
        "explicit positions first, newest placement wins position 1"
    );
    let (_, pack) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "queued document"}),
        )
        .await;
    assert_eq!(pack["items"].as_array().expect("items").len(), 3);

    // A task that fails permanently is retried through the API.
    let bad = app
        .kb
        .stores()
        .queue
        .enqueue(
            NewTask {
                kind: "ingest".into(),
                scope: evident_core::Scope::client("acme"),
                source_urn: "doc:bad".into(),
                priority: 4,
                payload: json!({"type": "nope"}),
            },
            0,
        )
        .await
        .expect("enqueue")
        .task_id;
    assert_eq!(
        q.process_next().await.expect("process"),
        Outcome::Processed {
            task_id: bad.clone(),
            state: TaskState::Error
        }
    );
    let (_, v) = app.get(&format!("/api/v1/queue/{bad}")).await;
    assert_eq!(v["state"], "error");
    assert!(
        v["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("no handler for tasks of type `nope`")),
        "{v}"
    );
    let (s, v) = app
        .post(&format!("/api/v1/queue/{}/retry", ids[0]), &json!({}))
        .await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (409, Some("store_conflict")),
        "only error tasks can be retried"
    );
    let v = app
        .post_ok(&format!("/api/v1/queue/{bad}/retry"), &json!({}))
        .await;
    assert_eq!(v["state"], "queued");
}
