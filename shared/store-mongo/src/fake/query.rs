//! MongoDB's query semantics, as far as this fake needs them: dotted paths, BSON sort
//! order and cross-type numbers, projection, filters and aggregation expressions.

use std::cmp::Ordering;
use std::collections::HashMap;

use bson::{Bson, Document};

use crate::fields::numeric;

fn get_path<'a>(d: &'a Document, path: &str) -> Option<&'a Bson> {
    let mut parts = path.split('.');
    let mut cur = d.get(parts.next()?)?;
    for p in parts {
        cur = cur.as_document()?.get(p)?;
    }
    Some(cur)
}

fn rank(b: Option<&Bson>) -> u8 {
    match b {
        None | Some(Bson::Null) => 1,
        Some(Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)) => 2,
        Some(Bson::String(_)) => 3,
        Some(Bson::Document(_)) => 4,
        Some(Bson::Array(_)) => 5,
        Some(Bson::ObjectId(_)) => 7,
        Some(Bson::Boolean(_)) => 8,
        Some(Bson::DateTime(_)) => 9,
        Some(_) => 10,
    }
}

pub(super) fn cmp_values(a: Option<&Bson>, b: Option<&Bson>) -> Ordering {
    let (ra, rb) = (rank(a), rank(b));
    if ra != rb {
        return ra.cmp(&rb);
    }
    match (a, b) {
        (Some(x), Some(y)) => match (numeric(x), numeric(y)) {
            (Some(p), Some(q)) => p.partial_cmp(&q).unwrap_or(Ordering::Equal),
            _ => match (x, y) {
                (Bson::String(p), Bson::String(q)) => p.as_bytes().cmp(q.as_bytes()),
                (Bson::Boolean(p), Bson::Boolean(q)) => p.cmp(q),
                (Bson::DateTime(p), Bson::DateTime(q)) => {
                    p.timestamp_millis().cmp(&q.timestamp_millis())
                }
                (Bson::ObjectId(p), Bson::ObjectId(q)) => p.bytes().cmp(&q.bytes()),
                (Bson::Document(p), Bson::Document(q)) => {
                    for ((ka, va), (kb, vb)) in p.iter().zip(q.iter()) {
                        let c = ka.cmp(kb).then_with(|| cmp_values(Some(va), Some(vb)));
                        if c != Ordering::Equal {
                            return c;
                        }
                    }
                    p.len().cmp(&q.len())
                }
                _ => x.to_string().cmp(&y.to_string()),
            },
        },
        _ => Ordering::Equal,
    }
}

