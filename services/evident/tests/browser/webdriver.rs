//! A small W3C WebDriver client over `reqwest` (already in the build), for the console's
//! browser tests: `chromedriver` started on a free port and killed on drop, one headless
//! Chromium session. Only the commands the tests use. A WebDriver crate (fantoccini,
//! thirtyfour) would add its own HTTP stack and dozens of crates to compile for the same
//! dozen JSON calls.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// `chromedriver` on a free loopback port; killed when dropped.
pub struct Driver {
    child: Child,
    pub url: String,
}

impl Driver {
    /// Starts chromedriver, or fails the test saying how to install it.
    pub fn start() -> Driver {
        for bin in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                std::path::Path::new(bin).exists(),
                "{bin} is missing: the console's browser tests need headless Chromium and its \
                 WebDriver (`apt-get install -y chromium chromium-driver`; .ci/run installs them)"
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        // Its own process group: dropping the driver kills the browser it started too
        // (Chromium's helpers outlive chromedriver otherwise).
        let mut child = Command::new(CHROMEDRIVER)
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        // Its banner says when it listens (no sleeping until it might).
        for line in out.lines() {
            let line = line.expect("chromedriver output");
            if line.contains("started successfully") {
                break;
            }
        }
        Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One browser session (deleted on [`Session::close`]; the driver's death ends it otherwise).
pub struct Session {
    http: reqwest::Client,
    base: String,
}

impl Session {
    pub async fn new(driver: &Driver, width: u32, height: u32) -> Session {
        let http = reqwest::Client::new();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--hide-scrollbars", format!("--window-size={width},{height}")]
            }
        }}});
        let v: Value = http
            .post(format!("{}/session", driver.url))
            .json(&caps)
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .expect("session answer");
        let id = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"));
        Session {
            base: format!("{}/session/{id}", driver.url),
            http,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req
            .send()
            .await
            .expect("webdriver call")
            .json()
            .await
            .expect("webdriver answer");
        if let Some(e) = v["value"]["error"].as_str() {
            panic!("webdriver {path}: {e}: {}", v["value"]["message"]);
        }
        v["value"].clone()
    }

    pub async fn goto(&self, url: &str) {
        let v = self
            .call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
        assert!(v.is_null(), "navigate to {url}: {v}");
    }

    pub async fn current_url(&self) -> String {
        let v = self.call(reqwest::Method::GET, "/url", None).await;
        v.as_str().unwrap_or_default().to_string()
    }

    /// The first element matching `css`, if any.
    pub async fn find(&self, css: &str) -> Option<String> {
        let v = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v[ELEMENT].as_str().map(str::to_string)
    }

    pub async fn element(&self, css: &str) -> String {
        match self.find(css).await {
            Some(e) => e,
            None => panic!(
                "no `{css}` on {}:\n{}",
                self.current_url().await,
                self.source().await
            ),
        }
    }

    /// The rendered text of the first element matching `css` (empty when there is none).
    pub async fn text(&self, css: &str) -> String {
        let v = self
            .execute_with(
                "const e = document.querySelector(arguments[0]); return e ? e.innerText.trim() : '';",
                json!([css]),
            )
            .await;
        v.as_str().unwrap_or_default().to_string()
    }

    pub async fn click(&self, css: &str) {
        let e = self.element(css).await;
        let v = self
            .call(
                reqwest::Method::POST,
                &format!("/element/{e}/click"),
                Some(json!({})),
            )
            .await;
        assert!(v.is_null(), "click {css}: {v}");
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.element(css).await;
        let v = self
            .call(
                reqwest::Method::POST,
                &format!("/element/{e}/value"),
                Some(json!({ "text": text })),
            )
            .await;
        assert!(v.is_null(), "type into {css}: {v}");
    }

    pub async fn source(&self) -> String {
        let v = self.call(reqwest::Method::GET, "/source", None).await;
        v.as_str().unwrap_or_default().to_string()
    }

    pub async fn execute(&self, script: &str) -> Value {
        self.execute_with(script, json!([])).await
    }

    pub async fn execute_with(&self, script: &str, args: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    pub async fn cookies(&self) -> Value {
        self.call(reqwest::Method::GET, "/cookie", None).await
    }

    pub async fn set_size(&self, width: u32, height: u32) {
        self.call(
            reqwest::Method::POST,
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        )
        .await;
    }

    /// A PNG of the viewport.
    pub async fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let v = self.call(reqwest::Method::GET, "/screenshot", None).await;
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("base64 screenshot"))
            .expect("png")
    }

    /// Waits (up to `secs`) until `check` holds for the page's text at `css`; its last text.
    pub async fn wait_text(&self, css: &str, secs: u64, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let text = self.text(css).await;
            if check(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "`{css}` on {} never satisfied the check; last text `{text}`; page:\n{}",
                self.current_url().await,
                self.source().await
            );
            // A real browser over a real server: poll the page, briefly.
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    pub async fn close(self) {
        let _ = self.http.delete(&self.base).send().await;
    }
}
