//! The route table with each route's authorisation policy. The router is built from the same
//! paths; a test checks every served route has exactly one policy and that the OpenAPI
//! document covers them, so a route added without a policy fails the build's tests.

use evident_core::access::{Intent, Role};

/// Where a route finds the scope it reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeFrom {
    /// Top-level `clientId` / `projectId` / `groupId` / `global` of the JSON body.
    Body,
    /// The same fields in the query string.
    Query,
    /// The task named by the path's `{taskId}`: its scope must be inside the grant.
    Task,
    /// The route checks the grant itself (tokens, whose subject is a grant).
    Handler,
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token needed: liveness, readiness, metrics.
    Public,
    /// Any valid token (the OpenAPI document).
    Authenticated,
    /// Any valid token at the door; every MCP tool call then checks its own scope and role
    /// with the same rule (`Grant::authorize`), and writes are audited per call.
    PerCall,
    /// `role` at least, over the scope found `from` the request, read or written.
    Scoped {
        role: Role,
        from: ScopeFrom,
        intent: Intent,
    },
}

impl Access {
    /// The role the route needs (`None` for public routes).
    pub fn role(&self) -> Option<Role> {
        match self {
            Access::Public => None,
            Access::Authenticated | Access::PerCall => Some(Role::Read),
            Access::Scoped { role, .. } => Some(*role),
        }
    }

    /// Whether calls are recorded in the audit log: writes and admin actions.
    pub fn audited(&self) -> bool {
        match self {
            Access::Scoped { role, intent, .. } => *intent == Intent::Write || *role >= Role::Admin,
            _ => false,
        }
    }
}

const fn read(from: ScopeFrom) -> Access {
    Access::Scoped {
        role: Role::Read,
        from,
        intent: Intent::Read,
    }
}

const fn write(from: ScopeFrom) -> Access {
    Access::Scoped {
        role: Role::Write,
        from,
        intent: Intent::Write,
    }
}

const fn admin(from: ScopeFrom) -> Access {
    Access::Scoped {
        role: Role::Admin,
        from,
        intent: Intent::Write,
    }
}

/// Admin listings: an admin reads everything of its client, not only what one project sees.
const fn admin_read(from: ScopeFrom) -> Access {
    Access::Scoped {
        role: Role::Admin,
        from,
        intent: Intent::Read,
    }
}

use ScopeFrom::{Body, Handler, Query, Task};

