//! Who calls a tool and what it may touch: the [`Principal`] the `guard` middleware put into
//! the HTTP request (rmcp hands the request's `Parts` to every handler), the scope of the
//! call with the client of a single-client token filled in, and the one rule
//! (`Grant::authorize`). Errors become MCP errors carrying the API's code.

use axum::http::StatusCode;
use axum::http::request::Parts;
use evident_core::Scope;
use evident_core::access::{Intent, Role};
use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::ErrorCode;
use rmcp::service::RequestContext;
use serde_json::json;

use super::params::ScopeArgs;
use crate::auth::Principal;
use crate::auth::scope::ScopeFields;
use crate::error::ApiError;

/// The caller of one MCP request.
pub struct Caller {
    pub principal: Principal,
}

impl Caller {
    /// The principal of the HTTP request this MCP message came in; refused when there is
    /// none (the `guard` middleware always puts one, so this is a wiring error).
    pub fn of(ctx: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
        ctx.extensions
            .get::<Parts>()
            .and_then(|p| p.extensions.get::<Principal>())
            .cloned()
            .map(|principal| Caller { principal })
            .ok_or_else(|| {
                mcp_error(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthenticated",
                    "send `Authorization: Bearer <token>` (see `evident token create`)",
                ))
            })
    }

    /// The call's scope (client filled in from a single-client token), checked as REST
    /// checks a request's scope: well formed, then inside the grant for `role` and `intent`.
    pub fn scope(&self, args: &ScopeArgs, role: Role, intent: Intent) -> Result<Scope, ApiError> {
        let scope = self.resolve(args)?;
        self.authorize(role, &scope, intent)?;
        Ok(scope)
    }

    /// The scope of a read call, as an MCP error when refused.
    pub fn read_scope(&self, args: &ScopeArgs) -> Result<Scope, ErrorData> {
        self.scope(args, Role::Read, Intent::Read)
            .map_err(mcp_error)
    }

    /// What a read call may see: the reader's visibility of its checked scope.
    pub fn visibility(&self, args: &ScopeArgs) -> Result<evident_core::Visibility, ErrorData> {
        self.read_scope(args).map(evident_core::Visibility::of)
    }

    /// The call's scope, well formed, before authorisation (writes audit refusals with it).
    pub fn resolve(&self, args: &ScopeArgs) -> Result<Scope, ApiError> {
        let mut fields = ScopeFields {
            client_id: args.client_id.clone(),
            project_id: args.project_id.clone(),
            group_id: args.group_id.clone(),
            global: None,
        };
        if fields.client_id.is_none() {
            fields.client_id = self.principal.grant.default_client().map(str::to_string);
        }
        fields.validate()?;
        Ok(fields.scope().unwrap_or_default())
    }

    /// The client of a per-client call (session memory): the one named, or the token's
    /// single client, checked for `role` and `intent`, and required.
    pub fn client_for(
        &self,
        client_id: &Option<String>,
        role: Role,
        intent: Intent,
    ) -> Result<String, ApiError> {
        let scope = self.scope(&ScopeArgs::client(client_id), role, intent)?;
        required_client(&scope).map(str::to_string)
    }

    pub fn authorize(&self, role: Role, scope: &Scope, intent: Intent) -> Result<(), ApiError> {
        self.principal
            .grant
            .authorize(role, scope, intent)
            .map_err(|d| {
                let status = match d {
                    evident_core::access::Denied::ClientRequired => StatusCode::BAD_REQUEST,
                    _ => StatusCode::FORBIDDEN,
                };
                ApiError::new(status, d.code(), d.to_string())
            })
    }
}

/// The client of a resolved scope, which a per-client call needs (a token over several
/// clients must name one).
pub fn required_client(scope: &Scope) -> Result<&str, ApiError> {
    scope.client_id.as_deref().ok_or_else(|| {
        ApiError::bad_request(
            "missing_field",
            "field `clientId` is required (the token covers several clients)",
        )
    })
}

/// An API error as an MCP error: the JSON-RPC code says whose fault it was (invalid params
/// for the caller's, internal error for ours), `data` carries the API's `code` and status.
pub fn mcp_error(e: ApiError) -> ErrorData {
    if e.status.is_server_error() {
        tracing::error!(code = e.code, message = %e.message, "MCP tool call failed");
    }
    let code = if e.status.is_server_error() {
        ErrorCode::INTERNAL_ERROR
    } else if e.status == StatusCode::NOT_FOUND {
        ErrorCode::RESOURCE_NOT_FOUND
    } else {
        ErrorCode::INVALID_PARAMS
    };
    let mut data = json!({ "code": e.code, "status": e.status.as_u16() });
    if let Some(secs) = e.retry_after {
        data["retryAfterSecs"] = json!(secs);
    }
    ErrorData::new(code, format!("{}: {}", e.code, e.message), Some(data))
}

/// `evident-kb` errors through the API's mapping (same codes and statuses as REST).
pub fn kb_error(e: evident_kb::KbError) -> ErrorData {
    mcp_error(ApiError::from(e))
}
