//! Console sessions and CSRF.
//!
//! The login form takes an API key (or a JWT) and checks it with the API's own
//! [`crate::auth::Authenticator`]; the session cookie then holds that token (`HttpOnly`,
//! `SameSite=Strict`, `Path=/ui`, `Secure` when configured or behind TLS), and the guard
//! authenticates every console request from it exactly as from a bearer header — so a
//! revoked or expired token ends its sessions at once, on every replica, with no session
//! state to keep. Scripts send `Authorization: Bearer` instead.
//!
//! CSRF: every form carries `csrf`, an HMAC-SHA256 keyed by the session's token (a
//! per-process random key when authentication is off), so only a page rendered for that
//! session can hold it. A POST authenticated by the cookie (or by nothing, with
//! authentication off) without the right value is refused 403 `csrf_refused`; a POST with a
//! bearer header needs none, since a browser never attaches that header on its own.

use std::sync::OnceLock;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use evident_core::Visibility;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::layout::{self, esc};
use crate::AppState;
use crate::auth::Principal;
use crate::auth::scope::ScopeFields;
use crate::error::{ApiError, ApiResult};

/// The session cookie's name.
pub const COOKIE: &str = "evident_session";
/// How long a console session lasts (the token's own expiry ends it sooner).
const SESSION_SECS: u64 = 12 * 3600;

/// How the guard authenticated a console request: the secret presented (none with
/// authentication off) and whether it came in a bearer header.
#[derive(Clone)]
pub struct Credential {
    pub secret: Option<String>,
    pub bearer: bool,
}

/// The session cookie's token, if the request carries one.
pub fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn process_key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(|| {
        use ring::rand::SecureRandom;
        let mut k = [0u8; 32];
        // Without randomness the key is still secret to this process's memory layout only;
        // refusing to serve would be worse for a loopback-only, auth-off console.
        let _ = ring::rand::SystemRandom::new().fill(&mut k);
        k
    })
}

const CSRF_LABEL: &[u8] = b"evident-ui-csrf-v1";

fn csrf_key(secret: Option<&str>) -> ring::hmac::Key {
    let bytes: &[u8] = match secret {
        Some(s) => s.as_bytes(),
        None => process_key(),
    };
    ring::hmac::Key::new(ring::hmac::HMAC_SHA256, bytes)
}

/// The CSRF token of a session.
pub fn csrf_token(secret: Option<&str>) -> String {
    let tag = ring::hmac::sign(&csrf_key(secret), CSRF_LABEL);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag.as_ref())
}

/// Whether `presented` is the session's CSRF token (compared in constant time).
pub fn csrf_ok(secret: Option<&str>, presented: &str) -> bool {
    let Ok(tag) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(presented) else {
        return false;
    };
    ring::hmac::verify(&csrf_key(secret), CSRF_LABEL, &tag).is_ok()
}

/// What every console handler knows of its request: who asks, the scope the page is
/// about (already checked inside the grant by the guard), the CSRF token for its forms.
pub struct Ctx {
    pub principal: Principal,
    pub scope: ScopeFields,
    pub csrf: String,
    /// `?fragment=1`: only the live part of the page (the poller's refresh).
    pub fragment: bool,
    query: String,
}

impl<S: Send + Sync> FromRequestParts<S> for Ctx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let principal = parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "unauthenticated", "log in"))?;
        let secret = parts
            .extensions
            .get::<Credential>()
            .and_then(|c| c.secret.clone());
        let query = parts.uri.query().unwrap_or("").to_string();
        let scope: ScopeFields = serde_urlencoded::from_str(&query)
            .map_err(|e| ApiError::bad_request("invalid_query", e.to_string()))?;
        #[derive(Deserialize, Default)]
        struct Frag {
            #[serde(default)]
            fragment: Option<String>,
        }
        let frag: Frag = serde_urlencoded::from_str(&query).unwrap_or_default();
        Ok(Ctx {
            principal,
            scope,
            csrf: csrf_token(secret.as_deref()),
            fragment: frag.fragment.is_some_and(|f| f == "1"),
            query,
        })
    }
}

impl Ctx {
    /// The page's own query parameters (unknown ones, like the scope fields, ignored).
    pub fn params<T: DeserializeOwned>(&self) -> ApiResult<T> {
        serde_urlencoded::from_str(&self.query)
            .map_err(|e| ApiError::bad_request("invalid_query", e.to_string()))
    }

