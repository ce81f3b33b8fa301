//! Authentication and authorisation of every request, in one middleware ([`guard`]):
//!
//! 1. the route's policy ([`policy::ROUTES`]); public routes pass;
//! 2. the bearer token → a [`Principal`] (API key by the hash of its secret, or a JWT), 401
//!    without a valid one;
//! 3. the caller's rate limit (429 with `Retry-After`);
//! 4. the request's scope (body, query or the task it names) inside the grant, 403
//!    otherwise; a single-client token that names no client gets its client filled in;
//! 5. writes and admin actions are recorded in the audit log with their outcome.
//!
//! Between 3 and 4, a request the audit log records is scanned for credentials (its path
//! parameters, query and body, [`secrets`]); after 4, every request's scope ids are. A
//! credential is refused with `422 credential_detected`, and the audit record is redacted.
//!
//! Handlers see only requests that passed, with the [`Principal`] in the request extensions.

mod authenticator;
pub mod jwt;
pub mod policy;
pub mod rate;
pub mod scope;
pub mod secrets;

pub use authenticator::{Authenticator, MAX_TOKEN_CHAIN};

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use evident_core::Scope;
use evident_core::access::{Denied, Grant, Role};
use evident_store::access::AuditEvent;

use crate::AppState;
use crate::error::{ApiError, ErrorCode};
use policy::{Access, ScopeFrom};

/// Prefix of Evident's API keys (tells them from JWTs at a glance, and to secret scanners).
pub const TOKEN_PREFIX: &str = "evd_";

/// Who is calling, with what grant.
#[derive(Debug, Clone)]
pub struct Principal {
    /// The token id (`anonymous` when auth is off, `jwt:{sub}` for JWTs).
    pub id: String,
    pub name: String,
    pub grant: Grant,
    /// When the credential stops authenticating (ms): the earliest expiry of the token and
    /// of every token up its chain of creators (a JWT's `exp`). `None`: never.
    pub expires_at: Option<i64>,
    /// How many tokens created it, up to one that nobody did (0 for such a token, a JWT or
    /// anonymous): a token it mints is one deeper.
    pub depth: usize,
}

impl Principal {
    fn anonymous() -> Principal {
        Principal {
            id: "anonymous".into(),
            name: "anonymous (auth off)".into(),
            grant: Grant::operator(),
            expires_at: None,
            depth: 0,
        }
    }
}

/// How requests are authenticated.
#[derive(Clone)]
pub struct AuthConfig {
    /// `false` only for local development on loopback: every caller is an operator.
    pub required: bool,
    /// Identity-provider tokens, when configured.
    pub jwt: Option<Arc<jwt::JwtVerifier>>,
    pub rate_limit: Option<rate::RateLimit>,
    /// How long a looked-up API key is trusted before it is read again (revocations on
    /// other replicas take effect within it; on this one, at once).
    pub cache_ttl: Duration,
    /// Failed authentications (unknown, revoked or expired tokens, bad JWTs) allowed per
    /// client address, refilled continuously; once spent, a credential that is not in the
    /// cache is refused (429 `auth_rate_limited`) before any lookup. Ten times this bounds
    /// the failures of every address together. `None`: no limit.
    pub failed_auth: Option<rate::RateLimit>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            required: true,
            jwt: None,
            rate_limit: None,
            cache_ttl: Duration::from_secs(5),
            failed_auth: Some(rate::RateLimit::FAILED_AUTH),
        }
    }
}

impl AuthConfig {
    /// Every caller is an operator: for tests and local development only.
    pub fn off() -> AuthConfig {
        AuthConfig {
            required: false,
            ..Default::default()
        }
    }
}

fn unauthorized(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, code, message)
}

fn denied(d: Denied) -> ApiError {
    let status = match d {
        Denied::ClientRequired => StatusCode::BAD_REQUEST,
        _ => StatusCode::FORBIDDEN,
    };
    ApiError::new(status, d.code(), d.to_string())
}

/// A new API key: `evd_` + 256 random bits (base64url), and its public id.
pub fn new_token_secret() -> Result<(String, String), ApiError> {
    use base64::Engine;
    use ring::rand::SecureRandom;
    let rng = ring::rand::SystemRandom::new();
    let mut secret = [0u8; 32];
    let mut id = [0u8; 8];
    rng.fill(&mut secret)
        .and_then(|()| rng.fill(&mut id))
        .map_err(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "no_randomness",
                "the system random generator failed",
            )
        })?;
    let secret = format!(
        "{TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret)
    );
    let id = format!(
        "tok_{}",
        id.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    Ok((id, secret))
}

/// The token a request presents: its bearer header, or on console pages (`/ui`) the
/// session cookie the login form set.
fn credential(req: &Request) -> Option<crate::ui::session::Credential> {
    if let Some(t) = bearer(req) {
        return Some(crate::ui::session::Credential {
            secret: Some(t.to_string()),
            bearer: true,
        });
    }
    let path = req.uri().path();
    (path == "/ui" || path.starts_with("/ui/"))
        .then(|| crate::ui::session::cookie_token(req.headers()))
        .flatten()
        .map(|t| crate::ui::session::Credential {
            secret: Some(t),
            bearer: false,
        })
}

