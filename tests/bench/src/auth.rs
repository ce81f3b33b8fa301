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

/// Stores a token `id` with `secret` and `grant`, never expiring: the benchmarks' callers.
pub async fn mint(kb: &Kb, id: &str, secret: &str, grant: Grant) {
    kb.stores()
        .access
        .create_token(TokenRecord {
            id: id.into(),
            name: id.into(),
            secret_hash: token_hash(secret),
            grant,
            created_at: 0,
            expires_at: None,
            revoked_at: None,
            created_by: None,
        })
        .await
        .expect("bench token");
}

/// Prints and returns (retrieve p50 off, retrieve p50 on, the guard's own p50 overhead) in ms.
pub async fn overhead(kb: &Kb, queries: &[String]) -> (f64, f64, f64) {
    let secret = "evd_bench_token_0123456789abcdef0123456789abcdef";
    mint(
        kb,
        "tok_bench",
        secret,
        Grant {
            role: Role::Read,
            client_id: Some("bench".into()),
            projects: vec!["p0".into()],
            groups: Vec::new(),
        },
    )
    .await;
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
    // Alternate which goes first, so the second request's warmer caches favour neither.
    let (mut t_off, mut t_on) = (Vec::new(), Vec::new());
    let mut signed = Vec::new();
    for (i, q) in queries.iter().enumerate() {
        let (a, b) = if i % 2 == 0 {
            let a = send(off.clone(), q, None).await;
            (a, send(on.clone(), q, Some(secret)).await)
        } else {
            let b = send(on.clone(), q, Some(secret)).await;
            (send(off.clone(), q, None).await, b)
        };
        t_off.push(a);
        t_on.push(b);
        signed.push(b.as_secs_f64() * 1e3 - a.as_secs_f64() * 1e3);
    }
    t_off.sort();
    t_on.sort();
    signed.sort_by(f64::total_cmp);
    let (p_off, p_on) = (percentile(&t_off, 0.5), percentile(&t_on, 0.5));
    let d50 = signed[signed.len() / 2];
    // The guard alone: a handler that does nothing (`whoami`), with and without a token.
    let whoami = |router: axum::Router, token: Option<&str>| {
        let mut req = Request::builder().uri("/api/v1/whoami");
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req.body(Body::empty()).expect("request");
        async move {
            let t = Instant::now();
            let resp = router.oneshot(req).await.expect("answer");
            assert!(resp.status().is_success());
            t.elapsed()
        }
    };
    let (mut w_off, mut w_on) = (Vec::new(), Vec::new());
    for _ in 0..2_000 {
        w_off.push(whoami(off.clone(), None).await);
        w_on.push(whoami(on.clone(), Some(secret)).await);
    }
    w_off.sort();
    w_on.sort();
    let (g_off, g_on) = (percentile(&w_off, 0.5), percentile(&w_on, 0.5));
    println!(
        "retrieve over HTTP router: auth off p50 {p_off:.3} ms, auth on p50 {p_on:.3} ms; \
         median per-request difference {d50:.3} ms"
    );
    println!(
        "guard alone (whoami, token looked up and checked): p50 {g_on:.4} ms with auth, \
         {g_off:.4} ms without: overhead p50 {:.4} ms",
        g_on - g_off
    );
    (p_off, p_on, g_on - g_off)
}
