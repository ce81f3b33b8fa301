//! ProcedureStore over SQLite, with every procedure also held in memory for matching.
//!
//! SQLite (`procedures`) is the system of record; [`ProcedureIndex`] is derived from it:
//! loaded at open and changed by each write after its commit, on the writer thread in commit
//! order (a group [`Op`] with a publish hook publishes before it answers), so the index never holds a
//! state older than an acknowledged write nor one that was not committed. A match scans the
//! client's vectors in memory (unit length, so cosine = dot product): no SQL, no decoding.
//! An outcome is one `UPDATE … SET usage_count = usage_count + 1 … RETURNING`, atomic however
//! many run at once.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use evident_store::procedures::{
    NearestQuery, Procedure, ProcedureSource, ProcedureStore, ScoredProcedure, normalised,
};
use evident_store::queue::Millis;
use evident_store::{ErrorKind, Result, StoreError};
use parking_lot::RwLock;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use crate::write::{Job, Op};
use crate::{EmbeddedStore, json_err, sqlite_err};

const COLUMNS: &str = "client_id, id, project_id, trigger, steps, source, success_count, \
                       failure_count, usage_count, last_used_at, created_at, updated_at";

struct Entry {
    procedure: Procedure,
    /// Unit length (or zero).
    vector: Box<[f32]>,
}

#[derive(Default)]
struct ClientProcedures {
    entries: Vec<Entry>,
    by_id: HashMap<String, usize>,
}

/// Every procedure with its vector, by client (derived from SQLite; see the module docs).
#[derive(Default)]
pub(crate) struct ProcedureIndex {
    clients: RwLock<HashMap<String, ClientProcedures>>,
}

impl ProcedureIndex {
    /// Loads every stored procedure (at open).
    pub(crate) fn load(conn: &Connection) -> Result<ProcedureIndex> {
        let index = ProcedureIndex::default();
        let mut stmt = conn
            .prepare(&format!("SELECT {COLUMNS}, vector FROM procedures"))
            .map_err(sqlite_err)?;
        let mut rows = stmt.query([]).map_err(sqlite_err)?;
        while let Some(r) = rows.next().map_err(sqlite_err)? {
            let p = procedure(row(r).map_err(sqlite_err)?)?;
            let blob: Vec<u8> = r.get(12).map_err(sqlite_err)?;
            index.put(p, Some(from_blob(&blob)));
        }
        Ok(index)
    }

    /// Inserts or replaces a procedure; `vector: None` keeps the stored one (statistics).
    fn put(&self, p: Procedure, vector: Option<Vec<f32>>) {
        let mut clients = self.clients.write();
        let c = clients.entry(p.client_id.clone()).or_default();
        match c.by_id.get(&p.id) {
            Some(&i) => {
                let e = &mut c.entries[i];
                e.procedure = p;
                if let Some(v) = vector {
                    e.vector = v.into();
                }
            }
            None => {
                let Some(v) = vector else { return };
                c.by_id.insert(p.id.clone(), c.entries.len());
                c.entries.push(Entry {
                    procedure: p,
                    vector: v.into(),
                });
            }
        }
    }

    fn remove(&self, client: &str, id: &str) {
        let mut clients = self.clients.write();
        let Some(c) = clients.get_mut(client) else {
            return;
        };
        let Some(i) = c.by_id.remove(id) else { return };
        c.entries.swap_remove(i);
        if let Some(moved) = c.entries.get(i) {
            c.by_id.insert(moved.procedure.id.clone(), i);
        }
    }

    fn nearest(&self, q: &NearestQuery<'_>) -> Vec<ScoredProcedure> {
        let query = normalised(q.vector);
        let clients = self.clients.read();
        let Some(c) = clients.get(q.client) else {
            return Vec::new();
        };
        let visible =
            |p: &Procedure| p.project_id.is_none() || p.project_id.as_deref() == q.project;
        let mut above: Vec<(f32, usize)> = Vec::new();
        let mut below: Vec<(f32, usize)> = Vec::new();
        for (i, e) in c.entries.iter().enumerate() {
            if !visible(&e.procedure) || e.vector.len() != query.len() {
                continue;
            }
            let cos: f32 = e.vector.iter().zip(&query).map(|(a, b)| a * b).sum();
            if cos >= q.min_cosine {
                above.push((cos, i));
            } else if q.closest > 0 {
                below.push((cos, i));
            }
        }
        let order = |a: &(f32, usize), b: &(f32, usize)| {
            b.0.total_cmp(&a.0).then_with(|| {
                c.entries[a.1]
                    .procedure
                    .id
                    .cmp(&c.entries[b.1].procedure.id)
            })
        };
        // Select before sorting: only the kept few are ordered.
        for (v, keep) in [(&mut above, q.max), (&mut below, q.closest)] {
            if v.len() > keep && keep > 0 {
                v.select_nth_unstable_by(keep - 1, order);
            }
            v.truncate(keep);
            v.sort_unstable_by(order);
        }
        above
            .into_iter()
            .chain(below)
            .map(|(cosine, i)| ScoredProcedure {
                procedure: c.entries[i].procedure.clone(),
                cosine,
            })
            .collect()
    }
}

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

