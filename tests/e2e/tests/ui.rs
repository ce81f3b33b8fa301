//! The web console through the real router over the embedded store: login and the session
//! cookie's flags, CSRF refusals, the retry form, another client's token seeing none of a
//! client's data on any page, and stored text shown escaped.

use axum::http::{StatusCode, header};
use evident_core::access::Role;
use evident_e2e::{Embed, TestApp};
use evident_indexers::access::{Access, SourceRoots, install};
use evident_qualifier::Outcome;
use evident_store::queue::{NewTask, TaskState};
use serde_json::json;

mod console;
use console::{enc, login, send};

/// A task of `client` that ends in `error` (no handler for its type).
async fn error_task(app: &TestApp, client: &str) -> String {
    let id = app
        .kb
        .stores()
        .queue
        .enqueue(
            NewTask {
                kind: "ingest".into(),
                scope: evident_core::Scope::client(client),
                source_urn: format!("doc:{client}-broken"),
                priority: 4,
                payload: json!({"type": "nope"}),
            },
            0,
        )
        .await
        .expect("enqueue")
        .task_id;
    let done = app.qualifier().process_next().await.expect("process");
    assert_eq!(
        done,
        Outcome::Processed {
            task_id: id.clone(),
            state: TaskState::Error
        }
    );
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_sets_a_strict_http_only_cookie_that_pages_accept() {
    let app = TestApp::new(Embed::Hashing).await;
    let token = app.client_token("c1-read", "c1", Role::Read).await;
    let r = send(&app, "GET", "/ui/queue?state=error", &[], None).await;
    assert_eq!(
        r.status,
        StatusCode::SEE_OTHER,
        "a browser without a session logs in first"
    );
    assert_eq!(
        r.header(header::LOCATION),
        "/ui/login?next=%2Fui%2Fqueue%3Fstate%3Derror"
    );
    let r = send(&app, "GET", "/ui/login?next=%2Fui%2Fqueue", &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.body.contains("type=\"password\" name=\"token\""),
        "{}",
        r.body
    );

    let r = console::login_form(
        &app,
        &[],
        &format!("token={}&next=%2Fui%2Fqueue", enc(&token)),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.header(header::LOCATION), "/ui/queue");
    let cookie = r.header(header::SET_COOKIE);
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age=43200"] {
        assert!(cookie.contains(flag), "{flag} in {cookie}");
    }
    assert!(!cookie.contains("Secure"), "not behind TLS: {cookie}");
    let session = cookie.split(';').next().expect("pair").to_string();
    let r = console::page(&app, "/ui", &session).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(
        r.body.contains("Overview · c1") && r.body.contains("c1-read (test)"),
        "{}",
        r.body
    );
    // Behind a TLS proxy the cookie is Secure.
    let r = console::login_form(
        &app,
        &[("x-forwarded-proto", "https")],
        &format!("token={}", enc(&token)),
    )
    .await;
    assert!(r.header(header::SET_COOKIE).ends_with("; Secure"));

    // Refusals: an unknown token, a login posted from another site, a session cookie
    // elsewhere than the console, a script without a token (JSON, as the API answers).
    let r = console::login_form(&app, &[], "token=evd_nope").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.body.contains("not known") && r.header(header::SET_COOKIE).is_empty());
    let r = console::login_form(
        &app,
        &[("origin", "https://evil.example")],
        &format!("token={}", enc(&token)),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.header(header::SET_COOKIE).is_empty());
    let (s, v) = app
        .call(
            "GET",
            "/api/v1/queue?clientId=c1",
            None,
            &[("authorization", ""), ("cookie", &session)],
        )
        .await;
    assert_eq!(
        (s, v["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthenticated"))
    );
    let (s, v) = app.call_auth("", "GET", "/ui/sources", None).await;
    assert_eq!(
        (s, v["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthenticated"))
    );
    // Scripts fetch pages with the bearer header.
    let r = send(
        &app,
        "GET",
        "/ui/sources",
        &[("authorization", &format!("Bearer {token}"))],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("<table id=\"sources\""));
    // A revoked token ends its sessions.
    let (s, v) = app
        .call("DELETE", "/api/v1/tokens/c1-read", None, &[])
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let r = console::page(&app, "/ui", &session).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_need_the_sessions_csrf_token_and_retry_an_error_task() {
    let app = TestApp::new(Embed::Hashing).await;
    let admin = app.client_token("c1-admin", "c1", Role::Admin).await;
    let other = app.client_token("c1-other", "c1", Role::Admin).await;
    let task = error_task(&app, "c1").await;
    let session = login(&app, &admin).await;
    let page = console::page(&app, &format!("/ui/queue/{task}"), &session).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains("no handler for tasks of type `nope`"),
        "{}",
        page.body
    );
    assert!(page.body.contains("id=\"retry\""));
    let csrf = page.csrf();
    let retry = format!("/ui/queue/{task}/retry");
    let other_csrf = evident_api::ui::session::csrf_token(Some(&other));
    for (what, form) in [
        ("no token", String::new()),
        ("empty", "csrf=".to_string()),
        ("another session's", format!("csrf={other_csrf}")),
        ("tampered", format!("csrf=x{csrf}")),
    ] {
        let r = console::submit(&app, &retry, &session, &form).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{what}: {}", r.body);
        assert!(r.body.contains("csrf_refused"), "{what}: {}", r.body);
        let (_, t) = app.get(&format!("/api/v1/queue/{task}")).await;
        assert_eq!(t["state"], "error", "{what}: nothing changed");
    }
    let r = console::submit(&app, &retry, &session, &format!("csrf={csrf}")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.header(header::LOCATION), format!("/ui/queue/{task}"));
    let (_, t) = app.get(&format!("/api/v1/queue/{task}")).await;
    assert_eq!(t["state"], "queued");
    let r = console::page(&app, &format!("/ui/queue/{task}"), &session).await;
    assert!(
        r.body.contains("s-queued") && r.body.contains("id=\"prioritize\""),
        "{}",
        r.body
    );
    // A bearer caller needs no CSRF field (a browser never sends that header by itself).
    let r = send(
        &app,
        "POST",
        &format!("/ui/queue/{task}/prioritize"),
        &[("authorization", &format!("Bearer {admin}"))],
        Some(""),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    // A read token's session sees the page but may not act (the API's roles).
    let reader = app.client_token("c1-reader", "c1", Role::Read).await;
    let rs = login(&app, &reader).await;
    let p = console::page(&app, &format!("/ui/queue/{task}"), &rs).await;
    let r = console::submit(&app, &retry, &rs, &format!("csrf={}", p.csrf())).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.body.contains("forbidden_role"), "{}", r.body);
    // Logging out needs the token too, and clears the cookie.
    let r = console::submit(&app, "/ui/logout", &session, "").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = console::submit(&app, "/ui/logout", &session, &format!("csrf={csrf}")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(r.header(header::SET_COOKIE).contains("Max-Age=0"));
}

