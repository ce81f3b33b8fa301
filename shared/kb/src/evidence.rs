//! "Are these chunks visible to this writer?": the check every write that cites existing
//! chunks as evidence makes before it writes (agent graph writes; claims cite chunks the same
//! way). A cited chunk must exist, be admitted by the writer's visibility, and lie in the
//! writer's partition (evidence is removed partition by partition when its chunk goes, so a
//! client's graph never cites a global chunk or another client's).

use evident_core::{Chunk, Evidence, Scope, Visibility};

use crate::{Kb, KbError, Result};

/// Most chunk ids one piece of evidence (one node, edge or claim) may cite; callers check it
/// per item, then check all of a request's ids in one [`visible_chunks`] call.
pub const MAX_CITED: usize = 64;

/// The cited chunks, in the order of `ids` (duplicates dropped), when every one of them is
/// visible to a writer in `scope`; `evidence_not_visible` (422, nothing written) otherwise —
/// the same answer for a chunk that does not exist and one the writer may not see, so the
/// refusal tells nothing about other scopes.
pub async fn visible_chunks(kb: &Kb, scope: &Scope, ids: &[String]) -> Result<Vec<Chunk>> {
    let mut seen = std::collections::HashSet::new();
    let mut wanted: Vec<String> = Vec::with_capacity(ids.len());
    for id in ids {
        evident_core::validate::identifier("chunkIds", id)?;
        if seen.insert(id.as_str()) {
            wanted.push(id.clone());
        }
    }
    let vis = Visibility::of(scope.clone());
    let found = kb.stores.chunks.get(&vis, &wanted).await?;
    let present: std::collections::HashSet<&str> = found
        .iter()
        .filter(|c| c.scope.partition() == scope.partition())
        .map(|c| c.id.as_str())
        .collect();
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|id| !present.contains(id.as_str()))
        .collect();
    if let Some(first) = missing.first() {
        return Err(KbError::Unprocessable {
            code: "evidence_not_visible",
            message: format!(
                "{} cited chunk(s) do not exist or are not visible to this writer (first: {first})",
                missing.len()
            ),
        });
    }
    Ok(found
        .into_iter()
        .filter(|c| c.scope.partition() == scope.partition())
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
