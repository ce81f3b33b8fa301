//! The published OpenAPI document covers exactly the routes the router serves.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use evident_ai::HashingEmbedder;
use evident_api::routes::ROUTES;
use evident_store::VectorSpace;
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};
use tower::ServiceExt;

#[test]
fn openapi_paths_match_the_route_table() {
    let spec: serde_json::Value =
        serde_json::from_str(evident_api::OPENAPI_JSON).expect("valid JSON");
    assert!(
        spec["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3."))
    );
    let mut documented = BTreeSet::new();
    for (path, ops) in spec["paths"].as_object().expect("paths") {
        for method in ops.as_object().expect("operations").keys() {
            if ["get", "post", "put", "delete", "patch"].contains(&method.as_str()) {
                documented.insert((method.clone(), path.clone()));
            }
        }
    }
    let served: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p, _)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(documented, served);
}

#[tokio::test]
async fn every_listed_route_is_served() {
    let dir = tempfile::tempdir().expect("tmp");
    let embedder = Arc::new(HashingEmbedder::new(32).expect("dim"));
    let store = EmbeddedStore::open(EmbeddedOptions {
        dir: dir.path().to_path_buf(),
        vector_space: VectorSpace {
            embedder: evident_ai::Embedder::identity(embedder.as_ref()).to_string(),
            dim: 32,
        },
        background_indexer: false,
    })
    .expect("store");
    let kb = evident_kb::Kb::new(store.stores(), embedder, Default::default())
        .await
        .expect("kb");
    let router = evident_api::router(evident_api::App::new(kb), None, Default::default());
    for (method, path, _) in ROUTES {
        let uri = path
            .replace("{key}", "jira:x-1")
            .replace("{canonical}", "user:x")
            .replace("{taskId}", "t000000000001")
            .replace("{id}", "acme.shop");
        let req = Request::builder()
            .method(method.to_uppercase().as_str())
            .uri(&uri)
            .body(Body::from("{}"))
            .expect("request");
        let resp = router.clone().oneshot(req).await.expect("answer");
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .expect("body");
        let code = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["code"].as_str().map(str::to_string));
        assert_ne!(
            code.as_deref(),
            Some("route_not_found"),
            "{method} {path} is not routed"
        );
    }
}
