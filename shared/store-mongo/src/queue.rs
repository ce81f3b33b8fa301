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

// ---------------------------------------------------------------------------------------
// Command builders (pure: the exact wire commands, tested beside and in tests/wire.rs).

/// `{_id, epoch, state: processing}`: only the current lease holder's writes match.
pub(crate) fn lease_filter(token: &LeaseToken) -> Document {
    doc! {"_id": token.task_id.as_str(), "epoch": token.epoch, "state": "processing"}
}

fn update_one(q: Document, u: Document) -> Document {
    doc! {"update": TASKS, "updates": [{"q": q, "u": u}]}
}

/// Stores a payload once by content hash and marks it used now.
pub(crate) fn payload_upsert_command(hash: &str, body: &str, now: Millis) -> Document {
    doc! {
        "update": TASK_PAYLOADS,
        "updates": [{
            "q": {"_id": hash},
            "u": {"$setOnInsert": {"body": body}, "$max": {"usedAt": now}},
            "upsert": true,
        }],
    }
}

pub(crate) fn payload_get_command(hash: &str) -> Document {
    doc! {"find": TASK_PAYLOADS, "filter": {"_id": hash}, "limit": 1, "singleBatch": true}
}

/// The next task sequence number.
pub(crate) fn next_seq_command() -> Document {
    doc! {
        "findAndModify": COUNTERS,
        "query": {"_id": "tasks"},
        "update": {"$inc": {"seq": 1i64}},
        "upsert": true,
        "new": true,
    }
}

/// The document of a new task.
pub(crate) fn new_task_doc(
    id: &str,
    seq: i64,
    task: &NewTask,
    hash: &str,
    head: bool,
    now: Millis,
) -> Document {
    let mut d = doc! {
        "_id": id,
        "seq": seq,
        "kind": task.kind.as_str(),
        "partition": task.scope.partition(),
    };
    insert_scope(&task.scope, &mut d);
    d.extend(doc! {
        "sourceUrn": task.source_urn.as_str(),
        "priority": i32::from(task.priority),
        "posUnset": 1,
        "state": "queued",
        "open": true,
        "head": head,
        "retries": 0i64,
        "attempts": 0i64,
        "epoch": 0i64,
        "payloadHash": hash,
        "createdAt": now,
        "updatedAt": now,
    });
    if !head {
        // Inserted behind an older task: the enqueue still has to check that the older task
        // did not finish meanwhile (see the module docs); recorded until that check is done.
        d.insert("fixAt", now);
    }
    d
}

pub(crate) fn insert_task_command(task: Document) -> Document {
    doc! {"insert": TASKS, "documents": [task]}
}

/// The oldest unfinished task of a source (`_id`, `seq`, `head`).
pub(crate) fn oldest_open_command(partition: &str, urn: &str) -> Document {
    doc! {
        "find": TASKS,
        "filter": {"partition": partition, "sourceUrn": urn, "open": true},
        "sort": {"seq": 1},
        "projection": {"seq": 1, "head": 1},
        "limit": 1,
        "singleBatch": true,
    }
}

/// Any unfinished task of the source older than `seq`.
pub(crate) fn older_open_command(partition: &str, urn: &str, seq: i64) -> Document {
    doc! {
        "find": TASKS,
        "filter": {"partition": partition, "sourceUrn": urn, "open": true, "seq": {"$lt": seq}},
        "projection": {"_id": 1},
        "limit": 1,
        "singleBatch": true,
    }
}

/// Clears `head` on the source's open tasks newer than `seq` (its oldest).
pub(crate) fn clear_heads_command(partition: &str, urn: &str, seq: i64) -> Document {
    doc! {
        "update": TASKS,
        "updates": [{
            "q": {"partition": partition, "sourceUrn": urn, "open": true, "head": true, "seq": {"$gt": seq}},
            "u": {"$set": {"head": false}},
            "multi": true,
        }],
    }
}

pub(crate) fn set_head_command(id: &str) -> Document {
    update_one(
        doc! {"_id": id, "open": true, "head": {"$ne": true}},
        doc! {"$set": {"head": true}},
    )
}

