//! Session memory through the real router: put, get, list, replace, expiry, delete, clear,
//! and bad input refused with a reason.

use evident_e2e::{Embed, TestApp, field_strs};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_remembers_replaces_and_forgets() {
    let app = TestApp::new(Embed::Hashing).await;
    let put = |key: &str, body: serde_json::Value| {
        let uri = format!("/api/v1/memory/chat-42/{key}");
        let app = &app;
        async move {
            app.call(
                "PUT",
                &uri,
                Some(axum::body::Body::from(body.to_string())),
                &[],
            )
            .await
        }
    };
    let (s, v) = put(
        "goal",
        json!({"clientId": "acme", "value": {"text": "ship the importer"}}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["value"]["text"], "ship the importer");
    let created = v["createdAt"].clone();
    let (s, v) = put(
        "step",
        json!({"clientId": "acme", "value": 3, "ttlSecs": 60}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = put("goal", json!({"clientId": "acme", "value": "changed"})).await;
    assert_eq!(s, 200);
    assert_eq!(
        v["createdAt"], created,
        "a replaced entry keeps its creation time"
    );

    let (s, v) = app.get("/api/v1/memory/chat-42/goal?clientId=acme").await;
    assert_eq!(s, 200);
    assert_eq!(v["value"], "changed");
    let (s, _) = app.get("/api/v1/memory/chat-42/goal?clientId=other").await;
    assert_eq!(s, 404, "another client does not see it");
    let (_, v) = app.get("/api/v1/memory/chat-42?clientId=acme").await;
    let keys = field_strs(&v["entries"], "key");
    assert_eq!(keys, vec!["goal", "step"]);

    // Deleted once; the second delete finds nothing.
    for want in [204, 404] {
        let uri = "/api/v1/memory/chat-42/step?clientId=acme";
        let (s, _) = app.call("DELETE", uri, None, &[]).await;
        assert_eq!(s, want);
    }
    let (s, v) = app
        .call("DELETE", "/api/v1/memory/chat-42?clientId=acme", None, &[])
        .await;
    assert_eq!(s, 200);
    assert_eq!(v["deleted"], 1);
    let (_, v) = app.get("/api/v1/memory/chat-42?clientId=acme").await;
    assert_eq!(v["entries"].as_array().map(Vec::len), Some(0));

    for (body, why) in [
        (json!({"value": 1}), "clientId"),
        (
            json!({"clientId": "acme", "value": 1, "ttlSecs": 0}),
            "ttlSecs",
        ),
        (
            json!({"clientId": "acme", "value": "x".repeat(70_000)}),
            "value",
        ),
        (
            json!({"clientId": "acme", "value": 1, "extra": true}),
            "extra",
        ),
    ] {
        let (s, v) = put("k", body.clone()).await;
        assert_eq!(s, 400, "{body}: {v}");
        assert!(
            v["message"].as_str().unwrap_or("").contains(why),
            "{body}: {v}"
        );
    }
}
