//! GapStore over SQLite: the record as JSON beside the columns a claim orders and filters by;
//! every change (create, claim, move, reorder) is one statement group on the writer connection
//! under a savepoint, with its history event in the same transaction.

use async_trait::async_trait;
use evident_core::Visibility;
use evident_store::Result;
use evident_store::gaps::*;
use evident_store::queue::Millis;
use rusqlite::{Connection, OptionalExtension, params};

use crate::{EmbeddedStore, json_err, sql, sqlite_err};

fn parse(record: String) -> Result<GapRecord> {
    serde_json::from_str(&record).map_err(json_err)
}

fn get(conn: &Connection, partition: &str, id: &str) -> Result<Option<GapRecord>> {
    conn.prepare_cached("SELECT record FROM gaps WHERE partition = ?1 AND id = ?2")
        .map_err(sqlite_err)?
        .query_row(params![partition, id], |r| r.get::<_, String>(0))
        .optional()
        .map_err(sqlite_err)?
        .map(parse)
        .transpose()
}

fn put(conn: &Connection, rec: &GapRecord) -> Result<()> {
    let json = serde_json::to_string(rec).map_err(json_err)?;
    conn.prepare_cached(
        "UPDATE gaps SET state = ?3, priority = ?4, position = ?5, lease_expires_at = ?6, record = ?7 \
         WHERE partition = ?1 AND id = ?2",
    )
    .map_err(sqlite_err)?
    .execute(params![
        rec.scope.partition(),
        rec.gap_id,
        rec.state.as_str(),
        rec.priority as i64,
        rec.position,
        rec.lease_expires_at,
        json
    ])
    .map_err(sqlite_err)?;
    Ok(())
}

fn next_seq(conn: &Connection, partition: &str, id: &str) -> Result<i64> {
    conn.prepare_cached(
        "SELECT coalesce(max(seq), 0) + 1 FROM gap_events WHERE partition = ?1 AND gap_id = ?2",
    )
    .map_err(sqlite_err)?
    .query_row(params![partition, id], |r| r.get(0))
    .map_err(sqlite_err)
}

fn append(conn: &Connection, partition: &str, event: &GapEvent) -> Result<()> {
    let json = serde_json::to_string(event).map_err(json_err)?;
    conn.prepare_cached(
        "INSERT INTO gap_events(partition, gap_id, seq, event) VALUES (?1, ?2, ?3, ?4)",
    )
    .map_err(sqlite_err)?
    .execute(params![partition, event.gap_id, event.seq, json])
    .map_err(sqlite_err)?;
    Ok(())
}

fn create_one(conn: &Connection, gap: &NewGap, now: Millis) -> Result<GapRecord> {
    let partition = gap.scope.partition();
    let qkey = question_key(&gap.scope, &gap.question);
    let existing: Option<String> = conn
        .prepare_cached(
            "SELECT record FROM gaps WHERE partition = ?1 AND question_key = ?2 \
             AND state IN ('open', 'acquiring') ORDER BY seq LIMIT 1",
        )
        .map_err(sqlite_err)?
        .query_row(params![partition, qkey], |r| r.get(0))
        .optional()
        .map_err(sqlite_err)?;
    if let Some(record) = existing {
        return parse(record);
    }
    let rec = created_record(gap, new_gap_id(now), now);
    let json = serde_json::to_string(&rec).map_err(json_err)?;
    conn.prepare_cached(
        "INSERT INTO gaps(partition, id, state, priority, position, question_key, lease_expires_at, record) \
         VALUES (?1, ?2, 'open', ?3, NULL, ?4, NULL, ?5)",
    )
    .map_err(sqlite_err)?
    .execute(params![partition, rec.gap_id, rec.priority as i64, qkey, json])
    .map_err(sqlite_err)?;
    append(conn, partition, &created_event(gap, &rec))?;
    Ok(rec)
}

/// Claims `gap` (inside the writer's transaction), with its event.
fn take(
    conn: &Connection,
    partition: &str,
    gap: GapRecord,
    owner: &str,
    lease_ms: i64,
    now: Millis,
) -> Result<GapClaim> {
    let after = claimed(gap.clone(), owner, lease_ms, now);
    put(conn, &after)?;
    let seq = next_seq(conn, partition, &after.gap_id)?;
    append(conn, partition, &claim_event(&gap, &after, seq, now))?;
    Ok(GapClaim {
        epoch: after.epoch,
        lease_expires_at: after.lease_expires_at.unwrap_or(now + lease_ms),
        gap: after,
    })
}

