//! The qualifier: drains the qualification queue.
//!
//! [`Qualifier::process_next`] claims one task (a lease), executes it through the task handlers (`evident-kb` and the indexers)
//! while heartbeating the lease, and records the outcome: `done`; `retry_wait` with capped
//! exponential backoff for operational errors (forever — an outage never turns into failed
//! tasks); `error` with the reason for bad input. [`run_pool`] runs several loops per priority
//! band and, on cancellation, stops claiming and lets in-flight tasks finish within a
//! deadline, releasing the leases of those that do not.
//!
//! Must not: know HTTP or a database; it sees the `TaskQueue` trait and a `Kb`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::Priority;
use evident_kb::{TaskError, TaskHandlers};
use evident_store::StoreError;
use evident_store::queue::{
    BackoffPolicy, Claim, Clock, Failure, LeaseToken, PriorityBand, TaskQueue, TaskRecord,
    TaskState,
};
use serde::Deserialize;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Worker settings (`[queue]` in the config file).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// Lease length; a worker that dies loses its tasks to others after this.
    pub lease_secs: u64,
    /// How often a running task renews its lease.
    pub heartbeat_secs: u64,
    pub backoff_initial_secs: u64,
    pub backoff_cap_secs: u64,
    /// Workers for priorities 0..=2 and for 3..=9.
    pub interactive_workers: usize,
    pub bulk_workers: usize,
    /// On shutdown, how long in-flight tasks may run before their leases are released.
    pub drain_secs: u64,
    /// Completed tasks are kept this long for inspection, then pruned.
    pub retention_hours: u64,
    /// Longest sleep of an idle worker between looks at the queue.
    pub idle_poll_secs: u64,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            lease_secs: 60,
            heartbeat_secs: 15,
            backoff_initial_secs: 5,
            backoff_cap_secs: 300,
            interactive_workers: 1,
            bulk_workers: 8,
            drain_secs: 20,
            retention_hours: 168,
            idle_poll_secs: 5,
        }
    }
}

impl QueueConfig {
    pub fn backoff(&self) -> BackoffPolicy {
        BackoffPolicy {
            initial_ms: self.backoff_initial_secs as i64 * 1000,
            cap_ms: self.backoff_cap_secs as i64 * 1000,
            jitter: 0.1,
        }
    }
}

/// What one `process_next` call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A task was claimed and ended in `state` (`done`, `retry_wait`, `error`; `queued` when
    /// released on shutdown; `processing` when the lease was lost to another worker).
    Processed { task_id: String, state: TaskState },
    /// Nothing was claimable.
    Empty,
}

#[derive(Clone)]
pub struct Qualifier {
    pub queue: Arc<dyn TaskQueue>,
    pub handlers: TaskHandlers,
    pub clock: Arc<dyn Clock>,
    pub config: QueueConfig,
    pub worker_id: String,
    pub band: PriorityBand,
}

impl Qualifier {
    fn lease_ms(&self) -> i64 {
        self.config.lease_secs as i64 * 1000
    }

    /// Claims and runs at most one task. Deterministic for tests: no timers unless a task runs
    /// longer than a heartbeat interval.
    pub async fn process_next(&self) -> Result<Outcome, StoreError> {
        self.process_next_until(&CancellationToken::new(), Duration::MAX)
            .await
    }

