//! [`ProcedureStore`] on MongoDB.
//!
//! `procedures`: `_id: {clientId, procedureId}`, the same two fields again (for the
//! `procedures_client` index), `projectId` (`""` for the client's own), `trigger`, `steps`
//! (JSON text), `source`, `successCount`, `failureCount`, `usageCount`, `lastUsedAt`
//! (absent until the first outcome), `createdAt`, `updatedAt` (milliseconds) and `vector`
//! (the trigger's unit-length embedding, an array of doubles).
//!
//! - `put_procedure` is one `findAndModify` with an update pipeline (upsert) whose query pins
//!   the scope (`projectId`): counters and `createdAt` of an existing document stay
//!   (`$ifNull`), and an id stored in another scope makes the upsert's insert collide with
//!   its `_id` — a duplicate key (sent once more, as two first saves racing would collide
//!   once), reported as `Conflict`, nothing written. Strings go in as `$literal`.
//! - `record_procedure_outcome` is one `findAndModify` with `$inc` (uses, successes or
//!   failures) and `$max` (`lastUsedAt`): atomic on the server, so concurrent outcomes are
//!   never lost.
//! - `nearest_procedures` reads the reader's procedures (`find` on the `procedures_client`
//!   index) and computes the cosines in process: O(procedures of the client) per match,
//!   fine for the hundreds a client keeps (the embedded store scans in memory).

use async_trait::async_trait;
use bson::{Bson, Document, doc};
use evident_store::procedures::{
    NearestQuery, Procedure, ProcedureSource, ProcedureStore, ScoredProcedure, cosine, normalised,
    select_nearest,
};
use evident_store::queue::Millis;
use evident_store::{Result, StoreError};

use crate::MongoStore;
use crate::fields::*;
use crate::schema::PROCEDURES;

pub(crate) fn procedure_id(client: &str, id: &str) -> Document {
    doc! {"clientId": client, "procedureId": id}
}

fn projects(project: Option<&str>) -> Bson {
    let mut visible = vec![Bson::String(String::new())];
    if let Some(p) = project {
        visible.push(Bson::String(p.to_string()));
    }
    doc! {"$in": visible}.into()
}

pub(crate) fn put_command(p: &Procedure, steps: &str, vector: &[f32]) -> Document {
    let vector: Vec<Bson> = vector.iter().map(|x| Bson::Double(f64::from(*x))).collect();
    doc! {
        "findAndModify": PROCEDURES,
        "query": {
            "_id": procedure_id(&p.client_id, &p.id),
            "projectId": p.project_id.as_deref().unwrap_or(""),
        },
        "update": [{"$set": {
            "clientId": {"$literal": p.client_id.as_str()},
            "procedureId": {"$literal": p.id.as_str()},
            "projectId": {"$literal": p.project_id.as_deref().unwrap_or("")},
            "trigger": {"$literal": p.trigger_pattern.as_str()},
            "steps": {"$literal": steps},
            "source": {"$literal": p.source.as_str()},
            "successCount": {"$ifNull": ["$successCount", {"$literal": 0i64}]},
            "failureCount": {"$ifNull": ["$failureCount", {"$literal": 0i64}]},
            "usageCount": {"$ifNull": ["$usageCount", {"$literal": 0i64}]},
            "createdAt": {"$ifNull": ["$createdAt", {"$literal": p.created_at}]},
            "updatedAt": {"$literal": p.updated_at},
            "vector": {"$literal": vector},
        }}],
        "upsert": true,
        "new": true,
        "fields": {"vector": 0},
    }
}

pub(crate) fn get_command(client: &str, project: Option<&str>, id: &str) -> Document {
    doc! {
        "find": PROCEDURES,
        "filter": {"_id": procedure_id(client, id), "projectId": projects(project)},
        "projection": {"vector": 0},
        "limit": 1,
        "singleBatch": true,
    }
}

pub(crate) fn list_command(
    client: &str,
    project: Option<&str>,
    after: Option<&str>,
    limit: usize,
) -> Document {
    doc! {
        "find": PROCEDURES,
        "filter": {
            "clientId": client,
            "projectId": projects(project),
            "procedureId": {"$gt": after.unwrap_or("")},
        },
        "sort": {"clientId": 1, "procedureId": 1},
        "projection": {"vector": 0},
        "limit": limit as i64,
    }
}

pub(crate) fn delete_command(client: &str, project: Option<&str>, id: &str) -> Document {
    doc! {"delete": PROCEDURES, "deletes": [{
        "q": {"_id": procedure_id(client, id), "projectId": project.unwrap_or("")},
        "limit": 1,
    }]}
}

