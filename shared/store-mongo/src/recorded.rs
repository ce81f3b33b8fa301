//! A [`Transport`] that answers from recorded (command → reply) pairs, for wire tests that
//! need neither a server nor the driver.
//!
//! Fixture files are MongoDB Extended JSON (v2, canonical or relaxed), read with key order
//! kept (MongoDB commands are ordered documents: the first key names the command, and `sort`
//! and index `key` documents are ordered):
//!
//! ```json
//! {
//!   "manual": ["https://www.mongodb.com/docs/manual/reference/command/find/"],
//!   "scenarios": {
//!     "get_finds_by_id": [
//!       {"command": {"find": "tasks", "filter": {"_id": "t000000000001"}, "limit": 1, "singleBatch": true},
//!        "reply": {"cursor": {"firstBatch": [], "id": {"$numberLong": "0"}, "ns": "evident.tasks"}, "ok": 1}},
//!       {"command": {"ping": 1}, "error": {"network": true, "message": "connection reset"}}
//!     ]
//!   }
//! }
//! ```
//!
//! Commands must arrive in the recorded order. A recorded command matches a sent one when:
//! - the first key (the command name) and its value are the same;
//! - every other recorded field is present in the sent command with a matching value (the
//!   recording may pin a subset of the fields; fields a driver adds on the wire — `lsid`,
//!   `$db`, `$clusterTime`, `txnNumber`, `$readPreference`, `apiVersion`… — are ignored);
//! - values match when equal, numbers by value whatever their BSON type, documents with the
//!   same keys (in the same order for `sort`, `key` and `$sort` documents, where order has a
//!   meaning), arrays element by element; the recorded string `"$$any"` matches any value.
//!
//! Replies are returned as recorded, `{ok: 0, code, codeName, errmsg}` included (the adapter
//! maps them); `{"error": {…}}` instead of a reply makes the transport fail as the driver does
//! (`network`, `code`, `labels`, `message`).

use crate::fields::numeric;
use std::collections::VecDeque;

use async_trait::async_trait;
use bson::{Bson, Document};
use parking_lot::Mutex;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::client::Transport;
use crate::error::TransportError;

/// One recorded command and what the server answered.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub command: Document,
    pub reply: Result<Document, TransportError>,
}

#[derive(Default)]
struct State {
    exchanges: VecDeque<Exchange>,
    sent: Vec<(String, Document)>,
    mismatches: Vec<String>,
}

/// Answers commands from recorded exchanges, in order; keeps every command it received.
#[derive(Default)]
pub struct RecordedTransport {
    state: Mutex<State>,
}

/// Fields a driver adds to every command on the wire; never compared.
const DRIVER_FIELDS: [&str; 10] = [
    "lsid",
    "$db",
    "$clusterTime",
    "txnNumber",
    "$readPreference",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "autocommit",
    "startTransaction",
];

/// Matches any recorded value.
pub const ANY: &str = "$$any";

impl RecordedTransport {
    pub fn new(exchanges: Vec<Exchange>) -> Self {
        RecordedTransport {
            state: Mutex::new(State {
                exchanges: exchanges.into(),
                ..State::default()
            }),
        }
    }

    /// The exchanges of scenario `name` of a fixture file (see the module docs).
    pub fn from_fixture(text: &str, name: &str) -> Result<Self, String> {
        Ok(Self::new(fixture_exchanges(text, name)?))
    }

    /// Every command received so far, in order.
    pub fn sent(&self) -> Vec<Document> {
        self.state
            .lock()
            .sent
            .iter()
            .map(|(_, c)| c.clone())
            .collect()
    }

    /// The database each command was sent to, in order.
    pub fn databases(&self) -> Vec<String> {
        self.state
            .lock()
            .sent
            .iter()
            .map(|(db, _)| db.clone())
            .collect()
    }

