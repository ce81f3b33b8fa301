//! Polling shared by every kind of source: which sources are due, the lease that makes one
//! replica poll each source, the recorded outcome (last poll and running totals), and the loop.
//!
//! A kind plugs in with [`SourcePoller`]: given a source whose lease this replica holds, read
//! what changed since the source's cursors, queue the work, move the cursors (only after the
//! work is queued), and report what it did.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use evident_ai::Priority;
use evident_kb::TaskSubmitter;
use evident_store::indexers::{IndexerSource, IndexerStore, SourceKey};
use evident_store::queue::Clock;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use crate::report::PollReport;

/// Why a poll failed. The source is polled again at its next interval; nothing is lost,
/// since cursors only move after the work they cover is queued.
#[derive(Debug, thiserror::Error)]
pub enum PollError {
    /// The source could not be reached or read: a connection, a timeout, a file or folder
    /// that cannot be read, an answer cut short.
    #[error("{what}: {reason}")]
    Unreachable { what: String, reason: String },
    /// What the source's settings name is not there (a folder, a Maildir).
    #[error("{what}: {reason}")]
    NotFound { what: String, reason: String },
    /// The source refused our credentials, or they may not read this (HTTP 401/403, an IMAP
    /// login refused).
    #[error("{what}: {reason}")]
    AuthRefused { what: String, reason: String },
    /// The source answered an HTTP status a poll cannot go on from (404, 410, 5xx, …).
    #[error("{what}: HTTP {status}: {detail}")]
    Status {
        what: String,
        status: u16,
        detail: String,
    },
    /// The source's answer is not what its API returns.
    #[error("{what}: {reason}")]
    Malformed { what: String, reason: String },
    #[error("store: {0}")]
    Store(#[from] evident_store::StoreError),
    #[error("queue: {0}")]
    Kb(#[from] evident_kb::KbError),
    #[error("source config: {0}")]
    Config(String),
    /// A policy refused what the source asks for (an address the egress policy refuses, a
    /// path outside `[sources] roots`). Polls fail the same way until the source's settings
    /// or the policy change; the message says which.
    #[error("{0} — the source's polls fail until its settings or the policy change")]
    Refused(String),
    /// The source asked us to wait (HTTP 429, an exhausted rate-limit budget): the next poll
    /// comes once the wait is over, not before, and not a whole interval later.
    #[error("rate limited: {message} (retrying in {}s)", retry_after_ms / 1000)]
    RateLimited {
        retry_after_ms: i64,
        message: String,
    },
    /// Another replica took the source's lease while this one polled (this one was too slow).
    #[error("lost the source's lease while polling")]
    LeaseLost,
    /// The poll's own background work failed (a blocking task panicked or was cancelled).
    #[error("{what}: {reason}")]
    Internal { what: String, reason: String },
}

impl PollError {
    /// The source could not be reached or read.
    pub fn unreachable(what: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        PollError::Unreachable {
            what: what.into(),
            reason: reason.to_string(),
        }
    }

    /// The source's answer is not what its API returns.
    pub fn malformed(what: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        PollError::Malformed {
            what: what.into(),
            reason: reason.to_string(),
        }
    }

    /// The poll's own background work failed.
    pub fn internal(what: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        PollError::Internal {
            what: what.into(),
            reason: reason.to_string(),
        }
    }
}

/// What every poll of every kind shares.
#[derive(Clone)]
pub struct PollContext {
    pub indexers: Arc<dyn IndexerStore>,
    pub tasks: TaskSubmitter,
    /// This replica's identity for source leases.
    pub owner: String,
    pub clock: Arc<dyn Clock>,
    /// Priority of the work polls queue (bulk by default).
    pub priority: Priority,
    /// What sources may reach (egress policy, filesystem roots), checked at every poll.
    pub access: crate::access::Access,
}

impl PollContext {
    /// The settings of a source that reads files, its `path` checked under `[sources] roots`
    /// again, symlinks resolved at every poll (not only at registration).
    pub fn rooted_config<C: crate::sources::SourceConfig>(
        &self,
        source: &IndexerSource,
        path: impl FnOnce(&mut C) -> &mut std::path::PathBuf,
    ) -> Result<C, PollError> {
        let mut cfg: C = crate::sources::config_of(source).map_err(PollError::Config)?;
        let path = path(&mut cfg);
        *path = self.access.path(path)?;
        Ok(cfg)
    }

    fn lease_ms(source: &IndexerSource) -> i64 {
        // Long enough to cover a slow poll; short enough that a dead holder's sources move on.
        (source.interval_secs as i64 * 3_000).clamp(120_000, 3_600_000)
    }

    /// Runs `poll` if this replica can take the source's lease (`Ok(None)` when another holds
    /// it), and records its outcome: the report as `lastPoll`, numbers added to `totals`.
    pub async fn with_lease<R, F, Fut>(
        &self,
        source: &IndexerSource,
        poll: F,
    ) -> Result<Option<R>, PollError>
    where
        R: Into<PollReport> + Clone,
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<R, PollError>>,
    {
        let now = self.clock.now_ms();
        if !self
            .indexers
            .acquire(&source.key(), &self.owner, Self::lease_ms(source), now)
            .await?
        {
            return Ok(None);
        }
        let started = std::time::Instant::now();
        // The commands and credential variables a source names are checked again before
        // every poll: a source stored before a rule changed runs nothing it no longer may.
        let outcome = match crate::sources::check_named(source, &self.access) {
            Ok(()) => poll().await,
            Err(e) => Err(e.into()),
        };
        match outcome {
            Ok(report) => {
                let typed: PollReport = report.clone().into();
                record_metrics(source, Ok(&typed), started.elapsed());
                let now = self.clock.now_ms();
                let mut stats = accumulate(&source.status.stats, &typed.to_json());
                // A poll whose last answer spent the source's budget: the next one waits.
                if let Some((ms, reason)) = typed.budget_spent() {
                    stats[RETRY_AT] = json!(now + ms);
                    stats[RETRY_REASON] = json!(reason);
                }
                self.indexers
                    .record_poll(&source.key(), &self.owner, now, None, &stats)
                    .await?;
                Ok(Some(report))
            }
            Err(e) => {
                record_metrics(source, Err(&e), started.elapsed());
                let now = self.clock.now_ms();
                let mut stats = source.status.stats.clone();
                if let Some(map) = stats.as_object_mut() {
                    map.remove(RETRY_AT);
                    map.remove(RETRY_REASON);
                }
                if let PollError::RateLimited {
                    retry_after_ms,
                    message,
                } = &e
                {
                    if !stats.is_object() {
                        stats = json!({});
                    }
                    stats[RETRY_AT] = json!(now + retry_after_ms);
                    stats[RETRY_REASON] = json!(message);
                }
                let _ = self
                    .indexers
                    .record_poll(
                        &source.key(),
                        &self.owner,
                        now,
                        Some(&e.to_string()),
                        &stats,
                    )
                    .await;
                Err(e)
            }
        }
    }

    /// Reads a cursor, `None` when unset.
    pub async fn cursor(&self, source: &SourceKey, key: &str) -> Result<Option<Value>, PollError> {
        Ok(self.indexers.get_cursor(source, key).await?)
    }

    /// Moves a cursor (as the lease holder). Call only once the work it covers is queued.
    pub async fn set_cursor(
        &self,
        source: &SourceKey,
        key: &str,
        value: &Value,
    ) -> Result<(), PollError> {
        if !self
            .indexers
            .put_cursor(source, &self.owner, key, value)
            .await?
        {
            return Err(PollError::LeaseLost);
        }
        Ok(())
    }
}

impl PollContext {
    /// Removes a cursor (as the lease holder): the item it tracked is gone.
    pub async fn forget_cursor(&self, source: &SourceKey, key: &str) -> Result<(), PollError> {
        self.indexers
            .delete_cursor(source, &self.owner, key)
            .await?;
        Ok(())
    }

    /// Every cursor of a source whose key starts with `prefix`, by key.
    pub async fn cursors(
        &self,
        source: &SourceKey,
        prefix: &str,
    ) -> Result<Vec<(String, Value)>, PollError> {
        Ok(self
            .indexers
            .list_cursors(source)
            .await?
            .into_iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .collect())
    }
}

/// Prometheus series per source: polls by outcome, poll time, and items queued (a report's
/// `queued`).
fn record_metrics(
    source: &IndexerSource,
    outcome: Result<&PollReport, &PollError>,
    took: std::time::Duration,
) {
    let (kind, id) = (source.kind.clone(), source.id.clone());
    let result = match outcome {
        Ok(_) => "ok",
        Err(PollError::RateLimited { .. }) => "rate_limited",
        Err(PollError::Refused(_)) => "refused",
        Err(_) => "error",
    };
    metrics::counter!("evident_source_polls_total", "kind" => kind.clone(), "source" => id.clone(), "outcome" => result)
        .increment(1);
    metrics::histogram!("evident_source_poll_seconds", "kind" => kind.clone(), "source" => id.clone())
        .record(took.as_secs_f64());
    if let Ok(report) = outcome {
        let queued = report.queued();
        metrics::counter!("evident_source_items_queued_total", "kind" => kind.clone(), "source" => id.clone())
            .increment(queued);
        metrics::gauge!("evident_source_last_success_timestamp_seconds", "kind" => kind, "source" => id)
            .set(std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()));
    }
}

/// Where a rate-limited source's stats say when it may be polled again (ms).
pub const RETRY_AT: &str = "retryAt";
/// Beside [`RETRY_AT`]: which signal of the source asked for the wait.
pub const RETRY_REASON: &str = "retryReason";

/// Whether a source is due: its interval has passed since the last poll — or, after a poll
/// the source rate-limited, the wait it asked for has passed (sooner or later than that).
/// After a successful poll that spent the budget, both the interval and the wait.
pub fn is_due(source: &IndexerSource, now: i64) -> bool {
    if let Some(at) = source.status.stats.get(RETRY_AT).and_then(Value::as_i64) {
        if source.status.last_error.is_some() {
            return now >= at;
        }
        if now < at {
            return false;
        }
    }
    source
        .status
        .last_poll_at
        .is_none_or(|at| now - at >= source.interval_secs as i64 * 1000)
}

/// The stats kept with a source: the last poll's report, and totals since registration —
/// every number summed, maps of numbers (skips by reason) summed per key, example lists kept
/// from the last poll that had any — so what was skipped stays visible after quiet polls.
pub fn accumulate(previous: &Value, report: &Value) -> Value {
    let mut totals = previous
        .get("totals")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    if let Some(fields) = report.as_object() {
        for (k, v) in fields {
            match v {
                Value::Number(n) => {
                    let add = n.as_u64().unwrap_or(0);
                    totals[k] = json!(totals[k].as_u64().unwrap_or(0) + add);
                }
                Value::Object(map) => {
                    for (kk, vv) in map {
                        if let Some(add) = vv.as_u64() {
                            totals[k][kk] = json!(totals[k][kk].as_u64().unwrap_or(0) + add);
                        }
                    }
                }
                Value::Array(items) if !items.is_empty() => totals[k] = v.clone(),
                _ => {}
            }
        }
    }
    json!({ "lastPoll": report, "totals": totals })
}

/// A kind of polled source.
#[async_trait]
pub trait SourcePoller: Send + Sync {
    /// The `kind` of the sources it polls (`git`, `mail`, …).
    fn kind(&self) -> &'static str;
    /// Polls `source` if this replica can take its lease; `Ok(None)` when another holds it.
    async fn poll(&self, source: &IndexerSource) -> Result<Option<PollReport>, PollError>;
}

/// A poller of one kind whose every poll runs under the source's lease (all of them but the
/// trackers, which share one type across three kinds): implement this, get [`SourcePoller`].
#[async_trait]
pub trait LeasedPoller: Send + Sync {
    const KIND: &'static str;
    fn context(&self) -> &PollContext;
    /// One poll, the lease held: read what changed, queue it, move the cursors, report.
    async fn poll_source(&self, source: &IndexerSource) -> Result<PollReport, PollError>;
}

#[async_trait]
impl<T: LeasedPoller> SourcePoller for T {
    fn kind(&self) -> &'static str {
        T::KIND
    }

