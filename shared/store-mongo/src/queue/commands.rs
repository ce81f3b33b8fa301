//! Command builders (pure: the exact wire commands, tested beside and in tests/wire.rs).

use super::*;

/// `{_id, epoch, state: processing}`: only the current lease holder's writes match.
pub(crate) fn lease_filter(token: &LeaseToken) -> Document {
    doc! {"_id": token.task_id.as_str(), "epoch": token.epoch, "state": "processing"}
}

pub(super) fn update_one(q: Document, u: Document) -> Document {
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
    if let Some(since) = filter.updated_since {
        f.insert("updatedAt", doc! {"$gte": since});
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