type Row = (
    String,
    String,
    String,
    String,
    String,
    String,
    [i64; 3],
    Option<i64>,
    i64,
    i64,
);

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        [r.get(6)?, r.get(7)?, r.get(8)?],
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
    ))
}

fn procedure(r: Row) -> Result<Procedure> {
    let (client_id, id, project, trigger, steps, source, [s, f, u], last_used_at, created, updated) =
        r;
    Ok(Procedure {
        source: ProcedureSource::parse(&source)
            .ok_or_else(|| StoreError::corrupt(format!("procedure {id}: source `{source}`")))?,
        steps: serde_json::from_str(&steps).map_err(json_err)?,
        id,
        client_id,
        project_id: (!project.is_empty()).then_some(project),
        trigger_pattern: trigger,
        success_count: s.max(0) as u64,
        failure_count: f.max(0) as u64,
        usage_count: u.max(0) as u64,
        last_used_at,
        created_at: created,
        updated_at: updated,
    })
}

impl EmbeddedStore {
    async fn write_published<T, F, P>(&self, f: F, publish: P) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
        P: FnOnce(&ProcedureIndex, &T) + Send + 'static,
    {
        let index = self.inner.procedures.clone();
        let (reply, answer) = oneshot::channel();
        self.send_job(Job::Op(Box::new(Op {
            f: Some(f),
            out: None,
            publish: Some(Box::new(move |v: &T| publish(&index, v))),
            reply: Some(reply),
        })))?;
        answer.await.map_err(|_| {
            StoreError::unavailable("the write was not committed (see the log); retry")
        })?
    }
}

fn project_or_empty(project: Option<&str>) -> String {
    project.unwrap_or_default().to_string()
}

#[async_trait]
impl ProcedureStore for EmbeddedStore {
    async fn put_procedure(&self, p: Procedure, vector: Vec<f32>) -> Result<Procedure> {
        let dim = self.inner.vectors.space().dim;
        if vector.len() != dim {
            return Err(StoreError::invalid(format!(
                "procedure {} has a {}-d vector; the store holds {dim}-d vectors",
                p.id,
                vector.len()
            )));
        }
        let vector = normalised(&vector);
        let blob = to_blob(&vector);
        let steps = serde_json::to_string(&p.steps).map_err(json_err)?;
        self.write_published(
            move |conn| {
                let stored = conn
                    .prepare_cached(&format!(
                        "INSERT INTO procedures({COLUMNS}, vector) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, 0, 0, NULL, ?7, ?8, ?9) \
                         ON CONFLICT(client_id, id) DO UPDATE SET trigger = excluded.trigger, \
                         steps = excluded.steps, source = excluded.source, \
                         updated_at = excluded.updated_at, vector = excluded.vector \
                         WHERE procedures.project_id = excluded.project_id \
                         RETURNING {COLUMNS}"
                    ))
                    .map_err(sqlite_err)?
                    .query_row(
                        params![
                            p.client_id,
                            p.id,
                            project_or_empty(p.project_id.as_deref()),
                            p.trigger_pattern,
                            steps,
                            p.source.as_str(),
                            p.created_at,
                            p.updated_at,
                            blob
                        ],
                        row,
                    )
                    .optional()
                    .map_err(sqlite_err)?;
                match stored {
                    Some(r) => procedure(r),
                    None => Err(StoreError::new(
                        ErrorKind::Conflict,
                        format!(
                            "procedure {} exists in another scope of client {}",
                            p.id, p.client_id
                        ),
                    )),
                }
            },
            move |index, stored: &Procedure| index.put(stored.clone(), Some(vector)),
        )
        .await
    }