/// The caller's address, when the server records it (`serve` does; in-process tests don't).
pub fn peer(req: &Request) -> Option<std::net::IpAddr> {
    req.extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip())
}

fn bearer(req: &Request) -> Option<&str> {
    let v = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// JSON bodies only: `application/json` or a `+json` type (415 otherwise). Refusing other
/// types keeps browsers' form posts (CSRF) away from every JSON endpoint.
pub fn require_json(req: &Request) -> Result<(), ApiError> {
    let ok = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            let essence = v
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            essence == "application/json"
                || (essence.starts_with("application/") && essence.ends_with("+json"))
        })
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as `content-type: application/json`",
        ))
    }
}

/// What the audit log records of a request, gathered while checking it.
struct Audit {
    principal: Principal,
    method: String,
    route: String,
    target: String,
    scope: Scope,
}

/// The middleware: see the module documentation.
pub async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(matched) = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
    else {
        return next.run(req).await; // unrouted: the fallback answers 404 / 405
    };
    let method = req.method().as_str().to_string();
    // A method without a policy is refused before any handler: the path's other methods
    // are served, and a handler added without a policy fails closed.
    let Some(access) = policy::policy(&method, &matched) else {
        return ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{method} is not served at {matched}; see /api/v1/openapi.json"),
        )
        .into_response();
    };
    let audited = access.audited();
    match check(&state, access, &matched, req).await {
        Ok((req, audit)) => {
            let response = next.run(req).await;
            if audited {
                record(&state, audit, outcome(&response)).await;
            }
            response
        }
        Err((e, audit)) => {
            let response = e.into_response();
            if audited && let Some(audit) = audit {
                record(&state, audit, outcome(&response)).await;
            }
            response
        }
    }
}

type Checked = Result<(Request, Audit), (ApiError, Option<Audit>)>;

async fn check(state: &AppState, access: Access, matched: &str, req: Request) -> Checked {
    let now = state.clock.now_ms();
    let mut presented = None;
    let principal = if !state.auth.config.required || access == Access::Public {
        Principal::anonymous()
    } else {
        // Owned: the request (its body is not `Sync`) must not be borrowed across an await.
        presented = credential(&req);
        match presented.as_ref().and_then(|c| c.secret.clone()) {
            None => {
                return Err((
                    unauthorized(
                        "unauthenticated",
                        "send `Authorization: Bearer <token>` (see `evident token create`)",
                    ),
                    None,
                ));
            }
            Some(t) => match state.auth.authenticate(&t, now, peer(&req)).await {
                Ok(p) => p,
                Err(e) => return Err((e, None)),
            },
        }
    };
    let mut audit = Audit {
        principal: principal.clone(),
        method: req.method().as_str().to_string(),
        route: policy::documented_path(matched),
        target: req.uri().path().to_string(),
        scope: Scope::global(),
    };
    // Limits are per token; with authentication off every caller is the same `anonymous`,
    // so one client's burst would throttle everyone: no limit then.
    if let Some(limiter) = &state.auth.limiter
        && state.auth.config.required
        && access != Access::Public
        && let Err(wait) = limiter.take(&principal.id, Instant::now())
    {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!(
                "too many requests for token `{}`; retry in {} s",
                principal.id,
                wait.as_secs().max(1)
            ),
        );
        e.retry_after = Some(wait.as_secs().max(1));
        return Err((e, Some(audit)));
    }
    let mut req = if access.audited() {
        match secrets::screen(req, matched, state.config.max_body_bytes).await {
            Ok(req) => req,
            Err(e) => return Err((e, Some(audit))),
        }
    } else {
        req
    };
    if let Some(c) = presented {
        req.extensions_mut().insert(c);
    }
    let Access::Scoped { role, from, intent } = access else {
        req.extensions_mut().insert(principal);
        return Ok((req, audit));
    };
    let (req, scope) = match scoped(state, &principal, from, req).await {
        Ok(v) => v,
        Err(e) => return Err((e, Some(audit))),
    };
    audit.scope = scope.clone().unwrap_or_default();
    if let Some(scope) = &scope
        && let Err(e) = secrets::scan_scope(scope)
    {
        return Err((e, Some(audit)));
    }
    if principal.grant.role < role {
        let d = Denied::Role {
            needed: role,
            held: principal.grant.role,
        };
        return Err((denied(d), Some(audit)));
    }
    if let Some(scope) = scope
        && let Err(d) = principal.grant.authorize(role, &scope, intent)
    {
        return Err((denied(d), Some(audit)));
    }
    let mut req = req;
    req.extensions_mut().insert(principal);
    Ok((req, audit))
}

