//! SSRF and arbitrary-file probes against local servers and folders: every way of naming a
//! loopback, link-local or metadata address is refused at registration (with the reason),
//! a source that names one anyway (stored before the policy, or the allow-list shrank) fails
//! its poll with the reason in its status and sends nothing; redirects from an allowed host
//! to a refused one are refused; what `[egress] allow` lists goes through. Local paths must
//! lie under `[sources] roots`, symlinks resolved at every poll.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use evident_egress::EgressPolicy;
use evident_indexers::access::{Access, SourceRoots};
use evident_indexers::poll::PollError;
use evident_indexers::sources::{SourceRequest, put, register_with};
use evident_store::queue::Clock;
use serde_json::{Value, json};
use support::{Harness, harness_with};

/// A server on `addr` answering every request with `answer`, counting requests.
async fn serve(
    addr: &str,
    answer: impl Fn(&Uri) -> Response + Clone + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let (answer, counted) = (answer.clone(), counted.clone());
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            answer(&uri)
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (port.to_string(), hits)
}

fn page(_: &Uri) -> Response {
    (
        [(header::CONTENT_TYPE, "text/html")],
        "<html><head><title>Internal</title></head><body><p>The admin console lists every client.</p></body></html>",
    )
        .into_response()
}

/// Loopback fake servers are refused: only the test's folder is a root.
fn strict(dir: &std::path::Path) -> Access {
    Access::new(EgressPolicy::strict(), SourceRoots::new([dir]))
}

fn with_allow(allow: &'static [&'static str]) -> impl FnOnce(&std::path::Path) -> Access {
    move |dir| {
        Access::new(
            EgressPolicy::new(allow).expect("policy"),
            SourceRoots::new([dir]),
        )
    }
}

fn request(body: Value) -> SourceRequest {
    let mut body = body;
    body["clientId"] = json!("acme");
    SourceRequest::from_json(body).expect("request")
}

/// Stores a source without the access checks (as one registered before the policy existed).
async fn store_unchecked(h: &Harness, kind: &str, body: Value) -> String {
    let source = request(body)
        .to_source(kind, h.clock.now_ms())
        .expect("settings");
    put(&h.kb, source, h.clock.now_ms())
        .await
        .expect("stored")
        .id
}

async fn last_error(h: &Harness, id: &str) -> String {
    h.source(id).await.status.last_error.unwrap_or_default()
}

/// Registers a source of `kind` through the access checks, as the API does.
async fn register(
    h: &Harness,
    kind: &str,
    body: Value,
) -> Result<evident_store::indexers::IndexerSource, evident_kb::KbError> {
    register_with(&h.kb, &h.ctx.access, kind, &request(body), h.clock.now_ms()).await
}

/// Polls `id`, which must be refused by the egress or path checks (`what` names the case);
/// the reason its status then records.
async fn refused_poll(h: &Harness, id: &str, what: &str) -> String {
    let err = h.poll(id).await.expect_err(what);
    assert!(matches!(err, PollError::Refused(_)), "{what}: {err:?}");
    last_error(h, id).await
}

