//! Embedders: turning text into vectors.
//!
//! - [`StaticEmbedder`] — the default: a static token-embedding table distilled from
//!   all-MiniLM-L6-v2 (model2vec method), compiled into the binary. Semantic, offline, fast.
//! - [`OllamaEmbedder`] — any Ollama-compatible `POST /api/embed` endpoint, for production.
//! - [`HashingEmbedder`] — feature hashing, no asset, no semantics: for tests that need none.
//!
//! Every embedder has a stable [`Embedder::identity`]; stores record it with their vectors
//! and refuse vectors of another identity, so two embedders' vectors are never mixed.
//!
//! Must not: know about storage or HTTP routing.

mod hashing;
mod ollama;
pub mod static_embedder;
pub mod wordpiece;

use std::sync::Arc;

use async_trait::async_trait;

pub use hashing::HashingEmbedder;
pub use ollama::{OllamaConfig, OllamaEmbedder};
pub use static_embedder::StaticEmbedder;

/// Request priority, 0 (most urgent) ..= 9. Interactive work is ≤ 2; bulk default is 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(u8);

impl Priority {
    pub const CRITICAL: Priority = Priority(0);
    pub const INTERACTIVE: Priority = Priority(1);
    pub const DEFAULT: Priority = Priority(4);

    /// `None` when out of range.
    pub fn new(p: u8) -> Option<Priority> {
        (p <= 9).then_some(Priority(p))
    }
    pub fn value(self) -> u8 {
        self.0
    }
    /// Interactive writes (≤ 2) use their own concurrency pool end to end.
    pub fn is_interactive(self) -> bool {
        self.0 <= 2
    }
}

impl Default for Priority {
    fn default() -> Self {
        Priority::DEFAULT
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    /// The service is down, slow, rate-limiting or overloaded: retry later.
    #[error("embedding service unavailable: {0}")]
    Unavailable(String),
    /// The request can never succeed as sent (bad model, input rejected, wrong dimensions).
    #[error("embedding rejected: {0}")]
    Rejected(String),
}

impl EmbedError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, EmbedError::Unavailable(_))
    }
    pub fn code(&self) -> &'static str {
        match self {
            EmbedError::Unavailable(_) => "embedder_unavailable",
            EmbedError::Rejected(_) => "embedder_rejected",
        }
    }
}

#[async_trait]
pub trait Embedder: Send + Sync {
    /// Stable identity of the vector space, e.g. `static:minilm-m2v-256-i8:v1`.
    fn identity(&self) -> &str;
    fn dim(&self) -> usize;
    /// One vector per input text, in order.
    async fn embed(
        &self,
        texts: &[String],
        priority: Priority,
    ) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Texts above this many bytes in total are embedded on the blocking pool, not inline.
const INLINE_BYTES: usize = 32 * 1024;

/// Runs a CPU-bound embedding function off the async runtime when the batch is large.
async fn run_cpu<F>(texts: &[String], f: F) -> Result<Vec<Vec<f32>>, EmbedError>
where
    F: Fn(&str) -> Vec<f32> + Send + Sync + 'static,
{
    let total: usize = texts.iter().map(String::len).sum();
    if total <= INLINE_BYTES {
        return Ok(texts.iter().map(|t| f(t)).collect());
    }
    let texts = texts.to_vec();
    tokio::task::spawn_blocking(move || texts.iter().map(|t| f(t)).collect())
        .await
        .map_err(|e| EmbedError::Unavailable(format!("embedding task failed: {e}")))
}

#[async_trait]
impl Embedder for &'static StaticEmbedder {
    fn identity(&self) -> &str {
        StaticEmbedder::identity(self)
    }
    fn dim(&self) -> usize {
        StaticEmbedder::dim(self)
    }
    async fn embed(
        &self,
        texts: &[String],
        _priority: Priority,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let me: &'static StaticEmbedder = self;
        run_cpu(texts, move |t| me.embed(t)).await
    }
}

/// Which embedder to build.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedderConfig {
    /// The built-in static table (default).
    Static,
    /// Feature hashing into `dim` buckets (no semantics).
    Hashing { dim: usize },
    /// An Ollama-compatible server.
    Ollama(OllamaConfig),
}

pub fn build(cfg: &EmbedderConfig) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(match cfg {
        EmbedderConfig::Static => Arc::new(StaticEmbedder::builtin()),
        EmbedderConfig::Hashing { dim } => {
            Arc::new(HashingEmbedder::new(*dim).map_err(EmbedError::Rejected)?)
        }
        EmbedderConfig::Ollama(c) => Arc::new(OllamaEmbedder::new(c.clone())?),
    })
}
