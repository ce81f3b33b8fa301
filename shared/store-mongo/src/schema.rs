//! Collections and their indexes. `createIndexes` is idempotent for an identical spec, so
//! [`index_commands`] runs at every connect; a changed spec under an existing name fails with
//! `IndexOptionsConflict` / `IndexKeySpecsConflict` (→ `Incompatible`).

use bson::{Document, doc};

/// The qualification queue: one document per task.
pub const TASKS: &str = "tasks";
/// Task bodies by content hash (`_id`), stored once however often a task is retried.
pub const TASK_PAYLOADS: &str = "task_payloads";
/// Sequence counters (`_id: "tasks"`): task ids that sort in creation order.
pub const COUNTERS: &str = "counters";
/// The source registry (`_id: {partition, sourceUrn}`).
pub const SOURCES: &str = "sources";
/// Polled sources with their polling lease (`_id`: the source id).
pub const INDEXER_SOURCES: &str = "indexer_sources";
/// Indexer cursors (`_id: {source, key}`).
pub const INDEXER_CURSORS: &str = "indexer_cursors";
/// Session memory (`_id: {clientId, sessionId, key}`), expiring by a TTL index.
pub const MEMORY: &str = "memory";

/// The session log (`_id`: a string in append order), expiring by a TTL index.
pub const SESSION_LOG: &str = "session_log";

/// Procedural memory (`_id: {clientId, procedureId}`).
pub const PROCEDURES: &str = "procedures";

/// API tokens (`_id`: the token id), found by the hash of their secret.
pub const TOKENS: &str = "tokens";
/// The audit log of writes and admin actions (`_id`: the event id).
pub const AUDIT: &str = "audit";
/// Claims with their history (`_id`: `{partition}/{id}`).
pub const CLAIMS: &str = "claims";
/// Which claims each evidence chunk backs.
pub const CLAIM_EVIDENCE: &str = "claim_evidence";

/// Knowledge gaps (`_id`: the gap id) with their history (see the `gaps` module).
pub const GAPS: &str = "gaps";

/// The queue's indexes: each one serves one query of the claim protocol (see `queue`).
fn task_indexes() -> Document {
    doc! {
        "createIndexes": TASKS,
        "indexes": [
            // Claiming: the heads (at most about one task per source) in claim order. A
            // claim walks this index (named by the claim's `hint`) from the band's first
            // priority and stops at the first eligible head: O(log n + k), k the heads
            // ahead of it that are waiting for a retry or leased — never the backlog
            // behind the heads.
            {
                "key": {"priority": 1, "posUnset": 1, "queuePosition": 1, "seq": 1},
                "name": "tasks_claim_order",
                "partialFilterExpression": {"head": true},
            },
            // "Is there an older unfinished task of this source?" and the head hand-over.
            {
                "key": {"partition": 1, "sourceUrn": 1, "seq": 1},
                "name": "tasks_source_open",
                "partialFilterExpression": {"open": true},
            },
            // "Is another task of this source running?" (claim verification).
            {
                "key": {"partition": 1, "sourceUrn": 1, "leaseExpiresAt": 1},
                "name": "tasks_source_running",
                "partialFilterExpression": {"state": "processing"},
            },
            // Listings by state in id order; pruning done tasks.
            {"key": {"state": 1, "_id": 1}, "name": "tasks_state"},
            // Payload garbage collection.
            {"key": {"payloadHash": 1}, "name": "tasks_payload"},
            // next_wakeup: earliest retry or lease expiry.
            {
                "key": {"wakeAt": 1},
                "name": "tasks_wake",
                "partialFilterExpression": {"wakeAt": {"$exists": true}},
            },
            // Head hand-overs interrupted by a crash, for the repair sweep.
            {
                "key": {"fixAt": 1},
                "name": "tasks_fix",
                "partialFilterExpression": {"fixAt": {"$exists": true}},
            },
        ],
    }
}

/// The `createIndexes` commands run at connect, one per collection.
pub fn index_commands() -> Vec<Document> {
    vec![
        task_indexes(),
        doc! {
            "createIndexes": TASK_PAYLOADS,
            "indexes": [{"key": {"usedAt": 1}, "name": "task_payloads_used"}],
        },
        doc! {
            "createIndexes": SOURCES,
            "indexes": [
                {"key": {"partition": 1, "sourceUrn": 1}, "name": "sources_urn", "unique": true},
                {"key": {"lastIndexedAt": -1, "sourceUrn": 1}, "name": "sources_recent"},
            ],
        },
        doc! {
            "createIndexes": INDEXER_SOURCES,
            "indexes": [{"key": {"kind": 1, "_id": 1}, "name": "indexer_sources_kind"}],
        },
        doc! {
            "createIndexes": INDEXER_CURSORS,
            "indexes": [{"key": {"clientId": 1, "source": 1, "key": 1}, "name": "indexer_cursors_client_source"}],
        },
        doc! {
            "createIndexes": MEMORY,
            "indexes": [
                {"key": {"clientId": 1, "sessionId": 1, "key": 1}, "name": "memory_session"},
                // The TTL monitor deletes an entry once `expiresAt` (a BSON date) has passed;
                // reads also filter `expiresAt > now`, so expired entries are invisible at once.
                {"key": {"expiresAt": 1}, "name": "memory_ttl", "expireAfterSeconds": 0},
            ],
        },
        doc! {
            "createIndexes": SESSION_LOG,
            "indexes": [
                {"key": {"clientId": 1, "projectId": 1, "timestamp": -1, "_id": -1}, "name": "session_log_order"},
                {"key": {"expiresAt": 1}, "name": "session_log_ttl", "expireAfterSeconds": 0},
            ],
        },
        doc! {
            "createIndexes": TOKENS,
            "indexes": [
                {"key": {"secretHash": 1}, "name": "tokens_hash", "unique": true},
                {"key": {"clientId": 1, "createdAt": 1}, "name": "tokens_client"},
            ],
        },
        doc! {
            "createIndexes": AUDIT,
            "indexes": [
                {"key": {"at": -1, "_id": -1}, "name": "audit_at"},
                {"key": {"clientId": 1, "at": -1, "_id": -1}, "name": "audit_client_at"},
            ],
        },
        doc! {
            "createIndexes": CLAIMS,
            "indexes": [{"key": {"clientId": 1, "updatedAt": -1, "id": 1}, "name": "claims_recent"}],
        },
        doc! {
            "createIndexes": CLAIM_EVIDENCE,
            "indexes": [{"key": {"partition": 1, "chunkId": 1}, "name": "claim_evidence_chunk"}],
        },
        doc! {
            "createIndexes": PROCEDURES,
            // A client's procedures by id: listings, and a match's candidates.
            "indexes": [{"key": {"clientId": 1, "procedureId": 1}, "name": "procedures_client"}],
        },
        doc! {
            "createIndexes": GAPS,
            "indexes": [
                // Claims: a partition's candidates of one acquirer kind in claim order.
                {"key": {"partition": 1, "acquirer": 1, "state": 1, "priority": 1, "positionMissing": 1, "position": 1, "createdAt": 1, "_id": 1}, "name": "gaps_claim"},
                // A question asked again finds its open gap.
                {"key": {"partition": 1, "questionKey": 1, "state": 1}, "name": "gaps_question"},
            ],
        },
    ]
}
