//! Ollama-compatible embedding client: `POST {base}/api/embed` with `{model, input: [..]}`,
//! answered by `{embeddings: [[..]]}`. Sends the request priority as `X-Ollama-Priority`
//! (understood by priority-aware Ollama routers; ignored by plain Ollama).
//!
//! Errors are classified by what happened, never by message text: connection failures,
//! timeouts, 408/429 and 5xx are retryable; other 4xx and malformed answers are permanent.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{EmbedError, Embedder, Priority};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OllamaConfig {
    /// Base URL, e.g. `http://127.0.0.1:11434`.
    pub url: String,
    /// Model name, e.g. `nomic-embed-text`.
    pub model: String,
    /// Expected vector dimension; answers of another size are rejected.
    pub dim: usize,
    /// Texts per request.
    #[serde(default = "default_batch")]
    pub batch_size: usize,
    /// Per-request timeout in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_batch() -> usize {
    32
}
fn default_timeout() -> u64 {
    60
}

pub struct OllamaEmbedder {
    cfg: OllamaConfig,
    endpoint: String,
    identity: String,
    http: reqwest::Client,
}

#[derive(Serialize)]
struct EmbedRequest<'a> {
    model: &'a str,
    input: &'a [String],
    truncate: bool,
}

#[derive(Deserialize)]
struct EmbedResponse {
    embeddings: Vec<Vec<f32>>,
}

impl OllamaEmbedder {
    pub fn new(cfg: OllamaConfig) -> Result<Self, EmbedError> {
        if cfg.dim == 0 || cfg.batch_size == 0 || cfg.model.trim().is_empty() {
            return Err(EmbedError::Rejected(
                "ollama embedder needs a model, dim > 0 and batch_size > 0".into(),
            ));
        }
        let base = cfg.url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(EmbedError::Rejected(format!(
                "ollama url must be http(s)://…, got `{}`",
                cfg.url
            )));
        }
        // The egress policy, with the configured server allowed (the operator chose it; it is
        // often on loopback or the local network). Its redirects elsewhere are checked.
        let policy = evident_egress::EgressPolicy::strict()
            .allowing_host_of(base)
            .map_err(|e| EmbedError::Rejected(format!("ollama url: {e}")))?;
        let http = policy
            .client_builder()
            .timeout(Duration::from_secs(cfg.timeout_secs.max(1)))
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| EmbedError::Rejected(format!("building HTTP client: {e}")))?;
        Ok(OllamaEmbedder {
            endpoint: format!("{base}/api/embed"),
            identity: format!("ollama:{}:{}", cfg.model, cfg.dim),
            cfg,
            http,
        })
    }

    async fn embed_batch(
        &self,
        texts: &[String],
        priority: Priority,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let resp = self
            .http
            .post(&self.endpoint)
            .header("X-Ollama-Priority", priority.value().to_string())
            .json(&EmbedRequest {
                model: &self.cfg.model,
                input: texts,
                truncate: true,
            })
            .send()
            .await
            .map_err(|e| {
                EmbedError::Unavailable(format!("POST {}: {}", self.endpoint, without_url(&e)))
            })?;
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            let detail = format!(
                "{} answered {status}: {}",
                self.endpoint,
                body.chars().take(300).collect::<String>()
            );
            return Err(
                if status.as_u16() == 408 || status.as_u16() == 429 || status.is_server_error() {
                    EmbedError::Unavailable(detail)
                } else {
                    EmbedError::Rejected(detail)
                },
            );
        }
        let parsed: EmbedResponse = resp.json().await.map_err(|e| {
            EmbedError::Rejected(format!(
                "{} sent an unreadable answer: {}",
                self.endpoint,
                without_url(&e)
            ))
        })?;
        if parsed.embeddings.len() != texts.len() {
            return Err(EmbedError::Rejected(format!(
                "asked for {} embeddings, got {}",
                texts.len(),
                parsed.embeddings.len()
            )));
        }
        if let Some(bad) = parsed.embeddings.iter().find(|v| v.len() != self.cfg.dim) {
            return Err(EmbedError::Rejected(format!(
                "model `{}` returned {}-d vectors but {} are configured",
                self.cfg.model,
                bad.len(),
                self.cfg.dim
            )));
        }
        Ok(parsed.embeddings)
    }
}