pub(super) fn cmp_docs(a: &Document, b: &Document, sort: &Document) -> Ordering {
    for (k, dir) in sort {
        let c = cmp_values(get_path(a, k), get_path(b, k));
        let c = if numeric(dir).unwrap_or(1.0) < 0.0 {
            c.reverse()
        } else {
            c
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

pub(super) fn sort_docs(docs: &mut [Document], sort: &Document) {
    docs.sort_by(|a, b| cmp_docs(a, b, sort));
}

pub(super) fn project(d: &Document, p: &Document) -> Document {
    // Only zeros (besides `_id`): an exclusion projection.
    if p.iter().all(|(k, v)| k == "_id" || numeric(v) == Some(0.0)) && p.keys().any(|k| k != "_id")
    {
        let mut out = d.clone();
        for (k, _) in p {
            out.remove(k);
        }
        return out;
    }
    let mut out = Document::new();
    if p.get("_id").and_then(numeric) != Some(0.0)
        && let Some(id) = d.get("_id")
    {
        out.insert("_id", id.clone());
    }
    for (k, _) in p {
        if k != "_id"
            && let Some(v) = d.get(k)
        {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

pub(super) type Vars = HashMap<String, Bson>;

fn eq_values(a: Option<&Bson>, b: &Bson) -> bool {
    match (a, b) {
        (None, Bson::Null) | (Some(Bson::Null), Bson::Null) => true,
        (Some(x), y) => {
            rank(Some(x)) == rank(Some(y)) && cmp_values(Some(x), Some(y)) == Ordering::Equal
        }
        (None, _) => false,
    }
}

pub(super) fn matches(d: &Document, filter: &Document, vars: &Vars) -> bool {
    filter.iter().all(|(k, cond)| match k.as_str() {
        "$or" => cond.as_array().is_some_and(|cs| {
            cs.iter()
                .filter_map(Bson::as_document)
                .any(|c| matches(d, c, vars))
        }),
        "$and" => cond.as_array().is_some_and(|cs| {
            cs.iter()
                .filter_map(Bson::as_document)
                .all(|c| matches(d, c, vars))
        }),
        "$expr" => truthy(&eval(d, cond, vars)),
        field => field_matches(get_path(d, field), cond),
    })
}

fn field_matches(v: Option<&Bson>, cond: &Bson) -> bool {
    if let Bson::Document(ops) = cond
        && ops.keys().next().is_some_and(|k| k.starts_with('$'))
    {
        return ops.iter().all(|(op, arg)| {
            let ordered = |want: &[Ordering]| {
                v.is_some_and(|x| {
                    rank(Some(x)) == rank(Some(arg))
                        && want.contains(&cmp_values(Some(x), Some(arg)))
                })
            };
            match op.as_str() {
                "$eq" => eq_values(v, arg),
                "$ne" => !eq_values(v, arg),
                "$gt" => ordered(&[Ordering::Greater]),
                "$gte" => ordered(&[Ordering::Greater, Ordering::Equal]),
                "$lt" => ordered(&[Ordering::Less]),
                "$lte" => ordered(&[Ordering::Less, Ordering::Equal]),
                "$in" => arg
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| eq_values(v, x))),
                "$nin" => !arg
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| eq_values(v, x))),
                "$exists" => v.is_some() == arg.as_bool().unwrap_or(true),
                "$size" => v
                    .and_then(Bson::as_array)
                    .is_some_and(|a| Some(a.len() as f64) == numeric(arg)),
                _ => false,
            }
        });
    }
    eq_values(v, cond)
}

fn truthy(b: &Bson) -> bool {
    !matches!(b, Bson::Null | Bson::Boolean(false)) && numeric(b) != Some(0.0)
}

/// Aggregation expressions: literals, `$field`, `$$var`, `$literal`, `$cond`, `$eq`, `$gt`,
/// `$ifNull`.
pub(super) fn eval(d: &Document, e: &Bson, vars: &Vars) -> Bson {
    match e {
        Bson::String(s) if s.starts_with("$$") => vars.get(&s[2..]).cloned().unwrap_or(Bson::Null),
        Bson::String(s) if s.starts_with('$') => {
            get_path(d, &s[1..]).cloned().unwrap_or(Bson::Null)
        }
        Bson::Document(op) if op.keys().next().is_some_and(|k| k.starts_with('$')) => {
            let (name, arg) = op
                .iter()
                .next()
                .map(|(k, v)| (k.as_str(), v))
                .unwrap_or(("", &Bson::Null));
            let args: Vec<Bson> = match arg {
                Bson::Array(a) => a.iter().map(|x| eval(d, x, vars)).collect(),
                other => vec![eval(d, other, vars)],
            };
            match name {
                "$literal" => arg.clone(),
                "$cond" => {
                    if args.first().is_some_and(truthy) {
                        args.get(1).cloned().unwrap_or(Bson::Null)
                    } else {
                        args.get(2).cloned().unwrap_or(Bson::Null)
                    }
                }
                "$eq" => Bson::Boolean(
                    args.len() == 2
                        && cmp_values(Some(&args[0]), Some(&args[1])) == Ordering::Equal,
                ),
                "$gt" => Bson::Boolean(
                    args.len() == 2
                        && cmp_values(Some(&args[0]), Some(&args[1])) == Ordering::Greater,
                ),
                "$ifNull" => args
                    .iter()
                    .find(|a| !matches!(a, Bson::Null))
                    .cloned()
                    .unwrap_or(Bson::Null),
                _ => Bson::Null,
            }
        }
        Bson::Document(fields) => Bson::Document(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), eval(d, v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}
