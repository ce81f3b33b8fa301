//! [`ClaimStore`] on MongoDB.
//!
//! `claims`: one document per claim, `_id` `{partition}/{id}`, with the filter fields
//! (`clientId`, `projectId`, `groupId` as for every scoped document, `status`, `stale`,
//! `confidence`, `actorId`, `sessionId`, `subjectType`, `subjectId`, `domain`, `createdAt`,
//! `updatedAt`, `version`), the claim as JSON text (`doc`) and its events as JSON texts
//! (`events`). Keeping the history inside the claim's document makes "new state + event" one
//! single-document write, atomic without a transaction: `update` is a `findAndModify` on
//! `{_id, version: expected}` that sets the state and the events array (read, appended,
//! written back under the version check).
//!
//! `claim_evidence`: `{partition, chunkId, claimId}` rows, `_id` joining the three, upserted
//! before the claim is written: the index may name a claim whose write then failed, never
//! miss one (readers check the claim's own evidence).

use bson::{Bson, Document, doc};
use evident_core::Visibility;
use evident_core::claims::{Claim, ClaimEvent, ClaimStatus, LOW_CONFIDENCE};
use evident_store::claims::{ClaimFilter, ClaimStore};
use evident_store::{ErrorKind, Result, StoreError};

use crate::MongoStore;
use crate::fields::*;
use crate::schema::{CLAIM_EVIDENCE, CLAIMS};
use crate::sources::visibility_filter;

fn claim_key(partition: &str, id: &str) -> String {
    format!("{partition}/{id}")
}

fn text<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| StoreError::invalid(format!("claim as JSON: {e}")))
}

fn opt(v: Option<&str>) -> Bson {
    v.map(|s| Bson::String(s.to_string())).unwrap_or(Bson::Null)
}

/// The fields of a claim's document but its `_id` and events.
pub(crate) fn fields(c: &Claim) -> Result<Document> {
    let mut d = doc! {
        "partition": c.scope.partition(),
        "id": c.id.as_str(),
        "status": c.status.as_str(),
        "stale": c.evidence_stale,
        "confidence": c.confidence,
        "actorId": c.actor.id.as_str(),
        "sessionId": opt(c.session_id.as_deref()),
        "subjectType": opt(c.subject.as_ref().map(|s| s.scope_type.as_str())),
        "subjectId": opt(c.subject.as_ref().map(|s| s.scope_id.as_str())),
        "domain": opt(c.domain.as_deref()),
        "createdAt": c.created_at,
        "updatedAt": c.updated_at,
        "version": c.version as i64,
        "doc": text(c)?,
    };
    // Absent scope fields are stored as null, which the visibility filter matches.
    d.insert("clientId", opt(c.scope.client_id.as_deref()));
    d.insert("projectId", opt(c.scope.project_id.as_deref()));
    d.insert("groupId", opt(c.scope.group_id.as_deref()));
    Ok(d)
}

pub(crate) fn insert_command(c: &Claim, e: &ClaimEvent) -> Result<Document> {
    let mut d = fields(c)?;
    d.insert("_id", claim_key(c.scope.partition(), &c.id));
    d.insert("events", vec![Bson::String(text(e)?)]);
    Ok(doc! {"insert": CLAIMS, "documents": [d]})
}

pub(crate) fn update_command(c: &Claim, expected: u64, events: Vec<String>) -> Result<Document> {
    let mut set = fields(c)?;
    set.insert(
        "events",
        events.into_iter().map(Bson::String).collect::<Vec<_>>(),
    );
    Ok(doc! {
        "findAndModify": CLAIMS,
        "query": {"_id": claim_key(c.scope.partition(), &c.id), "version": expected as i64},
        "update": {"$set": set},
        "new": true,
    })
}

pub(crate) fn index_command(c: &Claim) -> Option<Document> {
    let p = c.scope.partition();
    let updates: Vec<Document> = c
        .evidence_chunks()
        .map(|chunk| {
            let id = format!("{p}\u{1f}{chunk}\u{1f}{}", c.id);
            doc! {
                "q": {"_id": id.as_str()},
                "u": {"$set": {"partition": p, "chunkId": chunk, "claimId": c.id.as_str()}},
                "upsert": true,
            }
        })
        .collect();
    (!updates.is_empty()).then(|| doc! {"update": CLAIM_EVIDENCE, "updates": updates})
}

