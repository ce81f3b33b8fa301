//! What authentication and authorisation add to a request: the same retrieve requests
//! through the router with auth off and with a client token (API key looked up by hash,
//! grant checked, body scope parsed), interleaved so both see the same machine state.

use std::time::Instant;

use axum::body::Body;
use axum::http::Request;
use evident_core::access::{Grant, Role, token_hash};
use evident_kb::Kb;
use evident_store::access::TokenRecord;
use tower::ServiceExt;

use crate::percentile;

/// Prints and returns (p50 off, p50 on, p50 of the per-request difference) in ms.
pub async fn overhead(kb: &Kb, queries: &[String]) -> (f64, f64, f64) {
    let secret = "evd_bench_token_0123456789abcdef0123456789abcdef";
    kb.stores()
        .access
        .create_token(TokenRecord {
            id: "tok_bench".into(),
            name: "bench".into(),
            secret_hash: token_hash(secret),
            grant: Grant {
                role: Role::Read,
                client_id: Some("bench".into()),
                projects: vec!["p0".into()],
                groups: Vec::new(),
            },
            created_at: 0,
            expires_at: None,
            revoked_at: None,
            created_by: None,
        })
        .await
        .expect("bench token");
    let router = |auth| {
        evident_api::router(
            evident_api::App::new(kb.clone()),
            None,
            evident_api::ApiConfig {
                auth,
                ..Default::default()
            },
        )
    };
    let off = router(evident_api::auth::AuthConfig::off());
    let on = router(evident_api::auth::AuthConfig::default());
    let send = |router: axum::Router, q: &str, token: Option<&str>| {
        let body =
            serde_json::json!({"clientId": "bench", "projectId": "p0", "query": q}).to_string();
        let mut req = Request::builder()
            .method("POST")
            .uri("/api/v1/retrieve")
            .header("content-type", "application/json");
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req.body(Body::from(body)).expect("request");
        async move {
            let t = Instant::now();
            let resp = router.oneshot(req).await.expect("answer");
            assert!(resp.status().is_success(), "{}", resp.status());
            let _ = axum::body::to_bytes(resp.into_body(), usize::MAX).await;
            t.elapsed()
        }
    };
    let (mut t_off, mut t_on) = (Vec::new(), Vec::new());
    for q in queries {
        let a = send(off.clone(), q, None).await;
        let b = send(on.clone(), q, Some(secret)).await;
        t_off.push(a);
        t_on.push(b);
    }
    let signed: Vec<f64> = t_on
        .iter()
        .zip(&t_off)
        .map(|(b, a)| b.as_secs_f64() * 1e3 - a.as_secs_f64() * 1e3)
        .collect();
    t_off.sort();
    t_on.sort();
    let mut signed_sorted = signed;
    signed_sorted.sort_by(f64::total_cmp);
    let (p_off, p_on) = (percentile(&t_off, 0.5), percentile(&t_on, 0.5));
    let d50 = signed_sorted[signed_sorted.len() / 2];
    println!(
        "retrieve over HTTP router: auth off p50 {p_off:.3} ms, auth on p50 {p_on:.3} ms; \
         overhead p50 {:.3} ms (difference of p50s), {d50:.3} ms (median per-request difference)",
        p_on - p_off
    );
    (p_off, p_on, d50)
}
