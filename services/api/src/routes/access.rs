//! Tokens (create, list, revoke), the audit log, and `whoami`.

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use evident_core::access::{Grant, Role};
use evident_store::access::{AuditFilter, TokenRecord};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::auth::{self, Principal};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};

/// Longest token lifetime accepted (a year).
const MAX_TTL_SECS: u64 = 366 * 24 * 3600;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateToken {
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    projects: Vec<String>,
    #[serde(default)]
    groups: Vec<String>,
    role: String,
    #[serde(default)]
    name: Option<String>,
    /// Lifetime in seconds; none: the token lives until revoked.
    #[serde(default)]
    expires_in_secs: Option<u64>,
}

fn store_err(e: evident_store::StoreError) -> ApiError {
    evident_kb::KbError::from(e).into()
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid_field", message)
}

/// The expiry a new token gets: the one asked for (`expiresInSecs`), never past the minting
/// token's (a longer or unlimited lifetime is clamped to it). A token too deep in a chain of
/// minted tokens may not mint (its child would not authenticate).
fn granted_expiry(by: &Principal, asked_secs: Option<u64>, now: i64) -> ApiResult<Option<i64>> {
    let asked = match asked_secs {
        None => None,
        Some(0) => return Err(invalid("field `expiresInSecs` must be positive")),
        Some(secs) if secs > MAX_TTL_SECS => {
            return Err(invalid(format!(
                "field `expiresInSecs` is at most {MAX_TTL_SECS} (a year)"
            )));
        }
        Some(secs) => Some(now + secs as i64 * 1000),
    };
    // A token never outlives the one that mints it: a longer (or unlimited) lifetime is
    // clamped to the creator's expiry (the answer's `expiresAt` says what was granted).
    let expires_at = match (asked, by.expires_at) {
        (Some(a), Some(p)) => Some(a.min(p)),
        (a, p) => a.or(p),
    };
    if by.depth + 1 >= auth::MAX_TOKEN_CHAIN {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "token_chain_too_long",
            format!(
                "token `{}` descends from {} tokens: a token minted from it would not authenticate (at most {})",
                by.id,
                by.depth,
                auth::MAX_TOKEN_CHAIN
            ),
        ));
    }
    Ok(expires_at)
}

/// `POST /api/v1/tokens` → `201 {token, secret}`: the secret is shown once, never again.
pub async fn create(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiJson(req): ApiJson<CreateToken>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let role = Role::parse(&req.role).ok_or_else(|| {
        invalid(format!(
            "field `role` must be one of {}",
            auth::role_names()
        ))
    })?;
    for (field, v) in [("clientId", req.client_id.iter().collect::<Vec<_>>())]
        .into_iter()
        .chain([
            ("projects", req.projects.iter().collect()),
            ("groups", req.groups.iter().collect()),
        ])
    {
        for id in v {
            evident_core::validate::identifier(field, id).map_err(evident_kb::KbError::from)?;
        }
    }
    let client_id = req.client_id.or_else(|| {
        (role != Role::Operator)
            .then(|| by.grant.default_client().map(str::to_string))
            .flatten()
    });
    let grant = Grant {
        role,
        client_id,
        projects: req.projects,
        groups: req.groups,
    };
    auth::grantable(&by.grant, &grant)?;
    let name = req
        .name
        .unwrap_or_else(|| format!("{} token", role.as_str()));
    evident_core::validate::bounded_text("name", &name, 200).map_err(evident_kb::KbError::from)?;
    if let Some(f) = evident_core::secrets::find_secrets(&name).first() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "credential_detected",
            format!(
                "field `name` contains a credential ({}); name the token without it",
                f.class.description()
            ),
        ));
    }
    let now = s.clock.now_ms();
    let expires_at = granted_expiry(&by, req.expires_in_secs, now)?;
    let (id, secret) = auth::new_token_secret()?;
    let record = TokenRecord {
        id,
        name,
        secret_hash: evident_core::access::token_hash(&secret),
        grant,
        created_at: now,
        expires_at,
        revoked_at: None,
        created_by: Some(by.id.clone()),
    };
    s.auth
        .store()
        .create_token(record.clone())
        .await
        .map_err(store_err)?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "token": record, "secret": secret })),
    ))
}

/// Tokens are listed per client (the guard fills in the caller's; operators may omit it).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientFilter {
    #[serde(default)]
    client_id: Option<String>,
}

/// `GET /api/v1/tokens`: the tokens of the caller's client (operators: of `clientId`, or all).
pub async fn list(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiQuery(q): ApiQuery<ClientFilter>,
) -> ApiResult<Json<Value>> {
    let mut tokens = s
        .auth
        .store()
        .list_tokens(q.client_id.as_deref())
        .await
        .map_err(store_err)?;
    tokens.retain(|t| by.grant.contains(&t.grant));
    Ok(Json(json!({ "tokens": tokens })))
}

/// `DELETE /api/v1/tokens/{id}`: revokes a token the caller could have created.
pub async fn revoke(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TokenRecord>> {
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("token `{id}` not found"),
        )
    };
    let token = s
        .auth
        .store()
        .token(&id)
        .await
        .map_err(store_err)?
        .ok_or_else(not_found)?;
    if !by.grant.contains(&token.grant) {
        return Err(not_found());
    }
    let revoked = s
        .auth
        .store()
        .revoke_token(&id, s.clock.now_ms())
        .await
        .map_err(store_err)?
        .ok_or_else(not_found)?;
    s.auth.forget(&token);
    Ok(Json(revoked))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditQuery {
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    token_id: Option<String>,
    #[serde(default)]
    route: Option<String>,
    #[serde(default)]
    since: Option<i64>,
    #[serde(default)]
    before: Option<i64>,
    #[serde(default)]
    limit: Option<usize>,
}

/// `GET /api/v1/audit`: newest first; admins see their client's events, operators any.
pub async fn audit(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> ApiResult<Json<Value>> {
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > 1000 {
        return Err(ApiError::bad_request(
            "invalid_query",
            "limit must be 1..=1000",
        ));
    }
    let filter = AuditFilter {
        client_id: q.client_id,
        token_id: q.token_id,
        route: q.route,
        since: q.since,
        before: q.before,
        limit,
    };
    let mut events = s
        .auth
        .store()
        .list_audit(&filter)
        .await
        .map_err(store_err)?;
    // A narrowed admin reads the events of its projects and groups (and client-level ones).
    events.retain(|e| {
        by.grant.sees(&evident_core::Scope {
            client_id: e.client_id.clone(),
            project_id: e.project_id.clone(),
            group_id: e.group_id.clone(),
        })
    });
    let next = (events.len() == limit)
        .then(|| events.last().map(|e| e.at))
        .flatten();
    Ok(Json(json!({ "events": events, "nextBefore": next })))
}

/// `GET /api/v1/whoami`: the caller's token id, name and grant.
pub async fn whoami(Extension(by): Extension<Principal>) -> Json<Value> {
    Json(json!({ "tokenId": by.id, "name": by.name, "grant": by.grant }))
}