/// What went wrong, without the URL (ours is in the message already; a URL may carry
/// credentials, which must never reach logs).
fn without_url(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_decode() {
        "could not decode the answer"
    } else if e.is_body() {
        "body error"
    } else {
        "request failed"
    }
}

#[async_trait]
impl Embedder for OllamaEmbedder {
    fn identity(&self) -> &str {
        &self.identity
    }
    fn dim(&self) -> usize {
        self.cfg.dim
    }
    async fn embed(
        &self,
        texts: &[String],
        priority: Priority,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.cfg.batch_size) {
            out.extend(self.embed_batch(batch, priority).await?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::{Json, Router, http::HeaderMap, http::StatusCode, routing::post};

    async fn serve(router: Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
        format!("http://{addr}")
    }

    fn cfg(url: String, dim: usize) -> OllamaConfig {
        OllamaConfig {
            url,
            model: "m".into(),
            dim,
            batch_size: 2,
            timeout_secs: 5,
        }
    }

    #[tokio::test]
    async fn batches_sends_priority_and_parses() {
        let router = Router::new().route(
            "/api/embed",
            post(
                |headers: HeaderMap, Json(body): Json<serde_json::Value>| async move {
                    assert_eq!(
                        headers
                            .get("x-ollama-priority")
                            .and_then(|v| v.to_str().ok()),
                        Some("1")
                    );
                    assert_eq!(body["model"], "m");
                    let n = body["input"].as_array().map(|a| a.len()).unwrap_or(0);
                    assert!(n <= 2, "batch size honoured");
                    Json(serde_json::json!({"embeddings": vec![vec![0.5f32, 0.5, 0.0]; n]}))
                },
            ),
        );
        let e = OllamaEmbedder::new(cfg(serve(router).await, 3)).expect("client");
        let texts: Vec<String> = (0..5).map(|i| format!("t{i}")).collect();
        let v = e
            .embed(&texts, Priority::INTERACTIVE)
            .await
            .expect("embeds");
        assert_eq!(v.len(), 5);
        assert_eq!(e.identity(), "ollama:m:3");
    }

    #[tokio::test]
    async fn classifies_errors() {
        let router = Router::new()
            .route(
                "/busy/api/embed",
                post(|| async { (StatusCode::SERVICE_UNAVAILABLE, "busy") }),
            )
            .route(
                "/slow/api/embed",
                post(|| async { (StatusCode::TOO_MANY_REQUESTS, "slow down") }),
            )
            .route(
                "/bad/api/embed",
                post(|| async { (StatusCode::NOT_FOUND, "model not found") }),
            )
            .route(
                "/dims/api/embed",
                post(|| async { Json(serde_json::json!({"embeddings": [[1.0, 2.0]]})) }),
            );
        let base = serve(router).await;
        let one = vec!["x".to_string()];
        for (path, retryable) in [
            ("busy", true),
            ("slow", true),
            ("bad", false),
            ("dims", false),
        ] {
            let e = OllamaEmbedder::new(cfg(format!("{base}/{path}"), 3)).expect("client");
            let err = e.embed(&one, Priority::DEFAULT).await.expect_err(path);
            assert_eq!(err.is_retryable(), retryable, "{path}: {err}");
        }
        // Nothing listens on port 9 of loopback: connection refused is retryable.
        let e = OllamaEmbedder::new(cfg("http://127.0.0.1:9".into(), 3)).expect("client");
        assert!(
            e.embed(&one, Priority::DEFAULT)
                .await
                .expect_err("refused")
                .is_retryable()
        );
    }
}