pub(crate) fn clear_fix_command(id: &str, fix_at: Millis) -> Document {
    update_one(
        doc! {"_id": id, "fixAt": fix_at},
        doc! {"$unset": {"fixAt": ""}},
    )
}

/// Hand-overs left unfinished for a while (their writer presumably died).
pub(crate) fn repair_scan_command(now: Millis) -> Document {
    doc! {
        "find": TASKS,
        "filter": {"fixAt": {"$exists": true, "$lte": now.saturating_sub(REPAIR_GRACE_MS)}},
        "projection": {"partition": 1, "sourceUrn": 1, "fixAt": 1},
        "limit": REPAIR_BATCH,
        "singleBatch": true,
    }
}

/// Which heads a claimer in `band` may take at `now` (see the module docs), minus `skip`.
pub(crate) fn claim_filter(band: PriorityBand, now: Millis, skip: &[String]) -> Document {
    let (min, max) = (i32::from(band.min), i32::from(band.max));
    let mut q = doc! {
        "head": true,
        "priority": {"$gte": min, "$lte": max},
        "$or": [
            {"state": "queued"},
            {"state": "retry_wait", "nextRetryAt": {"$lte": now}},
            {"state": "processing", "leaseExpiresAt": {"$lte": now}},
        ],
    };
    if !skip.is_empty() {
        q.insert("_id", doc! {"$nin": skip.to_vec()});
    }
    q
}

/// Claim order: priority, explicit position (unset last), creation.
pub(crate) fn claim_sort() -> Document {
    doc! {"priority": 1, "posUnset": 1, "queuePosition": 1, "seq": 1}
}

/// Takes the first eligible head; returns its pre-image (to undo exactly if blocked).
pub(crate) fn claim_command(
    worker: &str,
    band: PriorityBand,
    lease_ms: i64,
    now: Millis,
    skip: &[String],
) -> Document {
    let expires = now.saturating_add(lease_ms);
    doc! {
        "findAndModify": TASKS,
        "query": claim_filter(band, now, skip),
        "sort": claim_sort(),
        // The filter's `$or` on state could also be served by `tasks_state` (then a blocking
        // sort of every open task); the claim order must come from its own index.
        "hint": "tasks_claim_order",
        "update": {
            "$set": {
                "state": "processing",
                "leaseOwner": worker,
                "leaseExpiresAt": expires,
                "wakeAt": expires,
                "updatedAt": now,
            },
            "$inc": {"epoch": 1i64, "attempts": 1i64},
            "$unset": {"nextRetryAt": ""},
        },
        "new": false,
    }
}

/// An unfinished task of `t`'s source older than `t`, or another live lease in it.
pub(crate) fn blocker_command(t: &TaskDoc, now: Millis) -> Document {
    let (p, u) = (t.partition.as_str(), t.record.source_urn.as_str());
    doc! {
        "find": TASKS,
        "filter": {"$or": [
            {"partition": p, "sourceUrn": u, "open": true, "seq": {"$lt": t.seq}},
            {
                "partition": p,
                "sourceUrn": u,
                "state": "processing",
                "leaseExpiresAt": {"$gt": now},
                "_id": {"$ne": t.record.task_id.as_str()},
            },
        ]},
        "projection": {"seq": 1},
        "limit": 1,
        "singleBatch": true,
    }
}

/// Restores the pre-image `pre` of a claim that must not stand; with `clear_head`, the task
/// also loses `head` (it is not its source's oldest) and records a hand-over to finish.
pub(crate) fn undo_claim_command(pre: &TaskDoc, clear_head: bool, now: Millis) -> Document {
    let r = &pre.record;
    let mut set = doc! {
        "state": r.state.as_str(),
        "attempts": i64::from(r.attempts),
        "epoch": pre.epoch,
        "updatedAt": r.updated_at,
    };
    let mut unset = Document::new();
    let mut restore = |field: &str, value: Option<Bson>| match value {
        Some(v) => {
            set.insert(field, v);
        }
        None => {
            unset.insert(field, "");
        }
    };
    restore("leaseOwner", r.lease_owner.clone().map(Bson::String));
    restore("leaseExpiresAt", r.lease_expires_at.map(Bson::Int64));
    restore("nextRetryAt", r.next_retry_at.map(Bson::Int64));
    restore("wakeAt", pre.wake_at().map(Bson::Int64));
    if clear_head {
        set.insert("head", false);
        set.insert("fixAt", now);
    }
    update_one(
        doc! {"_id": r.task_id.as_str(), "epoch": pre.epoch + 1, "state": "processing"},
        set_unset(set, unset),
    )
}

