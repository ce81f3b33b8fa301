//! Claims (seed 002): `POST /api/v1/claims` learns, `GET /api/v1/claims/{id}` reads,
//! `…/transition|verify|dispute|supersede` change, `…/history` lists events,
//! `POST /api/v1/claims/recall` searches, `GET /api/v1/claims/attention` lists what needs a
//! person. Logic in `evident_kb::claims`.

use axum::extract::State;
use axum::{Extension, Json};
use evident_core::access::Role;
use evident_core::claims::{Claim, ClaimStatus};
use evident_kb::claims::{Caller, ClaimView};
use serde_json::{Value, json};

use crate::AppState;
use crate::auth::Principal;
use crate::claim_bodies::{
    AttentionRequest, ClaimScopeQuery, LearnRequest, RecallRequest, TransitionRequest, actor_or,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery, RequestPriority};
use crate::scoped::ScopedRequest;

pub async fn learn(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    RequestPriority(p): RequestPriority,
    ApiJson(req): ApiJson<LearnRequest>,
) -> ApiResult<Json<Claim>> {
    let scope = req.write_scope()?;
    let claim = req.into_new_claim(&by.id);
    Ok(Json(
        s.kb.learn(scope, claim, Some(by.id.clone()), s.clock.now_ms(), p)
            .await?,
    ))
}

pub async fn show(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ClaimScopeQuery>,
) -> ApiResult<Json<ClaimView>> {
    let vis = q.visibility()?;
    let claim = s.kb.claim(&vis, &id).await?;
    let mut views = s.kb.claim_views(&vis, vec![claim]).await?;
    views.pop().map(Json).ok_or_else(|| {
        ApiError::from(evident_kb::KbError::NotFound {
            what: format!("claim `{id}`"),
        })
    })
}

pub async fn history(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ClaimScopeQuery>,
) -> ApiResult<Json<Value>> {
    let vis = q.visibility()?;
    let events = s.kb.claim_history(&vis, &id).await?;
    Ok(Json(json!({ "claimId": id, "events": events })))
}

async fn change(
    s: &AppState,
    by: &Principal,
    id: &str,
    req: TransitionRequest,
    to: ClaimStatus,
) -> ApiResult<Json<Claim>> {
    let scope = req.write_scope()?;
    let caller = Caller {
        actor: actor_or(req.actor.clone(), &by.id),
        credential: Some(by.id.clone()),
        admin: by.grant.role >= Role::Admin,
    };
    Ok(Json(
        s.kb.transition(&scope, id, req.change(to), &caller, s.clock.now_ms())
            .await?,
    ))
}

pub async fn transition(
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<TransitionRequest>,
) -> ApiResult<Json<Claim>> {
    let to = req.to.ok_or_else(|| {
        ApiError::from(evident_kb::KbError::Field(
            evident_core::validate::FieldError::Missing { field: "to" },
        ))
    })?;
    change(&s, &by, &id, req, to).await
}

pub async fn verify(
    s: State<AppState>,
    by: Extension<Principal>,
    id: ApiPath<String>,
    req: ApiJson<TransitionRequest>,
) -> ApiResult<Json<Claim>> {
    change_to(ClaimStatus::Verified, s, by, id, req).await
}

pub async fn dispute(
    s: State<AppState>,
    by: Extension<Principal>,
    id: ApiPath<String>,
    req: ApiJson<TransitionRequest>,
) -> ApiResult<Json<Claim>> {
    change_to(ClaimStatus::Disputed, s, by, id, req).await
}

pub async fn supersede(
    s: State<AppState>,
    by: Extension<Principal>,
    id: ApiPath<String>,
    req: ApiJson<TransitionRequest>,
) -> ApiResult<Json<Claim>> {
    change_to(ClaimStatus::Superseded, s, by, id, req).await
}

/// A convenience route: the move to `to` its path names.
async fn change_to(
    to: ClaimStatus,
    State(s): State<AppState>,
    Extension(by): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<TransitionRequest>,
) -> ApiResult<Json<Claim>> {
    fixed(&req, to)?;
    change(&s, &by, &id, req, to).await
}

/// The convenience routes fix `to`; a body naming another status is a mistake.
fn fixed(req: &TransitionRequest, to: ClaimStatus) -> ApiResult<()> {
    match req.to {
        Some(t) if t != to => Err(ApiError::bad_request(
            "invalid_field",
            format!(
                "this route moves a claim to `{}`; use /transition for `{}`",
                to.as_str(),
                t.as_str()
            ),
        )),
        _ => Ok(()),
    }
}

pub async fn recall(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<RecallRequest>,
) -> ApiResult<Json<Value>> {
    let vis = req.visibility()?;
    let hits = s.kb.recall(&vis, req.into()).await?;
    Ok(Json(json!({ "claims": hits })))
}

pub async fn attention(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<AttentionRequest>,
) -> ApiResult<Json<Value>> {
    let vis = q.visibility()?;
    let items =
        s.kb.claim_attention(&vis, q.into(), s.clock.now_ms())
            .await?;
    Ok(Json(json!({ "items": items })))
}