/// Client c1's data: a document (marked `Zanzibar`), a source registered through the
/// console's add form (with its confirmation), an error task.
async fn client_one(app: &TestApp, admin: &str) -> (String, String, String) {
    app
        .post_ok(
            "/api/v1/ingest",
            &json!({"clientId": "c1", "sourceUrn": "doc:c1-plan", "kind": "doc", "title": "Zanzibar plan",
                    "relationships": ["team:zanzibar|owns|jira:ZAN-77"],
                    "content": "Zanzibar launch plan: the Zanzibar team owns ZAN-77. <script>alert('zanzibar')</script> & more."}),
        )
        .await;
    let session = login(app, admin).await;
    let page = console::page(app, "/ui/sources", &session).await;
    let csrf = page.csrf();
    let form = format!(
        "csrf={csrf}&kind=mbox&id=c1.zanzibar-mail&intervalSecs=600&settings={}",
        enc(r#"{"path": "/srv/mail/zanzibar.mbox"}"#)
    );
    let review = console::submit(app, "/ui/sources", &session, &form).await;
    assert_eq!(review.status, StatusCode::OK, "{}", review.body);
    assert!(
        review
            .body
            .contains("Register the mbox source <b>c1.zanzibar-mail</b>"),
        "{}",
        review.body
    );
    let (_, listed) = app.get("/api/v1/indexers?clientId=c1").await;
    assert_eq!(
        listed["sources"].as_array().map(Vec::len),
        Some(0),
        "not before the confirmation"
    );
    let done = console::submit(app, "/ui/sources", &session, &format!("{form}&confirmed=1")).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(
        done.header(header::LOCATION),
        "/ui/sources/c1.zanzibar-mail?clientId=c1"
    );
    let (_, pack) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "c1", "query": "Zanzibar launch"}),
        )
        .await;
    let chunk = pack["items"][0]["chunkId"]
        .as_str()
        .expect("chunk")
        .to_string();
    (
        chunk,
        "c1.zanzibar-mail".into(),
        error_task(app, "c1").await,
    )
}

