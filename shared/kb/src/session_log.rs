//! The session log (seed 003, *Session Memory*): short entries per client and project that
//! bridge orchestrations — what was decided an hour ago, immediately available, no indexing.
//! At most [`MAX_ENTRIES`] per log (the oldest evicted on write), each living
//! [`DEFAULT_TTL_SECS`] unless the knowledge base is configured otherwise
//! ([`Kb::with_session_log_ttl`]). Beside the key-value session memory ([`crate::memory`]),
//! which stays as it is.

use evident_core::validate::{self, FieldError};
use evident_store::memory::{SessionEntry, SessionSource};
use evident_store::queue::Millis;
use serde_json::Value;

use crate::{Kb, KbError, Result};

/// Entries kept per (client, project).
pub const MAX_ENTRIES: usize = 50;
/// Seven days.
pub const DEFAULT_TTL_SECS: u64 = 7 * 24 * 3600;
/// The seed's limit on a summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 200;
/// Largest `details`, as JSON.
pub const MAX_DETAILS_BYTES: usize = 16 * 1024;

/// An entry to append (the store's entry without its owner and expiry).
#[derive(Debug, Clone, PartialEq)]
pub struct NewSessionEntry {
    pub source: String,
    pub summary: String,
    pub details: Option<Value>,
    pub task_id: Option<String>,
    /// When it happened; `now` when not given.
    pub timestamp: Option<Millis>,
}

fn ids(client: &str, project: Option<&str>) -> Result<()> {
    validate::identifier("clientId", client)?;
    if let Some(p) = project {
        validate::identifier("projectId", p)?;
    }
    Ok(())
}

fn check(e: &NewSessionEntry) -> Result<SessionSource> {
    let source = SessionSource::parse(&e.source).ok_or_else(|| FieldError::Invalid {
        field: "source",
        reason: format!(
            "`{}` is not one of chat, background, orchestrator_decision",
            e.source
        ),
    })?;
    if e.summary.trim().is_empty() {
        return Err(FieldError::Empty { field: "summary" }.into());
    }
    let chars = e.summary.chars().count();
    if chars > MAX_SUMMARY_CHARS {
        return Err(FieldError::Invalid {
            field: "summary",
            reason: format!("is {chars} characters long; the limit is {MAX_SUMMARY_CHARS}"),
        }
        .into());
    }
    if let Some(t) = &e.task_id {
        validate::identifier("taskId", t)?;
    }
    if let Some(d) = &e.details {
        if !d.is_object() {
            return Err(FieldError::Invalid {
                field: "details",
                reason: "must be a JSON object".into(),
            }
            .into());
        }
        let size = serde_json::to_vec(d).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > MAX_DETAILS_BYTES {
            return Err(FieldError::TooLong {
                field: "details",
                len: size,
                max: MAX_DETAILS_BYTES,
            }
            .into());
        }
    }
    if e.timestamp.is_some_and(|t| t < 0) {
        return Err(FieldError::Invalid {
            field: "timestamp",
            reason: "must not be before 1970".into(),
        }
        .into());
    }
    let mut scan = crate::credentials::Scan::default();
    scan.text("summary", &e.summary)?;
    scan.all("taskId", e.task_id.as_deref())?;
    if let Some(d) = &e.details {
        scan.json("details", d)?;
    }
    Ok(source)
}

impl Kb {
    /// How long session-log entries live (default [`DEFAULT_TTL_SECS`]).
    pub fn with_session_log_ttl(mut self, secs: u64) -> Self {
        self.session_log_ttl_secs = secs.max(1);
        self
    }

    pub fn session_log_ttl_secs(&self) -> u64 {
        self.session_log_ttl_secs
    }

    /// Appends to the log of (client, project), evicting its oldest entries beyond
    /// [`MAX_ENTRIES`]; the entry as stored.
    pub async fn session_append(
        &self,
        client: &str,
        project: Option<&str>,
        entry: NewSessionEntry,
        now: Millis,
    ) -> Result<SessionEntry> {
        ids(client, project)?;
        let source = check(&entry)?;
        let timestamp = entry.timestamp.unwrap_or(now);
        let stored = SessionEntry {
            client_id: client.to_string(),
            project_id: project.map(str::to_string),
            timestamp,
            source,
            summary: entry.summary.trim().to_string(),
            details: entry.details,
            task_id: entry.task_id,
            // An entry lives from when it is written, whatever time it reports.
            expires_at: now.saturating_add(self.session_log_ttl_secs as i64 * 1000),
        };
        let evicted = self
            .stores
            .memory
            .session_append(stored.clone(), MAX_ENTRIES)
            .await?;
        tracing::debug!(client, ?project, evicted, "session log append");
        Ok(stored)
    }

    /// The `recent` newest live entries of (client, project), newest first.
    pub async fn session_recent(
        &self,
        client: &str,
        project: Option<&str>,
        recent: usize,
        now: Millis,
    ) -> Result<Vec<SessionEntry>> {
        ids(client, project)?;
        if !(1..=MAX_ENTRIES).contains(&recent) {
            return Err(KbError::Field(FieldError::Invalid {
                field: "recent",
                reason: format!("must be 1..={MAX_ENTRIES}"),
            }));
        }
        Ok(self
            .stores
            .memory
            .session_recent(client, project, now, recent)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(summary: &str) -> NewSessionEntry {
        NewSessionEntry {
            source: "chat".into(),
            summary: summary.into(),
            details: None,
            task_id: None,
            timestamp: None,
        }
    }

    #[test]
    fn entries_are_checked_with_the_seed_limits() {
        assert_eq!(check(&entry("ok")).expect("valid"), SessionSource::Chat);
        assert!(
            check(&entry(&"é".repeat(200))).is_ok(),
            "characters, not bytes"
        );
        assert!(check(&entry(&"x".repeat(201))).is_err());
        assert!(check(&entry(" ")).is_err());
        let mut e = entry("ok");
        e.source = "email".into();
        assert!(check(&e).is_err());
        let mut e = entry("ok");
        e.details = Some(serde_json::json!([1]));
        assert!(check(&e).is_err());
        let mut e = entry("ok");
        e.details = Some(serde_json::json!({"password": "hunter2hunter2"}));
        assert_eq!(
            check(&e).err().map(|e| e.code()),
            Some("credential_detected")
        );
    }
}
