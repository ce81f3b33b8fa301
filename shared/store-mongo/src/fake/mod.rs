//! A small in-memory MongoDB for unit and property tests: it interprets exactly the command
//! subset this crate sends (`find`, `getMore`, `findAndModify`, `insert`, `update`, `delete`,
//! `aggregate` with `$match`/`$lookup`/`$group`/`$sort`/`$project`, `createIndexes`, `ping`),
//! with MongoDB's query semantics for the operators used (missing fields, cross-type numbers,
//! BSON sort order). Each command is atomic; with `interleave`, the transport yields to the
//! runtime a pseudo-random number of times before each command, so concurrent operations on
//! one runtime interleave at command boundaries as they would against a server.

use crate::fields::numeric;
use std::cmp::Ordering;
use std::collections::HashMap;

use async_trait::async_trait;
use bson::{Bson, Document, doc};
use parking_lot::Mutex;

use crate::client::Transport;
use crate::error::TransportError;

mod query;

use query::{Vars, cmp_docs, cmp_values, eval, matches, project, sort_docs};

#[derive(Default)]
struct State {
    collections: HashMap<String, Vec<Document>>,
    rng: u64,
}

/// See the module docs.
#[derive(Default)]
pub(crate) struct FakeMongo {
    state: Mutex<State>,
    interleave: bool,
}

impl FakeMongo {
    pub fn new() -> Self {
        FakeMongo::default()
    }

    /// Yields a pseudo-random number of times (from `seed`) before each command.
    pub fn interleaved(seed: u64) -> Self {
        FakeMongo {
            state: Mutex::new(State {
                rng: seed | 1,
                ..State::default()
            }),
            interleave: true,
        }
    }

