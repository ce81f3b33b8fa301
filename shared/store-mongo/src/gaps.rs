//! [`GapStore`] on MongoDB.
//!
//! `gaps`: one document per gap, `_id` the gap id, with the fields claims filter and sort by
//! (`partition`, `state`, `acquirer`, `priority`, `positionMissing`, `position`, `createdAt`,
//! `leaseExpiresAt`, `notBefore`, `questionKey`), the record as JSON text (`record`), its
//! history as JSON texts (`events`) and a revision (`rev`). Every change is one
//! `findAndModify` conditioned on the revision it read (compare-and-set): the record and its
//! new event change together or not at all, and a change that lost a race is refused
//! (`Conflict`) instead of overwriting.
//!
//! A claim reads the partition's acquiring gap (if one, only it may be claimed: back after its
//! lease and backoff), else the first claimable candidates in claim order, and takes one by
//! compare-and-set; it then checks that no other gap of the partition became acquiring
//! meanwhile and, if one did, gives its own back (compare-and-set again), so two claimers
//! racing on one client never both hold one.

use async_trait::async_trait;
use bson::{Bson, Document, doc};
use evident_core::Visibility;
use evident_store::gaps::*;
use evident_store::queue::Millis;
use evident_store::{Result, StoreError};

use crate::MongoStore;
use crate::fields::*;
use crate::schema::GAPS;

const WHAT: &str = "gap";
/// Candidates read per claim; a claim that finds none claimable among them answers `None`
/// (the next call reads them again, by then some have passed their backoff).
const CLAIM_WINDOW: i64 = 32;

fn opt(v: Option<i64>) -> Bson {
    v.map(Bson::Int64).unwrap_or(Bson::Null)
}

/// The stored fields of a record (without `events` and `rev`).
fn fields(rec: &GapRecord) -> Result<Document> {
    let record = serde_json::to_string(rec)
        .map_err(|e| StoreError::invalid(format!("mongo: gap record: {e}")))?;
    Ok(doc! {
        "partition": rec.scope.partition(),
        "state": rec.state.as_str(),
        "acquirer": rec.acquirer.as_str(),
        "priority": rec.priority as i64,
        "positionMissing": rec.position.is_none(),
        "position": opt(rec.position),
        "createdAt": rec.created_at,
        "leaseExpiresAt": opt(rec.lease_expires_at),
        "notBefore": opt(rec.not_before),
        "record": record,
    })
}

fn event_text(e: &GapEvent) -> Result<Bson> {
    serde_json::to_string(e)
        .map(Bson::String)
        .map_err(|e| StoreError::invalid(format!("mongo: gap event: {e}")))
}

fn record_of(d: &Document) -> Result<GapRecord> {
    let text = req_str(d, "record", WHAT)?;
    serde_json::from_str(&text).map_err(|e| crate::error::corrupt(format!("{WHAT}: {e}")))
}

fn events_of(d: &Document) -> Result<Vec<GapEvent>> {
    let Ok(list) = d.get_array("events") else {
        return Ok(Vec::new());
    };
    list.iter()
        .map(|b| {
            let text = b
                .as_str()
                .ok_or_else(|| crate::error::corrupt(format!("{WHAT}: an event is not text")))?;
            serde_json::from_str(text).map_err(|e| crate::error::corrupt(format!("{WHAT}: {e}")))
        })
        .collect()
}

pub(crate) fn get_command(partition: &str, id: &str) -> Document {
    doc! {"find": GAPS, "filter": {"_id": id, "partition": partition}, "limit": 1i64, "singleBatch": true}
}

pub(crate) fn open_question_command(partition: &str, qkey: &str) -> Document {
    doc! {
        "find": GAPS,
        "filter": {"partition": partition, "questionKey": qkey, "state": {"$in": ["open", "acquiring"]}},
        "sort": {"createdAt": 1, "_id": 1},
        "limit": 1i64,
        "singleBatch": true,
    }
}

