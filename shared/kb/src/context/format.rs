//! Step 3: each section's lines from their templates, cut to the budget by rank.
//!
//! Templates (one line per candidate, whitespace inside a value collapsed to single spaces):
//! - profile property: `{name}: {value} [n]` (the active entity's, then the global profile's,
//!   names in alphabetical order);
//! - piece, outcome, user knowledge: `[{knowledgeType or kind}] {text} (tags: a, b) [n]`;
//! - relationship: `{from} -[{TYPE}]-> {to} [n]`;
//! - session-log entry: `[{source}] {summary} [n]`.
//!
//! Lines join with `\n`. `[n]` numbers the section's lines from 1; `items[section][n-1]` is
//! what line `n` cites. Lines are taken in rank order while the section's tokens
//! ([`super::tokens::count`]) stay within its budget; the first line that would not fit ends
//! the section (so what survives is always the best-ranked prefix, never part of a line).

use serde::{Deserialize, Serialize};

use super::ContextAnswer;
use super::route::Routed;
use super::tokens;
use std::collections::BTreeMap;

/// What one marker cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextItem {
    /// `[n]`, as it appears at the end of the line.
    pub marker: String,
    /// The layer the line came from (`metadata`, `pieces`, `graph`, `memory`, `outcomes`,
    /// `userKnowledge`).
    pub layer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_urn: Option<String>,
    /// The node the line is about (a profile's entity, a piece's entity, an edge's source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_key: Option<String>,
    /// Human-readable citation (the chunk's locator, or `session:{client}[/{project}]@{ms}`).
    pub citation: String,
}

pub(super) fn render(sections: BTreeMap<String, Routed>) -> ContextAnswer {
    let mut answer = ContextAnswer::default();
    for (name, routed) in sections {
        let (text, items, used, truncated) = fill(routed);
        answer.sections.insert(name.clone(), text);
        answer.items.insert(name.clone(), items);
        answer.tokens.insert(name.clone(), used);
        answer.truncated.insert(name, truncated);
    }
    answer
}

/// The best-ranked lines that fit the budget: (text, citations, tokens, truncated). When
/// even the best line does not fit, its text is cut at a word to fit, marked `…`, and keeps
/// its citation marker, so a small budget still gets its best item.
fn fill(routed: Routed) -> (String, Vec<ContextItem>, usize, bool) {
    let mut lines: Vec<String> = Vec::new();
    let mut items = Vec::new();
    let mut used = 0usize; // the sum of the lines' tokens
    let mut cut = false;
    let total = routed.candidates.len();
    for mut c in routed.candidates {
        let marker = format!("[{}]", lines.len() + 1);
        let line = format!("{} {marker}", c.line);
        let cost = tokens::count(&line);
        if used + cost > routed.budget {
            if lines.is_empty()
                && let Some(short) = shortened(&c.line, &marker, routed.budget)
            {
                c.item.marker = marker;
                items.push(c.item);
                lines.push(short);
                cut = true;
            }
            break;
        }
        used += cost;
        c.item.marker = marker;
        items.push(c.item);
        lines.push(line);
    }
    // Counts add up over lines (see `tokens`); the whole is counted once more so the number
    // reported is the text's own, and should a join ever cost a token, the last line goes.
    let mut text = lines.join("\n");
    let mut used_exact = tokens::count(&text);
    while used_exact > routed.budget && lines.pop().is_some() {
        items.pop();
        text = lines.join("\n");
        used_exact = tokens::count(&text);
    }
    let truncated = cut || lines.len() < total;
    (text, items, used_exact, truncated)
}

/// The longest prefix of `line`'s words that, with ` … {marker}`, fits `budget` tokens.
fn shortened(line: &str, marker: &str, budget: usize) -> Option<String> {
    let words: Vec<&str> = line.split(' ').collect();
    let with = |k: usize| format!("{} … {marker}", words[..k].join(" "));
    let fits = |k: usize| tokens::count(&with(k)) <= budget;
    if !fits(1) {
        return None;
    }
    // Tokens only grow with more words: the largest k that fits, by bisection.
    let (mut lo, mut hi) = (1, words.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    Some(with(lo))
}
