//! ChunkStore over SQLite, the in-memory BM25 index and the vector index.

use async_trait::async_trait;
use evident_core::{Chunk, NodeKey, Scope, Typed, Visibility};
use evident_store::{ChunkFilter, ChunkStore, Result, ScoredId, StoreError, VectorSpace};
use rusqlite::types::Value;
use rusqlite::{Connection, Row, ToSql, params_from_iter};

use crate::{EmbeddedStore, json_err, now_millis, sql, sqlite_err};

const CHUNK_COLUMNS: &str = "c.id, c.client_id, c.project_id, c.group_id, c.source_urn, c.kind, c.title, c.content, \
     c.content_hash, c.locator, c.graph_refs, c.metadata, c.observed_at, c.ordinal";

/// A chunk row as read, JSON columns still encoded (decoded by [`decode`], so a bad value maps
/// to our error type rather than a rusqlite one).
struct RawChunk {
    id: String,
    scope: Scope,
    source_urn: String,
    kind: String,
    title: Option<String>,
    content: String,
    content_hash: String,
    locator: String,
    graph_refs: String,
    metadata: String,
    observed_at: Option<String>,
    ordinal: i64,
}

fn row_to_chunk(r: &Row<'_>) -> rusqlite::Result<RawChunk> {
    Ok(RawChunk {
        id: r.get(0)?,
        scope: sql::scope_at(r, 1)?,
        source_urn: r.get(4)?,
        kind: r.get(5)?,
        title: r.get(6)?,
        content: r.get(7)?,
        content_hash: r.get(8)?,
        locator: r.get(9)?,
        graph_refs: r.get(10)?,
        metadata: r.get(11)?,
        observed_at: r.get(12)?,
        ordinal: r.get(13)?,
    })
}

fn decode(raw: RawChunk) -> Result<Chunk> {
    Ok(Chunk {
        id: raw.id,
        scope: raw.scope,
        source_urn: raw.source_urn,
        kind: raw.kind,
        title: raw.title,
        content: raw.content,
        content_hash: raw.content_hash,
        locator: serde_json::from_str(&raw.locator).map_err(json_err)?,
        graph_refs: serde_json::from_str::<Vec<String>>(&raw.graph_refs)
            .map_err(json_err)?
            .into_iter()
            .map(NodeKey::from_canonical)
            .collect(),
        metadata: serde_json::from_str(&raw.metadata).map_err(json_err)?,
        observed_at: raw.observed_at,
        ordinal: raw.ordinal as usize,
    })
}

pub(crate) fn embedding_to_blob(v: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 4);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