pub(crate) fn heartbeat_command(token: &LeaseToken, lease_ms: i64, now: Millis) -> Document {
    let expires = now.saturating_add(lease_ms);
    update_one(
        lease_filter(token),
        doc! {"$set": {"leaseExpiresAt": expires, "wakeAt": expires, "updatedAt": now}},
    )
}

/// Ends a task (`done`, or `error` with the reason): it leaves its source's unfinished set,
/// so it drops `head` and records the hand-over (`fixAt`) in the same write.
pub(crate) fn finish_command(
    token: &LeaseToken,
    state: TaskState,
    last_error: Option<&str>,
    now: Millis,
) -> Document {
    let mut set = doc! {
        "state": state.as_str(),
        "open": false,
        "head": false,
        "updatedAt": now,
        "fixAt": now,
    };
    let mut unset = doc! {"leaseOwner": "", "leaseExpiresAt": "", "wakeAt": ""};
    match last_error {
        Some(e) => {
            set.insert("lastError", e);
        }
        None => {
            unset.insert("lastError", "");
        }
    }
    doc! {
        "findAndModify": TASKS,
        "query": lease_filter(token),
        "update": set_unset(set, unset),
        "new": true,
        "fields": {"partition": 1, "sourceUrn": 1},
    }
}

/// The holder's view of `retries` (the backoff delay depends on it).
pub(crate) fn retries_command(token: &LeaseToken) -> Document {
    doc! {
        "find": TASKS,
        "filter": lease_filter(token),
        "projection": {"retries": 1},
        "limit": 1,
        "singleBatch": true,
    }
}

/// An operational failure: back to claimable at `at`, one more retry counted.
pub(crate) fn retry_wait_command(
    token: &LeaseToken,
    retries: i64,
    at: Millis,
    reason: &str,
    now: Millis,
) -> Document {
    let mut q = lease_filter(token);
    q.insert("retries", retries);
    update_one(
        q,
        doc! {
            "$set": {
                "state": "retry_wait",
                "retries": retries + 1,
                "nextRetryAt": at,
                "wakeAt": at,
                "lastError": reason,
                "updatedAt": now,
            },
            "$unset": {"leaseOwner": "", "leaseExpiresAt": ""},
        },
    )
}

pub(crate) fn release_command(token: &LeaseToken, now: Millis) -> Document {
    update_one(
        lease_filter(token),
        doc! {
            "$set": {"state": "queued", "updatedAt": now},
            "$unset": {"leaseOwner": "", "leaseExpiresAt": "", "wakeAt": ""},
        },
    )
}

pub(crate) fn get_command(id: &str) -> Document {
    doc! {"find": TASKS, "filter": {"_id": id}, "limit": 1, "singleBatch": true}
}

pub(crate) fn list_command(filter: &TaskFilter) -> Document {
    let mut f = Document::new();
    if let Some(s) = filter.state {
        f.insert("state", s.as_str());
    }
    if let Some(c) = &filter.client_id {
        f.insert("clientId", c.as_str());
    }
    if let Some(u) = &filter.source_urn {
        f.insert("sourceUrn", u.as_str());
    }
    if let Some(a) = &filter.after {
        f.insert("_id", doc! {"$gt": a.as_str()});
    }
    doc! {
        "find": TASKS,
        "filter": f,
        "sort": {"_id": 1},
        "limit": filter.limit.clamp(1, LIST_MAX) as i64,
    }
}