    pub fn client(&self) -> Option<&str> {
        self.scope.client_id.as_deref()
    }

    /// What the page may show: the scope of its query (inside the grant: the guard checked).
    pub fn vis(&self) -> ApiResult<Visibility> {
        Ok(evident_kb::visibility(
            self.scope.client_id.as_deref(),
            self.scope.project_id.as_deref(),
            self.scope.group_id.as_deref(),
        )?)
    }

    /// The scope as query parameters (`clientId=…&projectId=…`), for links that keep it.
    pub fn scope_qs(&self) -> String {
        let mut out = Vec::new();
        for (k, v) in [
            ("clientId", &self.scope.client_id),
            ("projectId", &self.scope.project_id),
            ("groupId", &self.scope.group_id),
        ] {
            if let Some(v) = v {
                out.push(format!("{k}={}", layout::url_enc(v)));
            }
        }
        out.join("&")
    }

    /// `path` with the scope kept, and `extra` parameters (already encoded) after it.
    pub fn link(&self, path: &str, extra: &str) -> String {
        let qs = [self.scope_qs(), extra.to_string()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("&");
        if qs.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{qs}")
        }
    }

    /// A POST form to `action` (scope kept) with its CSRF field, `inner` inside.
    pub fn form(&self, action: &str, inner: &str) -> String {
        format!(
            "<form method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">{inner}</form>",
            esc(&self.link(action, "")),
            esc(&self.csrf)
        )
    }
}

/// A form body whose CSRF token was checked (see the module documentation).
pub struct CsrfForm<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for CsrfForm<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let cred = req.extensions().get::<Credential>().cloned();
        let bytes = axum::body::to_bytes(req.into_body(), state.config.max_body_bytes)
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    "form too large",
                )
            })?;
        let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes)
            .map_err(|e| ApiError::bad_request("invalid_form", e.to_string()))?;
        let bearer = cred.as_ref().is_some_and(|c| c.bearer);
        if !bearer {
            let secret = cred.and_then(|c| c.secret);
            let presented = fields.iter().find(|(k, _)| k == "csrf").map(|(_, v)| v);
            if !presented.is_some_and(|p| csrf_ok(secret.as_deref(), p)) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "csrf_refused",
                    "the form's CSRF token is missing or wrong; reload the page and try again",
                ));
            }
        }
        let value = serde_urlencoded::from_bytes(&bytes)
            .map_err(|e| ApiError::bad_request("invalid_form", e.to_string()))?;
        Ok(CsrfForm(value))
    }
}

#[derive(Deserialize, Default)]
pub struct LoginQuery {
    #[serde(default)]
    next: Option<String>,
}

/// Only a path of the console itself is a place to return to after login.
/// Where a login returns to: a console path, written in visible ASCII only (a CR/LF or any
/// other byte a `Location` header cannot carry sends the browser to `/ui`).
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if (n == "/ui" || n.starts_with("/ui/") || n.starts_with("/ui?"))
                && n.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            n.to_string()
        }
        _ => "/ui".to_string(),
    }
}

fn login_html(next: &str, error: Option<&str>) -> String {
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", esc(e)))
        .unwrap_or_default();
    let body = format!(
        "<section class=\"login\"><h1>Evident console</h1>{error}\
         <form method=\"post\" action=\"/ui/login\">\
         <label>Token <input type=\"password\" name=\"token\" id=\"token\" autocomplete=\"off\" required autofocus></label>\
         <input type=\"hidden\" name=\"next\" value=\"{}\">\
         <button type=\"submit\" id=\"login\">Log in</button></form>\
         <p class=\"hint\">An API key (<code>evident token create</code>) or an identity-provider token. \
         It is kept in an HttpOnly session cookie for this console only.</p></section>",
        esc(next)
    );
    layout::bare_page("Log in", &body)
}

pub async fn login_page(axum::extract::Query(q): axum::extract::Query<LoginQuery>) -> Response {
    let next = safe_next(q.next.as_deref());
    (
        [(header::CONTENT_TYPE, layout::HTML)],
        login_html(&next, None),
    )
        .into_response()
}

#[derive(Deserialize)]
pub struct LoginForm {
    token: String,
    #[serde(default)]
    next: Option<String>,
}

/// A login posted from another site is refused: the browser says where the form was
/// (`Origin`, or `Sec-Fetch-Site`), and it must be this host.
fn same_origin(headers: &HeaderMap) -> bool {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        let bare = origin
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        return host.is_some_and(|h| h == bare);
    }
    match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        Some(site) => site == "same-origin" || site == "none",
        None => true,
    }
}