    /// Like `process_next`, but once `cancel` fires the task gets `drain` more time; after
    /// that its lease is released (back to `queued`, no retry counted) and it runs elsewhere.
    pub async fn process_next_until(
        &self,
        cancel: &CancellationToken,
        drain: Duration,
    ) -> Result<Outcome, StoreError> {
        let claimed_at = Instant::now();
        let Some(claim) = self
            .queue
            .claim(
                &self.worker_id,
                self.band,
                self.lease_ms(),
                self.clock.now_ms(),
            )
            .await?
        else {
            return Ok(Outcome::Empty);
        };
        metrics::histogram!("evident_queue_claim_seconds")
            .record(claimed_at.elapsed().as_secs_f64());
        let (task_id, token) = (claim.task.task_id.clone(), claim.token.clone());
        let span = tracing::info_span!("task", task_id = %claim.task.task_id, kind = %claim.task.kind, source_urn = %claim.task.source_urn, attempt = claim.task.attempts);
        // The task runs in its own tokio task so that a panicking handler (a bug) ends that
        // task, not this worker loop. `instrument`, not `Span::enter`: an entered span guard
        // must never be held across `.await` (it corrupts the span registry).
        let me = self.clone();
        let cancel = cancel.clone();
        let run = tokio::spawn(
            async move { me.run_claimed(claim, &cancel, drain).await }.instrument(span),
        );
        match run.await {
            Ok(outcome) => outcome,
            Err(e) => {
                // A deterministic panic would crash every retry: park the task in `error`,
                // where an operator sees it and can retry it once the bug is fixed.
                tracing::error!(%task_id, error = %e, "task handler panicked");
                metrics::counter!("evident_queue_panics_total").increment(1);
                let reason = format!("internal error: the handler panicked ({e}); see the logs");
                self.queue
                    .fail(
                        &token,
                        Failure::Permanent(reason),
                        &self.config.backoff(),
                        self.clock.now_ms(),
                    )
                    .await?;
                Ok(Outcome::Processed {
                    task_id,
                    state: TaskState::Error,
                })
            }
        }
    }

    /// Runs a claimed task to its outcome, heartbeating its lease.
    async fn run_claimed(
        &self,
        claim: Claim,
        cancel: &CancellationToken,
        drain: Duration,
    ) -> Result<Outcome, StoreError> {
        let Claim {
            token,
            task,
            payload,
        } = claim;
        let priority = Priority::new(task.priority).unwrap_or_default();
        let started = Instant::now();

        let work = self.handlers.execute(&payload, &task.scope, priority);
        tokio::pin!(work);
        let heartbeat = Duration::from_secs(self.config.heartbeat_secs.max(1));
        let mut deadline: Option<tokio::time::Instant> = None;
        let result = loop {
            let stop_wait = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => cancel.cancelled().await,
                }
            };
            tokio::select! {
                r = &mut work => break Some(r),
                _ = tokio::time::sleep(heartbeat) => {
                    if !self.queue.heartbeat(&token, self.lease_ms(), self.clock.now_ms()).await? {
                        tracing::warn!("lease lost while running; another worker owns the task now");
                        return Ok(Outcome::Processed { task_id: task.task_id, state: TaskState::Processing });
                    }
                }
                _ = stop_wait => {
                    if deadline.is_some() {
                        break None;
                    }
                    deadline = Some(tokio::time::Instant::now() + drain.min(Duration::from_secs(86_400)));
                }
            }
        };
        let state = self.settle(&token, &task, result, started).await?;
        Ok(Outcome::Processed {
            task_id: task.task_id,
            state,
        })
    }

    /// Records a run's result on the queue: done, retry (backoff), error, or — when the run
    /// was stopped by shutdown (`None`) — released for another worker.
    async fn settle(
        &self,
        token: &LeaseToken,
        task: &TaskRecord,
        result: Option<Result<(), TaskError>>,
        started: Instant,
    ) -> Result<TaskState, StoreError> {
        let now = self.clock.now_ms();
        metrics::histogram!("evident_queue_processing_seconds", "kind" => task.kind.clone())
            .record(started.elapsed().as_secs_f64());
        let state = match result {
            None => {
                self.queue.release(token, now).await?;
                tracing::info!("released unfinished task for another worker (shutdown)");
                TaskState::Queued
            }
            Some(Ok(())) => {
                self.queue.complete(token, now).await?;
                tracing::info!(
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "task done"
                );
                TaskState::Done
            }
            Some(Err(TaskError::Retryable(reason))) => {
                metrics::counter!("evident_queue_retries_total", "kind" => task.kind.clone())
                    .increment(1);
                tracing::warn!(retries = task.retries + 1, %reason, "task will be retried");
                self.queue
                    .fail(
                        token,
                        Failure::Retryable(reason),
                        &self.config.backoff(),
                        now,
                    )
                    .await?;
                TaskState::RetryWait
            }
            Some(Err(TaskError::Permanent(reason))) => {
                metrics::counter!("evident_queue_errors_total", "kind" => task.kind.clone())
                    .increment(1);
                tracing::warn!(%reason, "task failed permanently");
                self.queue
                    .fail(
                        token,
                        Failure::Permanent(reason),
                        &self.config.backoff(),
                        now,
                    )
                    .await?;
                TaskState::Error
            }
        };
        Ok(state)
    }

    /// Runs until `cancel`: process while there is work, otherwise sleep until woken by an
    /// enqueue, the next retry or lease expiry, or the idle poll interval.
    pub async fn run(self, cancel: CancellationToken, wake: Arc<Notify>) {
        let drain = Duration::from_secs(self.config.drain_secs);
        let idle = Duration::from_secs(self.config.idle_poll_secs.max(1));
        let mut failures = 0u32;
        while !cancel.is_cancelled() {
            let notified = wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.process_next_until(&cancel, drain).await {
                Ok(Outcome::Processed { .. }) => {
                    failures = 0;
                    continue;
                }
                Ok(Outcome::Empty) => failures = 0,
                Err(e) => {
                    // The queue's own store is down: back off (capped) and keep trying.
                    failures += 1;
                    let pause = self.config.backoff().base_delay(failures);
                    tracing::error!(error = %e, pause_ms = pause, "queue unavailable");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(pause as u64)) => {}
                        _ = cancel.cancelled() => {}
                    }
                    continue;
                }
            }
            let now = self.clock.now_ms();
            let until_next = match self.queue.next_wakeup(now).await {
                Ok(Some(at)) => Duration::from_millis((at - now).max(1) as u64).min(idle),
                _ => idle,
            };
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep(until_next) => {}
                _ = cancel.cancelled() => {}
            }
        }
    }
}

