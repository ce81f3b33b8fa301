//! One tool call's progress and cancellation.
//!
//! - Progress: when the request carries `_meta.progressToken`, the stages `evident-kb`
//!   reports (a [`Watch`]) become `notifications/progress`, sent in order before the result.
//!   rmcp then answers with an event stream instead of JSON (it switches as soon as a
//!   handler sends anything before its result); calls without a token stay JSON.
//! - Cancellation: the call stops when the client cancels it — `notifications/cancelled`
//!   (matched by [`inflight`](super::inflight)) or the HTTP request going away (rmcp's
//!   token). A read is dropped at once; a write is told through its [`Watch`] and stops at
//!   its next stage boundary, or, if its write began, finishes it whole.

use std::sync::Arc;

use axum::http::request::Parts;
use evident_kb::{Stage, Watch};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::inflight::InflightCall;
use crate::error::ApiError;

pub(super) struct Call {
    progress: Option<(Peer<RoleServer>, ProgressToken)>,
    /// rmcp's: cancelled when the HTTP request goes away.
    disconnected: CancellationToken,
    /// Ours: cancelled by a `notifications/cancelled` naming this call.
    notified: Option<CancellationToken>,
}

/// What a cancelled call answers (the client ignores it; the HTTP exchange needs one).
pub(super) fn cancelled() -> ApiError {
    ApiError::from(evident_kb::KbError::Cancelled)
}

impl Call {
    pub(super) fn of(ctx: &RequestContext<RoleServer>) -> Call {
        let notified = ctx
            .extensions
            .get::<Parts>()
            .and_then(|p| p.extensions.get::<Arc<InflightCall>>())
            .map(|c| c.token().clone());
        Call {
            progress: ctx.meta.get_progress_token().map(|t| (ctx.peer.clone(), t)),
            disconnected: ctx.ct.clone(),
            notified,
        }
    }

    async fn cancelled(&self) {
        match &self.notified {
            Some(n) => tokio::select! {
                () = self.disconnected.cancelled() => {}
                () = n.cancelled() => {}
            },
            None => self.disconnected.cancelled().await,
        }
    }

    /// Runs a read: dropped as soon as the client cancels.
    pub(super) async fn read<T, Fut>(&self, work: impl FnOnce(Watch) -> Fut) -> Result<T, ApiError>
    where
        Fut: Future<Output = Result<T, ApiError>>,
    {
        let (watch, stages) = self.watch(None);
        let relayed = self.relay(work(watch), stages);
        tokio::select! {
            r = relayed => r,
            () = self.cancelled() => Err(cancelled()),
        }
    }

    /// Runs a write: a client's cancellation is passed to its [`Watch`], and the write
    /// decides where it can stop (before anything is written, or not at all).
    pub(super) async fn write<T, Fut>(&self, work: impl FnOnce(Watch) -> Fut) -> Result<T, ApiError>
    where
        Fut: Future<Output = Result<T, ApiError>>,
    {
        let stop = CancellationToken::new();
        let (watch, stages) = self.watch(Some(stop.clone()));
        let work = work(watch);
        let obeyed = async {
            tokio::pin!(work);
            tokio::select! {
                r = &mut work => return r,
                () = self.cancelled() => stop.cancel(),
            }
            work.await
        };
        self.relay(obeyed, stages).await
    }

    fn watch(&self, cancel: Option<CancellationToken>) -> (Watch, Option<Stages>) {
        if self.progress.is_none() {
            return (Watch::new(None, cancel), None);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let report = Arc::new(move |stage: Stage| {
            let _ = tx.send(stage);
        });
        (Watch::new(Some(report), cancel), Some(rx))
    }

    /// Runs `work`, sending each stage it reports as a progress notification (all of them
    /// before its result).
    async fn relay<T>(&self, work: impl Future<Output = T>, stages: Option<Stages>) -> T {
        let (Some(mut stages), Some((peer, token))) = (stages, &self.progress) else {
            return work.await;
        };
        tokio::pin!(work);
        let mut position = Position::default();
        let out = loop {
            tokio::select! {
                biased;
                Some(stage) = stages.recv() => notify(peer, token, &mut position, &stage).await,
                r = &mut work => break r,
            }
        };
        while let Ok(stage) = stages.try_recv() {
            notify(peer, token, &mut position, &stage).await;
        }
        out
    }
}

type Stages = mpsc::UnboundedReceiver<Stage>;

/// Where a call is: `progress` rises with every stage; `total` once it is known.
#[derive(Default)]
struct Position {
    progress: f64,
    total: Option<f64>,
}

impl Position {
    /// An ingest counts its new chunks between chunking and writing; a search counts its
    /// three stages (searched, entities, graph).
    fn advance(&mut self, stage: &Stage) {
        match stage {
            Stage::Chunked { new, .. } => {
                self.total = Some(*new as f64 + 3.0);
                self.progress = 1.0;
            }
            Stage::Embedded { done, .. } => self.progress = 1.0 + *done as f64,
            Stage::Writing { .. } => self.progress = self.total.map_or(2.0, |t| t - 1.0),
            Stage::Searched { .. } | Stage::EntitiesMatched { .. } | Stage::Expanded { .. } => {
                self.total = Some(3.0);
                self.progress += 1.0;
            }
        }
    }
}

async fn notify(
    peer: &Peer<RoleServer>,
    token: &ProgressToken,
    position: &mut Position,
    stage: &Stage,
) {
    position.advance(stage);
    let mut param = ProgressNotificationParam::new(token.clone(), position.progress)
        .with_message(stage.to_string());
    if let Some(total) = position.total {
        param = param.with_total(total);
    }
    if let Err(e) = peer.notify_progress(param).await {
        // The client went away: the call's cancellation follows from that.
        tracing::debug!(error = %e, "MCP progress notification not delivered");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_rises_through_an_ingest_and_stays_under_its_total() {
        let mut p = Position::default();
        let mut seen = Vec::new();
        for stage in [
            Stage::Chunked {
                chunks: 130,
                new: 128,
            },
            Stage::Embedded {
                done: 64,
                total: 128,
            },
            Stage::Embedded {
                done: 128,
                total: 128,
            },
            Stage::Writing { chunks: 130 },
        ] {
            p.advance(&stage);
            seen.push(p.progress);
            assert!(p.progress < p.total.expect("total known"), "{stage}");
        }
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        let mut s = Position::default();
        s.advance(&Stage::Searched { text: 3, vector: 2 });
        s.advance(&Stage::EntitiesMatched { nodes: 1 });
        s.advance(&Stage::Expanded { nodes: 4, edges: 3 });
        assert_eq!((s.progress, s.total), (3.0, Some(3.0)));
    }
}
