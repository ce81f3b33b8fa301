//! Failures: what a [`Transport`](crate::Transport) reports, and the [`StoreError`] class each
//! one maps to. The queue decides retry vs. error from the class, so the mapping is by server
//! error code and error label, never by message text.

use bson::Document;
use evident_store::{ErrorKind, StoreError};

use crate::fields::number;

/// A command that failed: no answer (network), or an answer with `ok: 0`, write errors or a
/// write concern error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TransportError {
    /// The server's error code, when the server answered.
    pub code: Option<i32>,
    /// Error labels (`errorLabels`), e.g. `RetryableWriteError`, `TransientTransactionError`.
    pub labels: Vec<String>,
    /// No usable answer: connection refused or reset, timeout, no server selectable.
    pub network: bool,
    /// What happened, for logs. Never contains the connection string.
    pub message: String,
}

impl TransportError {
    /// The command got no usable answer.
    pub fn network(message: impl Into<String>) -> Self {
        TransportError {
            code: None,
            labels: Vec::new(),
            network: true,
            message: message.into(),
        }
    }

    /// The server refused the command with `code`.
    pub fn server(code: i32, message: impl Into<String>) -> Self {
        TransportError {
            code: Some(code),
            labels: Vec::new(),
            network: false,
            message: message.into(),
        }
    }

    /// A failure that is neither the network's nor has a server code (bad reply shape…).
    pub fn other(message: impl Into<String>) -> Self {
        TransportError {
            code: None,
            labels: Vec::new(),
            network: false,
            message: message.into(),
        }
    }

