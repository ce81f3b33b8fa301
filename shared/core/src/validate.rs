//! Input limits shared by the API, the CLI and the queue, so that every entry point rejects
//! the same inputs with the same reasons before anything is written.

/// Longest identifier (client, project, group ids, node keys, aliases) accepted.
pub const MAX_ID_LEN: usize = 512;
/// Longest source URN accepted.
pub const MAX_URN_LEN: usize = 2048;
/// Largest content of one ingest (bytes).
pub const MAX_CONTENT_BYTES: usize = 8 * 1024 * 1024;
/// Most explicit relationships in one ingest.
pub const MAX_RELATIONSHIPS: usize = 10_000;

/// Why a field was rejected. `field` names the JSON field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    #[error("field `{field}` is required")]
    Missing { field: &'static str },
    #[error("field `{field}` must not be empty")]
    Empty { field: &'static str },
    #[error("field `{field}` is {len} bytes long; the limit is {max}")]
    TooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },
    #[error("field `{field}` contains a NUL or other control character")]
    ControlChar { field: &'static str },
    #[error("field `{field}` is invalid: {reason}")]
    Invalid { field: &'static str, reason: String },
}

/// An identifier: non-empty, at most [`MAX_ID_LEN`] bytes, no control characters.
pub fn identifier(field: &'static str, value: &str) -> Result<(), FieldError> {
    bounded_text(field, value, MAX_ID_LEN)
}

/// Non-empty text of at most `max` bytes without control characters.
pub fn bounded_text(field: &'static str, value: &str, max: usize) -> Result<(), FieldError> {
    if value.trim().is_empty() {
        return Err(FieldError::Empty { field });
    }
    if value.len() > max {
        return Err(FieldError::TooLong {
            field,
            len: value.len(),
            max,
        });
    }
    if value.chars().any(char::is_control) {
        return Err(FieldError::ControlChar { field });
    }
    Ok(())
}

/// Document content: non-empty, bounded, no NUL (other control characters such as tabs and
/// newlines are ordinary text).
pub fn content(field: &'static str, value: &str) -> Result<(), FieldError> {
    if value.trim().is_empty() {
        return Err(FieldError::Empty { field });
    }
    if value.len() > MAX_CONTENT_BYTES {
        return Err(FieldError::TooLong {
            field,
            len: value.len(),
            max: MAX_CONTENT_BYTES,
        });
    }
    if value.contains('\0') {
        return Err(FieldError::ControlChar { field });
    }
    Ok(())
}

/// A chunk kind: 1..=64 chars of `[a-z0-9_.-]`.
pub fn kind(field: &'static str, value: &str) -> Result<(), FieldError> {
    if value.is_empty() {
        return Err(FieldError::Empty { field });
    }
    if value.len() > 64 {
        return Err(FieldError::TooLong {
            field,
            len: value.len(),
            max: 64,
        });
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.'))
    {
        return Err(FieldError::Invalid {
            field,
            reason: "use lowercase letters, digits, '_', '-' or '.'".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_long_empty_and_control() {
        assert_eq!(
            identifier("clientId", ""),
            Err(FieldError::Empty { field: "clientId" })
        );
        assert!(matches!(
            identifier("clientId", &"x".repeat(10_000)),
            Err(FieldError::TooLong { .. })
        ));
        assert_eq!(
            identifier("clientId", "a\0b"),
            Err(FieldError::ControlChar { field: "clientId" })
        );
        assert!(identifier("clientId", "acme-1").is_ok());
        assert!(content("content", "line\n\tnext").is_ok());
        assert!(content("content", "a\0").is_err());
        assert!(kind("kind", "Doc").is_err());
        assert!(kind("kind", "git-overview").is_ok());
    }
}