/// Makes room at `position`: explicitly placed unfinished tasks there or after move back.
pub(crate) fn shift_positions_command(priority: u8, position: i64, id: &str) -> Document {
    doc! {
        "update": TASKS,
        "updates": [{
            "q": {
                "priority": i32::from(priority),
                "queuePosition": {"$gte": position},
                "_id": {"$ne": id},
                "open": true,
            },
            "u": {"$inc": {"queuePosition": 1i64}},
            "multi": true,
        }],
    }
}

pub(crate) fn place_command(id: &str, position: i64, now: Millis) -> Document {
    update_one(
        doc! {"_id": id},
        doc! {"$set": {"queuePosition": position, "posUnset": 0, "updatedAt": now}},
    )
}

/// An error task back to `queued` (it rejoins its source's unfinished set: hand-over).
pub(crate) fn retry_command(id: &str, now: Millis) -> Document {
    update_one(
        doc! {"_id": id, "state": "error"},
        doc! {
            "$set": {"state": "queued", "open": true, "updatedAt": now, "fixAt": now},
            "$unset": {"nextRetryAt": ""},
        },
    )
}

pub(crate) fn prune_command(before: Millis) -> Document {
    doc! {
        "delete": TASKS,
        "deletes": [{"q": {"state": "done", "updatedAt": {"$lt": before}}, "limit": 0}],
    }
}

/// Payloads unused since `before` that no task references.
pub(crate) fn orphan_payloads_command(before: Millis) -> Document {
    doc! {
        "aggregate": TASK_PAYLOADS,
        "pipeline": [
            {"$match": {"usedAt": {"$lt": before}}},
            {"$lookup": {
                "from": TASKS,
                "let": {"hash": "$_id"},
                "pipeline": [
                    {"$match": {"$expr": {"$eq": ["$payloadHash", "$$hash"]}}},
                    {"$limit": 1},
                    {"$project": {"_id": 1}},
                ],
                "as": "users",
            }},
            {"$match": {"users": {"$size": 0}}},
            {"$project": {"_id": 1}},
        ],
        "cursor": {},
    }
}

/// Deletes orphaned payloads, unless an enqueue used one again meanwhile.
pub(crate) fn delete_payloads_command(hashes: &[String], before: Millis) -> Document {
    doc! {
        "delete": TASK_PAYLOADS,
        "deletes": [{"q": {"_id": {"$in": hashes.to_vec()}, "usedAt": {"$lt": before}}, "limit": 0}],
    }
}

pub(crate) fn counts_command(client: Option<&str>) -> Document {
    let mut pipeline = Vec::new();
    if let Some(c) = client {
        pipeline.push(bson::Bson::Document(doc! {"$match": {"clientId": c}}));
    }
    pipeline.push(bson::Bson::Document(
        doc! {"$group": {"_id": {"state": "$state", "priority": "$priority"}, "n": {"$sum": 1}}},
    ));
    pipeline.push(bson::Bson::Document(
        doc! {"$sort": {"_id.state": 1, "_id.priority": 1}},
    ));
    doc! {
        "aggregate": TASKS,
        "pipeline": pipeline,
        "cursor": {},
    }
}

pub(crate) fn next_wakeup_command(now: Millis) -> Document {
    doc! {
        "find": TASKS,
        "filter": {"wakeAt": {"$exists": true, "$gt": now}},
        "sort": {"wakeAt": 1},
        "projection": {"wakeAt": 1},
        "limit": 1,
        "singleBatch": true,
    }
}

// ---------------------------------------------------------------------------------------
// Operations.

/// What stops a claimed task from running now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blocker {
    /// An older unfinished task of the same source: the claimed task is not its source's head.
    Older,
    /// Another task of the source holds a live lease.
    Running,
}

/// The oldest unfinished task of a source.
struct Oldest {
    id: String,
    seq: i64,
    head: bool,
}

impl MongoStore {
    async fn store_payload(&self, hash: &str, body: &str, now: Millis) -> Result<()> {
        // Two enqueues of one new payload may both insert it; the retry updates `usedAt`.
        self.db()
            .upsert("enqueue", payload_upsert_command(hash, body, now))
            .await
    }