    /// The error described by an `{ok: 0, code, codeName, errmsg, errorLabels}` reply (or by
    /// one `writeErrors` / `writeConcernError` element, which have the same fields).
    pub fn from_reply(reply: &Document) -> Self {
        let code = reply.get("code").and_then(number).map(|c| c as i32);
        let code_name = reply.get_str("codeName").unwrap_or("");
        let errmsg = reply.get_str("errmsg").unwrap_or("");
        let labels = reply
            .get_array("errorLabels")
            .map(|a| {
                a.iter()
                    .filter_map(|l| l.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let message = match (code, code_name.is_empty()) {
            (Some(c), false) => format!("{code_name} ({c}): {errmsg}"),
            (Some(c), true) => format!("code {c}: {errmsg}"),
            (None, _) => format!("command failed: {errmsg}"),
        };
        TransportError {
            code,
            labels,
            network: false,
            message,
        }
    }

    pub fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l == label)
    }

    pub fn is_duplicate_key(&self) -> bool {
        matches!(
            self.code,
            Some(codes::DUPLICATE_KEY | codes::DUPLICATE_KEY_LEGACY)
        )
    }
}

/// The server error codes this crate tells apart (from the server's `error_codes.yml`).
pub mod codes {
    /// Not a server code: the driver refused the command before sending it, or could not
    /// read the reply (an invalid argument, BSON that does not encode or decode). Retrying
    /// cannot help.
    pub const REFUSED_BY_DRIVER: i32 = -1;
    pub const BAD_VALUE: i32 = 2;
    pub const HOST_UNREACHABLE: i32 = 6;
    pub const HOST_NOT_FOUND: i32 = 7;
    pub const FAILED_TO_PARSE: i32 = 9;
    pub const UNAUTHORIZED: i32 = 13;
    pub const TYPE_MISMATCH: i32 = 14;
    pub const AUTHENTICATION_FAILED: i32 = 18;
    pub const LOCK_TIMEOUT: i32 = 24;
    pub const CONFLICTING_UPDATE_OPERATORS: i32 = 40;
    pub const LOCK_BUSY: i32 = 46;
    pub const EXCEEDED_TIME_LIMIT: i32 = 50;
    pub const DOLLAR_PREFIXED_FIELD_NAME: i32 = 52;
    pub const INVALID_ID_FIELD: i32 = 53;
    pub const EMPTY_FIELD_NAME: i32 = 56;
    pub const DOTTED_FIELD_NAME: i32 = 57;
    pub const COMMAND_NOT_FOUND: i32 = 59;
    pub const WRITE_CONCERN_FAILED: i32 = 64;
    pub const IMMUTABLE_FIELD: i32 = 66;
    pub const CANNOT_CREATE_INDEX: i32 = 67;
    pub const INVALID_OPTIONS: i32 = 72;
    pub const INVALID_NAMESPACE: i32 = 73;
    pub const INDEX_OPTIONS_CONFLICT: i32 = 85;
    pub const INDEX_KEY_SPECS_CONFLICT: i32 = 86;
    pub const NETWORK_TIMEOUT: i32 = 89;
    pub const SHUTDOWN_IN_PROGRESS: i32 = 91;
    pub const WRITE_CONFLICT: i32 = 112;
    pub const COMMAND_NOT_SUPPORTED: i32 = 115;
    pub const DOCUMENT_VALIDATION_FAILURE: i32 = 121;
    pub const FAILED_TO_SATISFY_READ_PREFERENCE: i32 = 133;
    pub const READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET: i32 = 134;
    pub const PRIMARY_STEPPED_DOWN: i32 = 189;
    pub const NETWORK_INTERFACE_EXCEEDED_TIME_LIMIT: i32 = 202;
    pub const TOO_MANY_LOGICAL_SESSIONS: i32 = 261;
    pub const EXCEEDED_TIME_LIMIT_2: i32 = 262;
    pub const INGRESS_REQUEST_RATE_LIMIT_EXCEEDED: i32 = 462;
    pub const SOCKET_EXCEPTION: i32 = 9001;
    pub const LEGACY_NOT_PRIMARY: i32 = 10058;
    pub const NOT_WRITABLE_PRIMARY: i32 = 10107;
    pub const BSON_OBJECT_TOO_LARGE: i32 = 10334;
    pub const DUPLICATE_KEY: i32 = 11000;
    pub const DUPLICATE_KEY_LEGACY: i32 = 11001;
    pub const INTERRUPTED_AT_SHUTDOWN: i32 = 11600;
    pub const INTERRUPTED_DUE_TO_REPL_STATE_CHANGE: i32 = 11602;
    pub const NOT_PRIMARY_NO_SECONDARY_OK: i32 = 13435;
    pub const NOT_PRIMARY_OR_SECONDARY: i32 = 13436;
    pub const KEY_TOO_LONG: i32 = 17280;
}

/// Labels that say "the same command may succeed if sent again".
const RETRYABLE_LABELS: [&str; 4] = [
    "RetryableWriteError",
    "RetryableError",
    "SystemOverloadedError",
    "TransientTransactionError",
];

/// Not primary, stepping down, shutting down, recovering, timed out, overloaded: try again.
const UNAVAILABLE_CODES: [i32; 22] = [
    codes::HOST_UNREACHABLE,
    codes::HOST_NOT_FOUND,
    codes::LOCK_TIMEOUT,
    codes::LOCK_BUSY,
    codes::EXCEEDED_TIME_LIMIT,
    codes::WRITE_CONCERN_FAILED,
    codes::NETWORK_TIMEOUT,
    codes::SHUTDOWN_IN_PROGRESS,
    codes::FAILED_TO_SATISFY_READ_PREFERENCE,
    codes::READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET,
    codes::PRIMARY_STEPPED_DOWN,
    codes::NETWORK_INTERFACE_EXCEEDED_TIME_LIMIT,
    codes::TOO_MANY_LOGICAL_SESSIONS,
    codes::EXCEEDED_TIME_LIMIT_2,
    codes::INGRESS_REQUEST_RATE_LIMIT_EXCEEDED,
    codes::SOCKET_EXCEPTION,
    codes::LEGACY_NOT_PRIMARY,
    codes::NOT_WRITABLE_PRIMARY,
    codes::INTERRUPTED_AT_SHUTDOWN,
    codes::INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
    codes::NOT_PRIMARY_NO_SECONDARY_OK,
    codes::NOT_PRIMARY_OR_SECONDARY,
];

/// The request itself is wrong: sending it again cannot help.
const INVALID_CODES: [i32; 16] = [
    codes::REFUSED_BY_DRIVER,
    codes::BAD_VALUE,
    codes::FAILED_TO_PARSE,
    codes::TYPE_MISMATCH,
    codes::CONFLICTING_UPDATE_OPERATORS,
    codes::DOLLAR_PREFIXED_FIELD_NAME,
    codes::INVALID_ID_FIELD,
    codes::EMPTY_FIELD_NAME,
    codes::DOTTED_FIELD_NAME,
    codes::IMMUTABLE_FIELD,
    codes::INVALID_OPTIONS,
    codes::INVALID_NAMESPACE,
    codes::DOCUMENT_VALIDATION_FAILURE,
    codes::BSON_OBJECT_TOO_LARGE,
    codes::KEY_TOO_LONG,
    codes::CANNOT_CREATE_INDEX,
];

/// The server or the existing data is not what this version expects.
const INCOMPATIBLE_CODES: [i32; 4] = [
    codes::INDEX_OPTIONS_CONFLICT,
    codes::INDEX_KEY_SPECS_CONFLICT,
    codes::COMMAND_NOT_FOUND,
    codes::COMMAND_NOT_SUPPORTED,
];

/// The class of a transport failure.
///
/// - no answer (network, timeout, no server) → `Unavailable`;
/// - `WriteConflict` (112), `DuplicateKey` (11000) → `Conflict` (a lost race; callers that
///   expect a duplicate key — upserts, idempotent inserts — handle it before this mapping);
/// - not primary / shutting down / recovering / time limit / write concern timeout, and any
///   error labelled `RetryableWriteError`, `RetryableError`, `SystemOverloadedError` →
///   `Unavailable`; `TransientTransactionError` → `Conflict`;
/// - `Unauthorized` (13), `AuthenticationFailed` (18) → `Unavailable` (an operator must fix the
///   credentials or roles; the work must not be dropped meanwhile);
/// - `BadValue`, `TypeMismatch`, `FailedToParse`, validation, bad field names, too large →
///   `Invalid`;
/// - index spec conflicts, unknown commands → `Incompatible`;
/// - anything else → `Unavailable` (retrying is the safe default: nothing is ever dropped).
pub fn classify(e: &TransportError) -> ErrorKind {
    if e.network {
        return ErrorKind::Unavailable;
    }
    if let Some(code) = e.code {
        if code == codes::WRITE_CONFLICT
            || code == codes::DUPLICATE_KEY
            || code == codes::DUPLICATE_KEY_LEGACY
        {
            return ErrorKind::Conflict;
        }
        if UNAVAILABLE_CODES.contains(&code) {
            return ErrorKind::Unavailable;
        }
        if code == codes::UNAUTHORIZED || code == codes::AUTHENTICATION_FAILED {
            return ErrorKind::Unavailable;
        }
        if INVALID_CODES.contains(&code) {
            return ErrorKind::Invalid;
        }
        if INCOMPATIBLE_CODES.contains(&code) {
            return ErrorKind::Incompatible;
        }
    }
    if e.has_label("TransientTransactionError") {
        return ErrorKind::Conflict;
    }
    if RETRYABLE_LABELS.iter().any(|l| e.has_label(l)) {
        return ErrorKind::Unavailable;
    }
    ErrorKind::Unavailable
}

/// The [`StoreError`] for a failed command of operation `op` (e.g. `"claim"`).
pub fn store_error(op: &str, e: TransportError) -> StoreError {
    let kind = classify(&e);
    let message = match e.code {
        Some(codes::UNAUTHORIZED) => format!(
            "mongo {op}: the server refused the operation (Unauthorized): the user in the \
             connection string lacks a role on the database (readWrite is needed): {}",
            e.message
        ),
        Some(codes::AUTHENTICATION_FAILED) => format!(
            "mongo {op}: authentication failed: check the user and password in the connection \
             string: {}",
            e.message
        ),
        _ if e.network => format!("mongo {op}: no answer from the server: {}", e.message),
        _ => format!("mongo {op}: {}", e.message),
    };
    StoreError::new(kind, message)
}

/// Stored data this version cannot read.
pub(crate) fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::corrupt(format!("mongo: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn codes_and_labels_map_to_classes() {
        let kind = |code: i32| classify(&TransportError::server(code, "x"));
        assert_eq!(kind(112), ErrorKind::Conflict);
        assert_eq!(kind(11000), ErrorKind::Conflict);
        for code in [
            91, 189, 10107, 11600, 11602, 13435, 13436, 10058, 50, 262, 64,
        ] {
            assert_eq!(kind(code), ErrorKind::Unavailable, "code {code}");
        }
        assert_eq!(kind(13), ErrorKind::Unavailable);
        assert_eq!(kind(18), ErrorKind::Unavailable);
        for code in [codes::REFUSED_BY_DRIVER, 2, 14, 9, 121, 52, 10334] {
            assert_eq!(kind(code), ErrorKind::Invalid, "code {code}");
        }
        assert_eq!(kind(85), ErrorKind::Incompatible);
        assert_eq!(
            classify(&TransportError::network("reset")),
            ErrorKind::Unavailable
        );
        let mut labelled = TransportError::other("x");
        labelled.labels.push("TransientTransactionError".into());
        assert_eq!(classify(&labelled), ErrorKind::Conflict);
        let mut labelled = TransportError::other("x");
        labelled.labels.push("RetryableWriteError".into());
        assert_eq!(classify(&labelled), ErrorKind::Unavailable);
    }

    #[test]
    fn error_replies_are_read_with_their_labels() {
        let e = TransportError::from_reply(&doc! {
            "ok": 0.0,
            "errmsg": "WriteConflict error: this operation conflicted with another operation.",
            "code": 112,
            "codeName": "WriteConflict",
            "errorLabels": ["TransientTransactionError"],
        });
        assert_eq!(e.code, Some(112));
        assert!(e.has_label("TransientTransactionError"));
        assert!(e.message.starts_with("WriteConflict (112)"));
        let s = store_error("claim", e);
        assert!(s.is_retryable());
        assert_eq!(s.kind, ErrorKind::Conflict);
    }

    #[test]
    fn auth_failures_say_what_to_fix() {
        let s = store_error("ping", TransportError::server(18, "Authentication failed."));
        assert_eq!(s.kind, ErrorKind::Unavailable);
        assert!(s.message.contains("user and password"), "{}", s.message);
        let s = store_error(
            "claim",
            TransportError::server(13, "not authorized on evident"),
        );
        assert!(s.message.contains("readWrite"), "{}", s.message);
    }
}