/// The request's scope per `from` (with the client filled in when the token means one), or
/// `None` when the handler checks the grant itself.
async fn scoped(
    state: &AppState,
    principal: &Principal,
    from: ScopeFrom,
    req: Request,
) -> Result<(Request, Option<Scope>), ApiError> {
    let default_client = principal.grant.default_client().map(str::to_string);
    match from {
        ScopeFrom::Handler => Ok((req, None)),
        ScopeFrom::Query => {
            let fields = scope::from_query(req.uri())?;
            let (mut parts, body) = req.into_parts();
            let mut fields = fields;
            if fields.client_id.is_none()
                && let Some(c) = &default_client
            {
                parts.uri = scope::uri_with_client(&parts.uri, c)?;
                fields.client_id = Some(c.clone());
            }
            fields.validate()?;
            let scope = fields.scope().unwrap_or_default();
            Ok((Request::from_parts(parts, body), Some(scope)))
        }
        ScopeFrom::Body => {
            require_json(&req)?;
            let (parts, body) = req.into_parts();
            let bytes = axum::body::to_bytes(body, state.config.max_body_bytes)
                .await
                .map_err(|_| {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "payload_too_large",
                        "request body is larger than server.max_body_bytes",
                    )
                })?;
            let mut fields = scope::from_body(&bytes)?;
            let mut bytes = bytes;
            if fields.client_id.is_none()
                && fields.global != Some(true)
                && let Some(c) = &default_client
            {
                bytes = scope::body_with_client(&bytes, c)?;
                fields.client_id = Some(c.clone());
            }
            fields.validate()?;
            let scope = fields.scope().unwrap_or_default();
            Ok((Request::from_parts(parts, Body::from(bytes)), Some(scope)))
        }
        ScopeFrom::Task => {
            let path = req.uri().path();
            let id = path
                .strip_prefix("/api/v1/queue/")
                .or_else(|| path.strip_prefix("/ui/queue/"))
                .unwrap_or("")
                .split('/')
                .next()
                .unwrap_or("")
                .to_string();
            let task = state
                .tasks
                .queue()
                .get(&id)
                .await
                .map_err(evident_kb::KbError::from)?;
            // A task outside the grant does not exist for this caller.
            match task {
                Some(t) if principal.grant.covers_data(&t.scope) => Ok((req, Some(t.scope))),
                _ => Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    format!("task `{id}` not found"),
                )),
            }
        }
    }
}

/// The status and outcome the audit log records of a response.
fn outcome(response: &Response) -> (StatusCode, String) {
    let status = response.status();
    let outcome = if status.is_success() {
        "ok".to_string()
    } else {
        response
            .extensions()
            .get::<ErrorCode>()
            .map(|c| c.0.to_string())
            .unwrap_or_else(|| status.as_str().to_string())
    };
    (status, outcome)
}

async fn record(state: &AppState, audit: Audit, (status, outcome): (StatusCode, String)) {
    let at = state.clock.now_ms();
    let n = state.auth.audit_seq.fetch_add(1, Ordering::Relaxed);
    let mut event = AuditEvent {
        id: format!("{at:013}-{}-{n}", std::process::id()),
        at,
        token_id: audit.principal.id,
        token_name: audit.principal.name,
        method: audit.method,
        route: audit.route,
        target: audit.target,
        client_id: audit.scope.client_id,
        project_id: audit.scope.project_id,
        group_id: audit.scope.group_id,
        status: status.as_u16(),
        outcome,
    };
    secrets::redact_audit(&mut event);
    if let Err(e) = state.auth.store.append_audit(event).await {
        metrics::counter!("evident_audit_failures_total").increment(1);
        tracing::error!(error = %e, "audit log write failed");
    }
}

/// Records a write made by an MCP tool call like a REST write: the caller, `POST /mcp`
/// with the tool's name as the route (`mcp:store_knowledge`), the scope, and the outcome.
pub(crate) async fn record_tool_call(
    state: &AppState,
    principal: &Principal,
    tool: &str,
    scope: Scope,
    status: StatusCode,
    outcome: String,
) {
    let audit = Audit {
        principal: principal.clone(),
        method: "POST".into(),
        route: format!("mcp:{tool}"),
        target: "/mcp".into(),
        scope,
    };
    record(state, audit, (status, outcome)).await;
}

/// `Retry-After` on a 429.
pub fn retry_after(response: &mut Response, secs: u64) {
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
}

/// Whether a role may be granted by an admin of a client (operators grant anything).
pub fn grantable(by: &Grant, wanted: &Grant) -> Result<(), ApiError> {
    if !wanted.is_well_formed() {
        return Err(ApiError::bad_request(
            "invalid_grant",
            "a token covers one client (`clientId`), except operator tokens, which name none",
        ));
    }
    if by.contains(wanted) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_scope",
            format!(
                "a token cannot grant more than it holds ({} `{}` cannot mint {} `{}`)",
                by.describe(),
                by.role.as_str(),
                wanted.describe(),
                wanted.role.as_str()
            ),
        ))
    }
}

/// The role names, for messages.
pub fn role_names() -> String {
    Role::ALL.map(Role::as_str).join(", ")
}
