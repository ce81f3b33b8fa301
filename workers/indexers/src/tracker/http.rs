//! The REST client the tracker and wiki pollers share: authentication from the environment,
//! `Link` pagination, and the sources' ways of saying "not now" turned into
//! [`PollError::RateLimited`] (429 with `Retry-After`; an exhausted `X-RateLimit-Remaining`
//! with its reset time) or retryable errors (5xx, timeouts).

use std::time::Duration;

use evident_egress::EgressPolicy;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::poll::PollError;

/// A rate-limit wait longer than this is capped (the next poll asks again).
const MAX_WAIT_MS: i64 = 3_600_000;
/// When a 429 names no wait.
const DEFAULT_WAIT_MS: i64 = 60_000;

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

/// A REST API at a base URL, reached under the egress policy.
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    egress: EgressPolicy,
    base: String,
    what: &'static str,
}

fn header_err(e: impl std::fmt::Display) -> PollError {
    PollError::Config(format!("credentials: {e}"))
}

impl Api {
    /// `base` without a trailing slash (`https://api.github.com`, `https://x.atlassian.net/wiki`).
    pub fn new(
        what: &'static str,
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
        })
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
        let resp = self
            .http
            .get(parsed)
            .query(query)
            .send()
            .await
            .map_err(|e| self.request_error(&e))?;
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

    /// Turns failures into poll errors that say what happened (and when to come back).
    fn check(&self, reply: Reply) -> Result<Reply, PollError> {
        let remaining = reply
            .header("x-ratelimit-remaining")
            .and_then(|v| v.trim().parse::<u64>().ok());
        let limited = reply.status == 429 || (reply.status == 403 && remaining == Some(0));
        if limited {
            let wait = retry_after_ms(&reply.headers).unwrap_or(DEFAULT_WAIT_MS);
            return Err(PollError::RateLimited {
                retry_after_ms: wait.clamp(1000, MAX_WAIT_MS),
                message: format!("{} answered HTTP {}", self.what, reply.status),
            });
        }
        match reply.status {
            200..=299 => Ok(reply),
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

/// The wait a response asks for: `Retry-After` (seconds or an HTTP date), else the reset
/// time of an exhausted `X-RateLimit-*` budget.
pub fn retry_after_ms(headers: &HeaderMap) -> Option<i64> {
    let text = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(v) = text("retry-after") {
        if let Ok(secs) = v.parse::<i64>() {
            return Some(secs * 1000);
        }
        if let Some(at) = httpdate_to_system_time(v) {
            let now = std::time::SystemTime::now();
            return Some(at.duration_since(now).map_or(0, |d| d.as_millis() as i64));
        }
    }
    let reset = text("x-ratelimit-reset").and_then(|v| v.parse::<i64>().ok())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    // GitHub sends epoch seconds; others a number of seconds to wait.
    Some(if reset > 1_000_000_000 {
        (reset - now).max(0) * 1000
    } else {
        reset * 1000
    })
}

/// `Wed, 21 Oct 2015 07:28:00 GMT`.
fn httpdate_to_system_time(v: &str) -> Option<std::time::SystemTime> {
    let parts: Vec<&str> = v.split_whitespace().collect();
    if parts.len() != 6 || parts[5] != "GMT" {
        return None;
    }
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == parts[2])?
        + 1;
    let iso = format!("{}-{month:02}-{:0>2}T{}Z", parts[3], parts[1], parts[4]);
    humantime::parse_rfc3339(&iso).ok()
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
    fn waits_from_headers() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after_ms(&h), Some(7000));
        let mut h = HeaderMap::new();
        h.insert("x-ratelimit-reset", HeaderValue::from_static("30"));
        assert_eq!(retry_after_ms(&h), Some(30_000));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after_ms(&h), Some(0), "a date in the past: no wait");
        assert_eq!(retry_after_ms(&HeaderMap::new()), None);
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