    async fn next_seq(&self) -> Result<i64> {
        // The first enqueue ever, twice at once, races to create the counter.
        let value = self
            .db()
            .upsert_returning("enqueue", next_seq_command())
            .await?;
        req_i64(&value, "seq", "task sequence")
    }

    async fn oldest_open(&self, partition: &str, urn: &str) -> Result<Option<Oldest>> {
        let Some(d) = self
            .db()
            .find_one("queue", oldest_open_command(partition, urn))
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(Oldest {
            id: req_str(&d, "_id", "task")?,
            seq: req_i64(&d, "seq", "task")?,
            head: opt_bool(&d, "head").unwrap_or(false),
        }))
    }

    /// Gives the source's oldest unfinished task the head marker and takes it from newer
    /// ones. Whether it settled (else the repair sweep finishes the job).
    pub(crate) async fn promote(&self, partition: &str, urn: &str) -> Result<bool> {
        for _ in 0..PROMOTE_ROUNDS {
            let Some(oldest) = self.oldest_open(partition, urn).await? else {
                return Ok(true);
            };
            let cleared = self
                .db()
                .write("queue", clear_heads_command(partition, urn, oldest.seq))
                .await?
                .n;
            if !oldest.head {
                self.db()
                    .write("queue", set_head_command(&oldest.id))
                    .await?;
            }
            // A head was taken from a newer task: if `oldest` finished meanwhile, that was the
            // rightful head. Look again.
            if cleared == 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Promotion after a hand-over recorded on task `id` at `fix_at`, then clears the record.
    async fn settle(&self, partition: &str, urn: &str, id: &str, fix_at: Millis) -> Result<()> {
        if self.promote(partition, urn).await? {
            self.db()
                .write("queue", clear_fix_command(id, fix_at))
                .await?;
        }
        Ok(())
    }

    /// Finishes hand-overs whose writer died (see the module docs).
    async fn repair(&self, now: Millis) -> Result<usize> {
        let stale = self
            .db()
            .find_all("queue repair", repair_scan_command(now))
            .await?;
        for d in &stale {
            let id = req_str(d, "_id", "task")?;
            let partition = req_str(d, "partition", "task")?;
            let urn = req_str(d, "sourceUrn", "task")?;
            let fix_at = req_i64(d, "fixAt", "task")?;
            self.settle(&partition, &urn, &id, fix_at).await?;
        }
        Ok(stale.len())
    }

    async fn maybe_repair(&self, now: Millis) {
        let due = self.inner.next_repair.load(Ordering::Relaxed);
        if now < due {
            return;
        }
        self.inner
            .next_repair
            .store(now.saturating_add(REPAIR_EVERY_MS), Ordering::Relaxed);
        match self.repair(now).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                repaired = n,
                "mongo queue: finished interrupted head hand-overs"
            ),
            Err(e) => tracing::warn!(error = %e, "mongo queue: repair sweep failed"),
        }
    }

    async fn blocker(&self, t: &TaskDoc, now: Millis) -> Result<Option<Blocker>> {
        let found = self.db().find_one("claim", blocker_command(t, now)).await?;
        Ok(found.map(|d| {
            if opt_i64(&d, "seq").is_some_and(|s| s < t.seq) {
                Blocker::Older
            } else {
                Blocker::Running
            }
        }))
    }

    async fn payload(&self, hash: &str) -> Result<serde_json::Value> {
        let d = self
            .db()
            .find_one("claim", payload_get_command(hash))
            .await?
            .ok_or_else(|| corrupt(format!("task payload {hash} is missing")))?;
        parse_json(&d, "body", "task payload")
    }

    async fn get_task(&self, id: &str) -> Result<Option<TaskDoc>> {
        self.db()
            .find_one("get task", get_command(id))
            .await?
            .map(|d| TaskDoc::from_doc(&d))
            .transpose()
    }

    /// Sends a lease-guarded single update; whether the lease was current.
    async fn with_lease(&self, op: &str, command: Document) -> Result<bool> {
        Ok(self.db().write(op, command).await?.n > 0)
    }
}

