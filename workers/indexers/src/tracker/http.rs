//! The REST client the tracker and wiki pollers share: authentication from the environment,
//! `Link` pagination, conditional requests, and the sources' ways of saying "not now"
//! ([`super::limits`]) turned into [`PollError::RateLimited`] or retryable errors (5xx,
//! timeouts).
//!
//! A rate limit holds for the whole client: after a refusal, or after a successful answer
//! that spent the budget (`remaining: 0`, Jira's near-limit), every later request of the
//! poll stops before it is sent with the wait still to run, so a poll never keeps asking a
//! source that said "not now" — the work done so far is kept (cursors move per item) and the
//! next poll comes when the wait is over.

use std::sync::Arc;
use std::time::Duration;

use evident_egress::EgressPolicy;
use evident_store::queue::Clock;
use parking_lot::Mutex;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::limits::{self, Wait};
use crate::poll::PollError;

pub use evident_sources::kinds::tracker::Credentials;

/// The value of an environment variable a source names.
fn read_env(name: &str) -> Result<String, PollError> {
    std::env::var(name)
        .map_err(|_| PollError::Config(format!("environment variable {name} is not set")))
}

/// How a token is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStyle {
    /// `Authorization: Bearer …` (GitHub, Atlassian PATs).
    Bearer,
    /// `PRIVATE-TOKEN: …` (GitLab).
    GitlabPrivateToken,
}

/// One response: status, headers, body, and the `Link: rel="next"` URL if any.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    pub next: Option<String>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// What a conditional request sends: the validators of the stored answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

impl Validators {
    /// The validators an answer carries (`ETag`, `Last-Modified`), if any.
    pub fn of(reply: &Reply) -> Option<Validators> {
        let v = Validators {
            etag: reply.header("etag").map(str::to_string),
            last_modified: reply.header("last-modified").map(str::to_string),
        };
        (v != Validators::default()).then_some(v)
    }
}

/// A REST API at a base URL, reached under the egress policy.
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    egress: EgressPolicy,
    base: String,
    what: &'static str,
    clock: Arc<dyn Clock>,
    /// Until when (epoch ms) the source asked not to be asked, and why.
    paused: Arc<Mutex<Option<(i64, String)>>>,
}

fn header_err(e: impl std::fmt::Display) -> PollError {
    PollError::Config(format!("credentials: {e}"))
}

impl Api {
    /// `base` without a trailing slash (`https://api.github.com`, `https://x.atlassian.net/wiki`).
    /// A client for a poller of `ctx`: its clock and egress policy.
    pub fn of(
        ctx: &crate::poll::PollContext,
        what: &'static str,
        base: &str,
        creds: &Credentials,
        style: TokenStyle,
        extra: &[(&'static str, &'static str)],
    ) -> Result<Api, PollError> {
        Api::new(
            what,
            ctx.clock.clone(),
            &ctx.access.egress,
            base,
            creds,
            style,
            extra,
        )
    }