pub(crate) fn insert_command(rec: &GapRecord, qkey: &str, event: Bson) -> Result<Document> {
    let mut d = fields(rec)?;
    d.insert("_id", rec.gap_id.as_str());
    d.insert("questionKey", qkey);
    d.insert("events", vec![event]);
    d.insert("rev", 1i64);
    Ok(doc! {"insert": GAPS, "documents": [d]})
}

/// The acquiring gaps of a partition (at most one outside a race).
pub(crate) fn acquiring_command(partition: &str) -> Document {
    doc! {
        "find": GAPS,
        "filter": {"partition": partition, "state": "acquiring"},
        "sort": {"createdAt": 1, "_id": 1},
        "limit": 2i64,
        "singleBatch": true,
    }
}

pub(crate) fn candidates_command(partition: &str, acquirer: Acquirer, now: Millis) -> Document {
    let waited = doc! {"$or": [{"notBefore": Bson::Null}, {"notBefore": {"$lte": now}}]};
    doc! {
        "find": GAPS,
        "filter": {
            "partition": partition,
            "acquirer": acquirer.as_str(),
            "$or": [
                {"state": "open", "$and": [waited.clone()]},
                {"state": "acquiring", "leaseExpiresAt": {"$lte": now}, "$and": [waited]},
            ],
        },
        "sort": {"priority": 1, "positionMissing": 1, "position": 1, "createdAt": 1, "_id": 1},
        "limit": CLAIM_WINDOW,
    }
}

pub(crate) fn list_command(partition: &str, state: Option<GapState>, limit: usize) -> Document {
    let mut filter = doc! {"partition": partition};
    if let Some(s) = state {
        filter.insert("state", s.as_str());
    }
    doc! {
        "find": GAPS,
        "filter": filter,
        "sort": {"priority": 1, "positionMissing": 1, "position": 1, "createdAt": 1, "_id": 1},
        "limit": limit.max(1) as i64,
    }
}

/// Compare-and-set: the record (and optionally one more event) if the revision is still `rev`.
pub(crate) fn cas_command(
    rec: &GapRecord,
    rev: i64,
    events: Option<Vec<Bson>>,
) -> Result<Document> {
    let mut set = fields(rec)?;
    set.insert("rev", rev + 1);
    if let Some(events) = events {
        set.insert("events", events);
    }
    Ok(doc! {
        "findAndModify": GAPS,
        "query": {"_id": rec.gap_id.as_str(), "rev": rev},
        "update": {"$set": set},
        "new": true,
    })
}

impl MongoStore {
    async fn gap_doc(&self, partition: &str, id: &str) -> Result<Option<Document>> {
        self.db()
            .find_one("gap get", get_command(partition, id))
            .await
    }

    /// Writes `after` with `event` appended, if `doc` is still current.
    async fn gap_cas(
        &self,
        doc: &Document,
        after: &GapRecord,
        event: &GapEvent,
    ) -> Result<Option<GapRecord>> {
        let rev = req_i64(doc, "rev", WHAT)?;
        let mut events: Vec<Bson> = doc
            .get_array("events")
            .map(|a| a.to_vec())
            .unwrap_or_default();
        events.push(event_text(event)?);
        let written = self
            .db()
            .find_and_modify("gap change", cas_command(after, rev, Some(events))?)
            .await?;
        written.as_ref().map(record_of).transpose()
    }

    async fn acquiring(&self, partition: &str) -> Result<Vec<Document>> {
        self.db()
            .find_all("gap acquiring", acquiring_command(partition))
            .await
    }
}

#[async_trait]
impl GapStore for MongoStore {
    async fn create_gaps(&self, gaps: Vec<NewGap>, now: Millis) -> Result<Vec<GapRecord>> {
        let mut out = Vec::with_capacity(gaps.len());
        for gap in gaps {
            let partition = gap.scope.partition().to_string();
            let qkey = question_key(&gap.scope, &gap.question);
            if let Some(d) = self
                .db()
                .find_one("gap question", open_question_command(&partition, &qkey))
                .await?
            {
                out.push(record_of(&d)?);
                continue;
            }
            let rec = created_record(&gap, new_gap_id(now), now);
            let event = event_text(&created_event(&gap, &rec))?;
            self.db()
                .write("gap create", insert_command(&rec, &qkey, event)?)
                .await?;
            out.push(rec);
        }
        Ok(out)
    }

