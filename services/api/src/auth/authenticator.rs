//! Bearer credentials → principals: API keys by the hash of their secret (kept briefly in a
//! cache), JWTs by signature.
//!
//! Rules beyond "the token exists and is live":
//! - A token authenticates only while every token up its chain of creators (`createdBy`)
//!   does: one whose creator was revoked or has expired is refused (`token_revoked`,
//!   `token_expired`), so revoking a token revokes everything minted from it, on every
//!   replica within the cache's lifetime, including tokens minted on a replica that had not
//!   yet seen the revocation. The principal's expiry is the earliest of the chain's.
//! - Failed authentications are rate limited per client address and overall
//!   ([`AuthConfig::failed_auth`]): once an address has spent its budget, a credential not
//!   in the cache is refused before it costs a lookup.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use axum::http::StatusCode;
use evident_core::access::token_hash;
use evident_store::access::{AccessStore, TokenRecord};
use parking_lot::Mutex;

use super::rate::{RateLimit, RateLimiter};
use super::{AuthConfig, Principal, TOKEN_PREFIX, unauthorized};
use crate::error::ApiError;

/// Most tokens in a chain of creators (a token minted by a token minted by …): a longer
/// chain does not authenticate, and a token at the end of one cannot mint.
pub const MAX_TOKEN_CHAIN: usize = 16;

/// The key of every failure together (addresses are `ip:…`).
const ALL: &str = "*";

type Cache = Mutex<HashMap<String, (Option<TokenRecord>, Instant)>>;

/// Resolves bearer tokens to principals; keeps looked-up API keys briefly.
pub struct Authenticator {
    pub(super) config: AuthConfig,
    pub(super) store: Arc<dyn AccessStore>,
    /// Tokens by secret hash.
    by_hash: Cache,
    /// Creators by token id (`None`: no such token, the chain ends there).
    by_id: Cache,
    pub(super) limiter: Option<RateLimiter>,
    /// Failed authentications per address (`ip:…`) and overall ([`ALL`]).
    failures: Option<(RateLimiter, RateLimiter)>,
    pub(super) audit_seq: AtomicU64,
}

fn cached(cache: &Cache, key: &str, ttl: std::time::Duration) -> Option<Option<TokenRecord>> {
    cache
        .lock()
        .get(key)
        .filter(|(_, at)| at.elapsed() < ttl)
        .map(|(t, _)| t.clone())
}

fn remember(cache: &Cache, key: String, value: Option<TokenRecord>) {
    let mut cache = cache.lock();
    if cache.len() > 10_000 {
        cache.clear();
    }
    cache.insert(key, (value, Instant::now()));
}

impl Authenticator {
    pub fn new(config: AuthConfig, store: Arc<dyn AccessStore>) -> Authenticator {
        let failures = config.failed_auth.map(|l| {
            let all = RateLimit {
                per_sec: l.per_sec * 10.0,
                burst: l.burst * 10.0,
            };
            (RateLimiter::new(l), RateLimiter::new(all))
        });
        Authenticator {
            limiter: config.rate_limit.map(RateLimiter::new),
            failures,
            config,
            store,
            by_hash: Mutex::new(HashMap::new()),
            by_id: Mutex::new(HashMap::new()),
            audit_seq: AtomicU64::new(0),
        }
    }

    pub fn store(&self) -> &Arc<dyn AccessStore> {
        &self.store
    }

    /// Drops a token from the caches (after a revocation on this replica).
    pub fn forget(&self, token: &TokenRecord) {
        self.by_hash.lock().remove(&token.secret_hash);
        self.by_id.lock().remove(&token.id);
    }

    /// The principal of a bearer token, or why it is refused. `from`: the caller's address,
    /// when known (failed attempts are counted per address).
    pub async fn authenticate(
        &self,
        bearer: &str,
        now_ms: i64,
        from: Option<IpAddr>,
    ) -> Result<Principal, ApiError> {
        let address = from.map_or_else(|| "ip:unknown".to_string(), |ip| format!("ip:{ip}"));
        let outcome = self.resolve(bearer, now_ms, &address).await;
        if let Err(e) = &outcome
            && e.status == StatusCode::UNAUTHORIZED
            && let Some((per_address, all)) = &self.failures
        {
            let now = Instant::now();
            let _ = per_address.take(&address, now);
            let _ = all.take(ALL, now);
        }
        outcome
    }