    async fn poll(&self, source: &IndexerSource) -> Result<Option<PollReport>, PollError> {
        self.context()
            .with_lease(source, || self.poll_source(source))
            .await
    }
}

/// Every kind's poller, driven by one loop.
#[derive(Clone)]
pub struct Pollers {
    by_kind: HashMap<&'static str, Arc<dyn SourcePoller>>,
    /// Sources polled at the same time.
    concurrency: usize,
}

impl Default for Pollers {
    fn default() -> Self {
        Pollers {
            by_kind: HashMap::new(),
            concurrency: 4,
        }
    }
}

impl Pollers {
    /// Polls up to `n` sources at once (a slow source does not hold up the others).
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    pub fn add(&mut self, poller: Arc<dyn SourcePoller>) {
        self.by_kind.insert(poller.kind(), poller);
    }

    pub fn kinds(&self) -> Vec<&'static str> {
        let mut k: Vec<&'static str> = self.by_kind.keys().copied().collect();
        k.sort_unstable();
        k
    }

    /// Polls every enabled source whose interval has passed. Returns how many were polled.
    pub async fn poll_due(&self, indexers: &dyn IndexerStore, now: i64) -> usize {
        let sources = match indexers.list_sources(None).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "listing sources failed");
                return 0;
            }
        };
        let due: Vec<(IndexerSource, Arc<dyn SourcePoller>)> = sources
            .into_iter()
            .filter(|s| s.enabled && is_due(s, now))
            .filter_map(|s| {
                let poller = self.by_kind.get(s.kind.as_str())?.clone();
                Some((s, poller))
            })
            .collect();
        let polled = std::sync::atomic::AtomicUsize::new(0);
        futures_util::stream::iter(due)
            .for_each_concurrent(self.concurrency, |(s, poller)| {
                let polled = &polled;
                async move {
                    match poller.poll(&s).await {
                        Ok(Some(report)) => {
                            polled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            tracing::info!(source_id = %s.id, kind = %s.kind, report = %report.to_json(), "source polled");
                        }
                        Ok(None) => {}
                        Err(PollError::Refused(why)) => {
                            polled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            metrics::counter!("evident_source_poll_failures_total", "kind" => s.kind.clone()).increment(1);
                            tracing::warn!(source_id = %s.id, kind = %s.kind, reason = %why, "poll refused by policy; fix the source or the policy");
                        }
                        Err(e) => {
                            polled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            metrics::counter!("evident_source_poll_failures_total", "kind" => s.kind.clone()).increment(1);
                            tracing::warn!(source_id = %s.id, kind = %s.kind, error = %e, "poll failed; will retry at the next interval");
                        }
                    }
                }
            })
            .await;

        polled.into_inner()
    }

    /// Polls due sources until `cancel`, looking every `tick`; then releases this replica's
    /// leases so another replica takes the sources at once.
    pub async fn run(self, ctx: PollContext, cancel: CancellationToken, tick: Duration) {
        loop {
            self.poll_due(ctx.indexers.as_ref(), ctx.clock.now_ms())
                .await;
            tokio::select! {
                _ = tokio::time::sleep(tick) => {}
                _ = cancel.cancelled() => break,
            }
        }
        if let Ok(sources) = ctx.indexers.list_sources(None).await {
            for s in sources
                .iter()
                .filter(|s| s.status.owner.as_deref() == Some(&ctx.owner))
            {
                let _ = ctx.indexers.release(&s.key(), &ctx.owner).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_numbers_and_maps_and_keep_examples() {
        let first = accumulate(
            &Value::Null,
            &json!({"messages": 3, "skipped": {"oversized": 1}, "skippedExamples": ["a (oversized)"], "state": "ok"}),
        );
        let second = accumulate(
            &first,
            &json!({"messages": 2, "skipped": {"oversized": 1, "binary": 2}, "skippedExamples": []}),
        );
        assert_eq!(second["totals"]["messages"], 5);
        assert_eq!(second["totals"]["skipped"]["oversized"], 2);
        assert_eq!(second["totals"]["skipped"]["binary"], 2);
        assert_eq!(second["totals"]["skippedExamples"][0], "a (oversized)");
        assert_eq!(second["lastPoll"]["messages"], 2);
    }
}