    /// Recorded exchanges not used yet.
    pub fn remaining(&self) -> usize {
        self.state.lock().exchanges.len()
    }

    /// Panics unless every recorded exchange was used and every command matched.
    pub fn assert_done(&self) {
        let st = self.state.lock();
        assert!(
            st.mismatches.is_empty(),
            "commands that did not match the recording:\n{}",
            st.mismatches.join("\n")
        );
        assert!(
            st.exchanges.is_empty(),
            "{} recorded exchange(s) never sent; next expected: {}",
            st.exchanges.len(),
            st.exchanges
                .front()
                .map(|e| e.command.to_string())
                .unwrap_or_default()
        );
    }
}

#[async_trait]
impl Transport for RecordedTransport {
    async fn run(&self, db: &str, command: Document) -> Result<Document, TransportError> {
        let mut st = self.state.lock();
        st.sent.push((db.to_string(), command.clone()));
        let Some(next) = st.exchanges.pop_front() else {
            let msg = format!("unexpected command (recording exhausted): {command}");
            st.mismatches.push(msg.clone());
            return Err(TransportError::other(msg));
        };
        if let Err(why) = command_matches(&next.command, &command) {
            let msg = format!(
                "command #{} does not match the recording: {why}\n  recorded: {}\n  sent:     {command}",
                st.sent.len(),
                next.command
            );
            st.mismatches.push(msg.clone());
            return Err(TransportError::other(msg));
        }
        next.reply
    }
}

/// Whether `sent` matches the `recorded` command (see the module docs); why not otherwise.
pub fn command_matches(recorded: &Document, sent: &Document) -> Result<(), String> {
    let (Some((rname, rvalue)), Some((sname, svalue))) =
        (recorded.iter().next(), sent.iter().next())
    else {
        return Err("empty command".into());
    };
    if rname != sname {
        return Err(format!("command `{sname}` sent, `{rname}` recorded"));
    }
    value_matches(rvalue, svalue, rname).map_err(|e| format!("{rname}: {e}"))?;
    for (k, v) in recorded.iter().skip(1) {
        if DRIVER_FIELDS.contains(&k.as_str()) {
            continue;
        }
        let Some(s) = sent.get(k) else {
            return Err(format!("field `{k}` missing"));
        };
        value_matches(v, s, k).map_err(|e| format!("{k}: {e}"))?;
    }
    Ok(())
}

fn ordered(key: &str) -> bool {
    matches!(key, "sort" | "key" | "$sort")
}

fn value_matches(recorded: &Bson, sent: &Bson, key: &str) -> Result<(), String> {
    if recorded.as_str() == Some(ANY) {
        return Ok(());
    }
    match (recorded, sent) {
        (Bson::Document(r), Bson::Document(s)) => {
            if r.len() != s.len() || r.keys().any(|k| !s.contains_key(k)) {
                return Err(format!("{r} ≠ {s}"));
            }
            if ordered(key) && !r.keys().eq(s.keys()) {
                return Err(format!("key order {r} ≠ {s}"));
            }
            for (k, rv) in r {
                let sv = s.get(k).ok_or_else(|| format!("`{k}` missing"))?;
                value_matches(rv, sv, k).map_err(|e| format!("{k}.{e}"))?;
            }
            Ok(())
        }
        (Bson::Array(r), Bson::Array(s)) => {
            if r.len() != s.len() {
                return Err(format!("{recorded} ≠ {sent}"));
            }
            for (i, (rv, sv)) in r.iter().zip(s).enumerate() {
                value_matches(rv, sv, key).map_err(|e| format!("[{i}] {e}"))?;
            }
            Ok(())
        }
        _ => match (numeric(recorded), numeric(sent)) {
            (Some(a), Some(b)) if a == b => Ok(()),
            (Some(_), Some(_)) => Err(format!("{recorded} ≠ {sent}")),
            _ if recorded == sent => Ok(()),
            _ => Err(format!("{recorded} ≠ {sent}")),
        },
    }
}