#[tokio::test]
async fn every_spelling_of_an_internal_address_is_refused_with_the_reason_in_the_status() {
    let h = harness_with(strict).await;
    let (port, hits) = serve("127.0.0.1:0", page).await;
    let probes = [
        (
            format!("http://127.0.0.1:{port}/"),
            "127.0.0.1 is a loopback address",
        ),
        (format!("http://localhost:{port}/"), "localhost resolves to"),
        (format!("http://[::1]:{port}/"), "::1 is a loopback address"),
        (
            format!("http://0x7f000001:{port}/"),
            "127.0.0.1 is a loopback address",
        ),
        (
            format!("http://2130706433:{port}/"),
            "127.0.0.1 is a loopback address",
        ),
        (
            format!("http://127.1:{port}/"),
            "127.0.0.1 is a loopback address",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "169.254.169.254 is the cloud metadata address",
        ),
        (
            "http://[fd00:ec2::254]/latest/".to_string(),
            "the cloud metadata address",
        ),
        ("http://[::ffff:127.0.0.1]/".to_string(), "loopback"),
        ("http://10.0.0.1/".to_string(), "a private address"),
    ];
    for (i, (url, why)) in probes.iter().enumerate() {
        // Registration refuses, naming the address and the way out.
        let e = register(
            &h,
            "web",
            json!({"id": format!("acme.probe{i}"), "urls": [url]}),
        )
        .await
        .expect_err(url);
        assert_eq!(e.code(), "egress_refused", "{url}: {e}");
        assert_eq!(e.http_status(), 403);
        assert!(e.to_string().contains(why), "{url}: {e}");
        assert!(e.to_string().contains("[egress] allow"), "{url}: {e}");

        // A source naming it anyway fails its poll, and its status says why.
        let id = store_unchecked(
            &h,
            "web",
            json!({"id": format!("acme.stored{i}"), "urls": [url]}),
        )
        .await;
        let status = refused_poll(&h, &id, url).await;
        assert!(status.contains(why), "{url}: {status}");
        assert!(
            status.contains("until its settings or the policy change"),
            "{status}"
        );
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "no request reached the server"
    );
    assert!(h.drain().await.errors.is_empty());
    assert!(h.urns("web:").await.is_empty(), "nothing stored");
}

#[tokio::test]
async fn a_tracker_on_an_internal_address_is_refused_at_registration_and_at_poll() {
    let h = harness_with(strict).await;
    let (port, hits) = serve("127.0.0.1:0", |_: &Uri| {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            "[]",
        )
            .into_response()
    })
    .await;
    let body = json!({"repo": "acme/shop", "baseUrl": format!("http://127.0.0.1:{port}")});
    let e = register(&h, "github", body.clone())
        .await
        .expect_err("loopback");
    assert_eq!(e.code(), "egress_refused");
    let id = store_unchecked(&h, "github", body).await;
    let status = refused_poll(&h, &id, "refused").await;
    assert!(
        status.contains("github: refused: 127.0.0.1 is a loopback address"),
        "{status}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_redirect_from_an_allowed_host_to_a_refused_one_is_refused() {
    // Only 127.0.0.1 is allowed; the target listens on 127.0.0.2 (loopback, not allowed).
    let h = harness_with(with_allow(&["127.0.0.1"])).await;
    let (target_port, target_hits) = serve("127.0.0.2:0", page).await;
    let to = format!("http://127.0.0.2:{target_port}/secret");
    let (port, hits) = serve("127.0.0.1:0", move |uri: &Uri| {
        if uri.path() == "/robots.txt" {
            return StatusCode::NOT_FOUND.into_response();
        }
        (StatusCode::FOUND, [(header::LOCATION, to.clone())]).into_response()
    })
    .await;

    // The crawler follows redirects itself: the target is refused like any link, and the
    // poll, having read nothing else, fails saying why.
    let web = register(
        &h,
        "web",
        json!({"urls": [format!("http://127.0.0.1:{port}/")], "sameHost": false}),
    )
    .await
    .expect("the seed is allowed");
    let status = refused_poll(&h, &web.id, "refused").await;
    assert!(
        status.contains("127.0.0.2 is a loopback address"),
        "{status}"
    );

    // A REST client follows redirects through the egress policy's redirect check.
    let github = register(
        &h,
        "github",
        json!({"repo": "acme/shop", "baseUrl": format!("http://127.0.0.1:{port}")}),
    )
    .await
    .expect("the base is allowed");
    let status = refused_poll(&h, &github.id, "refused").await;
    assert!(
        status.contains("127.0.0.2 is a loopback address"),
        "{status}"
    );

    assert!(
        hits.load(Ordering::SeqCst) >= 2,
        "the allowed host was asked"
    );
    assert_eq!(
        target_hits.load(Ordering::SeqCst),
        0,
        "the refused one never"
    );
}