    async fn get_gap(&self, partition: &str, gap_id: &str) -> Result<Option<GapRecord>> {
        self.gap_doc(partition, gap_id)
            .await?
            .as_ref()
            .map(record_of)
            .transpose()
    }

    async fn gap_history(&self, partition: &str, gap_id: &str) -> Result<Vec<GapEvent>> {
        match self.gap_doc(partition, gap_id).await? {
            Some(d) => events_of(&d),
            None => Ok(Vec::new()),
        }
    }

    async fn list_gaps(
        &self,
        partition: &str,
        vis: &Visibility,
        state: Option<GapState>,
        limit: usize,
    ) -> Result<Vec<GapRecord>> {
        let docs = self
            .db()
            .find_all("gap list", list_command(partition, state, limit))
            .await?;
        let mut out = Vec::new();
        for d in &docs {
            let gap = record_of(d)?;
            if vis.admits(&gap.scope) {
                out.push(gap);
            }
        }
        Ok(out)
    }

    async fn claim_gap(
        &self,
        partition: &str,
        vis: &Visibility,
        acquirer: Acquirer,
        owner: &str,
        lease_ms: i64,
        now: Millis,
    ) -> Result<Option<GapClaim>> {
        // A client's acquisition in progress (live, or waiting out its backoff) is taken back
        // before any other gap of the client: one at a time, in order.
        let acquiring = self.acquiring(partition).await?;
        let candidates = match acquiring.first() {
            Some(d) => vec![d.clone()],
            None => {
                self.db()
                    .find_all(
                        "gap candidates",
                        candidates_command(partition, acquirer, now),
                    )
                    .await?
            }
        };
        for d in &candidates {
            let gap = record_of(d)?;
            if gap.acquirer != acquirer || !gap.claimable(now) || !vis.admits(&gap.scope) {
                continue;
            }
            let after = claimed(gap.clone(), owner, lease_ms, now);
            let seq = events_of(d)?.len() as i64 + 1;
            let event = claim_event(&gap, &after, seq, now);
            let Some(taken) = self.gap_cas(d, &after, &event).await? else {
                continue; // another claimer changed it first
            };
            // Another gap of the client was claimed meanwhile: give ours back, as it was.
            let others = self.acquiring(partition).await?;
            if others
                .iter()
                .any(|o| opt_str(o, "_id").as_deref() != Some(taken.gap_id.as_str()))
            {
                let rev = req_i64(d, "rev", WHAT)? + 1;
                let original: Vec<Bson> = d
                    .get_array("events")
                    .map(|a| a.to_vec())
                    .unwrap_or_default();
                self.db()
                    .find_and_modify("gap undo claim", cas_command(&gap, rev, Some(original))?)
                    .await?;
                return Ok(None);
            }
            return Ok(Some(GapClaim {
                epoch: taken.epoch,
                lease_expires_at: taken.lease_expires_at.unwrap_or(now + lease_ms),
                gap: taken,
            }));
        }
        Ok(None)
    }

    async fn advance_gap(
        &self,
        partition: &str,
        gap_id: &str,
        change: GapMove,
        now: Millis,
    ) -> Result<Option<GapRecord>> {
        let Some(d) = self.gap_doc(partition, gap_id).await? else {
            return Ok(None);
        };
        let gap = record_of(&d)?;
        check_move(&gap, &change).map_err(refused)?;
        let seq = events_of(&d)?.len() as i64 + 1;
        let event = move_event(&gap, &change, seq, now);
        let after = moved(gap, &change, now);
        let written = self.gap_cas(&d, &after, &event).await?;
        expect_written(written, gap_id).map(Some)
    }