pub(crate) fn get_command(partition: &str, ids: &[String]) -> Document {
    let keys: Vec<Bson> = ids
        .iter()
        .map(|id| Bson::String(claim_key(partition, id)))
        .collect();
    doc! {"find": CLAIMS, "filter": {"_id": {"$in": keys}}, "projection": {"doc": 1, "id": 1}}
}

/// A claim's events (one document, by id).
pub(crate) fn events_command(partition: &str, id: &str) -> Document {
    doc! {
        "find": CLAIMS,
        "filter": {"_id": claim_key(partition, id)},
        "projection": {"events": 1},
        "limit": 1,
        "singleBatch": true,
    }
}

pub(crate) fn citing_command(partition: &str, chunks: &[String]) -> Document {
    doc! {
        "find": CLAIM_EVIDENCE,
        "filter": {"partition": partition, "chunkId": {"$in": chunks.to_vec()}},
        "projection": {"claimId": 1},
    }
}

pub(crate) fn list_command(vis: &Visibility, f: &ClaimFilter, limit: usize) -> Document {
    let mut and = vec![visibility_filter(vis)];
    if !f.statuses.is_empty() {
        let s: Vec<&str> = f.statuses.iter().map(|s| s.as_str()).collect();
        and.push(doc! {"status": {"$in": s}});
    }
    for (field, v) in [
        ("actorId", &f.actor_id),
        ("sessionId", &f.session_id),
        ("domain", &f.domain),
    ] {
        if let Some(v) = v {
            and.push(doc! {field: v.as_str()});
        }
    }
    if let Some((t, id)) = &f.subject {
        and.push(doc! {"subjectType": t.as_str(), "subjectId": id.as_str()});
    }
    if let Some(cutoff) = f.attention_before {
        and.push(doc! {"status": {"$ne": ClaimStatus::Superseded.as_str()}});
        and.push(doc! {"$or": [
            {"status": ClaimStatus::Disputed.as_str()},
            {"stale": true},
            {"confidence": {"$lt": LOW_CONFIDENCE}, "status": {"$ne": ClaimStatus::Verified.as_str()}, "createdAt": {"$lte": cutoff}},
        ]});
    }
    doc! {
        "find": CLAIMS,
        "filter": {"$and": and},
        "sort": {"updatedAt": -1, "id": 1},
        "limit": limit.min(i64::MAX as usize) as i64,
        "projection": {"doc": 1},
    }
}

fn claim_of(d: &Document) -> Result<Claim> {
    let doc = req_str(d, "doc", "claim")?;
    serde_json::from_str(&doc).map_err(|e| StoreError::corrupt(format!("stored claim: {e}")))
}

fn events_of(d: &Document) -> Result<Vec<String>> {
    let events = d
        .get_array("events")
        .map_err(|_| StoreError::corrupt("stored claim without events"))?;
    events
        .iter()
        .map(|e| {
            e.as_str()
                .map(str::to_string)
                .ok_or_else(|| StoreError::corrupt("stored claim event is not text"))
        })
        .collect()
}