/// Every (method, path) the router serves, with its policy.
pub const ROUTES: &[(&str, &str, Access)] = &[
    ("post", "/api/v1/ingest", write(Body)),
    ("post", "/api/v1/ingest-queue", write(Body)),
    ("get", "/api/v1/queue", read(Query)),
    ("get", "/api/v1/queue/{taskId}", read(Task)),
    ("post", "/api/v1/queue/{taskId}/reorder", admin(Task)),
    ("post", "/api/v1/queue/{taskId}/prioritize", admin(Task)),
    ("post", "/api/v1/queue/{taskId}/retry", admin(Task)),
    ("post", "/api/v1/purge", admin(Body)),
    ("post", "/api/v1/move", admin(Body)),
    ("post", "/api/v1/sources/git", admin(Body)),
    ("get", "/api/v1/sources/git", read(Query)),
    ("get", "/api/v1/sources/git/{id}", read(Query)),
    ("delete", "/api/v1/sources/git/{id}", admin(Query)),
    ("post", "/api/v1/sources/{kind}", admin(Body)),
    ("get", "/api/v1/sources/{kind}", read(Query)),
    ("get", "/api/v1/sources/{kind}/{id}", read(Query)),
    ("delete", "/api/v1/sources/{kind}/{id}", admin(Query)),
    ("get", "/api/v1/indexers", read(Query)),
    ("put", "/api/v1/memory/{sessionId}/{key}", write(Body)),
    ("get", "/api/v1/memory/{sessionId}/{key}", read(Query)),
    ("delete", "/api/v1/memory/{sessionId}/{key}", write(Query)),
    ("get", "/api/v1/memory/{sessionId}", read(Query)),
    ("delete", "/api/v1/memory/{sessionId}", write(Query)),
    ("post", "/api/v1/knowledge", write(Body)),
    ("get", "/api/v1/user-context", read(Query)),
    ("post", "/api/v1/outcomes", write(Body)),
    ("post", "/api/v1/session-memory", write(Body)),
    ("get", "/api/v1/session-memory", read(Query)),
    ("post", "/api/v1/ingest/git-structure", write(Body)),
    ("post", "/api/v1/ingest/git-commits", write(Body)),
    ("post", "/api/v1/ingest/cpg", write(Body)),
    ("post", "/api/v1/alias/register", write(Body)),
    ("post", "/api/v1/alias/merge", admin(Body)),
    ("post", "/api/v1/retrieve", read(Body)),
    ("post", "/api/v1/traverse", read(Body)),
    ("get", "/api/v1/graph/node/{key}", read(Query)),
    ("get", "/api/v1/graph/node/{key}/evidence", read(Query)),
    ("get", "/api/v1/graph/search", read(Query)),
    ("get", "/api/v1/graph/nodes", read(Query)),
    ("get", "/api/v1/graph/code/{relation}", read(Query)),
    ("post", "/api/v1/chunks/by-kind", read(Body)),
    ("get", "/api/v1/alias/resolve", read(Query)),
    ("get", "/api/v1/alias/list/{canonical}", read(Query)),
    ("get", "/api/v1/alias/stats", read(Query)),
    ("get", "/api/v1/sources", read(Query)),
    ("post", "/api/v1/tokens", admin(Handler)),
    ("get", "/api/v1/tokens", admin_read(Query)),
    ("delete", "/api/v1/tokens/{id}", admin(Handler)),
    ("get", "/api/v1/audit", admin_read(Query)),
    ("get", "/api/v1/whoami", Access::Authenticated),
    ("get", "/api/v1/openapi.json", Access::Authenticated),
    ("post", "/api/v1/claims", write(Body)),
    ("post", "/api/v1/claims/recall", read(Body)),
    ("get", "/api/v1/claims/attention", read(Query)),
    ("get", "/api/v1/claims/{id}", read(Query)),
    ("get", "/api/v1/claims/{id}/history", read(Query)),
    ("post", "/api/v1/claims/{id}/transition", write(Body)),
    ("post", "/api/v1/claims/{id}/verify", write(Body)),
    ("post", "/api/v1/claims/{id}/dispute", write(Body)),
    ("post", "/api/v1/claims/{id}/supersede", write(Body)),
    // Knowledge gaps and graph writes by agents (README *Knowledge gaps*).
    ("post", "/api/v1/graph/nodes", write(Body)),
    ("post", "/api/v1/graph/edges", write(Body)),
    ("delete", "/api/v1/graph/edges", write(Query)),
    ("post", "/api/v1/graph/batch", write(Body)),
    ("post", "/api/v1/gaps", write(Body)),
    ("get", "/api/v1/gaps", read(Query)),
    ("post", "/api/v1/gaps/claim", write(Body)),
    ("get", "/api/v1/gaps/{gapId}", read(Query)),
    ("post", "/api/v1/gaps/{gapId}/findings", write(Body)),
    ("post", "/api/v1/gaps/{gapId}/fail", write(Body)),
    ("post", "/api/v1/gaps/{gapId}/reorder", admin(Body)),
    // MCP (streamable HTTP, stateless, JSON-RPC in the body): one POST per message.
    ("post", "/mcp", Access::PerCall),
    ("post", "/api/v1/context", read(Body)),
    ("put", "/api/v1/graph/node/{key}/profile", write(Body)),
    ("post", "/api/v1/ingest/structured", write(Body)),
    ("get", "/healthz", Access::Public),
    ("get", "/readyz", Access::Public),
    ("get", "/metrics", Access::Public),
    ("post", "/api/v1/procedures", write(Body)),
    ("get", "/api/v1/procedures", read(Query)),
    ("post", "/api/v1/procedures/match", read(Body)),
    ("get", "/api/v1/procedures/{id}", read(Query)),
    ("put", "/api/v1/procedures/{id}", write(Body)),
    ("delete", "/api/v1/procedures/{id}", write(Query)),
    ("post", "/api/v1/procedures/{id}/outcome", write(Body)),
    // The web console (README *Web console*): HTML pages and forms over the same grants;
    // the session cookie counts as the bearer token there (`ui::session`).
    ("get", "/ui", read(Query)),
    ("get", "/ui/login", Access::Public),
    ("post", "/ui/login", Access::Public),
    ("post", "/ui/logout", Access::Authenticated),
    ("get", "/ui/assets/{file}", Access::Public),
    ("get", "/ui/sources", read(Query)),
    ("post", "/ui/sources", admin(Query)),
    ("get", "/ui/sources/{id}", read(Query)),
    ("post", "/ui/sources/{id}/enable", admin(Query)),
    ("post", "/ui/sources/{id}/disable", admin(Query)),
    ("post", "/ui/sources/{id}/remove", admin(Query)),
    ("get", "/ui/queue", read(Query)),
    ("get", "/ui/queue/{taskId}", read(Task)),
    ("post", "/ui/queue/{taskId}/retry", admin(Task)),
    ("post", "/ui/queue/{taskId}/prioritize", admin(Task)),
    ("post", "/ui/queue/{taskId}/reorder", admin(Task)),
    ("get", "/ui/search", read(Query)),
    ("get", "/ui/chunk/{id}", read(Query)),
    ("get", "/ui/node/{key}", read(Query)),
];

/// The policy of a served route: `method` lower-case, `path` as in [`ROUTES`] (axum's
/// matched path uses the router's parameter names, mapped here to the documented ones).
pub fn policy(method: &str, matched: &str) -> Option<Access> {
    let documented = documented_path(matched);
    ROUTES
        .iter()
        .find(|(m, p, _)| m.eq_ignore_ascii_case(method) && *p == documented)
        .map(|(_, _, a)| *a)
}

/// The router names path parameters in snake case; the documentation in camel case.
pub fn documented_path(matched: &str) -> String {
    matched
        .replace("{task_id}", "{taskId}")
        .replace("{session_id}", "{sessionId}")
}