fn blob_to_embedding(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Inserts one chunk (replacing a row with the same id). Returns (new row id, replaced row id).
pub(crate) fn insert_chunk(
    conn: &Connection,
    chunk: &Chunk,
    embedding: &[f32],
) -> Result<(u64, Option<u64>)> {
    use rusqlite::OptionalExtension;
    let old: Option<i64> = conn
        .prepare_cached("SELECT rid FROM chunks WHERE id = ?1")
        .map_err(sqlite_err)?
        .query_row([&chunk.id], |r| r.get(0))
        .optional()
        .map_err(sqlite_err)?;
    if let Some(rid) = old {
        conn.prepare_cached("DELETE FROM chunks WHERE rid = ?1")
            .map_err(sqlite_err)?
            .execute([rid])
            .map_err(sqlite_err)?;
    }
    let placement = Placement::of(chunk)?;
    let (created_at, blob) = (now_millis(), embedding_to_blob(embedding));
    let mut params = placement.params();
    params.extend([
        &chunk.content as &dyn ToSql,
        &chunk.content_hash,
        &created_at,
        &blob,
    ]);
    conn.prepare_cached(
        "INSERT INTO chunks(id, partition, client_id, project_id, group_id, source_urn, kind, title, locator, \
         graph_refs, metadata, observed_at, ordinal, content, content_hash, created_at, embedding) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )
    .map_err(sqlite_err)?
    .execute(params_from_iter(params))
    .map_err(sqlite_err)?;
    Ok((conn.last_insert_rowid() as u64, old.map(|r| r as u64)))
}

/// The columns of a chunk row that say where it stands (all but its text, hash, creation
/// time and vector): what an insert writes first and a relocation rewrites, `?1`–`?13`.
struct Placement<'a> {
    chunk: &'a Chunk,
    partition: &'a str,
    locator: String,
    refs: String,
    metadata: String,
    ordinal: i64,
}

impl<'a> Placement<'a> {
    fn of(chunk: &'a Chunk) -> Result<Self> {
        let refs: Vec<&str> = chunk.graph_refs.iter().map(NodeKey::as_str).collect();
        Ok(Self {
            chunk,
            partition: chunk.scope.partition(),
            locator: serde_json::to_string(&chunk.locator).map_err(json_err)?,
            refs: serde_json::to_string(&refs).map_err(json_err)?,
            metadata: serde_json::to_string(&chunk.metadata).map_err(json_err)?,
            ordinal: chunk.ordinal as i64,
        })
    }

    /// `id, partition, client_id, project_id, group_id, source_urn, kind, title, locator,
    /// graph_refs, metadata, observed_at, ordinal`, in that order.
    fn params(&self) -> Vec<&dyn ToSql> {
        let c = self.chunk;
        vec![
            &c.id,
            &self.partition,
            &c.scope.client_id,
            &c.scope.project_id,
            &c.scope.group_id,
            &c.source_urn,
            &c.kind,
            &c.title,
            &self.locator,
            &self.refs,
            &self.metadata,
            &c.observed_at,
            &self.ordinal,
        ]
    }
}

/// Updates the non-text fields of an existing chunk in place (its id pins its text).
pub(crate) fn relocate_chunk(conn: &Connection, chunk: &Chunk) -> Result<()> {
    let placement = Placement::of(chunk)?;
    conn.prepare_cached(
        "UPDATE chunks SET partition = ?2, client_id = ?3, project_id = ?4, group_id = ?5, source_urn = ?6, kind = ?7, \
         title = ?8, locator = ?9, graph_refs = ?10, metadata = ?11, observed_at = ?12, ordinal = ?13 WHERE id = ?1",
    )
    .map_err(sqlite_err)?
    .execute(params_from_iter(placement.params()))
    .map_err(sqlite_err)?;
    Ok(())
}

/// Deletes chunks of `partition` by id. Returns the row ids deleted.
pub(crate) fn delete_chunks(
    conn: &Connection,
    partition: &str,
    ids: &[String],
) -> Result<Vec<u64>> {
    let mut rids = Vec::with_capacity(ids.len());
    let mut find = conn
        .prepare_cached("SELECT rid FROM chunks WHERE id = ?1 AND partition = ?2")
        .map_err(sqlite_err)?;
    let mut del = conn
        .prepare_cached("DELETE FROM chunks WHERE rid = ?1")
        .map_err(sqlite_err)?;
    for id in ids {
        let found: Vec<i64> = find
            .query_map(rusqlite::params![id, partition], |r| r.get(0))
            .map_err(sqlite_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sqlite_err)?;
        for rid in found {
            del.execute([rid]).map_err(sqlite_err)?;
            rids.push(rid as u64);
        }
    }
    Ok(rids)
}

pub(crate) fn load_embeddings_above(conn: &Connection, above: u64) -> Result<Vec<(u64, Vec<f32>)>> {
    let mut stmt = conn
        .prepare("SELECT rid, embedding FROM chunks WHERE rid > ?1 ORDER BY rid")
        .map_err(sqlite_err)?;
    let rows = stmt
        .query_map([above as i64], |r| {
            Ok((
                r.get::<_, i64>(0)? as u64,
                blob_to_embedding(&r.get::<_, Vec<u8>>(1)?),
            ))
        })
        .map_err(sqlite_err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sqlite_err)
}

/// The typed labels in a chunk's stored metadata JSON, parsed only when the reserved key
/// appears in it (most chunks have none; opening a large store parses no metadata for them).
pub(crate) fn typed_of(metadata: &str) -> Typed {
    if !metadata.contains(evident_core::typed::METADATA_KEY) {
        return Typed::default();
    }
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(metadata)
        .map(|m| Typed::from_metadata(&m))
        .unwrap_or_default()
}

fn query_chunks(conn: &Connection, sql_text: &str, params: Vec<Value>) -> Result<Vec<Chunk>> {
    let mut stmt = conn.prepare_cached(sql_text).map_err(sqlite_err)?;
    let rows = stmt
        .query_map(params_from_iter(params), row_to_chunk)
        .map_err(sqlite_err)?;
    let mut out = Vec::new();
    for r in rows {
        out.push(decode(r.map_err(sqlite_err)?)?);
    }
    Ok(out)
}

#[async_trait]
impl ChunkStore for EmbeddedStore {
    async fn bind_vector_space(&self, space: &VectorSpace) -> Result<()> {
        let ours = self.inner.vectors.space();
        if ours != space {
            return Err(StoreError::incompatible(format!(
                "store holds `{}` ({} dims), caller embeds with `{}` ({} dims)",
                ours.embedder, ours.dim, space.embedder, space.dim
            )));
        }
        Ok(())
    }

    async fn upsert(&self, chunks: Vec<(Chunk, Vec<f32>)>) -> Result<()> {
        crate::write::apply_chunks_only(self, chunks).await
    }

    async fn relocate(&self, chunks: Vec<Chunk>) -> Result<()> {
        self.write(move |conn, inner| {
            let tx = conn.transaction().map_err(sqlite_err)?;
            for chunk in &chunks {
                relocate_chunk(&tx, chunk)?;
            }
            tx.commit().map_err(sqlite_err)?;
            crate::write::retrack(conn, inner, &chunks)
        })
        .await
    }

    async fn delete(&self, partition: &str, ids: &[String]) -> Result<usize> {
        let (partition, ids) = (partition.to_string(), ids.to_vec());
        self.write(move |conn, inner| {
            let tx = conn.transaction().map_err(sqlite_err)?;
            let rids = delete_chunks(&tx, &partition, &ids)?;
            tx.commit().map_err(sqlite_err)?;
            crate::write::unpublish(inner, &rids);
            Ok(rids.len())
        })
        .await
    }

    async fn source_chunks(
        &self,
        partition: &str,
        source_urn: &str,
    ) -> Result<Vec<(String, String)>> {
        let (partition, urn) = (partition.to_string(), source_urn.to_string());
        self.read(move |conn, _| {
            let mut stmt = conn
                .prepare_cached("SELECT id, content_hash FROM chunks WHERE partition = ?1 AND source_urn = ?2 ORDER BY ordinal, rid")
                .map_err(sqlite_err)?;
            let rows = stmt.query_map([&partition, &urn], |r| Ok((r.get(0)?, r.get(1)?))).map_err(sqlite_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sqlite_err)
        })
        .await
    }

    async fn get(&self, vis: &Visibility, ids: &[String]) -> Result<Vec<Chunk>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let (vis, ids) = (vis.clone(), ids.to_vec());
        self.read(move |conn, _| {
            let mut found = Vec::with_capacity(ids.len());
            for batch in ids.chunks(500) {
                let mut q = format!(
                    "SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.id IN {} AND ",
                    sql::placeholders(batch.len())
                );
                let mut params = sql::texts(batch.iter().map(String::as_str));
                sql::visibility(&vis, "c.", &mut q, &mut params);
                found.extend(query_chunks(conn, &q, params)?);
            }
            let mut by_id: std::collections::HashMap<String, Chunk> =
                found.into_iter().map(|c| (c.id.clone(), c)).collect();
            Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
        })
        .await
    }

    async fn search_text(
        &self,
        vis: &Visibility,
        query: &str,
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        let (vis, filter, query) = (vis.clone(), filter.clone(), query.to_string());
        self.compute(move |inner| {
            let rows = inner.vectors.row_filter(&vis, &filter.kinds, &filter.typed);
            Ok(inner
                .text
                .search(&query, &vis.partitions(), &rows, limit)
                .into_iter()
                .filter_map(|(rid, score)| {
                    rows.id(rid).map(|id| ScoredId {
                        chunk_id: id.to_string(),
                        score,
                    })
                })
                .collect())
        })
        .await
    }

    async fn search_terms(
        &self,
        vis: &Visibility,
        terms: &[(String, f32)],
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        let (vis, filter, terms) = (vis.clone(), filter.clone(), terms.to_vec());
        self.compute(move |inner| {
            let rows = inner.vectors.row_filter(&vis, &filter.kinds, &filter.typed);
            Ok(inner
                .text
                .search_terms(&terms, &vis.partitions(), &rows, limit)
                .into_iter()
                .filter_map(|(rid, score)| {
                    rows.id(rid).map(|id| ScoredId {
                        chunk_id: id.to_string(),
                        score,
                    })
                })
                .collect())
        })
        .await
    }

    async fn search_vector(
        &self,
        vis: &Visibility,
        vector: &[f32],
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<ScoredId>> {
        let (vis, filter, vector) = (vis.clone(), filter.clone(), vector.to_vec());
        self.compute(move |inner| {
            let hits = inner
                .vectors
                .search(&vis, &filter.kinds, &filter.typed, &vector, limit)?;
            Ok(hits
                .into_iter()
                .map(|(id, score)| ScoredId {
                    chunk_id: id.to_string(),
                    score,
                })
                .collect())
        })
        .await
    }

    async fn by_kind(
        &self,
        vis: &Visibility,
        filter: &ChunkFilter,
        limit: usize,
    ) -> Result<Vec<Chunk>> {
        let (vis, filter) = (vis.clone(), filter.clone());
        self.read(move |conn, inner| {
            // Newest first: walk the (kind, rid) index — row ids only, no row reads — keeping
            // rows the reader may see, then load just the `limit` newest.
            let rows = inner.vectors.row_filter(&vis, &filter.kinds, &filter.typed);
            let newest: Vec<i64> = match rows.admitted() {
                // A small tenant: its rows are listed, no walk over everyone's.
                Some(admitted) => admitted
                    .rids
                    .iter()
                    .rev()
                    .take(limit)
                    .map(|r| *r as i64)
                    .collect(),
                None => newest_admitted(conn, &rows, &filter.kinds, limit)?,
            };
            drop(rows);
            chunks_newest_first(conn, &newest)
        })
        .await
    }
}

/// The row ids of the `limit` newest chunks `rows` admits, of `kinds` (any kind when empty),
/// newest first: each kind's (kind, rid) index walked from its newest row.
fn newest_admitted(
    conn: &Connection,
    rows: &crate::vectors::RowFilter<'_>,
    kinds: &[String],
    limit: usize,
) -> Result<Vec<i64>> {
    let scans: Vec<(String, Vec<Value>)> = if kinds.is_empty() {
        vec![(
            "SELECT rid FROM chunks ORDER BY rid DESC".to_string(),
            Vec::new(),
        )]
    } else {
        kinds
            .iter()
            .map(|k| {
                (
                    "SELECT rid FROM chunks WHERE kind = ?1 ORDER BY rid DESC".to_string(),
                    vec![Value::Text(k.clone())],
                )
            })
            .collect()
    };
    let mut rids: Vec<i64> = Vec::new();
    for (q, params) in scans {
        let mut stmt = conn.prepare_cached(&q).map_err(sqlite_err)?;
        let mut cursor = stmt.query(params_from_iter(params)).map_err(sqlite_err)?;
        let mut taken = 0;
        while taken < limit {
            let Some(row) = cursor.next().map_err(sqlite_err)? else {
                break;
            };
            let rid: i64 = row.get(0).map_err(sqlite_err)?;
            if rows.admits(rid as u64) {
                rids.push(rid);
                taken += 1;
            }
        }
    }
    rids.sort_unstable_by(|a, b| b.cmp(a));
    rids.dedup();
    rids.truncate(limit);
    Ok(rids)
}

/// The chunks of `rids` (given newest first), newest first. In batches: SQLite caps the
/// variables of one statement.
fn chunks_newest_first(conn: &Connection, rids: &[i64]) -> Result<Vec<Chunk>> {
    let mut found = Vec::with_capacity(rids.len());
    for batch in rids.chunks(500) {
        let q = format!(
            "SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.rid IN {} ORDER BY c.rid DESC",
            sql::placeholders(batch.len())
        );
        let params = batch.iter().map(|r| Value::Integer(*r)).collect();
        found.extend(query_chunks(conn, &q, params)?);
    }
    Ok(found)
}
