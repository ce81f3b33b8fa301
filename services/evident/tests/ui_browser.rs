//! The web console in headless Chromium over WebDriver, against the real `evident serve`
//! on an embedded store with a fixture git repository: log in with a token (the cookie is
//! HttpOnly and SameSite=Strict as the browser sees it), watch the repository's source turn
//! `ok` through the live refresh, search and open a citation showing the file's lines,
//! retry an `error` task, see nothing of the client as another client's token, and have a
//! form without its CSRF token refused.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (`.ci/run` installs them); fails
//! saying so when they are missing. `screenshots` (ignored) regenerates `docs/ui/*.png`:
//! `/work/wt/cargo nextest run -p evident --run-ignored only -E 'test(screenshots)'`.

mod support;
#[path = "browser/webdriver.rs"]
mod webdriver;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::Server;
use webdriver::{Driver, Session};

/// A git repository with one Rust file whose function sits on lines 4–8.
fn fixture_repo(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    std::fs::write(
        dir.join("src/billing.rs"),
        "//! Billing.\n\n/// Sums an invoice's lines with tax.\npub fn compute_invoice_total(lines: &[u64], tax_percent: u64) -> u64 {\n    let net: u64 = lines.iter().sum();\n    let tax = net * tax_percent / 100;\n    net + tax\n}\n",
    )
    .expect("write");
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "."],
        &[
            "-c",
            "user.name=Fixture",
            "-c",
            "user.email=fixture@example.com",
            "commit",
            "-q",
            "-m",
            "Billing: invoice totals",
        ],
    ] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .expect("git");
        assert!(ok.success(), "git {args:?}");
    }
}

struct Fixture {
    server: Server,
    _dirs: Vec<tempfile::TempDir>,
    admin: String,
    other: String,
    papers: std::path::PathBuf,
}

/// `evident serve` indexing the fixture repository for client `c1`, polling a documents
/// folder with a broken PDF (an `error` task), with an admin token of c1 and one of c2.
fn fixture() -> Fixture {
    let (data, repo, docs, conf) = (tmp(), tmp(), tmp(), tmp());
    fixture_repo(repo.path());
    std::fs::write(
        docs.path().join("broken.pdf"),
        b"%PDF-1.7 this is not really a PDF",
    )
    .expect("pdf");
    let config = conf.path().join("evident.toml");
    std::fs::write(
        &config,
        format!(
            "[indexers]\npoll_tick_secs = 1\n\n[sources]\nroots = [{:?}]\n",
            docs.path()
        ),
    )
    .expect("config");
    let server = Server::start_with(
        data.path(),
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "--client".as_ref(),
            "c1".as_ref(),
            "--index-git".as_ref(),
            repo.path().as_os_str(),
        ],
        &[],
    );
    let token = |client: &str| {
        let out = server.ok("token create --client", &[client, "--role", "admin"]);
        out.lines().next().expect("secret").trim().to_string()
    };
    let (admin, other) = (token("c1"), token("c2"));
    let papers = docs.path().to_path_buf();
    Fixture {
        server,
        _dirs: vec![data, repo, docs, conf],
        admin,
        other,
        papers,
    }
}