    async fn reorder_gap(
        &self,
        partition: &str,
        gap_id: &str,
        priority: u8,
        position: Option<i64>,
        actor: &str,
        now: Millis,
    ) -> Result<Option<GapRecord>> {
        evident_store::gaps::check_priority(priority)?;
        let Some(d) = self.gap_doc(partition, gap_id).await? else {
            return Ok(None);
        };
        let mut gap = record_of(&d)?;
        gap.priority = priority;
        gap.position = position;
        gap.updated_at = now;
        let seq = events_of(&d)?.len() as i64 + 1;
        let event = reorder_event(&gap, actor, seq, now);
        let written = self.gap_cas(&d, &gap, &event).await?;
        expect_written(written, gap_id).map(Some)
    }
}

/// A compare-and-set that matched nothing lost a race: refused, to be retried by the caller.
fn expect_written(written: Option<GapRecord>, gap_id: &str) -> Result<GapRecord> {
    written.ok_or_else(|| refused(format!("gap {gap_id} changed meanwhile; read it and retry")))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::fake::FakeMongo;
    use evident_core::Scope;

    fn gap(question: &str, priority: u8) -> NewGap {
        NewGap {
            scope: Scope::client("c1"),
            question: question.into(),
            context: None,
            priority,
            about: Vec::new(),
            acquirer: Acquirer::Agent,
            actor: "t".into(),
            phase: GapPhase::Detection,
        }
    }

    /// The whole lifecycle on the in-memory fake: order, one lease per client, expiry and
    /// re-claim with a new epoch, the stale holder refused, history appended.
    #[tokio::test]
    async fn claims_expire_and_moves_are_compare_and_set() {
        let store = MongoStore::new(Arc::new(FakeMongo::new()), "evident");
        let vis = Visibility::of(Scope::client("c1"));
        let made = store
            .create_gaps(vec![gap("b", 5), gap("a", 1)], 1_000)
            .await
            .expect("create");
        let again = store
            .create_gaps(vec![gap("B ", 5)], 1_001)
            .await
            .expect("again");
        assert_eq!(again[0].gap_id, made[0].gap_id);
        let first = store
            .claim_gap("c1", &vis, Acquirer::Agent, "w1", 100, 2_000)
            .await
            .expect("claim")
            .expect("gap");
        assert_eq!(first.gap.question, "a");
        assert!(
            store
                .claim_gap("c1", &vis, Acquirer::Agent, "w2", 100, 2_001)
                .await
                .expect("claim")
                .is_none()
        );
        let later = 2_100 + gap_backoff(1);
        let second = store
            .claim_gap("c1", &vis, Acquirer::Agent, "w2", 100, later)
            .await
            .expect("claim")
            .expect("again");
        assert_eq!(
            (second.gap.gap_id.as_str(), second.epoch),
            (first.gap.gap_id.as_str(), 2)
        );
        let change = |epoch| GapMove {
            to: GapState::Acquired,
            epoch: Some(epoch),
            actor: "w".into(),
            kind: "findings".into(),
            phase: Some(GapPhase::Acquisition),
            detail: serde_json::Value::Null,
            failure: None,
            findings_urn: Some("gap-findings:a".into()),
            not_before: None,
        };
        assert!(
            store
                .advance_gap("c1", &first.gap.gap_id, change(1), later)
                .await
                .is_err()
        );
        let done = store
            .advance_gap("c1", &first.gap.gap_id, change(2), later)
            .await
            .expect("advance")
            .expect("known");
        assert_eq!(done.state, GapState::Acquired);
        let kinds: Vec<String> = store
            .gap_history("c1", &first.gap.gap_id)
            .await
            .expect("history")
            .into_iter()
            .map(|e| e.kind)
            .collect();
        assert_eq!(kinds, ["created", "claimed", "claimed", "findings"]);
        let listed = store
            .list_gaps("c1", &vis, Some(GapState::Open), 10)
            .await
            .expect("list");
        assert_eq!(listed.len(), 1);
    }
}
