//! The qualification queue: types, the backoff policy and the [`TaskQueue`] contract.
//!
//! States (api.md): `queued` → `processing` (leased) → `done`; on an operational error
//! `retry_wait` (back to claimable at `nextRetryAt`, forever, counter kept); on bad input
//! `error` with the reason (retryable by an operator). Time is always passed in by the
//! caller (milliseconds since the epoch), so tests drive the queue with a manual clock.

use async_trait::async_trait;
use evident_core::Scope;
use serde::{Deserialize, Serialize};

use crate::Result;

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Queued,
    Processing,
    RetryWait,
    Done,
    Error,
}

impl TaskState {
    pub const ALL: [TaskState; 5] = [
        TaskState::Queued,
        TaskState::Processing,
        TaskState::RetryWait,
        TaskState::Done,
        TaskState::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::Processing => "processing",
            TaskState::RetryWait => "retry_wait",
            TaskState::Done => "done",
            TaskState::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<TaskState> {
        TaskState::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// A task to put on the queue. `payload` is the versioned task body (`{"type": kind, "v": n, …}`);
/// it is stored once, by content hash, however often the task is retried.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    pub kind: String,
    pub scope: Scope,
    pub source_urn: String,
    /// 0 (most urgent) ..= 9.
    pub priority: u8,
    pub payload: serde_json::Value,
}

/// What the queue knows about a task (no payload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    pub task_id: String,
    pub kind: String,
    pub source_urn: String,
    #[serde(flatten)]
    pub scope: Scope,
    pub state: TaskState,
    pub priority: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<i64>,
    /// Operational failures so far (never reset; a `retry` of an error task keeps it).
    pub retries: u32,
    /// Claims so far.
    pub attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_retry_at: Option<Millis>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_expires_at: Option<Millis>,
    pub created_at: Millis,
    pub updated_at: Millis,
}

/// Proof of a claim: only the holder of the current lease may heartbeat, complete or fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseToken {
    pub task_id: String,
    /// Bumped by every claim, so a stale holder (its lease expired and the task was claimed
    /// again) is recognised.
    pub epoch: i64,
}

/// A claimed task with its payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub token: LeaseToken,
    pub task: TaskRecord,
    pub payload: serde_json::Value,
}

/// Which priorities a claimer takes (inclusive): interactive workers take 0..=2, bulk 3..=9.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorityBand {
    pub min: u8,
    pub max: u8,
}

impl PriorityBand {
    pub const ALL: PriorityBand = PriorityBand { min: 0, max: 9 };
    pub const INTERACTIVE: PriorityBand = PriorityBand { min: 0, max: 2 };
    pub const BULK: PriorityBand = PriorityBand { min: 3, max: 9 };
}

/// How a processing attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Operational (timeout, refused, 429, 5xx, busy): retry later, forever.
    Retryable(String),
    /// Bad input: goes to `error` with the reason.
    Permanent(String),
}

/// Exponential backoff `min(initial · 2^(n−1), cap)` plus up to `jitter` of it, where the
/// jitter is derived from the task id and attempt (deterministic, yet spread across tasks).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffPolicy {
    pub initial_ms: i64,
    pub cap_ms: i64,
    /// Fraction of the delay added as jitter, 0.0..=1.0.
    pub jitter: f64,
}

/// The checks of [`TaskQueue::enqueue`]'s priority, for every backend: `0..=9`.
pub fn check_priority(priority: u8) -> Result<()> {
    if priority > 9 {
        return Err(crate::StoreError::invalid("priority must be 0..=9"));
    }
    Ok(())
}

/// The check of [`TaskQueue::reorder`]'s position, for every backend: `≥ 1`.
pub fn check_position(position: i64) -> Result<()> {
    if position < 1 {
        return Err(crate::StoreError::invalid("position must be ≥ 1"));
    }
    Ok(())
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        BackoffPolicy {
            initial_ms: 5_000,
            cap_ms: 300_000,
            jitter: 0.1,
        }
    }
}

impl BackoffPolicy {
    /// Delay before retry number `n` (1-based), without jitter.
    pub fn base_delay(&self, n: u32) -> i64 {
        let shift = n.saturating_sub(1).min(40);
        self.initial_ms
            .saturating_mul(1i64 << shift)
            .min(self.cap_ms)
    }