    /// 429 when `address` (or everyone together) has spent its failed attempts.
    fn refuse_when_spent(&self, address: &str) -> Result<(), ApiError> {
        let Some((per_address, all)) = &self.failures else {
            return Ok(());
        };
        let now = Instant::now();
        let wait = per_address
            .peek(address, now)
            .err()
            .or_else(|| all.peek(ALL, now).err());
        match wait {
            None => Ok(()),
            Some(wait) => {
                let secs = wait.as_secs().max(1);
                let mut e = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "auth_rate_limited",
                    format!("too many failed authentications; retry in {secs} s"),
                );
                e.retry_after = Some(secs);
                Err(e)
            }
        }
    }

    async fn resolve(
        &self,
        bearer: &str,
        now_ms: i64,
        address: &str,
    ) -> Result<Principal, ApiError> {
        if !bearer.starts_with(TOKEN_PREFIX)
            && let Some(verifier) = &self.config.jwt
            && bearer.matches('.').count() == 2
        {
            self.refuse_when_spent(address)?;
            return verifier.verify(bearer, now_ms).map_err(|e| {
                ApiError::new(StatusCode::UNAUTHORIZED, "invalid_token", e.to_string())
            });
        }
        let hash = token_hash(bearer);
        let record = match cached(&self.by_hash, &hash, self.config.cache_ttl) {
            Some(t) => t,
            None => {
                self.refuse_when_spent(address)?;
                let found = self
                    .store
                    .token_by_hash(&hash)
                    .await
                    .map_err(evident_kb::KbError::from)?;
                // Unknown secrets are not cached: the cache would fill with an attacker's.
                if let Some(t) = &found {
                    remember(&self.by_hash, hash, Some(t.clone()));
                }
                found
            }
        };
        let Some(t) = record else {
            return Err(unauthorized(
                "invalid_token",
                "the bearer token is not known",
            ));
        };
        live(&t, now_ms, None)?;
        let (expires_at, depth) = self.chain(&t, now_ms, address).await?;
        Ok(Principal {
            id: t.id,
            name: t.name,
            grant: t.grant,
            expires_at,
            depth,
        })
    }

    /// Walks `t`'s creators: each must be live. The earliest expiry along the way, and how
    /// many creators there were.
    async fn chain(
        &self,
        t: &TokenRecord,
        now_ms: i64,
        address: &str,
    ) -> Result<(Option<i64>, usize), ApiError> {
        let mut expires_at = t.expires_at;
        let mut creator = t.created_by.clone();
        let mut depth = 0;
        while let Some(id) = creator {
            let parent = match cached(&self.by_id, &id, self.config.cache_ttl) {
                Some(p) => p,
                None => {
                    self.refuse_when_spent(address)?;
                    let p = self
                        .store
                        .token(&id)
                        .await
                        .map_err(evident_kb::KbError::from)?;
                    remember(&self.by_id, id.clone(), p.clone());
                    p
                }
            };
            // Not a token (`serve`, `local`, a JWT's `jwt:…`, a bootstrap): the chain's root.
            let Some(p) = parent else { break };
            depth += 1;
            if depth >= MAX_TOKEN_CHAIN {
                return Err(unauthorized(
                    "token_chain_too_long",
                    format!(
                        "token `{}` descends from more than {MAX_TOKEN_CHAIN} tokens",
                        t.id
                    ),
                ));
            }
            live(&p, now_ms, Some(&t.id))?;
            expires_at = match (expires_at, p.expires_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            creator = p.created_by;
        }
        Ok((expires_at, depth))
    }
}

/// Refuses a revoked or expired token; `of`: the token being authenticated, when `t` is one
/// of its creators.
fn live(t: &TokenRecord, now_ms: i64, of: Option<&str>) -> Result<(), ApiError> {
    let whose = |what: &str| match of {
        None => format!("token `{}` {what}", t.id),
        Some(child) => format!(
            "token `{child}` was created by token `{}`, which {what}",
            t.id
        ),
    };
    if t.revoked_at.is_some() {
        return Err(unauthorized("token_revoked", whose("was revoked")));
    }
    if t.expires_at.is_some_and(|e| now_ms >= e) {
        return Err(unauthorized("token_expired", whose("has expired")));
    }
    Ok(())
}
