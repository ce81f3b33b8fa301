//! The one credential rule for every string the knowledge base stores: content, titles,
//! URNs, keys, relationship strings, metadata and props (keys and values at any depth),
//! locators, memory values, alias strings, pushed paths, symbol names and commit messages.
//! A credential is refused with `422 credential_detected` naming the field — never the
//! secret. (Producers that must keep a document whose text holds one — a config file, a diff
//! — redact its lines with `evident_core::secrets::redact` before they get here.)

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use evident_core::secrets::find_secrets;
use serde_json::{Map, Value};

use crate::{KbError, Result};

/// Refuses `text` when it holds a credential; `field` names where it was found.
pub fn refuse_in(field: &str, text: &str) -> Result<()> {
    Scan::default().text(field, text)
}

/// [`refuse_in`] for each of `texts`.
pub fn refuse_in_all<'a>(field: &str, texts: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut scan = Scan::default();
    texts.into_iter().try_for_each(|t| scan.text(field, t))
}

/// Refuses a JSON value holding a credential anywhere (see [`Scan::json`]).
pub fn refuse_in_json(field: &str, value: &Value) -> Result<()> {
    Scan::default().json(field, value)
}

/// The longest value [`Scan::pair`] scans with its key.
pub const MAX_PAIR_VALUE: usize = 4096;

/// One pass over many strings (a prepared source's chunks, locators, graph): a string seen
/// before in the same pass (the same file path in every chunk's locator) is not scanned again.
#[derive(Default)]
pub struct Scan {
    seen: HashSet<u64>,
}

impl Scan {
    pub fn text(&mut self, field: &str, text: &str) -> Result<()> {
        if text.len() < 8 {
            return Ok(()); // shorter than any credential the detector knows
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        if !self.seen.insert(h.finish()) {
            return Ok(());
        }
        match find_secrets(text).first() {
            Some(f) => Err(KbError::CredentialDetected {
                field: field.to_string(),
                class: f.class,
                line: f.line,
            }),
            None => Ok(()),
        }
    }

    pub fn all<'a>(&mut self, field: &str, texts: impl IntoIterator<Item = &'a str>) -> Result<()> {
        texts.into_iter().try_for_each(|t| self.text(field, t))
    }

    /// Every string of a JSON value, every object key, and every `"key": "value"` pair as it
    /// is written (so `{"password": "hunter2…"}` is an assignment, as it would be in a config
    /// file). The error names the path (`metadata.db.password`, `value.items[2]`).
    pub fn json(&mut self, field: &str, value: &Value) -> Result<()> {
        match value {
            Value::String(s) => self.text(field, s),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, v)| self.json(&format!("{field}[{i}]"), v)),
            Value::Object(map) => self.map(field, map),
            Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
        }
    }

    /// [`Scan::json`] of an object: each key, each string value on its own and as the pair
    /// JSON writes.
    pub fn map(&mut self, field: &str, map: &Map<String, Value>) -> Result<()> {
        for (k, v) in map {
            let path = format!("{field}.{k}");
            self.text(&path, k)?;
            if let Value::String(s) = v {
                self.pair(&path, k, s)?;
            }
            self.json(&path, v)?;
        }
        Ok(())
    }

    /// The pair `"key": "value"` as JSON writes it: the key gives the detector its context
    /// (`{"password": "…"}` is an assignment, as in a config file). Values longer than
    /// [`MAX_PAIR_VALUE`] are not passwords; their own text is scanned by the caller.
    pub fn pair(&mut self, field: &str, key: &str, value: &str) -> Result<()> {
        if value.len() > MAX_PAIR_VALUE {
            return Ok(());
        }
        let pair = serde_json::to_string(&serde_json::json!({ key: value })).unwrap_or_default();
        self.text(field, &pair)
    }

    /// [`Scan::json`] of anything serialisable (a locator).
    pub fn serialised<T: serde::Serialize>(&mut self, field: &str, value: &T) -> Result<()> {
        match serde_json::to_value(value) {
            Ok(v) => self.json(field, &v),
            Err(e) => Err(KbError::Invalid(format!("unserialisable {field}: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRETS: [&str; 4] = [
        "AKIAZ3MHQ7RT2LQKXW5P",
        "hunter2hunter2",
        "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ];

    fn field_of(r: Result<()>) -> Option<String> {
        match r {
            Err(KbError::CredentialDetected { field, .. }) => Some(field),
            _ => None,
        }
    }

    #[test]
    fn plain_strings() {
        assert!(refuse_in("title", "A perfectly ordinary title").is_ok());
        assert_eq!(
            field_of(refuse_in("sourceUrn", "doc:AKIAZ3MHQ7RT2LQKXW5P")).as_deref(),
            Some("sourceUrn")
        );
        assert!(refuse_in("title", "db_password = \"hunter2hunter2\"").is_err());
    }

    #[test]
    fn json_values_at_any_depth_and_keys_in_context() {
        let ok = json!({"team": "payments", "tags": ["a", "b"], "n": 3, "nested": {"x": null}});
        assert!(refuse_in_json("metadata", &ok).is_ok());
        let cases = [
            (json!({"password": "hunter2hunter2"}), "metadata.password"),
            (
                json!({"a": {"b": {"token": SECRETS[3]}}}),
                "metadata.a.b.token",
            ),
            (json!({"list": ["fine", SECRETS[0]]}), "metadata.list[1]"),
            (json!({"cfg": "api_key=Zx81bQ92kLm3"}), "metadata.cfg"),
            (
                json!({SECRETS[2]: 1}),
                "metadata.ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c",
            ),
        ];
        for (value, path) in cases {
            assert_eq!(
                field_of(refuse_in_json("metadata", &value)).as_deref(),
                Some(path),
                "{value}"
            );
        }
    }

    #[test]
    fn the_error_never_echoes_the_secret() {
        for s in SECRETS {
            let e = refuse_in_json("value", &json!({"password": s, "k": s})).expect_err("refused");
            let msg = e.to_string();
            assert!(!msg.contains(s), "{msg}");
            assert_eq!((e.code(), e.http_status()), ("credential_detected", 422));
        }
    }
}
