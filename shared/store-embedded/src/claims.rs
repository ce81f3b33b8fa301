//! ClaimStore over SQLite: a claim row (filter columns + the claim as JSON), its events, and
//! the evidence-chunk index, each write in one transaction of the group commit.

use async_trait::async_trait;
use evident_core::Visibility;
use evident_core::claims::{Claim, ClaimEvent, LOW_CONFIDENCE};
use evident_store::claims::{ClaimFilter, ClaimStore};
use evident_store::{ErrorKind, Result, StoreError};
use rusqlite::types::Value;
use rusqlite::{Connection, params};

use crate::{EmbeddedStore, json_err, sql, sqlite_err};

fn put_row(conn: &Connection, c: &Claim, insert: bool) -> Result<()> {
    let doc = serde_json::to_string(c).map_err(json_err)?;
    let verb = if insert { "INSERT" } else { "REPLACE" };
    conn.prepare_cached(&format!(
        "{verb} INTO claims(partition, id, client_id, project_id, group_id, status, stale, \
         confidence, actor_id, session_id, subject_type, subject_id, domain, created_at, \
         updated_at, version, doc) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, \
         ?13, ?14, ?15, ?16, ?17)"
    ))
    .map_err(sqlite_err)?
    .execute(params![
        c.scope.partition(),
        c.id,
        c.scope.client_id,
        c.scope.project_id,
        c.scope.group_id,
        c.status.as_str(),
        c.evidence_stale,
        c.confidence,
        c.actor.id,
        c.session_id,
        c.subject.as_ref().map(|s| s.scope_type.as_str()),
        c.subject.as_ref().map(|s| s.scope_id.as_str()),
        c.domain,
        c.created_at,
        c.updated_at,
        c.version as i64,
        doc
    ])
    .map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            StoreError::new(ErrorKind::Conflict, format!("claim `{}` exists", c.id))
        }
        e => sqlite_err(e),
    })?;
    let mut index = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO claim_evidence(partition, chunk_id, claim_id) VALUES (?1, ?2, ?3)",
        )
        .map_err(sqlite_err)?;
    for chunk in c.evidence_chunks() {
        index
            .execute(params![c.scope.partition(), chunk, c.id])
            .map_err(sqlite_err)?;
    }
    Ok(())
}

fn append_event(conn: &Connection, partition: &str, e: &ClaimEvent) -> Result<()> {
    let doc = serde_json::to_string(e).map_err(json_err)?;
    conn.prepare_cached(
        "INSERT INTO claim_events(partition, claim_id, seq, doc) VALUES (?1, ?2, ?3, ?4)",
    )
    .map_err(sqlite_err)?
    .execute(params![partition, e.claim_id, e.seq as i64, doc])
    .map_err(sqlite_err)?;
    Ok(())
}

fn parse_claim(doc: &str) -> Result<Claim> {
    serde_json::from_str(doc).map_err(|e| StoreError::corrupt(format!("stored claim: {e}")))
}

/// The filter as SQL conditions after `WHERE`, with their parameters.
fn filter_sql(vis: &Visibility, f: &ClaimFilter, sql: &mut String, params: &mut Vec<Value>) {
    sql::visibility(vis, "", sql, params);
    if !f.statuses.is_empty() {
        sql.push_str(&format!(
            " AND status IN {}",
            sql::placeholders(f.statuses.len())
        ));
        params.extend(sql::texts(f.statuses.iter().map(|s| s.as_str())));
    }
    for (col, v) in [
        ("actor_id", &f.actor_id),
        ("session_id", &f.session_id),
        ("domain", &f.domain),
    ] {
        if let Some(v) = v {
            sql.push_str(&format!(" AND {col} = ?"));
            params.push(Value::Text(v.clone()));
        }
    }
    if let Some((t, id)) = &f.subject {
        sql.push_str(" AND subject_type = ? AND subject_id = ?");
        params.extend([Value::Text(t.clone()), Value::Text(id.clone())]);
    }
    if let Some(cutoff) = f.attention_before {
        sql.push_str(
            " AND status <> 'superseded' AND (status = 'disputed' OR stale <> 0 OR \
             (confidence < ? AND status <> 'verified' AND created_at <= ?))",
        );
        params.extend([Value::Real(LOW_CONFIDENCE), Value::Integer(cutoff)]);
    }
}

#[async_trait]
impl ClaimStore for EmbeddedStore {
    async fn create_claim(&self, claim: &Claim, event: &ClaimEvent) -> Result<()> {
        let (claim, event) = (claim.clone(), event.clone());
        self.write_grouped(move |conn| {
            put_row(conn, &claim, true)?;
            append_event(conn, claim.scope.partition(), &event)
        })
        .await
    }