    async fn get_procedure(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
    ) -> Result<Option<Procedure>> {
        let (client, project, id) = (
            client.to_string(),
            project_or_empty(project),
            id.to_string(),
        );
        self.read(move |conn, _| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM procedures \
                 WHERE client_id = ?1 AND id = ?2 AND project_id IN ('', ?3)"
            ))
            .map_err(sqlite_err)?
            .query_row(params![client, id, project], row)
            .optional()
            .map_err(sqlite_err)?
            .map(procedure)
            .transpose()
        })
        .await
    }

    async fn list_procedures(
        &self,
        client: &str,
        project: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Procedure>> {
        let (client, project) = (client.to_string(), project_or_empty(project));
        let after = after.unwrap_or_default().to_string();
        self.read(move |conn, _| {
            let rows = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM procedures \
                     WHERE client_id = ?1 AND project_id IN ('', ?2) AND id > ?3 \
                     ORDER BY id LIMIT ?4"
                ))
                .map_err(sqlite_err)?
                .query_map(params![client, project, after, limit as i64], row)
                .map_err(sqlite_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sqlite_err)?;
            rows.into_iter().map(procedure).collect()
        })
        .await
    }

    async fn delete_procedure(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
    ) -> Result<bool> {
        let (client, project, id) = (
            client.to_string(),
            project_or_empty(project),
            id.to_string(),
        );
        let key = (client.clone(), id.clone());
        self.write_published(
            move |conn| {
                Ok(conn
                    .prepare_cached(
                        "DELETE FROM procedures WHERE client_id = ?1 AND id = ?2 AND project_id = ?3",
                    )
                    .map_err(sqlite_err)?
                    .execute(params![client, id, project])
                    .map_err(sqlite_err)?
                    > 0)
            },
            move |index, deleted: &bool| {
                if *deleted {
                    index.remove(&key.0, &key.1);
                }
            },
        )
        .await
    }

    async fn record_procedure_outcome(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
        success: bool,
        now: Millis,
    ) -> Result<Option<Procedure>> {
        let (client, project, id) = (
            client.to_string(),
            project_or_empty(project),
            id.to_string(),
        );
        let (s, f) = if success { (1, 0) } else { (0, 1) };
        self.write_published(
            move |conn| {
                // One statement: the counters are read and written by SQLite, never by us.
                conn.prepare_cached(&format!(
                    "UPDATE procedures SET usage_count = usage_count + 1, \
                     success_count = success_count + ?1, failure_count = failure_count + ?2, \
                     last_used_at = max(coalesce(last_used_at, ?3), ?3) \
                     WHERE client_id = ?4 AND id = ?5 AND project_id IN ('', ?6) \
                     RETURNING {COLUMNS}"
                ))
                .map_err(sqlite_err)?
                .query_row(params![s, f, now, client, id, project], row)
                .optional()
                .map_err(sqlite_err)?
                .map(procedure)
                .transpose()
            },
            |index, after: &Option<Procedure>| {
                if let Some(p) = after {
                    index.put(p.clone(), None);
                }
            },
        )
        .await
    }

    async fn nearest_procedures(&self, q: NearestQuery<'_>) -> Result<Vec<ScoredProcedure>> {
        let (client, project, vector) = (
            q.client.to_string(),
            q.project.map(str::to_string),
            q.vector.to_vec(),
        );
        let (min_cosine, max, closest) = (q.min_cosine, q.max, q.closest);
        let index: Arc<ProcedureIndex> = self.inner.procedures.clone();
        self.compute(move |_| {
            Ok(index.nearest(&NearestQuery {
                client: &client,
                project: project.as_deref(),
                vector: &vector,
                min_cosine,
                max,
                closest,
            }))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EmbeddedOptions;
    use evident_store::VectorSpace;

    fn open(dir: &std::path::Path) -> EmbeddedStore {
        let space = VectorSpace {
            embedder: "test".into(),
            dim: 3,
        };
        EmbeddedStore::open(EmbeddedOptions::new(dir, space).background_indexer(false))
            .expect("open")
    }

    fn procedure(id: &str, project: Option<&str>) -> Procedure {
        Procedure {
            id: id.into(),
            client_id: "c1".into(),
            project_id: project.map(str::to_string),
            trigger_pattern: format!("trigger {id}"),
            steps: Vec::new(),
            source: ProcedureSource::UserDefined,
            success_count: 0,
            failure_count: 0,
            usage_count: 0,
            last_used_at: None,
            created_at: 10,
            updated_at: 10,
        }
    }

    /// The in-memory index is derived: after a reopen it holds what SQLite holds — vectors,
    /// statistics, deletions — and a wrongly sized vector is refused before any write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_index_is_rebuilt_from_sqlite_at_open() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = open(dir.path());
        for (id, project, v) in [
            ("a", None, [1.0, 0.0, 0.0]),
            ("b", Some("p1"), [0.0, 2.0, 0.0]),
            ("c", None, [0.0, 0.0, 5.0]),
        ] {
            store
                .put_procedure(procedure(id, project), v.to_vec())
                .await
                .expect("put");
        }
        assert_eq!(
            store
                .put_procedure(procedure("d", None), vec![1.0])
                .await
                .err()
                .map(|e| e.kind),
            Some(ErrorKind::Invalid)
        );
        store
            .record_procedure_outcome("c1", Some("p1"), "b", true, 99)
            .await
            .expect("outcome");
        assert!(
            store
                .delete_procedure("c1", None, "c")
                .await
                .expect("delete")
        );
        let nearest = |store: &EmbeddedStore| {
            store.inner.procedures.nearest(&NearestQuery {
                client: "c1",
                project: Some("p1"),
                vector: &[0.0, 1.0, 0.0],
                min_cosine: 0.5,
                max: 10,
                closest: 10,
            })
        };
        let before = nearest(&store);
        store.close().expect("close");
        drop(store);
        let store = open(dir.path());
        let after = nearest(&store);
        assert_eq!(after, before);
        let got: Vec<(&str, u64, f32)> = after
            .iter()
            .map(|s| (s.procedure.id.as_str(), s.procedure.usage_count, s.cosine))
            .collect();
        assert_eq!(got, [("b", 1, 1.0), ("a", 0, 0.0)]);
        assert_eq!(after[0].procedure.last_used_at, Some(99));
    }
}