    pub fn new(
        what: &'static str,
        clock: Arc<dyn Clock>,
        egress: &EgressPolicy,
        base: &str,
        creds: &Credentials,
        style: TokenStyle,
        extra: &[(&'static str, &'static str)],
    ) -> Result<Api, PollError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        for (k, v) in extra {
            headers.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        match (&creds.email_env, &creds.token_env) {
            (Some(email), Some(token)) => {
                use base64::Engine;
                let pair = format!("{}:{}", read_env(email)?, read_env(token)?);
                let mut v = HeaderValue::from_str(&format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                ))
                .map_err(header_err)?;
                v.set_sensitive(true);
                headers.insert(reqwest::header::AUTHORIZATION, v);
            }
            (None, Some(token)) => {
                let token = read_env(token)?;
                let (name, value) = match style {
                    TokenStyle::Bearer => {
                        (reqwest::header::AUTHORIZATION, format!("Bearer {token}"))
                    }
                    TokenStyle::GitlabPrivateToken => {
                        (HeaderName::from_static("private-token"), token)
                    }
                };
                let mut v = HeaderValue::from_str(&value).map_err(header_err)?;
                v.set_sensitive(true);
                headers.insert(name, v);
            }
            _ => {}
        }
        let http = egress
            .client_builder()
            .default_headers(headers)
            .user_agent(concat!("evident/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| PollError::Config(format!("http client: {e}")))?;
        Ok(Api {
            http,
            egress: egress.clone(),
            base: base.trim_end_matches('/').to_string(),
            what,
            clock,
            paused: Arc::default(),
        })
    }

    /// The wait still to run when the source asked for one (`None` once it has passed).
    pub fn pause(&self) -> Option<Wait> {
        let now = self.clock.now_ms();
        let guard = self.paused.lock();
        let (until, reason) = guard.as_ref()?;
        (*until > now).then(|| Wait {
            ms: until - now,
            reason: reason.clone(),
        })
    }

    fn hold(&self, wait: &Wait) {
        let until = self.clock.now_ms() + wait.ms;
        let mut guard = self.paused.lock();
        if guard.as_ref().is_none_or(|(u, _)| *u < until) {
            *guard = Some((until, wait.reason.clone()));
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// GETs `path` (relative to the base) or an absolute URL (a `next` link), with `query`.
    pub async fn get(
        &self,
        path_or_url: &str,
        query: &[(&str, String)],
    ) -> Result<Reply, PollError> {
        self.get_if(path_or_url, query, None).await
    }

    /// [`Api::get`], conditional on `validators` when given: an unchanged resource answers
    /// 304 (status 304, empty body), which GitHub does not count against the rate limit.
    pub async fn get_if(
        &self,
        path_or_url: &str,
        query: &[(&str, String)],
        validators: Option<&Validators>,
    ) -> Result<Reply, PollError> {
        if let Some(wait) = self.pause() {
            return Err(PollError::RateLimited {
                retry_after_ms: wait.ms.max(1000),
                message: wait.reason,
            });
        }
        let url = if path_or_url.starts_with("http://") || path_or_url.starts_with("https://") {
            path_or_url.to_string()
        } else {
            format!("{}{path_or_url}", self.base)
        };
        // An IP literal (reqwest resolves no name for it) is checked here; a host name by
        // the client's resolver; a redirect by its redirect policy.
        let parsed = url::Url::parse(&url)
            .map_err(|e| PollError::Config(format!("{}: `{url}`: {e}", self.what)))?;
        self.egress
            .check_literal(&parsed)
            .map_err(|e| PollError::Refused(format!("{}: {e}", self.what)))?;
        let mut req = self.http.get(parsed).query(query);
        if let Some(v) = validators {
            if let Some(etag) = &v.etag {
                req = req.header(reqwest::header::IF_NONE_MATCH, etag);
            }
            if let Some(lm) = &v.last_modified {
                req = req.header(reqwest::header::IF_MODIFIED_SINCE, lm);
            }
        }
        let resp = req.send().await.map_err(|e| self.request_error(&e))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp
            .bytes()
            .await
            .map_err(|e| {
                PollError::unreachable(self.what, format!("reading the answer: {}", describe(&e)))
            })?
            .to_vec();
        let reply = Reply {
            status,
            next: headers
                .get(reqwest::header::LINK)
                .and_then(|v| v.to_str().ok())
                .and_then(next_link),
            headers,
            body,
        };
        self.check(reply)
    }

    /// A failed request: the egress policy's refusal when that stopped it, else the failure.
    fn request_error(&self, e: &reqwest::Error) -> PollError {
        match evident_egress::refusal_in(e) {
            Some(r) if r.is_refusal() => PollError::Refused(format!("{}: {r}", self.what)),
            _ => PollError::unreachable(self.what, describe(e)),
        }
    }

    /// Turns failures into poll errors that say what happened (and when to come back); a
    /// successful answer that spent the budget holds the requests after it.
    fn check(&self, reply: Reply) -> Result<Reply, PollError> {
        let now = self.clock.now_ms();
        if !(200..300).contains(&reply.status) && reply.status != 304 {
            let message = snippet(&reply.body);
            if let Some(wait) =
                limits::refusal(self.what, reply.status, &reply.headers, &message, now)
            {
                self.hold(&wait);
                return Err(PollError::RateLimited {
                    retry_after_ms: wait.ms,
                    message: wait.reason,
                });
            }
        }
        match reply.status {
            200..=299 | 304 => {
                if let Some(wait) = limits::exhausted(self.what, &reply.headers, now) {
                    tracing::info!(source = self.what, wait_ms = wait.ms, reason = %wait.reason, "rate-limit budget spent: later requests wait");
                    self.hold(&wait);
                }
                Ok(reply)
            }
            401 | 403 => Err(PollError::AuthRefused {
                what: self.what.into(),
                reason: format!(
                    "HTTP {}: credentials refused or not allowed to read this ({})",
                    reply.status,
                    snippet(&reply.body)
                ),
            }),
            status => Err(PollError::Status {
                what: self.what.into(),
                status,
                detail: snippet(&reply.body),
            }),
        }
    }
}

/// A short, single-line excerpt of an error body (JSON `message` when there is one).
pub fn snippet(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        for key in ["message", "errorMessages", "error"] {
            if let Some(m) = v.get(key) {
                return m.to_string().chars().take(200).collect();
            }
        }
    }
    String::from_utf8_lossy(&body[..body.len().min(200)])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        format!("cannot connect ({e})")
    } else {
        e.to_string()
    }
}

/// The `rel="next"` target of a `Link` header.
pub fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let is_next = params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"" || p.trim() == "rel=next");
        is_next.then(|| {
            target
                .trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_links() {
        let link = r#"<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=5>; rel="last""#;
        assert_eq!(
            next_link(link).as_deref(),
            Some("https://api.github.com/x?page=2")
        );
        assert_eq!(next_link(r#"<https://a/x?page=1>; rel="prev""#), None);
    }

    #[test]
    fn credentials_name_variables() {
        let ok = Credentials {
            token_env: Some("GITHUB_TOKEN".into()),
            email_env: None,
        };
        assert!(ok.validate().is_ok());
        let value = Credentials {
            token_env: Some("ghp_abc123".into()),
            email_env: None,
        };
        assert!(value.validate().is_err());
    }

    #[test]
    fn snippets_prefer_the_message() {
        assert_eq!(
            snippet(br#"{"message":"Server Error"}"#),
            "\"Server Error\""
        );
        assert_eq!(
            snippet(b"<html>\n  <body>Sign in</body></html>"),
            "<html> <body>Sign in</body></html>"
        );
    }
}
