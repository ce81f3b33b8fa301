//! [`TaskQueue`] on MongoDB without multi-document transactions (a standalone server works).
//!
//! # Documents
//!
//! `tasks`: `_id` (`t` + 12-digit sequence: ids sort in creation order), `seq`, `kind`,
//! `partition` (`""` = global), `clientId`/`projectId`/`groupId` (absent when unset),
//! `sourceUrn`, `priority`, `queuePosition` (absent when unset) and `posUnset` (1 when unset,
//! so unset sorts last), `state`, `open` (state is queued/processing/retry_wait), `head`,
//! `retries`, `attempts`, `epoch` (bumped by every claim), `nextRetryAt`, `lastError`,
//! `leaseOwner`, `leaseExpiresAt`, `wakeAt` (the `nextRetryAt` of a retry_wait task, the lease
//! expiry of a processing one: what `next_wakeup` reads), `fixAt` (a head hand-over to finish),
//! `payloadHash`, `createdAt`, `updatedAt` (milliseconds, the caller's clock).
//! `task_payloads`: `_id` = content hash of the payload's JSON text, `body`, `usedAt` (the last
//! enqueue that used it; pruning never deletes a payload used at or after its cutoff).
//! `counters`: `{_id: "tasks", seq}`.
//!
//! # Claiming, and the head invariant
//!
//! Eligibility as in the contract (queued; retry_wait due; processing with an expired lease),
//! plus: never while an *older unfinished* task of the same (partition, sourceUrn) exists.
//! `findAndModify` cannot express "no older document exists", so:
//!
//! 1. **Head marker** (efficiency). Each source's oldest unfinished task carries `head: true`;
//!    a claim is one `findAndModify` over heads only (`tasks_claim_order`, partial on
//!    `head: true`, in claim order), so one source's backlog costs a claim nothing. The marker
//!    is set at enqueue when the source has no unfinished task, and handed over by a
//!    *promotion* (find the oldest open task; clear `head` on newer open tasks; set it on the
//!    oldest) after every change of a source's unfinished set: complete, fail(Permanent),
//!    retry of an error task, an undone claim — and after an enqueue that found an older open
//!    task gone by the time it was inserted.
//! 2. **Verification** (safety). The marker is only a hint: concurrent enqueues, a stale
//!    promotion or an operator's retry of an older error task can leave a stray head for a
//!    moment. So after claiming task T a claimer checks, in one indexed query, that no
//!    unfinished task of T's source is older than T and that no other task of the source holds
//!    a live lease. If one does, the claim is undone exactly (the pre-image returned by
//!    `findAndModify` is restored, epoch included, conditional on the claim's epoch) — with
//!    T's `head` cleared and a promotion when an older task exists — and the claimer moves on.
//!
//! Invariant: a claim is *kept* only if, after its write, no older unfinished task and no other
//! live lease existed in its source. Two claimers of one source each write first and read
//! second, so at least one sees the other and backs off: one source's tasks never run
//! concurrently, and keep their order (for enqueues that are not concurrent with each other).
//! Stricter than the embedded store in one corner: a retried error task older than a running
//! task waits for it instead of running beside it. Two claimers never hold one task:
//! `findAndModify` is atomic and every claim bumps `epoch`; heartbeat, complete, fail and
//! release are conditional on `{_id, epoch, state: processing}`, so a stale token changes
//! nothing.
//!
//! Liveness: the oldest unfinished task of a source always ends up with `head`. An enqueue
//! that inserts without the marker checks afterwards for an older open task and promotes if
//! there is none (write, then read; the task finishing writes, then promotes — one of the two
//! sees the other). A promotion that cleared a head re-checks. Every operation that owes a
//! promotion (complete, fail(Permanent), retry, an undone claim, an enqueue behind an older
//! task) writes `fixAt` on its task in the same write as its change and clears it once the
//! promotion (or the enqueue's check) is done; a crash in between leaves `fixAt`, and claimers
//! sweep tasks whose `fixAt` is older than a minute (every 30 s of their clock), re-running
//! the promotion.

