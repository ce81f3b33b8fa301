//! Alias operations with input normalisation: callers may send free-text refs
//! (`Person:Jan Novák`); the registry stores canonical keys.

use evident_core::refs::{self, NodeKey};
use evident_core::validate;
use evident_store::{AliasEntry, AliasStats};

use crate::{Kb, KbError, Result};

fn key(field: &'static str, raw: &str) -> Result<NodeKey> {
    validate::identifier(field, raw)?;
    // Checked as sent: normalising folds case, which would hide some credentials.
    crate::credentials::refuse_in(field, raw)?;
    refs::normalize_ref(raw).ok_or(KbError::Field(validate::FieldError::Invalid {
        field,
        reason: "has no letters or digits".into(),
    }))
}

fn client(raw: &str) -> Result<&str> {
    validate::identifier("clientId", raw)?;
    Ok(raw)
}

impl Kb {
    pub async fn alias_resolve(&self, client_id: &str, alias: &str) -> Result<(NodeKey, NodeKey)> {
        let k = key("alias", alias)?;
        let resolved = self
            .stores
            .aliases
            .resolve(client(client_id)?, std::slice::from_ref(&k))
            .await?;
        let canonical = resolved.into_iter().next().unwrap_or_else(|| k.clone());
        Ok((k, canonical))
    }

    /// Registers `alias → canonical` (or the alias as its own canonical when none is given).
    pub async fn alias_register(
        &self,
        client_id: &str,
        alias: &str,
        canonical: Option<&str>,
    ) -> Result<AliasEntry> {
        let a = key("alias", alias)?;
        let c = match canonical {
            Some(c) => key("canonical", c)?,
            None => a.clone(),
        };
        Ok(self
            .stores
            .aliases
            .register(client(client_id)?, &a, &c)
            .await?)
    }

    pub async fn alias_merge(&self, client_id: &str, source: &str, target: &str) -> Result<u64> {
        let (s, t) = (key("source", source)?, key("target", target)?);
        if s == t {
            return Err(KbError::Invalid(format!(
                "source and target are the same key `{s}`"
            )));
        }
        let client = client(client_id)?;
        let repointed = self.stores.aliases.merge(client, &s, &t).await?;
        // The graph follows the registry: one node per identity. Nodes of the source's other
        // aliases were folded into it when those aliases were registered.
        self.stores.graph.fold_node(client, &s, &t).await?;
        Ok(repointed)
    }

    pub async fn alias_list(&self, client_id: &str, canonical: &str) -> Result<Vec<AliasEntry>> {
        let c = key("canonical", canonical)?;
        Ok(self.stores.aliases.list(client(client_id)?, &c).await?)
    }

    pub async fn alias_stats(&self, client_id: &str, top: usize) -> Result<AliasStats> {
        Ok(self
            .stores
            .aliases
            .stats(client(client_id)?, top.clamp(1, 1000))
            .await?)
    }
}
