//! `steer_task`: an admin of the task's scope retries a task in `error` and moves a waiting
//! task to the front (the claim order follows); a reader is refused, another client's task
//! does not exist, and bad arguments are field errors.

use evident_core::Scope;
use evident_core::access::{Grant, Role};
use evident_store::queue::{BackoffPolicy, Failure, NewTask, PriorityBand};
use serde_json::json;

use crate::app::*;

const FAR: i64 = i64::MAX / 4;

async fn enqueue(app: &App, client: &str, urn: &str) -> String {
    let task = NewTask {
        kind: "ingest".into(),
        scope: Scope::client(client),
        source_urn: urn.into(),
        priority: 4,
        payload: json!({ "test": urn }),
    };
    let queue = app.store.stores().queue;
    queue.enqueue(task, 1).await.expect("enqueue").task_id
}

#[tokio::test]
async fn admins_steer_their_tasks_and_nobody_else_does() {
    let app = App::new().await;
    let admin = app.token("admin", Grant::client("acme", Role::Admin)).await;
    let reader = app.token("reader", Grant::client("acme", Role::Read)).await;
    let other = app
        .token("other", Grant::client("umbrella", Role::Admin))
        .await;
    let queue = app.store.stores().queue;

    // A task that ends in `error`, then two waiting ones.
    let broken = enqueue(&app, "acme", "doc:broken").await;
    let c = queue
        .claim("w", PriorityBand::ALL, 60_000, 2)
        .await
        .expect("claim")
        .expect("task");
    assert_eq!(c.task.task_id, broken);
    let bad = Failure::Permanent("unreadable".into());
    let backoff = BackoffPolicy::default();
    let failed = queue.fail(&c.token, bad, &backoff, 3);
    assert!(failed.await.expect("fail"));
    let first = enqueue(&app, "acme", "doc:first").await;
    let second = enqueue(&app, "acme", "doc:second").await;

    let moved = app
        .call(
            &admin,
            "steer_task",
            json!({ "taskId": second, "action": "reorder", "position": 1 }),
        )
        .await;
    assert_eq!(moved["structuredContent"]["taskId"], second, "{moved}");
    let retried = app
        .call(
            &admin,
            "steer_task",
            json!({ "taskId": broken, "action": "retry" }),
        )
        .await;
    assert_eq!(retried["structuredContent"]["state"], "queued", "{retried}");
    let next = queue
        .claim("w", PriorityBand::ALL, 60_000, FAR)
        .await
        .expect("claim")
        .expect("task");
    assert_eq!(next.task.task_id, second, "the moved task is claimed first");
    assert_ne!(first, second);

    // Refusals: the API's codes, nothing changed by them.
    let cases = [
        (
            &reader,
            json!({ "taskId": first, "action": "reorder", "position": 1 }),
            "forbidden_role",
        ),
        (
            &other,
            json!({ "taskId": first, "action": "retry" }),
            "not_found",
        ),
        (
            &admin,
            json!({ "taskId": "t-nowhere", "action": "retry" }),
            "not_found",
        ),
        (
            &admin,
            json!({ "taskId": first, "action": "reorder" }),
            "missing_field",
        ),
        (
            &admin,
            json!({ "taskId": first, "action": "retry", "position": 2 }),
            "invalid_request",
        ),
        (
            &admin,
            json!({ "taskId": first, "action": "delete" }),
            "invalid_request",
        ),
        (
            &admin,
            json!({ "taskId": first, "action": "reorder", "position": 0 }),
            "invalid_field",
        ),
    ];
    for (token, args, code) in cases {
        let e = app.call_err(token, "steer_task", args.clone()).await;
        assert_eq!(e["data"]["code"], code, "{args}: {e}");
    }
    let audit = app.audit_of("reader").await;
    assert!(
        audit.iter().any(|a| a.route.contains("steer_task")),
        "refused steering is audited: {audit:?}"
    );
}
