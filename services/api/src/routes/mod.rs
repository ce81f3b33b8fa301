//! Route table. [`ROUTES`] lists every (method, path) the router serves; a test checks the
//! OpenAPI document covers exactly these.

mod git;
mod memory;
mod ops;
mod queue;
mod read;
mod sources;
mod write;

use axum::Router;
use axum::routing::{get, post};

use crate::AppState;

pub const ROUTES: &[(&str, &str)] = &[
    ("post", "/api/v1/ingest"),
    ("post", "/api/v1/ingest-queue"),
    ("get", "/api/v1/queue"),
    ("get", "/api/v1/queue/{taskId}"),
    ("post", "/api/v1/queue/{taskId}/reorder"),
    ("post", "/api/v1/queue/{taskId}/prioritize"),
    ("post", "/api/v1/queue/{taskId}/retry"),
    ("post", "/api/v1/purge"),
    ("post", "/api/v1/sources/git"),
    ("get", "/api/v1/sources/git"),
    ("get", "/api/v1/sources/git/{id}"),
    ("delete", "/api/v1/sources/git/{id}"),
    ("post", "/api/v1/sources/{kind}"),
    ("get", "/api/v1/sources/{kind}"),
    ("get", "/api/v1/sources/{kind}/{id}"),
    ("delete", "/api/v1/sources/{kind}/{id}"),
    ("get", "/api/v1/indexers"),
    ("put", "/api/v1/memory/{sessionId}/{key}"),
    ("get", "/api/v1/memory/{sessionId}/{key}"),
    ("delete", "/api/v1/memory/{sessionId}/{key}"),
    ("get", "/api/v1/memory/{sessionId}"),
    ("delete", "/api/v1/memory/{sessionId}"),
    ("post", "/api/v1/ingest/git-structure"),
    ("post", "/api/v1/ingest/git-commits"),
    ("post", "/api/v1/ingest/cpg"),
    ("post", "/api/v1/alias/register"),
    ("post", "/api/v1/alias/merge"),
    ("post", "/api/v1/retrieve"),
    ("post", "/api/v1/traverse"),
    ("get", "/api/v1/graph/node/{key}"),
    ("get", "/api/v1/graph/node/{key}/evidence"),
    ("get", "/api/v1/graph/search"),
    ("post", "/api/v1/chunks/by-kind"),
    ("get", "/api/v1/alias/resolve"),
    ("get", "/api/v1/alias/list/{canonical}"),
    ("get", "/api/v1/alias/stats"),
    ("get", "/api/v1/sources"),
    ("get", "/api/v1/openapi.json"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
];

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
        .route("/api/v1/chunks/by-kind", post(read::by_kind))
        .route("/api/v1/alias/resolve", get(read::alias_resolve))
        .route("/api/v1/alias/list/{canonical}", get(read::alias_list))
        .route("/api/v1/alias/stats", get(read::alias_stats))
        .route("/api/v1/sources", get(read::sources))
        .route("/api/v1/openapi.json", get(ops::openapi))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .fallback(ops::not_found)
}