#[async_trait]
impl TaskQueue for MongoStore {
    async fn enqueue(&self, task: NewTask, now: Millis) -> Result<TaskRecord> {
        if task.priority > 9 {
            return Err(StoreError::invalid("priority must be 0..=9"));
        }
        let body = json_text(&task.payload)?;
        let hash = evident_core::hashing::content_hash(&body);
        self.store_payload(&hash, &body, now).await?;
        let seq = self.next_seq().await?;
        let id = task_id(seq);
        let partition = task.scope.partition().to_string();
        let busy = self
            .oldest_open(&partition, &task.source_urn)
            .await?
            .is_some();
        let doc = new_task_doc(&id, seq, &task, &hash, !busy, now);
        let stored = TaskDoc::from_doc(&doc)?;
        self.db().write("enqueue", insert_task_command(doc)).await?;
        // Inserted without the marker because the source was busy: if what kept it busy
        // finished before the insert, its hand-over did not see this task. Look again (the
        // insert recorded `fixAt`, so a crash before this check is swept up).
        if busy {
            let older = self
                .db()
                .find_one(
                    "enqueue",
                    older_open_command(&partition, &task.source_urn, seq),
                )
                .await?;
            let settled = match older {
                Some(_) => true,
                None => self.promote(&partition, &task.source_urn).await?,
            };
            if settled {
                self.db()
                    .write("enqueue", clear_fix_command(&id, now))
                    .await?;
            }
        }
        Ok(stored.record)
    }

    async fn claim(
        &self,
        worker: &str,
        band: PriorityBand,
        lease_ms: i64,
        now: Millis,
    ) -> Result<Option<Claim>> {
        self.maybe_repair(now).await;
        let mut skip: Vec<String> = Vec::new();
        for _ in 0..CLAIM_ROUNDS {
            let Some(pre) = self
                .db()
                .find_and_modify("claim", claim_command(worker, band, lease_ms, now, &skip))
                .await?
            else {
                return Ok(None);
            };
            let pre = TaskDoc::from_doc(&pre)?;
            let claimed = pre.claimed(worker, lease_ms, now);
            match self.blocker(&claimed, now).await? {
                None => {
                    let payload = self.payload(&pre.payload_hash).await?;
                    return Ok(Some(Claim {
                        token: LeaseToken {
                            task_id: claimed.record.task_id.clone(),
                            epoch: claimed.epoch,
                        },
                        task: claimed.record,
                        payload,
                    }));
                }
                Some(Blocker::Older) => {
                    self.db()
                        .write("claim", undo_claim_command(&pre, true, now))
                        .await?;
                    self.settle(
                        &pre.partition,
                        &pre.record.source_urn,
                        &pre.record.task_id,
                        now,
                    )
                    .await?;
                }
                Some(Blocker::Running) => {
                    self.db()
                        .write("claim", undo_claim_command(&pre, false, now))
                        .await?;
                }
            }
            skip.push(pre.record.task_id);
        }
        Ok(None)
    }

    async fn heartbeat(&self, token: &LeaseToken, lease_ms: i64, now: Millis) -> Result<bool> {
        self.with_lease("heartbeat", heartbeat_command(token, lease_ms, now))
            .await
    }

    async fn complete(&self, token: &LeaseToken, now: Millis) -> Result<bool> {
        self.finish("complete", token, TaskState::Done, None, now)
            .await
    }

    async fn fail(
        &self,
        token: &LeaseToken,
        failure: Failure,
        backoff: &BackoffPolicy,
        now: Millis,
    ) -> Result<bool> {
        match failure {
            Failure::Retryable(reason) => {
                let Some(d) = self.db().find_one("fail", retries_command(token)).await? else {
                    return Ok(false);
                };
                let retries = opt_i64(&d, "retries").unwrap_or(0);
                let n = u32::try_from(retries + 1).unwrap_or(u32::MAX);
                let at = now.saturating_add(backoff.delay(&token.task_id, n));
                self.with_lease("fail", retry_wait_command(token, retries, at, &reason, now))
                    .await
            }
            Failure::Permanent(reason) => {
                self.finish("fail", token, TaskState::Error, Some(reason.as_str()), now)
                    .await
            }
        }
    }

