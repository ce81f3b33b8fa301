//! Session memory for agents: small JSON values an agent keeps between the turns of one
//! conversation or task, by client, session and key, expiring on their own (default a day).

use evident_core::validate;
use evident_store::memory::MemoryEntry;
use evident_store::queue::Millis;

use crate::{Kb, KbError, Result};

/// Lifetime of an entry when the writer gives none.
pub const DEFAULT_TTL_SECS: u64 = 24 * 3600;
/// Longest lifetime: session memory is not a database.
pub const MAX_TTL_SECS: u64 = 30 * 24 * 3600;
/// Largest value, as JSON.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

fn ids<'a>(client: &'a str, session: &'a str) -> Result<(&'a str, &'a str)> {
    validate::identifier("clientId", client)?;
    validate::identifier("sessionId", session)?;
    Ok((client, session))
}

fn check_key(key: &str) -> Result<()> {
    validate::identifier("key", key)?;
    Ok(())
}

impl Kb {
    /// Writes (or replaces) `key` in a session; `ttl_secs` defaults to a day.
    pub async fn memory_put(
        &self,
        client: &str,
        session: &str,
        key: &str,
        value: serde_json::Value,
        ttl_secs: Option<u64>,
        now: Millis,
    ) -> Result<MemoryEntry> {
        let (client, session) = ids(client, session)?;
        check_key(key)?;
        let ttl = ttl_secs.unwrap_or(DEFAULT_TTL_SECS);
        if ttl == 0 || ttl > MAX_TTL_SECS {
            return Err(validate::FieldError::Invalid {
                field: "ttlSecs",
                reason: format!("between 1 and {MAX_TTL_SECS} seconds"),
            }
            .into());
        }
        let size = serde_json::to_vec(&value)
            .map(|v| v.len())
            .unwrap_or(usize::MAX);
        if size > MAX_VALUE_BYTES {
            return Err(validate::FieldError::TooLong {
                field: "value",
                len: size,
                max: MAX_VALUE_BYTES,
            }
            .into());
        }
        let mut scan = crate::credentials::Scan::default();
        scan.text("key", key)?;
        scan.json("value", &value)?;
        Ok(self
            .stores
            .memory
            .put(MemoryEntry {
                client_id: client.to_string(),
                session_id: session.to_string(),
                key: key.to_string(),
                value,
                created_at: now,
                updated_at: now,
                expires_at: now + ttl as i64 * 1000,
            })
            .await?)
    }

    pub async fn memory_get(
        &self,
        client: &str,
        session: &str,
        key: &str,
        now: Millis,
    ) -> Result<MemoryEntry> {
        let (client, session) = ids(client, session)?;
        check_key(key)?;
        self.stores
            .memory
            .get(client, session, key, now)
            .await?
            .ok_or_else(|| KbError::NotFound {
                what: format!("memory `{key}` of session `{session}`"),
            })
    }

    pub async fn memory_list(
        &self,
        client: &str,
        session: &str,
        now: Millis,
    ) -> Result<Vec<MemoryEntry>> {
        let (client, session) = ids(client, session)?;
        Ok(self.stores.memory.list(client, session, now).await?)
    }

    pub async fn memory_delete(&self, client: &str, session: &str, key: &str) -> Result<()> {
        let (client, session) = ids(client, session)?;
        check_key(key)?;
        if self.stores.memory.delete(client, session, key).await? {
            Ok(())
        } else {
            Err(KbError::NotFound {
                what: format!("memory `{key}` of session `{session}`"),
            })
        }
    }

    /// Forgets a whole session; how many entries went.
    pub async fn memory_clear(&self, client: &str, session: &str) -> Result<u64> {
        let (client, session) = ids(client, session)?;
        Ok(self.stores.memory.delete_session(client, session).await?)
    }
}
