//! ArangoDB failures and how they map to [`StoreError`] kinds.
//!
//! | failure | kind |
//! |---|---|
//! | connection refused, reset, TLS, timeout | `Unavailable` |
//! | HTTP 401 / 403 (credentials or permissions) | `Unavailable`, with a message naming the config keys |
//! | HTTP 408, 410, 429, 502, 503, 504, and other 5xx | `Unavailable` |
//! | errorNum 18 lock timeout, 28/29 locked/deadlock, 30/38 shutdown/startup, 32 resource limit, 1004 read only, 1228 database missing, 1236 write throttling, 1302-1305 busy engine, 1600/1601 cursor lost or busy, 1655 transaction lost | `Unavailable` |
//! | errorNum 1200 write-write conflict, 1210 unique constraint violated, HTTP 409 / 412 | `Conflict` (retryable) |
//! | HTTP 400 / 404 and other 4xx (query parse 1501, bind 1551-1553, unknown document 1202, ...) | `Invalid` |
//! | a response that is not ArangoDB's JSON | `Unavailable` (a proxy or a restarting server) |
//! | a stored document that does not decode | `Corrupt` |
//! | a config that cannot work (missing credentials variable, bad URL) | `Invalid` |

use evident_store::{ErrorKind, StoreError};

pub(crate) const ERR_CONFLICT: i64 = 1200;
pub(crate) const ERR_DATA_SOURCE_NOT_FOUND: i64 = 1203;
pub(crate) const ERR_DUPLICATE_NAME: i64 = 1207;
pub(crate) const ERR_UNIQUE_CONSTRAINT: i64 = 1210;
pub(crate) const ERR_DATABASE_NOT_FOUND: i64 = 1228;
pub(crate) const ERR_CURSOR_NOT_FOUND: i64 = 1600;
pub(crate) const ERR_GRAPH_DUPLICATE: i64 = 1925;

/// errorNums that say "try again later" whatever the HTTP status.
const TRANSIENT: &[i64] = &[
    18,   // lock timeout
    21,   // request canceled
    28,   // locked
    29,   // deadlock
    30,   // shutting down
    32,   // resource limit
    38,   // starting up
    1004, // read only
    ERR_DATABASE_NOT_FOUND,
    1236,                 // write throttling timeout
    1302,                 // try again
    1303,                 // engine busy
    1304,                 // merge in progress
    1305,                 // storage I/O error
    ERR_CURSOR_NOT_FOUND, // expired between batches
    1601,                 // cursor busy
    1655,                 // transaction not found
];

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request never got an HTTP answer.
    #[error("ArangoDB unreachable ({what}): {detail}")]
    Transport { what: String, detail: String },
    #[error("ArangoDB did not answer {what} within {secs}s")]
    Timeout { what: String, secs: u64 },
    /// ArangoDB answered with an error status.
    #[error("ArangoDB {what}: HTTP {status}, errorNum {num}: {message}")]
    Server {
        what: String,
        status: u16,
        num: i64,
        message: String,
    },
    /// The answer is not what ArangoDB sends.
    #[error("unexpected answer from ArangoDB ({0})")]
    Protocol(String),
    /// A stored document does not have the shape this version writes.
    #[error("stored ArangoDB document does not decode: {0}")]
    Data(String),
    #[error("arango config: {0}")]
    Config(String),
}

impl Error {
    pub fn error_num(&self) -> Option<i64> {
        match self {
            Error::Server { num, .. } => Some(*num),
            _ => None,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Server { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// A collection (or view) named by the request does not exist.
    pub fn is_collection_missing(&self) -> bool {
        self.error_num() == Some(ERR_DATA_SOURCE_NOT_FOUND)
    }

    /// Something of that name exists already (collection, database, graph).
    pub fn is_duplicate(&self) -> bool {
        matches!(
            self.error_num(),
            Some(ERR_DUPLICATE_NAME | ERR_GRAPH_DUPLICATE)
        ) || (self.status() == Some(409) && self.error_num() != Some(ERR_CONFLICT))
    }

    pub fn is_unique_violation(&self) -> bool {
        self.error_num() == Some(ERR_UNIQUE_CONSTRAINT)
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Transport { .. } | Error::Timeout { .. } | Error::Protocol(_) => {
                ErrorKind::Unavailable
            }
            Error::Data(_) => ErrorKind::Corrupt,
            Error::Config(_) => ErrorKind::Invalid,
            Error::Server { status, num, .. } => server_kind(*status, *num),
        }
    }
}

fn server_kind(status: u16, num: i64) -> ErrorKind {
    if num == ERR_CONFLICT || num == ERR_UNIQUE_CONSTRAINT {
        return ErrorKind::Conflict;
    }
    if TRANSIENT.contains(&num) {
        return ErrorKind::Unavailable;
    }
    match status {
        401 | 403 | 408 | 410 | 429 => ErrorKind::Unavailable,
        409 | 412 => ErrorKind::Conflict,
        500..=599 => ErrorKind::Unavailable,
        _ => ErrorKind::Invalid,
    }
}

impl From<Error> for StoreError {
    fn from(e: Error) -> StoreError {
        let kind = e.kind();
        let message = match &e {
            Error::Server { status: 401, .. } => format!(
                "{e} — ArangoDB refused the credentials; check the variables named by \
                 arango.username_env / arango.password_env"
            ),
            Error::Server { status: 403, .. } => format!(
                "{e} — the ArangoDB user lacks permission on this database or collection; \
                 grant it read/write access (or administrate access to create the database)"
            ),
            _ => e.to_string(),
        };
        StoreError::new(kind, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(status: u16, num: i64) -> Error {
        Error::Server {
            what: "test".into(),
            status,
            num,
            message: "m".into(),
        }
    }

    #[test]
    fn kinds_follow_the_documented_table() {
        assert_eq!(server(409, 1200).kind(), ErrorKind::Conflict);
        assert_eq!(server(500, 1200).kind(), ErrorKind::Conflict);
        assert_eq!(server(409, 1210).kind(), ErrorKind::Conflict);
        assert_eq!(server(503, 0).kind(), ErrorKind::Unavailable);
        assert_eq!(server(500, 18).kind(), ErrorKind::Unavailable);
        assert_eq!(server(500, 4).kind(), ErrorKind::Unavailable);
        assert_eq!(server(401, 11).kind(), ErrorKind::Unavailable);
        assert_eq!(server(403, 11).kind(), ErrorKind::Unavailable);
        assert_eq!(server(404, 1228).kind(), ErrorKind::Unavailable);
        assert_eq!(server(404, 1600).kind(), ErrorKind::Unavailable);
        assert_eq!(server(400, 1501).kind(), ErrorKind::Invalid);
        assert_eq!(server(404, 1203).kind(), ErrorKind::Invalid);
        assert_eq!(server(404, 1202).kind(), ErrorKind::Invalid);
        assert!(server(404, 1203).is_collection_missing());
        assert!(server(409, 1207).is_duplicate());
        assert!(server(409, 1925).is_duplicate());
        assert!(!server(409, 1200).is_duplicate());
    }

    #[test]
    fn auth_failures_say_what_to_fix() {
        let e: StoreError = server(401, 11).into();
        assert_eq!(e.kind, ErrorKind::Unavailable);
        assert!(e.message.contains("username_env"));
    }
}