impl MongoStore {
    async fn index_evidence(&self, c: &Claim) -> Result<()> {
        if let Some(cmd) = index_command(c) {
            self.db().write("claim evidence index", cmd).await?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl ClaimStore for MongoStore {
    async fn create_claim(&self, claim: &Claim, event: &ClaimEvent) -> Result<()> {
        self.index_evidence(claim).await?;
        let dup = [
            crate::codes::DUPLICATE_KEY,
            crate::codes::DUPLICATE_KEY_LEGACY,
        ];
        let s = self
            .db()
            .write_allowing("claim create", insert_command(claim, event)?, &dup)
            .await?;
        if dup.iter().any(|c| s.has_error(*c)) {
            return Err(StoreError::new(
                ErrorKind::Conflict,
                format!("claim `{}` exists", claim.id),
            ));
        }
        Ok(())
    }

    async fn update_claim(&self, claim: &Claim, expected: u64, event: &ClaimEvent) -> Result<bool> {
        let partition = claim.scope.partition();
        let Some(stored) = self
            .db()
            .find_one("claim events", events_command(partition, &claim.id))
            .await?
        else {
            return Ok(false);
        };
        let mut events = events_of(&stored)?;
        if events.len() as u64 != expected {
            return Ok(false);
        }
        events.push(text(event)?);
        self.index_evidence(claim).await?;
        Ok(self
            .db()
            .find_and_modify("claim update", update_command(claim, expected, events)?)
            .await?
            .is_some())
    }

    async fn get_claims(&self, partition: &str, ids: &[String]) -> Result<Vec<Claim>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let found: Vec<Claim> = self
            .db()
            .find_decoded("claims get", get_command(partition, ids), claim_of)
            .await?;
        // In the order asked for.
        Ok(ids
            .iter()
            .filter_map(|id| found.iter().find(|c| &c.id == id).cloned())
            .collect())
    }

    async fn claim_history(&self, partition: &str, id: &str) -> Result<Vec<ClaimEvent>> {
        let Some(d) = self
            .db()
            .find_one("claim history", events_command(partition, id))
            .await?
        else {
            return Ok(Vec::new());
        };
        events_of(&d)?
            .iter()
            .map(|e| {
                serde_json::from_str(e)
                    .map_err(|e| StoreError::corrupt(format!("stored claim event: {e}")))
            })
            .collect()
    }

    async fn claims_citing(&self, partition: &str, chunk_ids: &[String]) -> Result<Vec<String>> {
        if chunk_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = std::collections::BTreeSet::new();
        for part in chunk_ids.chunks(500) {
            for d in self
                .db()
                .find_all("claims citing", citing_command(partition, part))
                .await?
            {
                out.insert(req_str(&d, "claimId", "claim evidence")?);
            }
        }
        Ok(out.into_iter().collect())
    }

    async fn list_claims(
        &self,
        vis: &Visibility,
        filter: &ClaimFilter,
        limit: usize,
    ) -> Result<Vec<Claim>> {
        self.db()
            .find_decoded("claims list", list_command(vis, filter, limit), claim_of)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeMongo;
    use evident_core::Scope;
    use evident_core::claims::{Actor, Transition};
    use std::sync::Arc;

    fn claim(id: &str, scope: Scope) -> Claim {
        let mut c = evident_store::conformance::claim(id, scope, "k1", 10);
        c.text = "the retry cap is five minutes".into();
        c.actor.id = "a".into();
        c.session_id = None;
        c
    }

    #[tokio::test]
    async fn one_document_holds_a_claim_and_its_history() {
        let store = MongoStore::new(Arc::new(FakeMongo::new()), "evident");
        let c = claim("c1", Scope::client("acme"));
        store
            .create_claim(&c, &ClaimEvent::learned(&c))
            .await
            .expect("create");
        let again = store.create_claim(&c, &ClaimEvent::learned(&c)).await;
        assert_eq!(again.map_err(|e| e.kind), Err(ErrorKind::Conflict));
        let t = Transition {
            to: ClaimStatus::Verified,
            actor: Actor::system(),
            reason: None,
            evidence: vec![],
            by: None,
        };
        let e = c.transition(t, 20).expect("event");
        let mut after = c.clone();
        after.apply(&e).expect("apply");
        assert!(store.update_claim(&after, 1, &e).await.expect("update"));
        assert!(
            !store
                .update_claim(&after, 1, &e)
                .await
                .expect("stale version"),
            "lost race"
        );
        let history = store.claim_history("acme", "c1").await.expect("history");
        assert_eq!(
            evident_core::claims::replay(&history).expect("replay"),
            after.state()
        );
        assert_eq!(
            store
                .get_claims("acme", &["c1".into(), "zz".into()])
                .await
                .expect("get"),
            vec![after]
        );
        assert_eq!(
            store
                .claims_citing("acme", &["k1".into()])
                .await
                .expect("citing"),
            ["c1"]
        );
        assert!(
            store
                .claims_citing("other", &["k1".into()])
                .await
                .expect("citing")
                .is_empty()
        );
        let p = claim("c2", Scope::client("acme").with_project("p1"));
        store
            .create_claim(&p, &ClaimEvent::learned(&p))
            .await
            .expect("create");
        let listed = |vis: Visibility| {
            let store = store.clone();
            async move {
                store
                    .list_claims(&vis, &ClaimFilter::default(), 10)
                    .await
                    .expect("list")
                    .into_iter()
                    .map(|c| c.id)
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(listed(Visibility::of(Scope::client("acme"))).await, ["c1"]);
        assert_eq!(
            listed(Visibility::of(Scope::client("acme").with_project("p1"))).await,
            ["c1", "c2"]
        );
        assert!(
            listed(Visibility::of(Scope::client("other")))
                .await
                .is_empty()
        );
    }
}
