//! Weaviate failures as [`StoreError`]s.
//!
//! | what happened | kind |
//! |---|---|
//! | no connection, connection reset, timeout | `Unavailable` |
//! | HTTP 408, 429, 5xx | `Unavailable` |
//! | HTTP 409 | `Conflict` |
//! | HTTP 400, 401, 403, 404, 413, 422 and other 4xx | `Invalid` |
//! | GraphQL `errors` in an HTTP 200 answer, a per-object batch or delete error | `Unavailable` when the message says the service is unavailable, busy, timed out or read-only; else `Invalid` |
//! | an answer of an unexpected shape | `Incompatible` |
//! | a stored chunk that does not decode | `Corrupt` |
//!
//! Messages carry Weaviate's own error text (truncated), never the API key or request bodies.

use evident_store::{ErrorKind, StoreError};
use serde_json::Value;

/// Longest Weaviate message kept in an error.
const MAX_MESSAGE: usize = 1_000;

/// Words in a Weaviate error message that mean "try again later".
const TRANSIENT: &[&str] = &[
    "unavailable",
    "timeout",
    "timed out",
    "deadline exceeded",
    "context canceled",
    "connection refused",
    "connection reset",
    "too many requests",
    "try again",
    "shutting down",
    "not ready",
    "cannot achieve consistency level",
    "not enough replicas",
    "read-only",
    "readonly",
];

/// A request that never got an answer.
pub(crate) fn transport(what: &str, e: reqwest::Error) -> StoreError {
    let kind = if e.is_builder() {
        ErrorKind::Invalid
    } else {
        ErrorKind::Unavailable
    };
    let e = e.without_url();
    StoreError::new(kind, format!("{what}: Weaviate did not answer: {e}"))
}

/// An answer with a non-success status.
pub(crate) fn status(what: &str, status: u16, body: &Value) -> StoreError {
    let kind = match status {
        408 | 429 | 500..=599 => ErrorKind::Unavailable,
        409 => ErrorKind::Conflict,
        _ => ErrorKind::Invalid,
    };
    let msg = message_of(body);
    let detail = if msg.is_empty() {
        String::new()
    } else {
        format!(": {msg}")
    };
    StoreError::new(
        kind,
        format!("{what}: Weaviate answered HTTP {status}{detail}"),
    )
}

/// A failure reported inside a successful answer (GraphQL `errors`, a batch object's errors).
pub(crate) fn reported(what: &str, messages: &[String]) -> StoreError {
    let joined = truncate(&messages.join("; "));
    StoreError::new(classify(&joined), format!("{what}: {joined}"))
}

/// An answer whose shape is not what this adapter expects.
pub(crate) fn unexpected(what: &str, body: &Value) -> StoreError {
    StoreError::incompatible(format!(
        "{what}: unexpected answer from Weaviate: {}",
        truncate(&body.to_string())
    ))
}

/// `Unavailable` for messages that say the service is down, busy or slow; else `Invalid`.
pub(crate) fn classify(message: &str) -> ErrorKind {
    let lower = message.to_lowercase();
    if TRANSIENT.iter().any(|w| lower.contains(w)) {
        ErrorKind::Unavailable
    } else {
        ErrorKind::Invalid
    }
}

/// Weaviate's error text from an `ErrorResponse` (`{"error": [{"message": …}]}`), a GraphQL
/// error list, a plain string or any other JSON.
pub(crate) fn message_of(body: &Value) -> String {
    let listed = |list: &Vec<Value>| -> Vec<String> {
        list.iter()
            .filter_map(|e| e.get("message").and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    };
    let text = match body {
        Value::Null => String::new(),
        Value::String(s) => s.trim().to_string(),
        Value::Object(map) => {
            let found = match (map.get("error"), map.get("errors")) {
                (Some(Value::Array(list)), _) => listed(list),
                (_, Some(Value::Array(list))) => listed(list),
                (Some(Value::String(s)), _) => vec![s.clone()],
                _ => Vec::new(),
            };
            if found.is_empty() {
                body.to_string()
            } else {
                found.join("; ")
            }
        }
        other => other.to_string(),
    };
    truncate(&text)
}

/// Messages of the errors of one batch result object (`result.errors.error[].message`).
pub(crate) fn object_errors(result: &Value) -> Vec<String> {
    result
        .pointer("/result/errors/error")
        .or_else(|| result.pointer("/errors/error"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|e| {
                    e.get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| e.to_string(), str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether Weaviate refused because a tenant does not exist (nothing was ever written there).
pub(crate) fn is_tenant_missing(message: &str) -> bool {
    let lower = message.to_lowercase();
    lower.contains("tenant")
        && (lower.contains("not found")
            || lower.contains("does not exist")
            || lower.contains("doesn't exist")
            || lower.contains("not exist"))
}

/// A stored chunk object that does not decode.
pub(crate) fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::corrupt(format!("stored chunk: {what}"))
}

fn truncate(s: &str) -> String {
    if s.len() <= MAX_MESSAGE {
        return s.to_string();
    }
    let mut end = MAX_MESSAGE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses_map_to_kinds() {
        let body = json!({"error": [{"message": "class Foo not found"}]});
        assert_eq!(status("x", 503, &body).kind, ErrorKind::Unavailable);
        assert_eq!(status("x", 429, &Value::Null).kind, ErrorKind::Unavailable);
        assert_eq!(status("x", 500, &Value::Null).kind, ErrorKind::Unavailable);
        assert_eq!(status("x", 422, &body).kind, ErrorKind::Invalid);
        assert_eq!(status("x", 400, &body).kind, ErrorKind::Invalid);
        assert_eq!(status("x", 401, &Value::Null).kind, ErrorKind::Invalid);
        assert_eq!(status("x", 409, &Value::Null).kind, ErrorKind::Conflict);
        assert!(
            status("reading", 422, &body)
                .message
                .contains("class Foo not found")
        );
    }

    #[test]
    fn reported_messages_are_classified() {
        assert_eq!(
            reported("q", &["explorer: context deadline exceeded".into()]).kind,
            ErrorKind::Unavailable
        );
        assert_eq!(
            reported("q", &["Cannot query field \"bogus\" on type \"X\".".into()]).kind,
            ErrorKind::Invalid
        );
    }

    #[test]
    fn batch_object_errors_are_read() {
        let ok = json!({"id": "x", "result": {}});
        assert!(object_errors(&ok).is_empty());
        let bad = json!({"id": "x", "result": {"errors": {"error": [{"message": "boom"}]}}});
        assert_eq!(object_errors(&bad), vec!["boom".to_string()]);
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let long = "ž".repeat(2_000);
        let cut = message_of(&Value::String(long));
        assert!(cut.len() <= MAX_MESSAGE + "…".len());
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn missing_tenants_are_recognised() {
        assert!(is_tenant_missing("tenant not found: \"c-acme\""));
        assert!(is_tenant_missing("Tenant \"global\" does not exist"));
        assert!(!is_tenant_missing("class EvidentChunk not found"));
    }
}