fn secure(state: &AppState, headers: &HeaderMap) -> bool {
    state.config.ui_secure_cookie
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// The `Set-Cookie` value of a session (`value` empty: the cookie removed).
pub fn session_cookie(value: &str, secure: bool) -> String {
    let age = if value.is_empty() { 0 } else { SESSION_SECS };
    format!(
        "{COOKIE}={value}; Path=/ui; Max-Age={age}; HttpOnly; SameSite=Strict{}",
        if secure { "; Secure" } else { "" }
    )
}

fn redirect_with_cookie(to: &str, cookie: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    for (name, value) in [(header::LOCATION, to), (header::SET_COOKIE, cookie)] {
        if let Ok(v) = HeaderValue::from_str(value) {
            r.headers_mut().insert(name, v);
        }
    }
    r
}

pub async fn login(
    axum::extract::State(state): axum::extract::State<AppState>,
    headers: HeaderMap,
    extensions: axum::http::Extensions,
    body: axum::body::Bytes,
) -> Response {
    let html = |status: StatusCode, next: &str, e: &str| {
        (
            status,
            [(header::CONTENT_TYPE, layout::HTML)],
            login_html(next, Some(e)),
        )
            .into_response()
    };
    let Ok(form) = serde_urlencoded::from_bytes::<LoginForm>(&body) else {
        return html(
            StatusCode::BAD_REQUEST,
            "/ui",
            "send the form's token field",
        );
    };
    let next = safe_next(form.next.as_deref());
    if !same_origin(&headers) {
        return html(
            StatusCode::FORBIDDEN,
            &next,
            "a login from another site is refused",
        );
    }
    let token = form.token.trim();
    // A cookie value cannot hold every byte; Evident's keys and JWTs never need to.
    if token.is_empty()
        || !token
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b';' && b != b',')
    {
        return html(StatusCode::UNAUTHORIZED, &next, "that is not a token");
    }
    let from = extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    match state
        .auth
        .authenticate(token, state.clock.now_ms(), from)
        .await
    {
        Ok(p) => {
            tracing::info!(token_id = %p.id, "console login");
            redirect_with_cookie(&next, &session_cookie(token, secure(&state, &headers)))
        }
        Err(e) => html(e.status, &next, &e.message),
    }
}

pub async fn logout(
    axum::extract::State(state): axum::extract::State<AppState>,
    headers: HeaderMap,
    CsrfForm(_): CsrfForm<std::collections::HashMap<String, String>>,
) -> Response {
    redirect_with_cookie("/ui/login", &session_cookie("", secure(&state, &headers)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csrf_tokens_belong_to_their_session() {
        let a = csrf_token(Some("evd_a"));
        assert!(csrf_ok(Some("evd_a"), &a));
        assert!(!csrf_ok(Some("evd_b"), &a));
        assert!(!csrf_ok(None, &a));
        assert!(csrf_ok(None, &csrf_token(None)));
        for bad in ["", "x", "!!!", &a[..a.len() - 1]] {
            assert!(!csrf_ok(Some("evd_a"), bad), "{bad}");
        }
    }

    #[test]
    fn only_console_paths_are_returned_to() {
        for (next, to) in [
            (Some("/ui/queue?state=error"), "/ui/queue?state=error"),
            (Some("/ui"), "/ui"),
            (Some("//evil.example/ui"), "/ui"),
            (Some("https://evil.example/ui"), "/ui"),
            (Some("/uix"), "/ui"),
            (Some("/ui/\r\nSet-Cookie: x=1"), "/ui"),
            (Some("/ui/queue\n"), "/ui"),
            (Some("/ui/é"), "/ui"),
            (None, "/ui"),
        ] {
            assert_eq!(safe_next(next), to, "{next:?}");
        }
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_scoped_to_the_console() {
        let c = session_cookie("evd_x", false);
        assert_eq!(
            c,
            "evident_session=evd_x; Path=/ui; Max-Age=43200; HttpOnly; SameSite=Strict"
        );
        assert!(session_cookie("evd_x", true).ends_with("; Secure"));
        assert!(session_cookie("", false).contains("Max-Age=0"));
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; evident_session=evd_x; b=2"),
        );
        assert_eq!(cookie_token(&h).as_deref(), Some("evd_x"));
    }
}
