//! The router. [`ROUTES`] lists every (method, path) the router serves with its
//! authorisation policy; tests check the OpenAPI document and the policies cover exactly these.

mod access;
mod claims;
mod code;
mod context;
pub(crate) mod gaps;
mod git;
mod knowledge;
mod memory;
mod ops;
pub(crate) mod outcomes;
mod procedures;
mod queue;
mod read;
mod session_log;
mod sources;
mod write;

use axum::Router;
use axum::routing::{get, post};

use crate::AppState;

pub use crate::auth::policy::ROUTES;

/// Every route of the REST API and its handler. Long because it is the route table: one
/// line a route, read as a whole beside `ROUTES` (the policy of each) and the OpenAPI
/// document; split up, a route would be harder to find and easier to leave out.
pub fn all() -> Router<AppState> {
    Router::new()
        .route("/api/v1/ingest", post(write::ingest))
        .route("/api/v1/ingest-queue", post(queue::enqueue_ingest))
        .route("/api/v1/queue", get(queue::list))
        .route("/api/v1/queue/{task_id}", get(queue::get_task))
        .route("/api/v1/queue/{task_id}/reorder", post(queue::reorder))
        .route(
            "/api/v1/queue/{task_id}/prioritize",
            post(queue::prioritize),
        )
        .route("/api/v1/queue/{task_id}/retry", post(queue::retry))
        .route("/api/v1/purge", post(write::purge))
        .route("/api/v1/move", post(write::move_source))
        .route("/api/v1/sources/git", post(git::register).get(git::list))
        .route(
            "/api/v1/sources/git/{id}",
            get(git::get).delete(git::unregister),
        )
        .route(
            "/api/v1/sources/{kind}",
            post(sources::register).get(sources::list),
        )
        .route(
            "/api/v1/sources/{kind}/{id}",
            get(sources::get).delete(sources::unregister),
        )
        .route("/api/v1/indexers", get(sources::list_all))
        .route(
            "/api/v1/memory/{session_id}/{key}",
            axum::routing::put(memory::put)
                .get(memory::get)
                .delete(memory::delete),
        )
        .route(
            "/api/v1/memory/{session_id}",
            get(memory::list).delete(memory::clear),
        )
        .route("/api/v1/knowledge", post(knowledge::store))
        .route("/api/v1/user-context", get(knowledge::user_context))
        .route("/api/v1/outcomes", post(outcomes::record))
        .route(
            "/api/v1/session-memory",
            post(session_log::append).get(session_log::recent),
        )
        .route("/api/v1/ingest/git-structure", post(git::push_structure))
        .route("/api/v1/ingest/git-commits", post(git::push_commits))
        .route("/api/v1/ingest/cpg", post(git::push_cpg))
        .route("/api/v1/alias/register", post(write::alias_register))
        .route("/api/v1/alias/merge", post(write::alias_merge))
        .route("/api/v1/retrieve", post(read::retrieve))
        .route("/api/v1/traverse", post(read::traverse))
        .route("/api/v1/graph/node/{key}", get(read::node))
        .route(
            "/api/v1/graph/node/{key}/evidence",
            get(read::node_evidence),
        )
        .route("/api/v1/graph/search", get(read::search_nodes))
        .route("/api/v1/graph/nodes", get(read::list_nodes))
        .route("/api/v1/graph/code/{relation}", get(code::query))
        .route("/api/v1/chunks/by-kind", post(read::by_kind))
        .route("/api/v1/alias/resolve", get(read::alias_resolve))
        .route("/api/v1/alias/list/{canonical}", get(read::alias_list))
        .route("/api/v1/alias/stats", get(read::alias_stats))
        .route("/api/v1/sources", get(read::sources))
        .route("/api/v1/tokens", post(access::create).get(access::list))
        .route("/api/v1/tokens/{id}", axum::routing::delete(access::revoke))
        .route("/api/v1/audit", get(access::audit))
        .route("/api/v1/whoami", get(access::whoami))
        .route("/api/v1/claims", post(claims::learn))
        .route("/api/v1/claims/recall", post(claims::recall))
        .route("/api/v1/claims/attention", get(claims::attention))
        .route("/api/v1/claims/{id}", get(claims::show))
        .route("/api/v1/claims/{id}/history", get(claims::history))
        .route("/api/v1/claims/{id}/transition", post(claims::transition))
        .route("/api/v1/claims/{id}/verify", post(claims::verify))
        .route("/api/v1/claims/{id}/dispute", post(claims::dispute))
        .route("/api/v1/claims/{id}/supersede", post(claims::supersede))
        .route("/api/v1/openapi.json", get(ops::openapi))
        .route("/api/v1/graph/nodes", post(gaps::add_node))
        .route(
            "/api/v1/graph/edges",
            post(gaps::add_edge).delete(gaps::delete_edge),
        )
        .route("/api/v1/graph/batch", post(gaps::add_batch))
        .route("/api/v1/gaps", post(gaps::report).get(gaps::list))
        .route("/api/v1/gaps/claim", post(gaps::claim))
        .route("/api/v1/gaps/{gapId}", get(gaps::get))
        .route("/api/v1/gaps/{gapId}/findings", post(gaps::findings))
        .route("/api/v1/gaps/{gapId}/fail", post(gaps::fail))
        .route("/api/v1/gaps/{gapId}/reorder", post(gaps::reorder))
        .route("/api/v1/context", post(context::context))
        .route(
            "/api/v1/graph/node/{key}/profile",
            axum::routing::put(context::put_profile),
        )
        .route(
            "/api/v1/ingest/structured",
            post(context::ingest_structured),
        )
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route(
            "/api/v1/procedures",
            post(procedures::create).get(procedures::list),
        )
        .route("/api/v1/procedures/match", post(procedures::match_task))
        .route(
            "/api/v1/procedures/{id}",
            get(procedures::get)
                .put(procedures::update)
                .delete(procedures::delete),
        )
        .route("/api/v1/procedures/{id}/outcome", post(procedures::outcome))
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
}