impl Fixture {
    /// `path` with the operator's token: its JSON answer.
    async fn api(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = reqwest::Client::new()
            .request(method, format!("{}{path}", self.server.url))
            .bearer_auth(&self.server.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("api call");
        let status = resp.status();
        let v: Value = resp.json().await.expect("json");
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    /// The documents folder with the broken PDF, as source `c1.papers`.
    async fn register_papers(&self) {
        let body =
            json!({"clientId": "c1", "id": "c1.papers", "path": self.papers, "intervalSecs": 5});
        self.api(
            reqwest::Method::POST,
            "/api/v1/sources/documents",
            Some(body),
        )
        .await;
    }
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

async fn login(b: &Session, url: &str, token: &str) {
    b.goto(&format!("{url}/ui/login")).await;
    b.type_into("#token", token).await;
    b.click("#login").await;
    b.wait_text("h1", 10, |t| t.starts_with("Overview")).await;
}

async fn logout(b: &Session) {
    b.click("nav form button").await;
    b.wait_text("h1", 10, |t| t == "Evident console").await;
}

/// The id of the first task of c1 in `error`, waiting for the broken PDF's task to fail.
async fn error_task(b: &Session, url: &str) -> String {
    b.goto(&format!("{url}/ui/queue?state=error")).await;
    b.wait_text("#tasks tbody", 90, |t| t.contains("error"))
        .await;
    let v = b
        .execute("return document.querySelector('#tasks tbody a').textContent")
        .await;
    v.as_str().expect("task id").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_browser() {
    let f = fixture();
    f.register_papers().await;
    let url = f.server.url.clone();
    let driver = Driver::start();
    let b = Session::new(&driver, 1280, 800).await;

    // Logged out, a page sends the browser to the login form; logging in comes back.
    b.goto(&format!("{url}/ui/sources")).await;
    b.wait_text("h1", 10, |t| t == "Evident console").await;
    b.type_into("#token", &f.admin).await;
    b.click("#login").await;
    b.wait_text("h1", 10, |t| t == "Sources").await;
    let cookies = b.cookies().await;
    let session = cookies
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "evident_session"))
        .unwrap_or_else(|| panic!("session cookie: {cookies}"));
    assert_eq!(
        (session["httpOnly"].as_bool(), session["sameSite"].as_str()),
        (Some(true), Some("Strict")),
        "{session}"
    );
    assert_eq!(
        b.execute("return document.cookie").await,
        json!(""),
        "scripts cannot read it"
    );

    // The fixture repository's source turns `ok` without reloading (the live refresh).
    let state = b
        .wait_text("span.state[data-source^=\"c1.\"]", 90, |t| t == "ok")
        .await;
    assert_eq!(state, "ok");

    // Search, open the citation: the function's lines of the file at the commit.
    b.goto(&format!("{url}/ui/search?q=compute_invoice_total"))
        .await;
    let first = b.text("#results li .cite a").await;
    assert!(first.starts_with("src/billing.rs:"), "{first}");
    b.click("#results li .cite a").await;
    let locator = b
        .wait_text("#locator", 10, |t| t.contains("src/billing.rs"))
        .await;
    assert!(locator.contains("commit"), "{locator}");
    let passage = b.text("#passage").await;
    assert!(
        passage.contains("pub fn compute_invoice_total"),
        "{passage}"
    );
    let line = b.execute("return [...document.querySelectorAll('#passage .ln')].find(e => e.nextSibling && e.nextSibling.textContent.includes('fn compute_invoice_total')).dataset.line").await;
    assert_eq!(line, json!("4"), "the function is on line 4 of the file");

    // Retry the broken PDF's `error` task from its page.
    let task = error_task(&b, &url).await;
    let attempts = |v: &Value| v["attempts"].as_u64().unwrap_or(0);
    let record = format!("/api/v1/queue/{task}");
    let before = f.api(reqwest::Method::GET, &record, None).await;
    b.goto(&format!("{url}/ui/queue/{task}")).await;
    b.click("#retry").await;
    // The click navigates when the server answers: wait for the retry to show in the API.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let after = f.api(reqwest::Method::GET, &record, None).await;
        if after["state"] != "error" || attempts(&after) > attempts(&before) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never retried: {before} → {after}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // A form without the CSRF token is refused.
    b.goto(&format!("{url}/ui/queue/{task}")).await;
    b.execute(&format!(
        "const f = document.createElement('form'); f.method = 'post'; f.action = '/ui/queue/{task}/retry'; document.body.append(f); f.submit();"
    ))
    .await;
    let code = b.wait_text("#error-code", 10, |t| !t.is_empty()).await;
    assert_eq!(code, "csrf_refused");

    // Another client's token: nothing of c1 on any page.
    b.goto(&format!("{url}/ui")).await;
    logout(&b).await;
    login(&b, &url, &f.other).await;
    for page in [
        "/ui",
        "/ui/sources",
        "/ui/queue",
        "/ui/queue?state=error",
        "/ui/search?q=compute_invoice_total",
    ] {
        b.goto(&format!("{url}{page}")).await;
        let html = b.source().await;
        for secret in ["c1.", "billing", &task, "broken.pdf", "client c1"] {
            assert!(
                !html.contains(secret),
                "{page} shows `{secret}` to client c2"
            );
        }
    }
    b.goto(&format!("{url}/ui/queue/{task}")).await;
    assert_eq!(b.text("#error-code").await, "not_found");
    b.goto(&format!("{url}/ui/sources?clientId=c1")).await;
    assert_eq!(b.text("#error-code").await, "forbidden_scope");
    b.close().await;
}

/// Regenerates `docs/ui/*.png`: every page at 1280×800 and 390×844.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ui; run on purpose (README *Web console*)"]
async fn screenshots() {
    let f = fixture();
    f.register_papers().await;
    let url = f.server.url.clone();
    let driver = Driver::start();
    let b = Session::new(&driver, 1280, 800).await;
    login(&b, &url, &f.admin).await;
    b.goto(&format!("{url}/ui/sources")).await;
    b.wait_text("span.state[data-source^=\"c1.\"]", 90, |t| t == "ok")
        .await;
    let task = error_task(&b, &url).await;
    b.goto(&format!("{url}/ui/search?q=compute_invoice_total"))
        .await;
    let chunk = b
        .execute("return document.querySelector('#results li .cite a').getAttribute('href')")
        .await;
    let node = b
        .execute("return document.querySelector('#results li .refs a').getAttribute('href')")
        .await;
    let pages = [
        ("overview", "/ui".to_string()),
        ("sources", "/ui/sources".into()),
        ("source", "/ui/sources/c1.papers".into()),
        ("queue", "/ui/queue".into()),
        ("task", format!("/ui/queue/{task}")),
        ("search", "/ui/search?q=compute_invoice_total".into()),
        ("citation", chunk.as_str().unwrap_or("/ui").to_string()),
        ("node", node.as_str().unwrap_or("/ui").to_string()),
    ];
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ui");
    std::fs::create_dir_all(&out).expect("docs/ui");
    for (w, h, tag) in [(1280, 800, "desktop"), (390, 844, "phone")] {
        b.set_size(w, h).await;
        for (name, page) in &pages {
            b.goto(&format!("{url}{page}")).await;
            b.element("main").await;
            std::fs::write(out.join(format!("{name}-{tag}.png")), b.screenshot().await)
                .expect("png");
        }
    }
    b.close().await;
}