    pub fn collection(&self, name: &str) -> Vec<Document> {
        self.state
            .lock()
            .collections
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    fn next_rand(&self) -> u64 {
        let mut st = self.state.lock();
        let mut x = st.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        st.rng = x;
        x
    }

    /// Runs one command atomically: a flat dispatch on the command's name.
    fn execute(&self, command: Document) -> Result<Document, TransportError> {
        let mut st = self.state.lock();
        let (name, target) = command
            .iter()
            .next()
            .map(|(k, v)| (k.clone(), v.clone()))
            .ok_or_else(|| TransportError::other("empty command"))?;
        let coll = target.as_str().unwrap_or("").to_string();
        let docs = st.collections.entry(coll.clone()).or_default();
        match name.as_str() {
            "ping" | "createIndexes" | "dropDatabase" => Ok(doc! {"ok": 1}),
            "find" => Ok(cursor(find(docs, &command), &coll)),
            "findAndModify" => find_and_modify(docs, &command),
            "insert" => Ok(insert(docs, &command)),
            "update" => update(docs, &command),
            "delete" => Ok(delete(docs, &command)),
            "aggregate" => {
                let input = docs.clone();
                let pipeline = command.get_array("pipeline").cloned().unwrap_or_default();
                let out = aggregate(&st.collections, input, &pipeline)?;
                Ok(cursor(out, &coll))
            }
            other => Err(TransportError::server(
                59,
                format!("fake: no such command {other}"),
            )),
        }
    }
}

/// `find`: the matching documents, sorted, limited and projected.
fn find(docs: &[Document], command: &Document) -> Vec<Document> {
    let filter = command.get_document("filter").cloned().unwrap_or_default();
    let mut found: Vec<Document> = docs
        .iter()
        .filter(|d| matches(d, &filter, &Vars::new()))
        .cloned()
        .collect();
    if let Ok(sort) = command.get_document("sort") {
        sort_docs(&mut found, sort);
    }
    if let Some(limit) = command.get("limit").and_then(numeric)
        && limit > 0.0
    {
        found.truncate(limit as usize);
    }
    if let Ok(p) = command.get_document("projection") {
        found = found.iter().map(|d| project(d, p)).collect();
    }
    found
}

/// `findAndModify`: updates the first matching document (in sort order) or upserts one, and
/// replies with it before or after (`new`), projected by `fields`.
fn find_and_modify(
    docs: &mut Vec<Document>,
    command: &Document,
) -> Result<Document, TransportError> {
    let query = command.get_document("query").cloned().unwrap_or_default();
    let mut idx: Vec<usize> = (0..docs.len())
        .filter(|&i| matches(&docs[i], &query, &Vars::new()))
        .collect();
    if let Ok(sort) = command.get_document("sort") {
        idx.sort_by(|&a, &b| cmp_docs(&docs[a], &docs[b], sort));
    }
    let update = command.get("update").cloned().unwrap_or(Bson::Null);
    let new = command.get_bool("new").unwrap_or(false);
    let fields = command.get_document("fields").ok().cloned();
    let shape = |d: Document| match &fields {
        Some(p) => project(&d, p),
        None => d,
    };
    if let Some(&i) = idx.first() {
        let before = docs[i].clone();
        let after = apply_update(&before, &update, false)?;
        docs[i] = after.clone();
        let value = if new { after } else { before };
        Ok(
            doc! {"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": shape(value), "ok": 1},
        )
    } else if command.get_bool("upsert").unwrap_or(false) {
        let seed = upsert_seed(&query);
        let after = apply_update(&seed, &update, true)?;
        let after = with_id(after);
        if docs.iter().any(|d| d.get("_id") == after.get("_id")) {
            return Ok(dup_key_reply());
        }
        docs.push(after.clone());
        let value = if new {
            Bson::Document(shape(after))
        } else {
            Bson::Null
        };
        Ok(doc! {"lastErrorObject": {"n": 1, "updatedExisting": false}, "value": value, "ok": 1})
    } else {
        Ok(
            doc! {"lastErrorObject": {"n": 0, "updatedExisting": false}, "value": Bson::Null, "ok": 1},
        )
    }
}

/// The documents of the array `field` of a write command (`documents`, `updates`,
/// `deletes`) with their index in it; entries that are not documents are skipped.
fn statements(command: &Document, field: &str) -> Vec<(usize, Document)> {
    let all = command.get_array(field).cloned().unwrap_or_default();
    all.into_iter()
        .enumerate()
        .filter_map(|(i, b)| b.as_document().cloned().map(|d| (i, d)))
        .collect()
}

/// `insert`: adds each document (an `_id` given if it has none); a duplicate `_id` is a
/// write error at its index, the others are still inserted.
fn insert(docs: &mut Vec<Document>, command: &Document) -> Document {
    let mut n = 0;
    let mut errors = Vec::new();
    for (i, d) in statements(command, "documents") {
        let d = with_id(d);
        if docs.iter().any(|x| x.get("_id") == d.get("_id")) {
            errors.push(Bson::Document(
                doc! {"index": i as i32, "code": 11000, "errmsg": "E11000 duplicate key error"},
            ));
        } else {
            docs.push(d);
            n += 1;
        }
    }
    let mut reply = doc! {"n": n, "ok": 1};
    if !errors.is_empty() {
        reply.insert("writeErrors", errors);
    }
    reply
}

/// `update`: applies each update statement to the first (or, `multi`, every) matching
/// document, or upserts; replies with the counts, the upserted ids and the write errors.
fn update(docs: &mut Vec<Document>, command: &Document) -> Result<Document, TransportError> {
    let (mut n, mut modified) = (0i64, 0i64);
    let mut upserted = Vec::new();
    let mut errors = Vec::new();
    for (i, u) in statements(command, "updates") {
        let q = u.get_document("q").cloned().unwrap_or_default();
        let update = u.get("u").cloned().unwrap_or(Bson::Null);
        let multi = u.get_bool("multi").unwrap_or(false);
        let mut hit = false;
        for d in docs.iter_mut() {
            if matches(d, &q, &Vars::new()) {
                let after = apply_update(d, &update, false)?;
                n += 1;
                if after != *d {
                    modified += 1;
                }
                *d = after;
                hit = true;
                if !multi {
                    break;
                }
            }
        }
        if !hit && u.get_bool("upsert").unwrap_or(false) {
            let after = with_id(apply_update(&upsert_seed(&q), &update, true)?);
            if docs.iter().any(|x| x.get("_id") == after.get("_id")) {
                errors.push(Bson::Document(
                    doc! {"index": i as i32, "code": 11000, "errmsg": "E11000 duplicate key error"},
                ));
            } else {
                upserted.push(Bson::Document(doc! {"index": i as i32, "_id": after.get("_id").cloned().unwrap_or(Bson::Null)}));
                docs.push(after);
                n += 1;
            }
        }
    }
    let mut reply = doc! {"n": n, "nModified": modified, "ok": 1};
    if !upserted.is_empty() {
        reply.insert("upserted", upserted);
    }
    if !errors.is_empty() {
        reply.insert("writeErrors", errors);
    }
    Ok(reply)
}

/// `delete`: removes, per statement, the matching documents (`limit: 1`: the first only).
fn delete(docs: &mut Vec<Document>, command: &Document) -> Document {
    let mut n = 0i64;
    for (_, d) in statements(command, "deletes") {
        let q = d.get_document("q").cloned().unwrap_or_default();
        let limit = d.get("limit").and_then(numeric).unwrap_or(0.0);
        let mut removed = 0;
        docs.retain(|x| {
            if (limit == 0.0 || removed < 1) && matches(x, &q, &Vars::new()) {
                removed += 1;
                false
            } else {
                true
            }
        });
        n += removed;
    }
    doc! {"n": n, "ok": 1}
}

#[async_trait]
impl Transport for FakeMongo {
    async fn run(&self, _db: &str, command: Document) -> Result<Document, TransportError> {
        if self.interleave {
            for _ in 0..(self.next_rand() % 4) {
                tokio::task::yield_now().await;
            }
        }
        self.execute(command)
    }
}

fn dup_key_reply() -> Document {
    doc! {"ok": 0, "code": 11000, "codeName": "DuplicateKey", "errmsg": "E11000 duplicate key error"}
}

fn cursor(docs: Vec<Document>, coll: &str) -> Document {
    doc! {"cursor": {"firstBatch": docs, "id": 0i64, "ns": format!("evident.{coll}")}, "ok": 1}
}

fn with_id(mut d: Document) -> Document {
    if !d.contains_key("_id") {
        let mut out = doc! {"_id": bson::oid::ObjectId::new()};
        out.extend(std::mem::take(&mut d));
        return out;
    }
    d
}

/// The equality fields of an upsert's query: the new document starts from them.
fn upsert_seed(q: &Document) -> Document {
    let mut d = Document::new();
    for (k, v) in q {
        if k.starts_with('$') {
            continue;
        }
        if let Bson::Document(inner) = v
            && inner.keys().next().is_some_and(|k| k.starts_with('$'))
        {
            continue;
        }
        d.insert(k.clone(), v.clone());
    }
    d
}

/// An error for an update or stage this fake (or MongoDB) refuses.
fn bad(m: &str) -> TransportError {
    TransportError::server(9, format!("fake: {m}"))
}

/// The document after `update`: a pipeline of `$set` stages, a document of update
/// operators, or a replacement. `inserting` when the document is being upserted.
fn apply_update(
    before: &Document,
    update: &Bson,
    inserting: bool,
) -> Result<Document, TransportError> {
    match update {
        Bson::Array(stages) => apply_pipeline(before, stages),
        Bson::Document(u) if u.keys().next().is_some_and(|k| k.starts_with('$')) => {
            apply_operators(before, u, inserting)
        }
        Bson::Document(replacement) => {
            let mut d = Document::new();
            if let Some(id) = before.get("_id") {
                d.insert("_id", id.clone());
            }
            for (k, v) in replacement {
                if k != "_id" {
                    d.insert(k.clone(), v.clone());
                }
            }
            Ok(d)
        }
        _ => Err(bad("update")),
    }
}

/// An update pipeline: each `$set` / `$addFields` stage evaluated against the document as
/// the previous stage left it.
fn apply_pipeline(before: &Document, stages: &[Bson]) -> Result<Document, TransportError> {
    let mut d = before.clone();
    for stage in stages.iter().filter_map(Bson::as_document) {
        let input = d.clone();
        let set = stage
            .get_document("$set")
            .or_else(|_| stage.get_document("$addFields"))
            .map_err(|_| bad("pipeline stage"))?;
        for (k, e) in set {
            let v = eval(&input, e, &Vars::new());
            d.insert(k.clone(), v);
        }
    }
    Ok(d)
}

/// Update operators: `$set`, `$setOnInsert` (only when `inserting`), `$unset`, `$inc`, `$max`.
fn apply_operators(
    before: &Document,
    u: &Document,
    inserting: bool,
) -> Result<Document, TransportError> {
    let mut d = before.clone();
    for (op, fields) in u {
        let fields = fields
            .as_document()
            .ok_or_else(|| bad("operator argument"))?;
        for (k, v) in fields {
            match op.as_str() {
                "$set" => {
                    d.insert(k.clone(), v.clone());
                }
                "$setOnInsert" => {
                    if inserting {
                        d.insert(k.clone(), v.clone());
                    }
                }
                "$unset" => {
                    d.remove(k);
                }
                "$inc" => {
                    let sum = increment(d.get(k).cloned(), v)?;
                    d.insert(k.clone(), sum);
                }
                "$max" => {
                    if d.get(k).is_none() || cmp_values(Some(v), d.get(k)) == Ordering::Greater {
                        d.insert(k.clone(), v.clone());
                    }
                }
                other => return Err(bad(&format!("update operator {other}"))),
            }
        }
    }
    Ok(d)
}

/// `$inc`: `cur + v`, an int32 when both are, a double when either is, else an int64.
fn increment(cur: Option<Bson>, v: &Bson) -> Result<Bson, TransportError> {
    Ok(match (cur, v) {
        (None, v) => v.clone(),
        (Some(Bson::Int32(a)), Bson::Int32(b)) => Bson::Int32(a + b),
        (Some(c), v) => match (numeric(&c), numeric(v)) {
            (Some(a), Some(b)) if matches!(c, Bson::Double(_)) || matches!(v, Bson::Double(_)) => {
                Bson::Double(a + b)
            }
            (Some(a), Some(b)) => Bson::Int64(a as i64 + b as i64),
            _ => return Err(bad("$inc of a non-number")),
        },
    })
}

/// Runs an aggregation `pipeline` over `docs` (`$lookup` reads the other `collections`).
fn aggregate(
    collections: &HashMap<String, Vec<Document>>,
    mut docs: Vec<Document>,
    pipeline: &[Bson],
) -> Result<Vec<Document>, TransportError> {
    for stage in pipeline.iter().filter_map(Bson::as_document) {
        let Some((name, arg)) = stage.iter().next() else {
            continue;
        };
        match name.as_str() {
            "$match" => {
                let f = arg.as_document().cloned().unwrap_or_default();
                docs.retain(|d| matches(d, &f, &Vars::new()));
            }
            "$sort" => sort_docs(&mut docs, arg.as_document().unwrap_or(&Document::new())),
            "$limit" => docs.truncate(numeric(arg).unwrap_or(0.0) as usize),
            "$project" => {
                let p = arg.as_document().cloned().unwrap_or_default();
                docs = docs.iter().map(|d| project(d, &p)).collect();
            }
            "$group" => docs = group(&docs, arg),
            "$lookup" => docs = lookup(collections, docs, arg)?,
            other => {
                return Err(TransportError::server(
                    40324,
                    format!("fake: stage {other}"),
                ));
            }
        }
    }
    Ok(docs)
}

/// `$group` by the `_id` expression, counting each group into the stage's other field (`n`
/// when there is none), groups in order of first appearance.
fn group(docs: &[Document], arg: &Bson) -> Vec<Document> {
    let g = arg.as_document().cloned().unwrap_or_default();
    let key = g.get("_id").cloned().unwrap_or(Bson::Null);
    let mut groups: Vec<(Bson, i64)> = Vec::new();
    for d in docs {
        let k = eval(d, &key, &Vars::new());
        match groups.iter_mut().find(|(x, _)| *x == k) {
            Some((_, n)) => *n += 1,
            None => groups.push((k, 1)),
        }
    }
    let field = g
        .keys()
        .find(|k| *k != "_id")
        .cloned()
        .unwrap_or_else(|| "n".into());
    groups
        .into_iter()
        .map(|(k, n)| {
            let mut d = doc! {"_id": k};
            d.insert(field.clone(), n as i32);
            d
        })
        .collect()
}

/// `$lookup` with `let` and a sub-pipeline: each document gets, in its `as` field, the
/// documents of `from` that the sub-pipeline yields with its variables bound.
fn lookup(
    collections: &HashMap<String, Vec<Document>>,
    docs: Vec<Document>,
    arg: &Bson,
) -> Result<Vec<Document>, TransportError> {
    let l = arg.as_document().cloned().unwrap_or_default();
    let from = collections
        .get(l.get_str("from").unwrap_or(""))
        .cloned()
        .unwrap_or_default();
    let lets = l.get_document("let").cloned().unwrap_or_default();
    let sub = l.get_array("pipeline").cloned().unwrap_or_default();
    let as_field = l.get_str("as").unwrap_or("joined").to_string();
    let mut out = Vec::new();
    for mut d in docs {
        let vars: Vars = lets
            .iter()
            .map(|(k, e)| (k.clone(), eval(&d, e, &Vars::new())))
            .collect();
        let mut joined: Vec<Document> = Vec::new();
        for f in &from {
            // Only `$match` with `$expr` sees the variables in this fake.
            let first = sub
                .first()
                .and_then(Bson::as_document)
                .and_then(|s| s.get_document("$match").ok());
            if first.is_none_or(|m| matches(f, m, &vars)) {
                joined.push(f.clone());
            }
        }
        let joined = aggregate(collections, joined, sub.get(1..).unwrap_or(&[]))?;
        d.insert(
            as_field.clone(),
            joined.into_iter().map(Bson::Document).collect::<Vec<_>>(),
        );
        out.push(d);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn query_semantics_follow_mongodb() {
        let f = FakeMongo::new();
        for d in [
            doc! {"_id": 1, "a": 1, "s": "x"},
            doc! {"_id": 2, "a": 2i64},
            doc! {"_id": 3},
        ] {
            f.run("db", doc! {"insert": "c", "documents": [d]})
                .await
                .expect("insert");
        }
        let ids = |r: Document| -> Vec<i64> {
            r.get_document("cursor")
                .expect("cursor")
                .get_array("firstBatch")
                .expect("batch")
                .iter()
                .filter_map(|d| d.as_document().and_then(|d| d.get("_id")).and_then(numeric))
                .map(|n| n as i64)
                .collect()
        };
        let r = f
            .run("db", doc! {"find": "c", "filter": {"a": null}})
            .await
            .expect("find");
        assert_eq!(ids(r), vec![3], "null matches missing");
        let r = f
            .run("db", doc! {"find": "c", "filter": {"a": {"$gte": 1.5}}})
            .await
            .expect("find");
        assert_eq!(ids(r), vec![2], "numbers compare across types");
        let r = f
            .run("db", doc! {"find": "c", "filter": {}, "sort": {"a": -1}})
            .await
            .expect("find");
        assert_eq!(
            ids(r),
            vec![2, 1, 3],
            "missing sorts first ascending, last descending"
        );
        let r = f
            .run("db", doc! {"findAndModify": "c", "query": {"_id": 9}, "update": {"$inc": {"n": 1i64}}, "upsert": true, "new": true})
            .await
            .expect("upsert");
        assert_eq!(
            r.get_document("value").expect("value"),
            &doc! {"_id": 9, "n": 1i64}
        );
    }
}