    /// Delay before retry number `n` for `task_id`, jitter included.
    pub fn delay(&self, task_id: &str, n: u32) -> i64 {
        let base = self.base_delay(n);
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in task_id.bytes().chain(n.to_le_bytes()) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        let unit = (h >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
        base + (base as f64 * self.jitter.clamp(0.0, 1.0) * unit) as i64
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    pub state: Option<TaskState>,
    pub client_id: Option<String>,
    pub source_urn: Option<String>,
    /// Page after this task id (ids sort in creation order).
    pub after: Option<String>,
    /// Only tasks whose state last changed at or after this instant (e.g. the tasks that
    /// finished within the last hour, without walking every older finished task first).
    pub updated_since: Option<Millis>,
    pub limit: usize,
}

/// Queue depth by state and priority.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueCounts {
    /// (state, priority, count)
    pub by_state_priority: Vec<(TaskState, u8, u64)>,
}

impl QueueCounts {
    pub fn state(&self, s: TaskState) -> u64 {
        self.by_state_priority
            .iter()
            .filter(|(st, _, _)| *st == s)
            .map(|(_, _, n)| n)
            .sum()
    }
}

/// The durable task queue.
///
/// Contract:
/// - `claim` returns the first eligible task in order (priority ascending, then
///   `queuePosition` ascending with unset last, then creation), within the claimer's band.
///   Eligible: `queued`; `retry_wait` whose `nextRetryAt ≤ now`; `processing` whose lease has
///   expired (its holder is presumed dead). A task is never eligible while an older
///   unfinished (`queued`/`processing`/`retry_wait`) task of the same (client, sourceUrn)
///   exists, nor while another task of the same source holds a live lease (an older `error`
///   task retried while a newer one runs waits for it) — so one source's tasks never run
///   concurrently and keep submission order.
///   Claiming is atomic: two claimers never hold the same task.
/// - `heartbeat`, `complete`, `fail` and `release` act only with the current lease token
///   and return `false` (changing nothing) for a stale one.
/// - `fail(Retryable)` → `retry_wait`, `retries + 1`, `nextRetryAt = now + backoff`;
///   `fail(Permanent)` → `error` with the reason. Nothing is ever dropped.
/// - `release` (graceful shutdown) → `queued` without counting a retry.
/// - `retry` moves an `error` task back to `queued`.
/// - `prune_done(before)` deletes `done` tasks last updated before `before`.
#[async_trait]
pub trait TaskQueue: Send + Sync {
    async fn enqueue(&self, task: NewTask, now: Millis) -> Result<TaskRecord>;
    async fn claim(
        &self,
        worker: &str,
        band: PriorityBand,
        lease_ms: i64,
        now: Millis,
    ) -> Result<Option<Claim>>;
    async fn heartbeat(&self, token: &LeaseToken, lease_ms: i64, now: Millis) -> Result<bool>;
    async fn complete(&self, token: &LeaseToken, now: Millis) -> Result<bool>;
    async fn fail(
        &self,
        token: &LeaseToken,
        failure: Failure,
        backoff: &BackoffPolicy,
        now: Millis,
    ) -> Result<bool>;
    async fn release(&self, token: &LeaseToken, now: Millis) -> Result<bool>;
    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>>;
    async fn list(&self, filter: &TaskFilter) -> Result<Vec<TaskRecord>>;
    /// Sets the explicit position within the task's priority (1 = first).
    async fn reorder(
        &self,
        task_id: &str,
        position: i64,
        now: Millis,
    ) -> Result<Option<TaskRecord>>;
    async fn retry(&self, task_id: &str, now: Millis) -> Result<Option<TaskRecord>>;
    async fn prune_done(&self, before: Millis) -> Result<u64>;
    /// Depth by state and priority: of one client's tasks, or of every task (`None`).
    async fn counts(&self, client: Option<&str>) -> Result<QueueCounts>;
    /// The earliest future `nextRetryAt` or lease expiry: when a sleeping worker should look again.
    async fn next_wakeup(&self, now: Millis) -> Result<Option<Millis>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_initial_to_cap_with_bounded_jitter() {
        let p = BackoffPolicy::default();
        let bases: Vec<i64> = (1..=9).map(|n| p.base_delay(n)).collect();
        assert_eq!(
            bases,
            vec![
                5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000
            ]
        );
        assert_eq!(p.base_delay(1000), 300_000, "no overflow far out");
        for n in 1..=20 {
            let d = p.delay("task-1", n);
            assert!(
                d >= p.base_delay(n) && d <= p.base_delay(n) + p.base_delay(n) / 10,
                "n={n} d={d}"
            );
        }
        assert_ne!(
            p.delay("task-1", 3),
            p.delay("task-2", 3),
            "jitter spreads tasks"
        );
        assert_eq!(p.delay("task-1", 3), p.delay("task-1", 3), "deterministic");
    }
}

/// Where the queue's callers get "now" from: the system clock in production, a manual one in
/// tests (so backoff sequences are asserted without sleeping).
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> Millis;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl ManualClock {
    pub fn new(start: Millis) -> Self {
        ManualClock(std::sync::atomic::AtomicI64::new(start))
    }
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }
    pub fn set(&self, at: Millis) {
        self.0.store(at, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}