/// The exchanges of scenario `name` in a fixture file.
pub fn fixture_exchanges(text: &str, name: &str) -> Result<Vec<Exchange>, String> {
    let root: Json = serde_json::from_str(text).map_err(|e| format!("fixture JSON: {e}"))?;
    let scenarios = root.get("scenarios").ok_or("fixture without `scenarios`")?;
    let Some(Json::Array(list)) = scenarios.get(name) else {
        return Err(format!(
            "no scenario `{name}` (an array of exchanges) in the fixture"
        ));
    };
    list.iter()
        .enumerate()
        .map(|(i, e)| exchange(e).map_err(|why| format!("{name}[{i}]: {why}")))
        .collect()
}

fn exchange(e: &Json) -> Result<Exchange, String> {
    let command = match e.get("command").cloned().map(to_bson).transpose()? {
        Some(Bson::Document(d)) => d,
        _ => return Err("`command` must be a document".into()),
    };
    let reply = if let Some(r) = e.get("reply") {
        match to_bson(r.clone())? {
            Bson::Document(d) => Ok(d),
            _ => return Err("`reply` must be a document".into()),
        }
    } else if let Some(err) = e.get("error") {
        Err(TransportError {
            code: match err.get("code") {
                Some(Json::Int(c)) => Some(*c as i32),
                _ => None,
            },
            labels: match err.get("labels") {
                Some(Json::Array(ls)) => ls
                    .iter()
                    .filter_map(|l| match l {
                        Json::Str(s) => Some(s.clone()),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            },
            network: matches!(err.get("network"), Some(Json::Bool(true))),
            message: match err.get("message") {
                Some(Json::Str(s)) => s.clone(),
                _ => "recorded failure".to_string(),
            },
        })
    } else {
        return Err("an exchange needs `reply` or `error`".into());
    };
    Ok(Exchange { command, reply })
}

/// Parses one Extended JSON document, keeping key order.
pub fn parse_extended_json(text: &str) -> Result<Document, String> {
    let j: Json = serde_json::from_str(text).map_err(|e| format!("JSON: {e}"))?;
    match to_bson(j)? {
        Bson::Document(d) => Ok(d),
        other => Err(format!("not a document: {other}")),
    }
}

/// JSON with object keys in source order.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Keys that open an Extended JSON value wrapper (`{"$numberLong": "5"}`…), as opposed to
/// query and update operators (`$set`, `$gt`…), which stay ordinary document keys.
const EXTJSON_KEYS: [&str; 16] = [
    "$oid",
    "$date",
    "$numberLong",
    "$numberInt",
    "$numberDouble",
    "$numberDecimal",
    "$binary",
    "$uuid",
    "$code",
    "$timestamp",
    "$regularExpression",
    "$symbol",
    "$dbPointer",
    "$minKey",
    "$maxKey",
    "$undefined",
];

fn to_bson(j: Json) -> Result<Bson, String> {
    Ok(match j {
        Json::Null => Bson::Null,
        Json::Bool(b) => Bson::Boolean(b),
        Json::Int(i) => match i32::try_from(i) {
            Ok(v) => Bson::Int32(v),
            Err(_) => Bson::Int64(i),
        },
        Json::UInt(u) => match i64::try_from(u) {
            Ok(v) => Bson::Int64(v),
            Err(_) => Bson::Double(u as f64),
        },
        Json::Float(f) => Bson::Double(f),
        Json::Str(s) => Bson::String(s),
        Json::Array(items) => {
            Bson::Array(items.into_iter().map(to_bson).collect::<Result<_, _>>()?)
        }
        Json::Object(pairs) => {
            if pairs
                .first()
                .is_some_and(|(k, _)| EXTJSON_KEYS.contains(&k.as_str()))
            {
                return Bson::try_from(to_plain_json(Json::Object(pairs)))
                    .map_err(|e| format!("extended JSON: {e}"));
            }
            let mut d = Document::new();
            for (k, v) in pairs {
                d.insert(k, to_bson(v)?);
            }
            Bson::Document(d)
        }
    })
}

fn to_plain_json(j: Json) -> serde_json::Value {
    use serde_json::Value as V;
    match j {
        Json::Null => V::Null,
        Json::Bool(b) => V::Bool(b),
        Json::Int(i) => V::from(i),
        Json::UInt(u) => V::from(u),
        Json::Float(f) => V::from(f),
        Json::Str(s) => V::String(s),
        Json::Array(items) => V::Array(items.into_iter().map(to_plain_json).collect()),
        Json::Object(pairs) => V::Object(
            pairs
                .into_iter()
                .map(|(k, v)| (k, to_plain_json(v)))
                .collect(),
        ),
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => Json::Int(i),
            Err(_) => Json::UInt(v),
        })
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        Json::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Json>()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Json, M::Error> {
        let mut pairs = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            pairs.push((k, v));
        }
        Ok(Json::Object(pairs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn extended_json_keeps_key_order_and_reads_wrappers() {
        let d = parse_extended_json(
            r#"{"find": "tasks", "sort": {"seq": 1, "priority": 1}, "at": {"$date": {"$numberLong": "1000"}}, "id": {"$numberLong": "7"}, "q": {"$gt": 5}}"#,
        )
        .expect("parse");
        assert_eq!(
            d.keys().collect::<Vec<_>>(),
            vec!["find", "sort", "at", "id", "q"]
        );
        assert_eq!(
            d.get_document("sort")
                .expect("sort")
                .keys()
                .collect::<Vec<_>>(),
            vec!["seq", "priority"]
        );
        assert_eq!(
            d.get("at"),
            Some(&Bson::DateTime(bson::DateTime::from_millis(1000)))
        );
        assert_eq!(d.get("id"), Some(&Bson::Int64(7)));
        assert_eq!(d.get_document("q").expect("q"), &doc! {"$gt": 5});
    }

    #[test]
    fn matching_pins_recorded_fields_numbers_by_value_and_sort_order() {
        let recorded = doc! {"find": "tasks", "filter": {"a": 1, "b": "$$any"}, "sort": {"x": 1, "y": 1}, "lsid": {"id": 1}};
        let sent = doc! {"find": "tasks", "filter": {"b": [1, 2], "a": 1i64}, "sort": {"x": 1, "y": 1}, "limit": 1};
        command_matches(&recorded, &sent).expect("matches");
        let wrong_order =
            doc! {"find": "tasks", "filter": {"a": 1, "b": 0}, "sort": {"y": 1, "x": 1}};
        assert!(command_matches(&recorded, &wrong_order).is_err());
        let other =
            doc! {"find": "task_payloads", "filter": {"a": 1, "b": 0}, "sort": {"x": 1, "y": 1}};
        assert!(command_matches(&recorded, &other).is_err());
        let missing = doc! {"find": "tasks", "filter": {"a": 1, "b": 0}};
        assert!(command_matches(&recorded, &missing).is_err());
    }

    #[tokio::test]
    async fn replays_in_order_and_reports_mismatches() {
        let fixture = r#"{"scenarios": {"s": [
            {"command": {"ping": 1}, "reply": {"ok": 1}},
            {"command": {"ping": 1}, "error": {"network": true, "message": "reset"}}
        ]}}"#;
        let t = RecordedTransport::from_fixture(fixture, "s").expect("fixture");
        assert_eq!(t.run("evident", doc! {"ping": 1}).await, Ok(doc! {"ok": 1}));
        let e = t
            .run("evident", doc! {"ping": 1})
            .await
            .expect_err("network");
        assert!(e.network);
        t.assert_done();
        assert!(t.run("evident", doc! {"ping": 1}).await.is_err());
    }
}
