//! Progress and cancellation of one long call: what an MCP client asks for with a
//! `progressToken` and `notifications/cancelled`.
//!
//! A [`Watch`] is handed to [`Kb::ingest_watched`](crate::Kb::ingest_watched) and
//! [`Kb::retrieve_watched`](crate::Kb::retrieve_watched). They report each [`Stage`] as they
//! reach it, and an ingest stops at its stage boundaries once the watch is cancelled — never
//! inside its write: a cancelled ingest leaves the store unchanged, or (cancelled too late)
//! writes the whole source.

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::{KbError, Result};

/// A stage a long call has reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Ingest: the source is cut into `chunks`, of which `new` need embedding.
    Chunked { chunks: usize, new: usize },
    /// Ingest: `done` of `total` new chunks embedded.
    Embedded { done: usize, total: usize },
    /// Ingest: the write began (the call can no longer be cancelled).
    Writing { chunks: usize },
    /// Retrieve: the text and vector channels answered.
    Searched { text: usize, vector: usize },
    /// Retrieve: the entities the query names were looked up.
    EntitiesMatched { nodes: usize },
    /// Retrieve: the graph around the top hits was expanded.
    Expanded { nodes: usize, edges: usize },
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Chunked { chunks, new } => {
                write!(f, "chunked: {chunks} chunk(s), {new} to embed")
            }
            Stage::Embedded { done, total } => write!(f, "embedded {done}/{total} chunk(s)"),
            Stage::Writing { chunks } => write!(f, "writing {chunks} chunk(s)"),
            Stage::Searched { text, vector } => {
                write!(f, "searched: {text} text and {vector} vector candidate(s)")
            }
            Stage::EntitiesMatched { nodes } => {
                write!(f, "matched {nodes} entity node(s) named by the query")
            }
            Stage::Expanded { nodes, edges } => {
                write!(f, "expanded the graph: {nodes} node(s), {edges} edge(s)")
            }
        }
    }
}

type Report = Arc<dyn Fn(Stage) + Send + Sync>;

/// Who watches a call: a progress callback (called in order, on the call's task; keep it
/// cheap) and a cancellation token. The default watches nothing.
#[derive(Clone, Default)]
pub struct Watch {
    report: Option<Report>,
    cancel: Option<CancellationToken>,
}

impl Watch {
    pub fn new(report: Option<Report>, cancel: Option<CancellationToken>) -> Watch {
        Watch { report, cancel }
    }

    /// Whether anyone wants the stages (work is split finer only then).
    pub fn reports(&self) -> bool {
        self.report.is_some()
    }

    pub(crate) fn reached(&self, stage: Stage) {
        if let Some(report) = &self.report {
            report(stage);
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.is_cancelled())
    }

    /// A stage boundary: `Err(Cancelled)` once the watcher cancelled.
    pub(crate) fn checkpoint(&self) -> Result<()> {
        if self.is_cancelled() {
            return Err(KbError::Cancelled);
        }
        Ok(())
    }

    /// Runs `fut` (which must write nothing: it is dropped when the call is cancelled).
    pub(crate) async fn unless_cancelled<T>(
        &self,
        fut: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        match &self.cancel {
            None => fut.await,
            Some(cancel) => tokio::select! {
                r = fut => r,
                () = cancel.cancelled() => Err(KbError::Cancelled),
            },
        }
    }
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("reports", &self.reports())
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