/// A console over client c1's data (`client_one`) and c1's admin token.
async fn console_of_client_one() -> (TestApp, String, (String, String, String)) {
    install(Access::new(Default::default(), SourceRoots::new(["/srv"])));
    let app = TestApp::new(Embed::Hashing).await;
    let admin = app.client_token("c1-admin", "c1", Role::Admin).await;
    let data = client_one(&app, &admin).await;
    (app, admin, data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_clients_token_sees_none_of_it_and_stored_text_is_escaped() {
    let (app, admin, (chunk, source, task)) = console_of_client_one().await;
    let pages = [
        "/ui".to_string(),
        "/ui/sources".into(),
        format!("/ui/sources/{source}"),
        "/ui/queue".into(),
        "/ui/queue?state=error".into(),
        format!("/ui/queue/{task}"),
        "/ui/search?q=launch+plan+alert".into(),
        format!("/ui/chunk/{chunk}"),
        "/ui/node/team%3Azanzibar".into(),
        "/ui/node/jira%3AZAN-77?depth=2&edgeType=owns".into(),
    ];
    // Client c1 sees its data, escaped.
    let c1 = login(&app, &admin).await;
    for page in &pages {
        let r = console::page(&app, page, &c1).await;
        assert_eq!(r.status, StatusCode::OK, "{page}: {}", r.body);
        assert!(
            r.body.to_lowercase().contains("zanzibar")
                || page == "/ui"
                || page.starts_with("/ui/queue"),
            "{page}: {}",
            r.body
        );
        assert!(
            !r.body.contains("<script>alert"),
            "{page} shows stored markup unescaped"
        );
    }
    let search = console::page(&app, &pages[6], &c1).await;
    assert!(
        search
            .body
            .contains("&lt;script&gt;<mark>alert</mark>(&#39;zanzibar&#39;)&lt;/script&gt;"),
        "{}",
        search.body
    );
    assert!(
        search
            .body
            .contains(&format!("href=\"/ui/chunk/{}?clientId=c1\"", enc(&chunk))),
        "{}",
        search.body
    );
    let view = console::page(&app, &pages[7], &c1).await;
    assert!(
        view.body
            .contains("&lt;script&gt;alert(&#39;zanzibar&#39;)&lt;/script&gt; &amp; more."),
        "{}",
        view.body
    );

    // Client c2's admin: its own (empty) console, nothing of c1's on any page.
    let c2_token = app.client_token("c2-admin", "c2", Role::Admin).await;
    let c2 = login(&app, &c2_token).await;
    for page in &pages {
        let r = console::page(&app, page, &c2).await;
        let body = r.body.to_lowercase();
        for secret in ["zanzibar", &source, &task, &chunk, "doc:c1"] {
            assert!(
                !body.contains(&secret.to_lowercase())
                    || page.to_lowercase().contains(&secret.to_lowercase()),
                "{page} shows {secret} to c2: {}",
                r.body
            );
        }
        assert!(
            r.status == StatusCode::OK || r.status == StatusCode::NOT_FOUND,
            "{page}: {} {}",
            r.status,
            r.body
        );
        // Naming client c1 is refused outright.
        let sep = if page.contains('?') { '&' } else { '?' };
        let named = console::page(&app, &format!("{page}{sep}clientId=c1"), &c2).await;
        assert!(
            named.status == StatusCode::FORBIDDEN || named.status == StatusCode::NOT_FOUND,
            "{page} naming c1: {}",
            named.status
        );
        assert!(
            !named.body.to_lowercase().contains("zanzibar launch"),
            "{page}"
        );
    }
    // A fragment (the live refresh) is the table alone.
    let r = console::page(&app, "/ui/queue?fragment=1", &c1).await;
    assert!(
        r.body.starts_with("<p class=\"counts\">") && !r.body.contains("<nav>"),
        "{}",
        r.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_page_shows_the_claims_on_its_evidence_and_the_gaps_about_it() {
    let (app, admin, (chunk, _, _)) = console_of_client_one().await;
    app.post_ok(
        "/api/v1/claims",
        &json!({"clientId": "c1", "text": "The Zanzibar team ships ZAN-77 <b>first</b>",
                    "evidence": [{"kind": "chunk", "ref": chunk}],
                    "actor": {"type": "agent", "id": "planner"}}),
    )
    .await;
    let (s, v) = app
        .post(
            "/api/v1/gaps",
            &json!({"clientId": "c1", "question": "Who reviews the Zanzibar launch?",
                    "about": ["team:zanzibar"]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let c1 = login(&app, &admin).await;
    let page = console::page(&app, "/ui/node/team%3Azanzibar", &c1).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains("<ul id=\"claims\">")
            && page
                .body
                .contains("The Zanzibar team ships ZAN-77 &lt;b&gt;first&lt;/b&gt;"),
        "the claim citing the node's evidence, escaped: {}",
        page.body
    );
    assert!(
        page.body.contains("<ul id=\"gaps\">")
            && page.body.contains("Who reviews the Zanzibar launch?"),
        "the gap about the node: {}",
        page.body
    );
    // A node nothing cites and no gap names has neither section.
    let other = console::page(&app, "/ui/node/jira%3AZAN-77", &c1).await;
    assert_eq!(other.status, StatusCode::OK, "{}", other.body);
    assert!(!other.body.contains("id=\"gaps\""), "{}", other.body);
}