/// The claim, inside the writer's transaction: the partition's acquiring gap when it has one
/// (claimable again only after its lease and backoff), else the first claimable gap in claim
/// order that the acquirer kind and reader take.
fn claim_in(
    conn: &Connection,
    partition: &str,
    vis: &Visibility,
    acquirer: Acquirer,
    owner: &str,
    lease_ms: i64,
    now: Millis,
) -> Result<Option<GapClaim>> {
    // A client's acquisition in progress (live, or waiting out its backoff after an expired
    // lease) is taken back before any other gap of the client: one at a time, in order.
    let acquiring: Option<String> = conn
        .prepare_cached(
            "SELECT record FROM gaps WHERE partition = ?1 AND state = 'acquiring' ORDER BY seq LIMIT 1",
        )
        .map_err(sqlite_err)?
        .query_row(params![partition], |r| r.get(0))
        .optional()
        .map_err(sqlite_err)?;
    if let Some(record) = acquiring {
        let gap = parse(record)?;
        if gap.acquirer != acquirer || !gap.claimable(now) || !vis.admits(&gap.scope) {
            return Ok(None);
        }
        return take(conn, partition, gap, owner, lease_ms, now).map(Some);
    }
    let mut stmt = conn
        .prepare_cached(
            "SELECT record FROM gaps WHERE partition = ?1 AND state IN ('open', 'acquiring') \
             ORDER BY priority, position IS NULL, position, seq",
        )
        .map_err(sqlite_err)?;
    let mut rows = stmt.query(params![partition]).map_err(sqlite_err)?;
    while let Some(row) = rows.next().map_err(sqlite_err)? {
        let gap = parse(row.get(0).map_err(sqlite_err)?)?;
        if gap.acquirer != acquirer || !gap.claimable(now) || !vis.admits(&gap.scope) {
            continue;
        }
        drop(rows);
        return take(conn, partition, gap, owner, lease_ms, now).map(Some);
    }
    Ok(None)
}

#[async_trait]
impl GapStore for EmbeddedStore {
    async fn create_gaps(&self, gaps: Vec<NewGap>, now: Millis) -> Result<Vec<GapRecord>> {
        self.write_grouped(move |conn| gaps.iter().map(|g| create_one(conn, g, now)).collect())
            .await
    }

    async fn get_gap(&self, partition: &str, gap_id: &str) -> Result<Option<GapRecord>> {
        let (partition, id) = (partition.to_string(), gap_id.to_string());
        self.read(move |conn, _| get(conn, &partition, &id)).await
    }

    async fn gap_history(&self, partition: &str, gap_id: &str) -> Result<Vec<GapEvent>> {
        let (partition, id) = (partition.to_string(), gap_id.to_string());
        self.read(move |conn, _| {
            let rows = sql::rows(
                conn,
                "SELECT event FROM gap_events WHERE partition = ?1 AND gap_id = ?2 ORDER BY seq",
                params![partition, id],
                |r| r.get::<_, String>(0),
            )?;
            rows.iter()
                .map(|json| serde_json::from_str(json).map_err(json_err))
                .collect()
        })
        .await
    }

    async fn list_gaps(
        &self,
        partition: &str,
        vis: &Visibility,
        state: Option<GapState>,
        limit: usize,
    ) -> Result<Vec<GapRecord>> {
        let (partition, vis) = (partition.to_string(), vis.clone());
        self.read(move |conn, _| {
            // Unfinished gaps first in claim order, then finished ones newest first.
            let mut stmt = conn
                .prepare_cached(
                    "SELECT record FROM gaps WHERE partition = ?1 AND (?2 IS NULL OR state = ?2) \
                     ORDER BY state NOT IN ('open', 'acquiring'), \
                     CASE WHEN state IN ('open', 'acquiring') THEN priority ELSE 0 END, \
                     CASE WHEN state IN ('open', 'acquiring') THEN position IS NULL ELSE 0 END, \
                     CASE WHEN state IN ('open', 'acquiring') THEN position ELSE 0 END, \
                     CASE WHEN state IN ('open', 'acquiring') THEN seq ELSE -seq END",
                )
                .map_err(sqlite_err)?;
            let mut rows = stmt
                .query(params![partition, state.map(GapState::as_str)])
                .map_err(sqlite_err)?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(sqlite_err)? {
                if out.len() >= limit {
                    break;
                }
                let gap = parse(row.get(0).map_err(sqlite_err)?)?;
                if vis.admits(&gap.scope) {
                    out.push(gap);
                }
            }
            Ok(out)
        })
        .await
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
        let (partition, vis, owner) = (partition.to_string(), vis.clone(), owner.to_string());
        self.write_grouped(move |conn| {
            claim_in(conn, &partition, &vis, acquirer, &owner, lease_ms, now)
        })
        .await
    }

    async fn advance_gap(
        &self,
        partition: &str,
        gap_id: &str,
        change: GapMove,
        now: Millis,
    ) -> Result<Option<GapRecord>> {
        let (partition, id) = (partition.to_string(), gap_id.to_string());
        self.write_grouped(move |conn| {
            let Some(gap) = get(conn, &partition, &id)? else {
                return Ok(None);
            };
            check_move(&gap, &change).map_err(refused)?;
            let seq = next_seq(conn, &partition, &id)?;
            let event = move_event(&gap, &change, seq, now);
            let after = moved(gap, &change, now);
            put(conn, &after)?;
            append(conn, &partition, &event)?;
            Ok(Some(after))
        })
        .await
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
        let (partition, id, actor) = (partition.to_string(), gap_id.to_string(), actor.to_string());
        self.write_grouped(move |conn| {
            let Some(mut gap) = get(conn, &partition, &id)? else {
                return Ok(None);
            };
            evident_store::gaps::check_priority(priority)?;
            gap.priority = priority;
            gap.position = position;
            gap.updated_at = now;
            put(conn, &gap)?;
            let seq = next_seq(conn, &partition, &id)?;
            append(conn, &partition, &reorder_event(&gap, &actor, seq, now))?;
            Ok(Some(gap))
        })
        .await
    }
}