pub(crate) fn outcome_command(
    client: &str,
    project: Option<&str>,
    id: &str,
    success: bool,
    now: Millis,
) -> Document {
    let (s, f) = if success { (1i64, 0i64) } else { (0, 1) };
    doc! {
        "findAndModify": PROCEDURES,
        "query": {"_id": procedure_id(client, id), "projectId": projects(project)},
        "update": {
            "$inc": {"usageCount": 1i64, "successCount": s, "failureCount": f},
            "$max": {"lastUsedAt": now},
        },
        "new": true,
        "fields": {"vector": 0},
    }
}

pub(crate) fn candidates_command(client: &str, project: Option<&str>) -> Document {
    doc! {
        "find": PROCEDURES,
        "filter": {"clientId": client, "projectId": projects(project)},
    }
}

fn count(d: &Document, key: &str, what: &str) -> Result<u64> {
    Ok(req_i64(d, key, what)?.max(0) as u64)
}

fn procedure_from_doc(d: &Document) -> Result<Procedure> {
    const WHAT: &str = "procedure";
    let source = req_str(d, "source", WHAT)?;
    let project = req_str(d, "projectId", WHAT)?;
    let steps = req_str(d, "steps", WHAT)?;
    Ok(Procedure {
        id: req_str(d, "procedureId", WHAT)?,
        client_id: req_str(d, "clientId", WHAT)?,
        project_id: (!project.is_empty()).then_some(project),
        trigger_pattern: req_str(d, "trigger", WHAT)?,
        steps: serde_json::from_str(&steps)
            .map_err(|e| StoreError::corrupt(format!("{WHAT}: stored steps: {e}")))?,
        source: ProcedureSource::parse(&source)
            .ok_or_else(|| StoreError::corrupt(format!("{WHAT}: source `{source}`")))?,
        success_count: count(d, "successCount", WHAT)?,
        failure_count: count(d, "failureCount", WHAT)?,
        usage_count: count(d, "usageCount", WHAT)?,
        last_used_at: opt_i64(d, "lastUsedAt"),
        created_at: req_i64(d, "createdAt", WHAT)?,
        updated_at: req_i64(d, "updatedAt", WHAT)?,
    })
}

fn vector_of(d: &Document) -> Vec<f32> {
    d.get_array("vector")
        .map(|a| a.iter().map(|x| numeric(x).unwrap_or(0.0) as f32).collect())
        .unwrap_or_default()
}

#[async_trait]
impl ProcedureStore for MongoStore {
    async fn put_procedure(&self, p: Procedure, vector: Vec<f32>) -> Result<Procedure> {
        let steps = serde_json::to_string(&p.steps)
            .map_err(|e| StoreError::invalid(format!("mongo: procedure steps: {e}")))?;
        // Two first saves of one new procedure race: the loser's insert hits the winner's
        // `_id` and, sent again, updates it. A duplicate key on the second attempt too is
        // the scope guard: the id lives in another scope.
        let command = put_command(&p, &steps, &normalised(&vector));
        match self.db().upsert_returning("procedure put", command).await {
            Ok(d) => procedure_from_doc(&d),
            Err(e) if e.kind == evident_store::ErrorKind::Conflict => Err(StoreError::new(
                evident_store::ErrorKind::Conflict,
                format!(
                    "procedure {} exists in another scope of client {}",
                    p.id, p.client_id
                ),
            )),
            Err(e) => Err(e),
        }
    }

    async fn get_procedure(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
    ) -> Result<Option<Procedure>> {
        self.db()
            .find_one("procedure get", get_command(client, project, id))
            .await?
            .map(|d| procedure_from_doc(&d))
            .transpose()
    }

