//! Reading stored documents: tolerant number access (a value written as Int64 may come back
//! as Int32 or Double from other writers), required fields, JSON kept as text, scopes.

use bson::{Bson, Document};
use evident_core::Scope;
use evident_store::{Result, StoreError};

use crate::error::corrupt;

/// Any BSON number (and a date, as milliseconds) as an i64.
pub(crate) fn number(b: &Bson) -> Option<i64> {
    match b {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(v) if v.is_finite() => Some(*v as i64),
        Bson::DateTime(d) => Some(d.timestamp_millis()),
        _ => None,
    }
}

/// A numeric BSON value as a double, for comparing numbers across BSON types the way the
/// server does (the fake and the recorded-protocol matcher).
pub(crate) fn numeric(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(v) => Some(f64::from(*v)),
        Bson::Int64(v) => Some(*v as f64),
        Bson::Double(v) => Some(*v),
        _ => None,
    }
}

pub(crate) fn opt_i64(d: &Document, key: &str) -> Option<i64> {
    d.get(key).and_then(number)
}

pub(crate) fn req_i64(d: &Document, key: &str, what: &str) -> Result<i64> {
    opt_i64(d, key).ok_or_else(|| corrupt(format!("{what}: field `{key}` missing or not a number")))
}

pub(crate) fn opt_str(d: &Document, key: &str) -> Option<String> {
    d.get(key).and_then(Bson::as_str).map(str::to_string)
}

pub(crate) fn req_str(d: &Document, key: &str, what: &str) -> Result<String> {
    opt_str(d, key).ok_or_else(|| corrupt(format!("{what}: field `{key}` missing or not a string")))
}

pub(crate) fn opt_bool(d: &Document, key: &str) -> Option<bool> {
    d.get(key).and_then(Bson::as_bool)
}

/// JSON values (payloads, configs, stats, cursors, memory values) are stored as their JSON
/// text: exact round trips (numbers beyond i64, key order), and user keys starting with `$` or
/// holding `.` can never be read as update operators or paths.
pub(crate) fn json_text(v: &serde_json::Value) -> Result<String> {
    serde_json::to_string(v).map_err(|e| StoreError::invalid(format!("mongo: JSON value: {e}")))
}

pub(crate) fn parse_json(d: &Document, key: &str, what: &str) -> Result<serde_json::Value> {
    let text = req_str(d, key, what)?;
    serde_json::from_str(&text).map_err(|e| corrupt(format!("{what}: stored JSON in `{key}`: {e}")))
}

/// Sets the scope fields present in `scope` into `set`, and lists the absent ones in `unset`.
pub(crate) fn scope_fields(scope: &Scope, set: &mut Document, unset: &mut Document) {
    for (field, value) in [
        ("clientId", &scope.client_id),
        ("projectId", &scope.project_id),
        ("groupId", &scope.group_id),
    ] {
        match value {
            Some(v) => {
                set.insert(field, v.as_str());
            }
            None => {
                unset.insert(field, "");
            }
        }
    }
}

/// The scope fields present in `scope`, for a new document.
pub(crate) fn insert_scope(scope: &Scope, doc: &mut Document) {
    let mut unset = Document::new();
    scope_fields(scope, doc, &mut unset);
}

pub(crate) fn scope_of(d: &Document) -> Scope {
    Scope {
        client_id: opt_str(d, "clientId"),
        project_id: opt_str(d, "projectId"),
        group_id: opt_str(d, "groupId"),
    }
}

/// `{$set: set, $unset: unset}` without empty operators (servers before 5.0 refuse them).
pub(crate) fn set_unset(set: Document, unset: Document) -> Document {
    let mut u = Document::new();
    if !set.is_empty() {
        u.insert("$set", set);
    }
    if !unset.is_empty() {
        u.insert("$unset", unset);
    }
    u
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn numbers_are_read_whatever_their_bson_type() {
        let d = doc! {"a": 1, "b": 2i64, "c": 3.0, "d": bson::DateTime::from_millis(4), "e": "5"};
        let got: Vec<Option<i64>> = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .map(|k| opt_i64(&d, k))
            .collect();
        assert_eq!(got, vec![Some(1), Some(2), Some(3), Some(4), None, None]);
    }

    #[test]
    fn scopes_set_present_fields_and_unset_absent_ones() {
        let (mut set, mut unset) = (Document::new(), Document::new());
        scope_fields(&Scope::client("c1").with_group("g"), &mut set, &mut unset);
        assert_eq!(set, doc! {"clientId": "c1", "groupId": "g"});
        assert_eq!(unset, doc! {"projectId": ""});
        assert_eq!(scope_of(&set), Scope::client("c1").with_group("g"));
        assert_eq!(
            set_unset(doc! {}, doc! {"a": ""}),
            doc! {"$unset": {"a": ""}}
        );
    }
}
