//! Evidence a writer cites by chunk id: it must be a chunk the writer can see. One small
//! check shared by every write that cites chunks (claims; agent graph writes).

use std::collections::HashMap;

use evident_core::{Chunk, Visibility};

use crate::{Kb, KbError, Result};

impl Kb {
    /// The chunks among `ids` that `vis` admits, by id (missing and invisible ones absent).
    pub async fn visible_chunks(
        &self,
        vis: &Visibility,
        ids: &[String],
    ) -> Result<HashMap<String, Chunk>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        Ok(self
            .stores
            .chunks
            .get(vis, ids)
            .await?
            .into_iter()
            .map(|c| (c.id.clone(), c))
            .collect())
    }

    /// Every chunk of `ids`, which `vis` must admit: `evidence_not_visible` (422) names the
    /// first one it does not (missing or another scope's, told apart for no one).
    pub async fn require_visible_chunks(
        &self,
        vis: &Visibility,
        ids: &[String],
    ) -> Result<HashMap<String, Chunk>> {
        let found = self.visible_chunks(vis, ids).await?;
        if let Some(missing) = ids.iter().find(|id| !found.contains_key(*id)) {
            return Err(KbError::EvidenceNotVisible {
                chunk_id: missing.clone(),
            });
        }
        Ok(found)
    }
}
