//! Overlaps and line numbers: raw scanner spans become sorted, disjoint findings.

use std::collections::BTreeMap;

use super::SecretFinding;
use super::scanners::Raw;

pub(super) fn resolve(text: &str, mut raw: Vec<Raw>) -> Vec<SecretFinding> {
    raw.sort_by_key(|r| (r.class.priority(), r.start, r.end));
    let mut taken: BTreeMap<usize, usize> = BTreeMap::new();
    let mut kept: Vec<Raw> = Vec::new();
    for r in raw {
        if r.start >= r.end {
            continue;
        }
        // Accepted spans are disjoint, so only the last one starting before `r.end` can overlap.
        if taken
            .range(..r.end)
            .next_back()
            .is_some_and(|(_, &end)| end > r.start)
        {
            continue;
        }
        taken.insert(r.start, r.end);
        kept.push(r);
    }
    if kept.is_empty() {
        return Vec::new();
    }
    kept.sort_by_key(|r| (r.start, r.end));
    let newlines: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
    kept.into_iter()
        .map(|r| SecretFinding {
            class: r.class,
            byte_start: r.start,
            byte_end: r.end,
            line: newlines.partition_point(|&p| p < r.start) + 1,
        })
        .collect()
}
