//! The console's overview counts and queue reordering through the real router over the
//! embedded store: the graph's edges are counted exactly and only the reader's (another
//! client's edges never), and the reorder form moves a task where the next claim finds it.

use axum::http::StatusCode;
use evident_core::access::Role;
use evident_e2e::{Embed, TestApp, bearer};
use evident_store::queue::{NewTask, PriorityBand};
use serde_json::json;

mod console;
use console::{login, send};

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
    app.post_ok(
        "/api/v1/ingest",
        &json!({"clientId": client, "sourceUrn": urn, "kind": "doc",
                    "relationships": relationships, "content": "plain notes, nothing more"}),
    )
    .await;
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
        let token = app
            .client_token(&format!("{client}-reader"), client, Role::Read)
            .await;
        let auth = bearer(&token);
        let r = send(&app, "GET", "/ui", &[("authorization", &auth)], None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let page = r.body;
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
    let admin = app.client_token("c1-admin", "c1", Role::Admin).await;
    let session = login(&app, &admin).await;
    let last = &ids[2];
    let page = console::page(&app, &format!("/ui/queue/{last}"), &session).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("id=\"reorder\""), "{}", page.body);
    let csrf = page.csrf();
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
        let r = console::submit(&app, &reorder, &session, &form).await;
        assert_eq!(r.status, want, "{form}: {}", r.body);
    }
    let (_, t) = app.get(&format!("/api/v1/queue/{last}")).await;
    assert_eq!(t["queuePosition"], serde_json::Value::Null, "{t}");
    let form = format!("csrf={csrf}&position=1");
    let r = console::submit(&app, &reorder, &session, &form).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
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