    async fn update_claim(
        &self,
        claim: &Claim,
        expected_version: u64,
        event: &ClaimEvent,
    ) -> Result<bool> {
        let (claim, event) = (claim.clone(), event.clone());
        self.write_grouped(move |conn| {
            let current: Option<i64> = conn
                .prepare_cached("SELECT version FROM claims WHERE partition = ?1 AND id = ?2")
                .map_err(sqlite_err)?
                .query_row(params![claim.scope.partition(), claim.id], |r| r.get(0))
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(sqlite_err(e)),
                })?;
            if current != Some(expected_version as i64) {
                return Ok(false);
            }
            put_row(conn, &claim, false)?;
            append_event(conn, claim.scope.partition(), &event)?;
            Ok(true)
        })
        .await
    }

    async fn get_claims(&self, partition: &str, ids: &[String]) -> Result<Vec<Claim>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let (partition, ids) = (partition.to_string(), ids.to_vec());
        self.read(move |conn, _| {
            let mut stmt = conn
                .prepare_cached("SELECT doc FROM claims WHERE partition = ?1 AND id = ?2")
                .map_err(sqlite_err)?;
            let mut out = Vec::with_capacity(ids.len());
            for id in &ids {
                match stmt.query_row(params![partition, id], |r| r.get::<_, String>(0)) {
                    Ok(doc) => out.push(parse_claim(&doc)?),
                    Err(rusqlite::Error::QueryReturnedNoRows) => {}
                    Err(e) => return Err(sqlite_err(e)),
                }
            }
            Ok(out)
        })
        .await
    }

    async fn claim_history(&self, partition: &str, id: &str) -> Result<Vec<ClaimEvent>> {
        let (partition, id) = (partition.to_string(), id.to_string());
        self.read(move |conn, _| {
            let docs = sql::rows(
                conn,
                "SELECT doc FROM claim_events WHERE partition = ?1 AND claim_id = ?2 ORDER BY seq",
                params![partition, id],
                |r| r.get::<_, String>(0),
            )?;
            docs.iter()
                .map(|d| {
                    serde_json::from_str(d)
                        .map_err(|e| StoreError::corrupt(format!("stored claim event: {e}")))
                })
                .collect()
        })
        .await
    }

    async fn claims_citing(&self, partition: &str, chunk_ids: &[String]) -> Result<Vec<String>> {
        if chunk_ids.is_empty() {
            return Ok(Vec::new());
        }
        let (partition, chunk_ids) = (partition.to_string(), chunk_ids.to_vec());
        self.read(move |conn, _| {
            let mut out = std::collections::BTreeSet::new();
            for part in chunk_ids.chunks(500) {
                let q = format!(
                    "SELECT claim_id FROM claim_evidence WHERE partition = ? AND chunk_id IN {}",
                    sql::placeholders(part.len())
                );
                let mut params = vec![Value::Text(partition.clone())];
                params.extend(sql::texts(part.iter().map(String::as_str)));
                let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
                let ids = stmt
                    .query_map(rusqlite::params_from_iter(params), |r| {
                        r.get::<_, String>(0)
                    })
                    .map_err(sqlite_err)?;
                for id in ids {
                    out.insert(id.map_err(sqlite_err)?);
                }
            }
            Ok(out.into_iter().collect())
        })
        .await
    }

    async fn list_claims(
        &self,
        vis: &Visibility,
        filter: &ClaimFilter,
        limit: usize,
    ) -> Result<Vec<Claim>> {
        let (mut q, mut params) = (String::from("SELECT doc FROM claims WHERE "), Vec::new());
        filter_sql(vis, filter, &mut q, &mut params);
        q.push_str(" ORDER BY updated_at DESC, id ASC LIMIT ?");
        params.push(Value::Integer(limit.min(i64::MAX as usize) as i64));
        self.read(move |conn, _| {
            let docs: Vec<String> = sql::rows(conn, &q, rusqlite::params_from_iter(params), |r| {
                r.get::<_, String>(0)
            })?;
            docs.iter().map(|d| parse_claim(d)).collect()
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evident_core::Scope;
    use evident_core::claims::ClaimStatus;

    #[test]
    fn the_attention_condition_is_the_filter_in_memory() {
        // The SQL mirrors `ClaimFilter::admits`: one parameter per placeholder.
        let vis = Visibility::of(Scope::client("c"));
        let f = ClaimFilter {
            statuses: vec![ClaimStatus::Disputed],
            actor_id: Some("a".into()),
            subject: Some(("repo".into(), "r".into())),
            attention_before: Some(5),
            ..Default::default()
        };
        let (mut q, mut p) = (String::new(), Vec::new());
        filter_sql(&vis, &f, &mut q, &mut p);
        assert_eq!(q.matches('?').count(), p.len());
    }
}