use std::sync::atomic::Ordering;

use async_trait::async_trait;
use bson::{Bson, Document, doc};
use evident_store::queue::*;
use evident_store::{ErrorKind, Result, StoreError};

use crate::MongoStore;
use crate::error::corrupt;
use crate::fields::*;
use crate::schema::{COUNTERS, TASK_PAYLOADS, TASKS};

mod commands;
mod ops;

pub(crate) use commands::*;

/// Candidates a claim tries (and undoes when blocked) before reporting nothing to do.
const CLAIM_ROUNDS: usize = 8;
/// Promotion rounds before leaving the rest to the repair sweep.
const PROMOTE_ROUNDS: usize = 4;
/// How old a `fixAt` must be before the sweep takes it over from its (presumed dead) writer.
pub(crate) const REPAIR_GRACE_MS: i64 = 60_000;
/// How often (by the claimer's clock) a store instance sweeps.
pub(crate) const REPAIR_EVERY_MS: i64 = 30_000;
const REPAIR_BATCH: i64 = 32;
const LIST_MAX: usize = 10_000;
const PAYLOAD_DELETE_BATCH: usize = 1_000;

/// Ids that sort in creation order (as the embedded store's).
pub(crate) fn task_id(seq: i64) -> String {
    format!("t{seq:012}")
}

/// A task document as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskDoc {
    pub record: TaskRecord,
    pub seq: i64,
    pub epoch: i64,
    pub partition: String,
    pub payload_hash: String,
    /// Whether the task carries its source's head marker (read by tests).
    #[allow(dead_code)]
    pub head: bool,
}

impl TaskDoc {
    pub fn from_doc(d: &Document) -> Result<TaskDoc> {
        const WHAT: &str = "task";
        let state = req_str(d, "state", WHAT)?;
        let state = TaskState::parse(&state)
            .ok_or_else(|| corrupt(format!("task: unknown state {state:?}")))?;
        let priority = u8::try_from(req_i64(d, "priority", WHAT)?)
            .map_err(|_| corrupt("task: priority out of range"))?;
        let count = |k: &str| opt_i64(d, k).unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32;
        Ok(TaskDoc {
            record: TaskRecord {
                task_id: req_str(d, "_id", WHAT)?,
                kind: req_str(d, "kind", WHAT)?,
                source_urn: req_str(d, "sourceUrn", WHAT)?,
                scope: scope_of(d),
                state,
                priority,
                queue_position: opt_i64(d, "queuePosition"),
                retries: count("retries"),
                attempts: count("attempts"),
                next_retry_at: opt_i64(d, "nextRetryAt"),
                last_error: opt_str(d, "lastError"),
                lease_owner: opt_str(d, "leaseOwner"),
                lease_expires_at: opt_i64(d, "leaseExpiresAt"),
                created_at: req_i64(d, "createdAt", WHAT)?,
                updated_at: req_i64(d, "updatedAt", WHAT)?,
            },
            seq: req_i64(d, "seq", WHAT)?,
            epoch: opt_i64(d, "epoch").unwrap_or(0),
            partition: req_str(d, "partition", WHAT)?,
            payload_hash: req_str(d, "payloadHash", WHAT)?,
            head: opt_bool(d, "head").unwrap_or(false),
        })
    }

    /// The task as a claim leaves it (what `get` returns afterwards).
    pub fn claimed(&self, worker: &str, lease_ms: i64, now: Millis) -> TaskDoc {
        let mut t = self.clone();
        t.record.state = TaskState::Processing;
        t.record.lease_owner = Some(worker.to_string());
        t.record.lease_expires_at = Some(now.saturating_add(lease_ms));
        t.record.attempts = t.record.attempts.saturating_add(1);
        t.record.next_retry_at = None;
        t.record.updated_at = now;
        t.epoch += 1;
        t
    }

    /// `wakeAt` as stored for this state.
    fn wake_at(&self) -> Option<Millis> {
        match self.record.state {
            TaskState::RetryWait => self.record.next_retry_at,
            TaskState::Processing => self.record.lease_expires_at,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
