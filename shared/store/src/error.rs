/// Coarse classes of storage failure. The queue decides retry vs. error from the class,
/// never from message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The backend is down, busy or timed out: retry later.
    Unavailable,
    /// The request can never succeed as sent (bad key, bad filter, too large).
    Invalid,
    /// A write lost a race or broke a uniqueness rule.
    Conflict,
    /// The stored data is not what this version expects (schema, vector space).
    Incompatible,
    /// Data on disk failed an integrity check.
    Corrupt,
    /// The store is full for its configured capacity (the embedded store's
    /// `[store] memory_budget`): new data is refused until some is removed or the budget
    /// raised. Retryable: the same write can succeed once there is room.
    CapacityExceeded,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct StoreError {
    pub kind: ErrorKind,
    pub message: String,
}

impl StoreError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        StoreError {
            kind,
            message: message.into(),
        }
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, message)
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, message)
    }
    pub fn incompatible(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Incompatible, message)
    }
    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Corrupt, message)
    }
    /// Whether retrying the same operation later can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Unavailable | ErrorKind::Conflict | ErrorKind::CapacityExceeded
        )
    }
    /// Stable snake_case code for APIs and logs.
    pub fn code(&self) -> &'static str {
        match self.kind {
            ErrorKind::Unavailable => "store_unavailable",
            ErrorKind::Invalid => "store_invalid_request",
            ErrorKind::Conflict => "store_conflict",
            ErrorKind::Incompatible => "store_incompatible",
            ErrorKind::Corrupt => "store_corrupt",
            ErrorKind::CapacityExceeded => "capacity_exceeded",
        }
    }
}