#[tokio::test]
async fn a_redirect_to_a_name_resolving_to_a_refused_address_is_refused_at_connection() {
    // 127.0.0.2 is allowed; `localhost` resolves to 127.0.0.1 / ::1, which are not.
    let h = harness_with(with_allow(&["127.0.0.2"])).await;
    let (target_port, target_hits) = serve("127.0.0.1:0", page).await;
    let to = format!("http://localhost:{target_port}/rest/api/2/search");
    let (port, hits) = serve("127.0.0.2:0", move |_: &Uri| {
        (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, to.clone())],
        )
            .into_response()
    })
    .await;
    let jira = register(
        &h,
        "jira",
        json!({"project": "SHOP", "baseUrl": format!("http://127.0.0.2:{port}")}),
    )
    .await
    .expect("the base is allowed");
    let status = refused_poll(&h, &jira.id, "refused").await;
    assert!(
        status.contains("jira: refused: localhost resolves to"),
        "{status}"
    );
    assert!(hits.load(Ordering::SeqCst) >= 1);
    assert_eq!(target_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn what_the_allow_list_names_is_reached() {
    for (allow, host) in [
        (&["127.0.0.1"][..], "127.0.0.1"),
        (&["127.0.0.0/8"][..], "127.0.0.1"),
        (&["localhost"][..], "localhost"),
    ] {
        let h = harness_with(move |dir: &std::path::Path| {
            Access::new(
                EgressPolicy::new(allow).expect("policy"),
                SourceRoots::new([dir]),
            )
        })
        .await;
        let (port, hits) = serve("127.0.0.1:0", page).await;
        let src = register(
            &h,
            "web",
            json!({"urls": [format!("http://{host}:{port}/")]}),
        )
        .await
        .unwrap_or_else(|e| panic!("{allow:?} allows {host}: {e}"));
        let r = h.poll(&src.id).await.expect("crawl");
        assert_eq!(r["pages"], 1, "{allow:?}: {r}");
        assert!(hits.load(Ordering::SeqCst) >= 1);
        assert!(h.source(&src.id).await.status.last_error.is_none());
    }
}

#[tokio::test]
async fn local_paths_stay_under_the_roots_even_when_a_symlink_is_swapped() {
    let h = harness_with(strict).await;
    let outside = tempfile::tempdir().expect("tmp");
    std::fs::write(
        outside.path().join("secret.md"),
        "# Secret\n\nNot for you.\n",
    )
    .expect("w");
    let folder = h.dir.path().join("docs");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(folder.join("notes.md"), "# Notes\n\nFine to read.\n").expect("w");

    // Outside the roots: refused at registration, with the code and the setting to change.
    for (kind, path) in [
        ("documents", outside.path().to_path_buf()),
        ("mbox", outside.path().join("box.mbox")),
        ("maildir", outside.path().to_path_buf()),
        ("transcripts", outside.path().to_path_buf()),
        ("git", outside.path().to_path_buf()),
    ] {
        let body = if kind == "git" {
            json!({"name": "x", "path": path})
        } else {
            json!({"path": path})
        };
        let e = register(&h, kind, body).await.expect_err(kind);
        assert_eq!(e.code(), "path_not_allowed", "{kind}: {e}");
        assert!(e.to_string().contains("[sources] roots"), "{kind}: {e}");
    }
    let git_url = format!("file://{}", outside.path().display());
    let e = register(&h, "git", json!({"name": "x", "url": git_url}))
        .await
        .expect_err("file URL outside");
    assert_eq!(e.code(), "path_not_allowed");

    // A symlink under the root leading out of it: refused too.
    let link = h.dir.path().join("link");
    std::os::unix::fs::symlink(outside.path(), &link).expect("symlink");
    let e = register(&h, "documents", json!({"id": "acme.link", "path": link}))
        .await
        .expect_err("escapes");
    assert!(e.to_string().contains("resolved"), "{e}");

    // Registered inside, then swapped for a symlink leading out: the next poll refuses.
    let src = h.register("documents", json!({"path": folder})).await;
    let r = h.poll(&src.id).await.expect("poll");
    assert_eq!(r["documents"], 1, "{r}");
    std::fs::remove_dir_all(&folder).expect("rm");
    std::os::unix::fs::symlink(outside.path(), &folder).expect("swap");
    let status = refused_poll(&h, &src.id, "escapes now").await;
    assert!(status.contains("outside [sources] roots"), "{status}");
    h.drain().await;
    assert!(
        !h.urns("doc:").await.iter().any(|u| u.contains("secret")),
        "nothing outside the roots was read"
    );
}

#[tokio::test]
async fn a_link_to_a_name_resolving_to_a_refused_address_is_skipped_with_the_reason() {
    // 127.0.0.2 is allowed; `localhost` resolves to 127.0.0.1 / ::1, which are not.
    let h = harness_with(with_allow(&["127.0.0.2"])).await;
    let (target_port, target_hits) = serve("127.0.0.1:0", page).await;
    let link = format!("http://localhost:{target_port}/admin");
    let (port, _) = serve("127.0.0.2:0", move |uri: &Uri| {
        if uri.path() == "/robots.txt" {
            return StatusCode::NOT_FOUND.into_response();
        }
        (
            [(header::CONTENT_TYPE, "text/html")],
            format!(
                "<html><head><title>Start</title></head><body><p>Public start page.</p><a href=\"{link}\">admin</a></body></html>"
            ),
        )
            .into_response()
    })
    .await;
    let src = register(
        &h,
        "web",
        json!({"urls": [format!("http://127.0.0.2:{port}/")], "sameHost": false}),
    )
    .await
    .expect("allowed seed");
    let r = h.poll(&src.id).await.expect("crawl");
    assert_eq!(r["pages"], 1, "{r}");
    let examples = r["skippedExamples"].to_string();
    assert!(examples.contains("refused: localhost resolves to"), "{r}");
    assert_eq!(target_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn git_remotes_are_checked_before_every_fetch() {
    let h = harness_with(strict).await;
    let stored = |id: &str, config: Value| evident_store::indexers::IndexerSource {
        id: id.into(),
        kind: "git".into(),
        scope: evident_core::Scope::client("acme"),
        config,
        interval_secs: 60,
        enabled: true,
        created_at: 0,
        updated_at: 0,
        status: Default::default(),
    };
    for (id, url, why) in [
        (
            "loop",
            "https://127.0.0.1:9/r.git",
            "127.0.0.1 is a loopback address",
        ),
        ("meta", "https://169.254.169.254/r.git", "metadata"),
        ("name", "https://localhost:9/r.git", "localhost resolves to"),
        ("ssh", "ssh://git@github.com/acme/shop.git", "not supported"),
        ("ext", "ext::sh -c touch% /tmp/pwned", "transport helpers"),
        ("opt", "--upload-pack=touch /tmp/pwned", "options"),
    ] {
        // Settings stored before these checks existed.
        let s = stored(id, json!({"name": id, "url": url}));
        h.kb.stores()
            .indexers
            .put_source(&s, 0)
            .await
            .expect("stored");
        let status = refused_poll(&h, id, url).await;
        assert!(status.contains(why), "{url}: {status}");
    }
    let s = stored(
        "branch",
        json!({"name": "b", "path": h.dir.path(), "branches": ["--exec=touch /tmp/pwned"]}),
    );
    h.kb.stores()
        .indexers
        .put_source(&s, 0)
        .await
        .expect("stored");
    let err = h.poll("branch").await.expect_err("branch");
    assert!(matches!(err, PollError::Refused(_)), "{err:?}");
    assert!(
        !h.dir.path().join("mirrors").exists()
            || std::fs::read_dir(h.dir.path().join("mirrors"))
                .map(|d| d.count())
                .unwrap_or(0)
                == 0,
        "nothing was cloned"
    );
}
