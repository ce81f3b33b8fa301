//! Term-at-a-time BM25 scoring with max-score pruning: terms are scored rarest first, and
//! once the k-th best admitted score so far exceeds what the remaining (common) terms could
//! add to any row at most (`idf · (k1 + 1)` each), no row they alone reach can enter the top
//! k — so their long posting lists only update the rows already scored, found by binary
//! search instead of a scan. The top k are those of plain TAAT scoring, with the same scores
//! (up to the order of float additions). Why: at 1M chunks a reader's query of a few common
//! words walked postings of most of the store and ranked a quarter of a million rows.

use std::cell::RefCell;

use super::postings::{Inner, Postings};
use super::{B, K1};
use crate::vectors::RowFilter;

thread_local! {
    static SCORES: RefCell<(Vec<f32>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Pruning is considered only when the remaining lists hold this many times more postings
/// than the rows already scored (else scanning them costs about as much as the check).
const PRUNE_RATIO: usize = 4;

/// What scoring one posting needs.
struct Bm25 {
    avgdl: f32,
}

impl Bm25 {
    fn term(&self, idf: f32, tf: u16, dl: u32) -> f32 {
        let tf = tf as f32;
        idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl as f32 / self.avgdl))
    }
}

/// Top `k` rows admitted by `filter` for the query terms `terms` (term id, idf), scores
/// positive, best first (ties by row id).
pub(super) fn top_k(
    inner: &Inner,
    filter: &RowFilter<'_>,
    mut terms: Vec<(u32, f32)>,
    avgdl: f32,
    k: usize,
) -> Vec<(u64, f32)> {
    let bm25 = Bm25 { avgdl };
    // Rarest (highest bound) first; ties keep the query's order (a stable sort), never the
    // term ids, which differ between a loaded and a rebuilt index: the order of the float
    // additions, and so every score's bits, depend on the query and the statistics alone.
    terms.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut bound_after = vec![0f32; terms.len() + 1];
    let mut len_after = vec![0usize; terms.len() + 1];
    for i in (0..terms.len()).rev() {
        bound_after[i] = bound_after[i + 1] + terms[i].1 * (K1 + 1.0);
        len_after[i] = len_after[i + 1] + inner.postings[terms[i].0 as usize].rids.len();
    }
    SCORES.with(|cell| {
        let (scores, touched) = &mut *cell.borrow_mut();
        let mut only_touched = false;
        for (i, &(t, idf)) in terms.iter().enumerate() {
            let p = &inner.postings[t as usize];
            if !only_touched
                && i > 0
                && touched.len() >= k
                && len_after[i] > PRUNE_RATIO * touched.len()
                && kth_admitted(scores, touched, filter, k) > bound_after[i]
            {
                only_touched = true;
                touched.sort_unstable();
            }
            if only_touched {
                update_touched(inner, p, idf, &bm25, scores, touched);
            } else {
                score_all(inner, p, idf, &bm25, filter, scores, touched);
            }
        }
        let mut hits: Vec<(u64, f32)> = Vec::with_capacity(k + 1);
        for &rid in touched.iter() {
            let s = scores[rid as usize];
            scores[rid as usize] = 0.0;
            if s > 0.0 && filter.admits(rid as u64) {
                hits.push((rid as u64, s));
            }
        }
        touched.clear();
        let by_score = |a: &(u64, f32), b: &(u64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > k {
            hits.select_nth_unstable_by(k, by_score);
            hits.truncate(k);
        }
        hits.sort_by(by_score);
        hits
    })
}

/// Plain TAAT: every posting of the term whose row the filter may admit.
fn score_all(
    inner: &Inner,
    p: &Postings,
    idf: f32,
    bm25: &Bm25,
    filter: &RowFilter<'_>,
    scores: &mut Vec<f32>,
    touched: &mut Vec<u32>,
) {
    for (&rid, &tf) in p.rids.iter().zip(&p.tfs) {
        // A small tenant's query skips other tenants' postings on one bit test.
        if !filter.may_admit(rid as u64) {
            continue;
        }
        let Some(&dl) = inner.doc_len.get(rid as u64) else {
            continue;
        };
        let slot = rid as usize;
        if slot >= scores.len() {
            scores.resize((slot + 1).next_power_of_two(), 0.0);
        }
        if scores[slot] == 0.0 {
            touched.push(rid);
        }
        scores[slot] += bm25.term(idf, tf, dl);
    }
}

/// The term's contribution to the rows already scored (`touched`, sorted) only: a binary
/// search per row in a sorted list, a scan of an unsorted one.
fn update_touched(
    inner: &Inner,
    p: &Postings,
    idf: f32,
    bm25: &Bm25,
    scores: &mut [f32],
    touched: &[u32],
) {
    let add = |rid: u32, tf: u16, scores: &mut [f32]| {
        if let Some(&dl) = inner.doc_len.get(rid as u64) {
            scores[rid as usize] += bm25.term(idf, tf, dl);
        }
    };
    if p.unsorted {
        for (&rid, &tf) in p.rids.iter().zip(&p.tfs) {
            if scores.get(rid as usize).is_some_and(|s| *s > 0.0) {
                add(rid, tf, scores);
            }
        }
        return;
    }
    let mut at = 0;
    for &rid in touched {
        at += p.rids[at..].partition_point(|r| *r < rid);
        match p.rids.get(at) {
            Some(&r) if r == rid => add(rid, p.tfs[at], scores),
            Some(_) => {}
            None => break,
        }
    }
}

/// The k-th best score among the scored rows the filter admits (0 when fewer).
fn kth_admitted(scores: &[f32], touched: &[u32], filter: &RowFilter<'_>, k: usize) -> f32 {
    let mut admitted: Vec<f32> = touched
        .iter()
        .filter(|r| filter.admits(**r as u64))
        .map(|r| scores[*r as usize])
        .collect();
    if admitted.len() < k || k == 0 {
        return 0.0;
    }
    admitted.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    admitted[k - 1]
}