    async fn release(&self, token: &LeaseToken, now: Millis) -> Result<bool> {
        self.with_lease("release", release_command(token, now))
            .await
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>> {
        Ok(self.get_task(task_id).await?.map(|t| t.record))
    }

    async fn list(&self, filter: &TaskFilter) -> Result<Vec<TaskRecord>> {
        self.db()
            .find_all("list tasks", list_command(filter))
            .await?
            .iter()
            .map(|d| TaskDoc::from_doc(d).map(|t| t.record))
            .collect()
    }

    async fn reorder(
        &self,
        task_id: &str,
        position: i64,
        now: Millis,
    ) -> Result<Option<TaskRecord>> {
        if position < 1 {
            return Err(StoreError::invalid("position must be ≥ 1"));
        }
        let Some(task) = self.get_task(task_id).await? else {
            return Ok(None);
        };
        self.db()
            .write(
                "reorder",
                shift_positions_command(task.record.priority, position, task_id),
            )
            .await?;
        self.db()
            .write("reorder", place_command(task_id, position, now))
            .await?;
        self.get(task_id).await
    }

    async fn retry(&self, task_id: &str, now: Millis) -> Result<Option<TaskRecord>> {
        let Some(task) = self.get_task(task_id).await? else {
            return Ok(None);
        };
        let refused = |state: TaskState| {
            StoreError::new(
                ErrorKind::Conflict,
                format!(
                    "task {task_id} is {}, only error tasks can be retried",
                    state.as_str()
                ),
            )
        };
        if task.record.state != TaskState::Error {
            return Err(refused(task.record.state));
        }
        if self
            .db()
            .write("retry", retry_command(task_id, now))
            .await?
            .n
            == 0
        {
            // Retried (or deleted) by someone else between the read and the write.
            let state = self
                .get(task_id)
                .await?
                .map(|t| t.state)
                .unwrap_or(TaskState::Error);
            return Err(refused(state));
        }
        self.settle(&task.partition, &task.record.source_urn, task_id, now)
            .await?;
        self.get(task_id).await
    }

    async fn prune_done(&self, before: Millis) -> Result<u64> {
        let pruned = self.db().write("prune", prune_command(before)).await?.n;
        let orphans: Vec<String> = self
            .db()
            .find_all("prune", orphan_payloads_command(before))
            .await?
            .iter()
            .filter_map(|d| opt_str(d, "_id"))
            .collect();
        for batch in orphans.chunks(PAYLOAD_DELETE_BATCH) {
            self.db()
                .write("prune", delete_payloads_command(batch, before))
                .await?;
        }
        Ok(pruned.max(0) as u64)
    }

    async fn counts(&self, client: Option<&str>) -> Result<QueueCounts> {
        let mut out = QueueCounts::default();
        for d in self.db().find_all("counts", counts_command(client)).await? {
            let key = d
                .get_document("_id")
                .map_err(|_| corrupt("counts: group without a key"))?;
            let (Some(state), Some(priority)) = (
                opt_str(key, "state").and_then(|s| TaskState::parse(&s)),
                opt_i64(key, "priority").and_then(|p| u8::try_from(p).ok()),
            ) else {
                continue;
            };
            let n = opt_i64(&d, "n").unwrap_or(0).max(0) as u64;
            out.by_state_priority.push((state, priority, n));
        }
        Ok(out)
    }

    async fn next_wakeup(&self, now: Millis) -> Result<Option<Millis>> {
        Ok(self
            .db()
            .find_one("next wakeup", next_wakeup_command(now))
            .await?
            .and_then(|d| opt_i64(&d, "wakeAt")))
    }
}

impl MongoStore {
    async fn finish(
        &self,
        op: &str,
        token: &LeaseToken,
        state: TaskState,
        reason: Option<&str>,
        now: Millis,
    ) -> Result<bool> {
        let Some(d) = self
            .db()
            .find_and_modify(op, finish_command(token, state, reason, now))
            .await?
        else {
            return Ok(false);
        };
        let partition = req_str(&d, "partition", "task")?;
        let urn = req_str(&d, "sourceUrn", "task")?;
        self.settle(&partition, &urn, &token.task_id, now).await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests;
