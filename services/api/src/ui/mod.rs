//! The web console at `/ui`: server-rendered HTML over the same knowledge base, tokens and
//! grants as the API (README *Web console*).
//!
//! Every `/ui` route has its policy in [`crate::auth::policy::ROUTES`], so the one `guard`
//! authenticates (a bearer token, or the session cookie the login form sets, which holds
//! the same token) and checks the page's scope (`clientId` / `projectId` in the query, the
//! task in the path) inside the grant before a handler runs. Handlers are thin: they call
//! the same `evident-kb` / `evident-sources` functions as the REST handlers and render.
//!
//! Forms: every POST carries a CSRF token derived from the session (see [`session`]);
//! a cookie-authenticated POST without it is refused 403. The console writes only through
//! capabilities the API already has (retry, prioritise, reorder, register, unregister).
//!
//! Must not: hold product logic (it lives in `evident-kb`), or render any stored text
//! unescaped ([`layout::esc`]).

mod chunk;
mod graph_svg;
pub mod layout;
mod node;
mod overview;
mod queue;
mod search;
pub mod session;
mod sources;

use axum::Router;
use axum::extract::{Path, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::AppState;

const CSS: &str = include_str!("assets/ui.css");
const JS: &str = include_str!("assets/ui.js");

/// The console's routes (their policies are in `ROUTES`, under `/ui`).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ui", get(overview::page))
        .route("/ui/login", get(session::login_page).post(session::login))
        .route("/ui/logout", post(session::logout))
        .route("/ui/assets/{file}", get(asset))
        .route("/ui/sources", get(sources::list).post(sources::add))
        .route("/ui/sources/{id}", get(sources::show))
        .route("/ui/sources/{id}/enable", post(sources::enable))
        .route("/ui/sources/{id}/disable", post(sources::disable))
        .route("/ui/sources/{id}/remove", post(sources::remove))
        .route("/ui/queue", get(queue::list))
        .route("/ui/queue/{task_id}", get(queue::show))
        .route("/ui/queue/{task_id}/retry", post(queue::retry))
        .route("/ui/queue/{task_id}/prioritize", post(queue::prioritize))
        .route("/ui/queue/{task_id}/reorder", post(queue::reorder))
        .route("/ui/search", get(search::page))
        .route("/ui/chunk/{id}", get(chunk::page))
        .route("/ui/node/{key}", get(node::page))
}

/// The embedded stylesheet and script (cached for an hour; the names carry no version, so
/// not longer).
async fn asset(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "ui.css" => (CSS, "text/css; charset=utf-8"),
        "ui.js" => (JS, "text/javascript; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, "no such asset").into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "private, max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// Whether the request comes from a browser page (it asks for HTML).
fn wants_html(req: &Request) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"))
}

/// Outside the guard: a browser asking for a console page without a valid session is sent
/// to the login form, and the guard's JSON refusals become HTML pages. Scripts (no
/// `Accept: text/html`) keep the JSON answers the API gives.
pub async fn html_errors(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    if !(path == "/ui" || path.starts_with("/ui/")) || !wants_html(&req) {
        return next.run(req).await;
    }
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/ui".into());
    let response = next.run(req).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if status == StatusCode::UNAUTHORIZED && is_json {
        let to = format!("/ui/login?next={}", layout::url_enc(&target));
        let mut r = StatusCode::SEE_OTHER.into_response();
        if let Ok(v) = HeaderValue::from_str(&to) {
            r.headers_mut().insert(header::LOCATION, v);
        }
        return r;
    }
    if (status.is_client_error() || status.is_server_error()) && is_json {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap_or_default();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let code = v["code"].as_str().unwrap_or("error");
        let message = v["message"].as_str().unwrap_or("");
        return (status, layout::error_page(status, code, message)).into_response();
    }
    response
}
