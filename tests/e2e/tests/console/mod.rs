//! Shared by the console's e2e tests: a browser-like request over the real router, its
//! answer, and a login that returns the session cookie.

#![allow(dead_code)] // each test binary uses its own part of this module

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use evident_e2e::TestApp;
use http_body_util::BodyExt;
use tower::ServiceExt;

pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: header::HeaderName) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    }

    /// The CSRF token of the page's first form.
    pub fn csrf(&self) -> String {
        let at = self
            .body
            .find("name=\"csrf\" value=\"")
            .unwrap_or_else(|| panic!("a form with a CSRF field: {}", self.body));
        let rest = &self.body[at + "name=\"csrf\" value=\"".len()..];
        rest[..rest.find('"').expect("end of value")].to_string()
    }
}

/// A browser-like request: HTML accepted, `headers` added, a form body when given.
pub async fn send(
    app: &TestApp,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    form: Option<&str>,
) -> Resp {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("accept", "text/html")
        .header("host", "console.test");
    if form.is_some() {
        req = req.header("content-type", "application/x-www-form-urlencoded");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(
            form.map(|f| Body::from(f.to_string()))
                .unwrap_or_else(Body::empty),
        )
        .expect("request");
    let resp = app.router.clone().oneshot(req).await.expect("answer");
    let (status, headers) = (resp.status(), resp.headers().clone());
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    Resp {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

pub fn enc(s: &str) -> String {
    evident_api::ui::layout::url_enc(s)
}

/// The login form posted with `headers` added (`token=…&next=…`).
pub async fn login_form(app: &TestApp, headers: &[(&str, &str)], form: &str) -> Resp {
    send(app, "POST", "/ui/login", headers, Some(form)).await
}

/// Logs in with `token`; the `Cookie` header value of the session.
pub async fn login(app: &TestApp, token: &str) -> String {
    let form = format!("token={}&next=%2Fui", enc(token));
    let r = login_form(app, &[], &form).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let cookie = r.header(header::SET_COOKIE);
    cookie.split(';').next().expect("name=value").to_string()
}

/// A page fetched in the session `cookie` (the `Cookie` header value [`login`] returns).
pub async fn page(app: &TestApp, uri: &str, cookie: &str) -> Resp {
    send(app, "GET", uri, &[("cookie", cookie)], None).await
}

/// A form posted to `uri` in the session `cookie`.
pub async fn submit(app: &TestApp, uri: &str, cookie: &str, form: &str) -> Resp {
    send(app, "POST", uri, &[("cookie", cookie)], Some(form)).await
}
