//! The console's overview counts and queue reordering through the real router over the
//! embedded store: the graph's edges are counted exactly and only the reader's (another
//! client's edges never), and the reorder form moves a task where the next claim finds it.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use evident_core::access::{Grant, Role};
use evident_e2e::{Embed, TestApp, bearer, mint};
use evident_store::queue::{NewTask, PriorityBand};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

/// A browser-like request with `headers`: (status, `Set-Cookie`, body).
async fn send(
    app: &TestApp,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    form: Option<&str>,
) -> (StatusCode, String, String) {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("accept", "text/html")
        .header("content-type", "application/x-www-form-urlencoded");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = form.map(|f| Body::from(f.to_string()));
    let req = req.body(body.unwrap_or_else(Body::empty)).expect("request");
    let resp = app.router.clone().oneshot(req).await.expect("answer");
    let status = resp.status();
    let cookie = resp
        .headers()
        .get(header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, cookie, String::from_utf8_lossy(&bytes).into_owned())
}

/// The figure of the overview tile `id`.
fn tile(page: &str, id: &str) -> String {
    let start = format!("<div class=\"tile\" id=\"{id}\"><b>");
    let at = page
        .find(&start)
        .unwrap_or_else(|| panic!("tile {id}: {page}"));
    let rest = &page[at + start.len()..];
    rest[..rest.find('<').expect("end of figure")].to_string()
}

async fn ingest(app: &TestApp, client: &str, urn: &str, relationships: &[&str]) {
    let (s, v) = app
        .post(
            "/api/v1/ingest",
            &json!({"clientId": client, "sourceUrn": urn, "kind": "doc",
                    "relationships": relationships, "content": "plain notes, nothing more"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_counts_the_readers_edges_and_no_one_elses() {
    let app = TestApp::new(Embed::Hashing).await;
    ingest(
        &app,
        "c1",
        "doc:c1-a",
        &["team:alpha|owns|jira:A-1", "user:ann|member_of|team:alpha"],
    )
    .await;
    ingest(&app, "c1", "doc:c1-b", &["team:alpha|owns|jira:A-1"]).await;
    ingest(
        &app,
        "c2",
        "doc:c2-a",
        &[
            "team:beta|owns|jira:B-1",
            "team:beta|owns|jira:B-2",
            "user:bob|member_of|team:beta",
        ],
    )
    .await;
    let mut seen = Vec::new();
    for client in ["c1", "c2"] {
        let token = mint(
            &app.store,
            &format!("{client}-reader"),
            Grant::client(client, Role::Read),
            None,
        )
        .await;
        let auth = bearer(&token);
        let (status, _, page) = send(&app, "GET", "/ui", &[("authorization", &auth)], None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        seen.push((client, tile(&page, "nodes"), tile(&page, "edges")));
        // The count is exact: no bound note.
        assert!(!page.contains("id=\"capped\""), "{page}");
    }
    // c1: an edge written by two documents is one edge; c2's three are not c1's.
    assert_eq!(
        seen,
        vec![
            ("c1", "3".to_string(), "2".to_string()),
            ("c2", "4".to_string(), "3".to_string())
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reorder_form_changes_which_task_is_claimed_next() {
    let app = TestApp::new(Embed::Hashing).await;
    let queue = app.kb.stores().queue.clone();
    let mut ids = Vec::new();
    for n in 0..3 {
        let task = NewTask {
            kind: "ingest".into(),
            scope: evident_core::Scope::client("c1"),
            source_urn: format!("doc:c1-{n}"),
            priority: 5,
            payload: json!({"type": "nope"}),
        };
        ids.push(queue.enqueue(task, n).await.expect("enqueue").task_id);
    }
    let admin = mint(
        &app.store,
        "c1-admin",
        Grant::client("c1", Role::Admin),
        None,
    )
    .await;
    let login = format!("token={}&next=%2Fui", evident_e2e::enc(&admin));
    let (status, cookie, _) = send(&app, "POST", "/ui/login", &[], Some(&login)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let session = cookie.split(';').next().expect("cookie").to_string();
    let last = &ids[2];
    let (status, _, page) = send(
        &app,
        "GET",
        &format!("/ui/queue/{last}"),
        &[("cookie", &session)],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("id=\"reorder\""), "{page}");
    let field = "name=\"csrf\" value=\"";
    let csrf_at = page.find(field).expect("csrf field") + field.len();
    let csrf = &page[csrf_at..csrf_at + page[csrf_at..].find('"').expect("end")];
    let reorder = format!("/ui/queue/{last}/reorder");
    // Without the session's CSRF token, or with a bad position: refused, nothing moved.
    for (form, want) in [
        ("position=1".to_string(), StatusCode::FORBIDDEN),
        (format!("csrf={csrf}&position=0"), StatusCode::BAD_REQUEST),
        (
            format!("csrf={csrf}&position=first"),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (status, _, body) =
            send(&app, "POST", &reorder, &[("cookie", &session)], Some(&form)).await;
        assert_eq!(status, want, "{form}: {body}");
    }
    let (_, t) = app.get(&format!("/api/v1/queue/{last}")).await;
    assert_eq!(t["queuePosition"], serde_json::Value::Null, "{t}");
    let form = format!("csrf={csrf}&position=1");
    let (status, _, body) =
        send(&app, "POST", &reorder, &[("cookie", &session)], Some(&form)).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let claimed = queue
        .claim("w", PriorityBand::ALL, 60_000, 10)
        .await
        .expect("claim")
        .expect("a task");
    assert_eq!(&claimed.task.task_id, last, "the moved task runs first");
    let next = queue
        .claim("w", PriorityBand::ALL, 60_000, 10)
        .await
        .expect("claim")
        .expect("a task");
    assert_eq!(next.task.task_id, ids[0], "then the others in their order");
}
