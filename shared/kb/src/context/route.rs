//! Step 2: candidates merged (one per identity, at its best score) and routed into sections
//! by info type.
//!
//! Without `sections` in the request, the sections are [`DEFAULT_SECTIONS`] plus one per other
//! info type found (the seed: a new info type needs no code change), each with
//! [`DEFAULT_BUDGET_TOKENS`]. With `sections`, exactly those, each taking the info types it
//! lists (its own name when it lists none); a candidate whose info type no section takes is
//! left out, one that two sections take appears in both.

use std::collections::BTreeMap;

use super::SectionSpec;
use super::gather::Candidate;

/// The seed's four info types, always present (possibly empty) without `sections`.
pub const DEFAULT_SECTIONS: [&str; 4] = ["context", "instructions", "skills", "user_profile"];
/// The budget of each section the request does not size.
pub const DEFAULT_BUDGET_TOKENS: usize = 512;

/// One section before formatting: its budget and its candidates, best first.
pub(super) struct Routed {
    pub budget: usize,
    pub candidates: Vec<Candidate>,
}

/// Best first: score descending, then the order key, then the identity (total, stable).
fn rank(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.order.cmp(&b.order))
        .then_with(|| a.key.cmp(&b.key))
}

/// De-duplicates by identity (the higher score wins; at equal scores the first layer in rank
/// order), then distributes into sections.
pub(super) fn route(
    candidates: Vec<Candidate>,
    sections: Option<&BTreeMap<String, SectionSpec>>,
) -> BTreeMap<String, Routed> {
    let mut best: BTreeMap<String, Candidate> = BTreeMap::new();
    for c in candidates {
        match best.get(&c.key) {
            Some(kept) if rank(kept, &c).is_le() => {}
            _ => {
                best.insert(c.key.clone(), c);
            }
        }
    }
    let mut merged: Vec<Candidate> = best.into_values().collect();
    merged.sort_by(rank);

    let specs: BTreeMap<String, (Vec<String>, usize)> = match sections {
        Some(s) => s
            .iter()
            .map(|(name, spec)| {
                let types = spec
                    .info_types
                    .clone()
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| vec![name.clone()]);
                (name.clone(), (types, spec.budget_tokens))
            })
            .collect(),
        None => DEFAULT_SECTIONS
            .iter()
            .map(|s| s.to_string())
            .chain(merged.iter().map(|c| c.info_type.clone()))
            .map(|name| (name.clone(), (vec![name], DEFAULT_BUDGET_TOKENS)))
            .collect(),
    };
    specs
        .into_iter()
        .map(|(name, (types, budget))| {
            let candidates = merged
                .iter()
                .filter(|c| types.contains(&c.info_type))
                .cloned()
                .collect();
            (name, Routed { budget, candidates })
        })
        .collect()
}
