//! "Are these chunks visible to this writer?": the check every write that cites existing
//! chunks as evidence makes before it writes (claims; agent graph writes). A cited chunk must
//! exist and be admitted by the writer's visibility; the refusal, `evidence_not_visible`
//! (422, nothing written), is the same for a chunk that does not exist and one the writer may
//! not see, so it tells nothing about other scopes.

use std::collections::HashMap;

use evident_core::{Chunk, Evidence, Scope, Visibility};

use crate::{Kb, KbError, Result};

/// Most chunk ids one piece of evidence may cite.
pub const MAX_CITED: usize = 64;

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

    /// Every chunk of `ids`, which `vis` must admit: `evidence_not_visible` names the first
    /// one it does not.
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

/// The cited chunks of a graph write, in the order of `ids` (duplicates dropped), when every
/// one of them is visible to a writer in `scope` **and lies in its partition**: graph evidence
/// is removed partition by partition when its chunk goes, so a client's graph never cites a
/// global chunk or another client's. `evidence_not_visible` otherwise.
pub async fn cited_chunks(kb: &Kb, scope: &Scope, ids: &[String]) -> Result<Vec<Chunk>> {
    let mut wanted: Vec<String> = Vec::with_capacity(ids.len());
    for id in ids {
        evident_core::validate::identifier("chunkIds", id)?;
        if !wanted.contains(id) {
            wanted.push(id.clone());
        }
    }
    if wanted.len() > MAX_CITED {
        return Err(evident_core::validate::FieldError::TooLong {
            field: "chunkIds",
            len: wanted.len(),
            max: MAX_CITED,
        }
        .into());
    }
    let found = kb
        .visible_chunks(&Visibility::of(scope.clone()), &wanted)
        .await?;
    let in_partition = |c: &&Chunk| c.scope.partition() == scope.partition();
    if let Some(missing) = wanted
        .iter()
        .find(|id| found.get(*id).filter(in_partition).is_none())
    {
        return Err(KbError::EvidenceNotVisible {
            chunk_id: missing.clone(),
        });
    }
    Ok(wanted
        .iter()
        .filter_map(|id| found.get(id).cloned())
        .collect())
}

/// The evidence entries of visible chunks (their ids with their own scopes).
pub fn evidence_of(chunks: &[Chunk]) -> Vec<Evidence> {
    chunks
        .iter()
        .map(|c| Evidence {
            chunk_id: c.id.clone(),
            scope: c.scope.clone(),
        })
        .collect()
}
