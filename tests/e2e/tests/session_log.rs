//! The session log through the real router (issue 15, part 4 of its list) with a paused
//! clock: the 51st entry evicts the oldest, entries past their TTL are gone (and purged),
//! another project or client sees nothing, bad input is refused with a reason.

use std::sync::Arc;

use evident_core::access::Role;
use evident_e2e::{Embed, TestApp, bearer, narrowed};
use evident_store::queue::ManualClock;
use serde_json::{Value, json};

const DAY_MS: i64 = 24 * 3600 * 1000;
const T0: i64 = 1_700_000_000_000;

/// A test app whose API reads time from a paused clock.
async fn app_with_clock() -> (TestApp, Arc<ManualClock>) {
    TestApp::with_clock(Embed::Hashing, T0).await
}

fn note(project: Option<&str>, summary: &str) -> Value {
    let mut v = json!({"clientId": "acme", "source": "orchestrator_decision", "summary": summary});
    if let Some(p) = project {
        v["projectId"] = p.into();
    }
    v
}

fn summaries(v: &Value) -> Vec<String> {
    v["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["summary"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_51st_entry_evicts_the_oldest_and_logs_stay_apart() {
    let (app, clock) = app_with_clock().await;
    for i in 0..51 {
        clock.advance(1);
        let v = app
            .post_ok(
                "/api/v1/session-memory",
                &note(Some("p1"), &format!("note {i}")),
            )
            .await;
        assert_eq!(v["timestamp"], T0 + i + 1);
        assert_eq!(v["expiresAt"], T0 + i + 1 + 7 * DAY_MS);
    }
    let v = app
        .get_ok("/api/v1/session-memory?clientId=acme&projectId=p1")
        .await;
    let got = summaries(&v);
    assert_eq!(got.len(), 50);
    assert_eq!(got[0], "note 50", "newest first");
    assert_eq!(got[49], "note 1", "the oldest (note 0) was evicted");
    let (_, v) = app
        .get("/api/v1/session-memory?clientId=acme&projectId=p1&recent=3")
        .await;
    assert_eq!(summaries(&v), ["note 50", "note 49", "note 48"]);

    // Another project, the client's own log, another client: nothing of p1's.
    for uri in [
        "/api/v1/session-memory?clientId=acme&projectId=p2",
        "/api/v1/session-memory?clientId=acme",
        "/api/v1/session-memory?clientId=globex&projectId=p1",
    ] {
        let (s, v) = app.get(uri).await;
        assert_eq!(s, 200, "{uri}: {v}");
        assert_eq!(v["entries"], json!([]), "{uri}");
    }

    // Grants: a token narrowed to p2 can neither read nor write p1's log.
    let p2 = app
        .token("p2", narrowed(Role::Write, "acme", &["p2"], &[]))
        .await;
    let auth = bearer(&p2);
    let (s, _) = app
        .call_auth(
            &auth,
            "GET",
            "/api/v1/session-memory?clientId=acme&projectId=p1",
            None,
        )
        .await;
    assert_eq!(s, 403);
    let (s, _) = app
        .call(
            "POST",
            "/api/v1/session-memory",
            Some(axum::body::Body::from(
                note(Some("p1"), "sneaky").to_string(),
            )),
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(s, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_past_their_ttl_are_gone_and_purged() {
    let (app, clock) = app_with_clock().await;
    let (s, _) = app.post("/api/v1/session-memory", &note(None, "old")).await;
    assert_eq!(s, 200);
    clock.advance(3 * DAY_MS);
    let (s, _) = app
        .post("/api/v1/session-memory", &note(None, "newer"))
        .await;
    assert_eq!(s, 200);
    clock.advance(4 * DAY_MS); // "old" is exactly 7 days old: expired
    let (_, v) = app.get("/api/v1/session-memory?clientId=acme").await;
    assert_eq!(summaries(&v), ["newer"]);
    let purged = app
        .kb
        .stores()
        .memory
        .purge_expired(T0 + 7 * DAY_MS)
        .await
        .expect("purge");
    assert_eq!(purged, 1, "the expired entry is deleted by the sweep");
    clock.advance(3 * DAY_MS);
    let (_, v) = app.get("/api/v1/session-memory?clientId=acme").await;
    assert_eq!(v["entries"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_entries_are_refused_with_a_reason() {
    let (app, _) = app_with_clock().await;
    let with = |k: &str, v: Value| {
        let mut b = note(Some("p1"), "fine");
        b[k] = v;
        b
    };
    for (body, status, code) in [
        (
            with("summary", json!("x".repeat(201))),
            400,
            "invalid_field",
        ),
        (with("summary", json!("  ")), 400, "invalid_field"),
        (with("source", json!("email")), 400, "invalid_field"),
        (with("details", json!("text")), 400, "invalid_field"),
        (
            with(
                "details",
                json!({"token": "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c"}),
            ),
            422,
            "credential_detected",
        ),
        (with("groupId", json!("g")), 400, "invalid_body"),
    ] {
        let (s, v) = app.post("/api/v1/session-memory", &body).await;
        assert_eq!(s.as_u16(), status, "{body} → {v}");
        assert_eq!(v["code"], code, "{body} → {v}");
    }
    for q in ["recent=0", "recent=51"] {
        let (s, v) = app
            .get(&format!("/api/v1/session-memory?clientId=acme&{q}"))
            .await;
        assert_eq!(s, 400, "{q}: {v}");
    }
    let (_, v) = app
        .get("/api/v1/session-memory?clientId=acme&projectId=p1")
        .await;
    assert_eq!(v["entries"], json!([]), "nothing was written");
}