/// Starts `interactive_workers` loops for priorities 0..=2 and `bulk_workers` for 3..=9.
/// Returns when all loops have drained after `cancel`.
pub async fn run_pool(base: Qualifier, cancel: CancellationToken, wake: Arc<Notify>) {
    let tracker = tokio_util::task::TaskTracker::new();
    let bands = [
        (
            PriorityBand::INTERACTIVE,
            base.config.interactive_workers,
            "interactive",
        ),
        (PriorityBand::BULK, base.config.bulk_workers, "bulk"),
    ];
    for (band, n, name) in bands {
        for i in 0..n {
            let mut q = base.clone();
            q.band = band;
            q.worker_id = format!("{}-{name}-{i}", base.worker_id);
            tracker.spawn(q.run(cancel.clone(), wake.clone()));
        }
    }
    tracker.close();
    tracker.wait().await;
}

/// Deletes completed tasks older than the retention and expired session memory, now and
/// then, until `cancel`.
pub async fn prune_loop(
    queue: Arc<dyn TaskQueue>,
    memory: Arc<dyn evident_store::memory::MemoryStore>,
    clock: Arc<dyn Clock>,
    retention_hours: u64,
    cancel: CancellationToken,
) {
    loop {
        let now = clock.now_ms();
        let before = now - retention_hours as i64 * 3_600_000;
        match queue.prune_done(before).await {
            Ok(n) if n > 0 => tracing::info!(pruned = n, "pruned completed tasks"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "pruning completed tasks failed; will retry"),
        }
        // Expired session memory is already invisible; this reclaims its space.
        match memory.purge_expired(now).await {
            Ok(n) if n > 0 => tracing::info!(purged = n, "purged expired session memory"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "purging session memory failed; will retry"),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
            _ = cancel.cancelled() => return,
        }
    }
}