    async fn list_procedures(
        &self,
        client: &str,
        project: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Procedure>> {
        self.db()
            .find_decoded(
                "procedure list",
                list_command(client, project, after, limit),
                procedure_from_doc,
            )
            .await
    }

    async fn delete_procedure(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
    ) -> Result<bool> {
        Ok(self
            .db()
            .write("procedure delete", delete_command(client, project, id))
            .await?
            .n
            > 0)
    }

    async fn record_procedure_outcome(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
        success: bool,
        now: Millis,
    ) -> Result<Option<Procedure>> {
        self.db()
            .find_and_modify(
                "procedure outcome",
                outcome_command(client, project, id, success, now),
            )
            .await?
            .map(|d| procedure_from_doc(&d))
            .transpose()
    }

    async fn nearest_procedures(&self, q: NearestQuery<'_>) -> Result<Vec<ScoredProcedure>> {
        let docs = self
            .db()
            .find_all(
                "procedure candidates",
                candidates_command(q.client, q.project),
            )
            .await?;
        let scored = docs
            .iter()
            .map(|d| {
                Ok(ScoredProcedure {
                    cosine: cosine(&vector_of(d), q.vector),
                    procedure: procedure_from_doc(d)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(select_nearest(scored, q.min_cosine, q.max, q.closest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeMongo;
    use evident_store::procedures::ProcedureStep;
    use std::sync::Arc;

    fn procedure(id: &str, project: Option<&str>) -> Procedure {
        Procedure {
            id: id.into(),
            client_id: "$c1".into(),
            project_id: project.map(str::to_string),
            trigger_pattern: "$bug report".into(),
            steps: vec![ProcedureStep {
                agent: "Research".into(),
                action: "search".into(),
                params: Some(serde_json::json!({"$where": "kept as text"})),
            }],
            source: ProcedureSource::Learned,
            success_count: 0,
            failure_count: 0,
            usage_count: 0,
            last_used_at: None,
            created_at: 1_000,
            updated_at: 1_000,
        }
    }

    #[tokio::test]
    async fn put_keeps_counters_outcomes_count_and_scopes_hold() {
        let fake = Arc::new(FakeMongo::interleaved(7));
        let store = MongoStore::new(fake.clone(), "evident");
        let stored = store
            .put_procedure(procedure("p", None), vec![3.0, 4.0])
            .await
            .expect("put");
        assert_eq!(stored, procedure("p", None));
        let doc = fake.collection(PROCEDURES).remove(0);
        assert_eq!(vector_of(&doc), vec![0.6, 0.8], "stored normalised");
        let calls: Vec<_> = (0..12)
            .map(|i| store.record_procedure_outcome("$c1", Some("p9"), "p", i % 2 == 0, 2_000 + i))
            .collect();
        for r in evident_store::conformance::join_all(calls).await {
            r.expect("outcome").expect("visible");
        }
        let mut changed = procedure("p", None);
        changed.trigger_pattern = "crash".into();
        changed.created_at = 5_000;
        changed.updated_at = 5_000;
        let replaced = store
            .put_procedure(changed, vec![1.0, 0.0])
            .await
            .expect("replace");
        assert_eq!(
            (
                replaced.usage_count,
                replaced.success_count,
                replaced.failure_count
            ),
            (12, 6, 6)
        );
        assert_eq!((replaced.created_at, replaced.updated_at), (1_000, 5_000));
        assert_eq!(replaced.last_used_at, Some(2_011));
        let moved = store
            .put_procedure(procedure("p", Some("p1")), vec![1.0, 0.0])
            .await;
        assert_eq!(
            moved.err().map(|e| e.kind),
            Some(evident_store::ErrorKind::Conflict)
        );
        assert_eq!(fake.collection(PROCEDURES).len(), 1, "nothing written");
        let near = store
            .nearest_procedures(NearestQuery {
                client: "$c1",
                project: None,
                vector: &[0.0, 2.0],
                min_cosine: 0.5,
                max: 5,
                closest: 1,
            })
            .await
            .expect("nearest");
        assert_eq!(near.len(), 1);
        assert!(near[0].cosine.abs() < 1e-6, "the closest below the floor");
    }

    /// The shared conformance cases with procedures on the fake (every other role embedded):
    /// what the env-gated run checks against a real server, on every test run.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_conformance_cases_pass_on_the_fake() {
        use evident_store::conformance::{self, Harness};
        async fn harness(seed: u64) -> Harness {
            let dir = tempfile::tempdir().expect("tmp");
            let embedded = evident_store_embedded::EmbeddedStore::open(
                evident_store_embedded::EmbeddedOptions::new(
                    dir.path(),
                    conformance::vector_space(),
                )
                .background_indexer(false),
            )
            .expect("embedded");
            let mut stores = embedded.stores();
            stores.procedures = Arc::new(MongoStore::new(
                Arc::new(FakeMongo::interleaved(seed)),
                "evident",
            ));
            Harness {
                stores,
                dim: conformance::DIM,
                keep: Box::new((dir, embedded)),
            }
        }
        conformance::procedures_keep_statistics_and_scopes(&harness(1).await).await;
        conformance::procedures_nearest_by_cosine(&harness(2).await).await;
        conformance::procedure_outcomes_are_atomic(&harness(3).await).await;
    }
}
