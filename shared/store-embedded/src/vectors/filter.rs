//! The row map (what every search filters with) and the filter built from it per query.
//!
//! Why per-scope row lists: a filtered HNSW search keeps walking the graph until it has found
//! enough admitted rows, so its cost grows as the admitted share shrinks — a tenant with one
//! document in a store of a million chunks walked the whole graph (~1.1 s per query). With
//! the rows of every scope listed, a query knows how many rows it may see before searching,
//! and when they are few it scores exactly those (see [`exact_limit`]); the text channel
//! skips every posting outside them with one bit test.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLockReadGuard;

use crate::dense::DenseMap;

/// What the filter needs to know about a live row, kept in memory for every chunk.
#[derive(Debug, Clone)]
pub struct RowMeta {
    pub id: Arc<str>,
    pub scope: u32,
    pub kind: u32,
    /// Interned typed-knowledge labels (`0`: none).
    pub typed: u32,
}

/// Interns small repeated values (scopes, kinds) so the row map stays compact.
#[derive(Default)]
pub(super) struct Interner<T: std::hash::Hash + Eq + Clone> {
    ids: HashMap<T, u32>,
    pub(super) values: Vec<T>,
}

impl<T: std::hash::Hash + Eq + Clone> Interner<T> {
    pub(super) fn intern(&mut self, v: &T) -> u32 {
        if let Some(id) = self.ids.get(v) {
            return *id;
        }
        let id = self.values.len() as u32;
        self.values.push(v.clone());
        self.ids.insert(v.clone(), id);
        id
    }
}

/// The typed-label interner with "no labels" at index 0 (what rows tracked without labels get).
pub(super) fn none_typed() -> Interner<evident_core::Typed> {
    let mut i = Interner::default();
    i.intern(&evident_core::Typed::default());
    i
}

/// Cost of one unfiltered graph search, in exact-scan rows: a search admitting a share `s` of
/// `n` rows visits about `GRAPH_SEARCH_ROWS / s` nodes, an exact scan `s·n` rows, so the scan
/// is cheaper below `√(GRAPH_SEARCH_ROWS · n)` admitted rows. Measured at 100k chunks (384
/// dims, ef 64): a graph search admitting a quarter of the rows took ~2.1 ms, an exact scan
/// ~0.35 µs per row, i.e. ~1,500 rows unfiltered; rounded down to favour the graph.
const GRAPH_SEARCH_ROWS: f64 = 1024.0;
/// Below this many admitted rows the scan is always exact.
const MIN_EXACT_ROWS: usize = 256;

/// The most admitted rows a search scores exactly in a store of `live` rows (above it, the
/// graph is searched with the filter).
pub fn exact_limit(live: usize) -> usize {
    ((GRAPH_SEARCH_ROWS * live as f64).sqrt() as usize).max(MIN_EXACT_ROWS)
}

/// The rows of one scope, in insertion order. Entries of rows that left the scope (deleted,
/// or moved to another) stay until the list is compacted; `stale` counts them.
#[derive(Default)]
struct ScopeRows {
    rids: Vec<u32>,
    stale: usize,
}

/// Every live row's metadata, and per interned scope the rows holding it.
#[derive(Default)]
pub(super) struct RowMap {
    meta: DenseMap<RowMeta>,
    by_scope: Vec<ScopeRows>,
}

impl RowMap {
    pub(super) fn get(&self, rid: u64) -> Option<&RowMeta> {
        self.meta.get(rid)
    }

    pub(super) fn len(&self) -> usize {
        self.meta.len()
    }

    /// Live rows in row-id order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, &RowMeta)> {
        self.meta.iter()
    }

    pub(super) fn insert(&mut self, rid: u64, meta: RowMeta) {
        let scope = meta.scope as usize;
        let old = self.meta.insert(rid, meta);
        if let Some(old) = &old {
            if old.scope as usize == scope {
                return;
            }
            self.went_stale(old.scope as usize);
        }
        if self.by_scope.len() <= scope {
            self.by_scope.resize_with(scope + 1, ScopeRows::default);
        }
        self.by_scope[scope].rids.push(rid as u32);
    }

    pub(super) fn remove(&mut self, rid: u64) {
        if let Some(old) = self.meta.remove(rid) {
            self.went_stale(old.scope as usize);
        }
    }

    /// Compacts a scope's list once its stale entries are half of it (and at least 64), so
    /// the lists stay within 2× of the live rows at an amortised O(1) per removal.
    fn went_stale(&mut self, scope: usize) {
        let meta = &self.meta;
        let list = &mut self.by_scope[scope];
        list.stale += 1;
        if list.stale >= 64 && list.stale * 2 > list.rids.len() {
            list.rids.retain(|r| {
                meta.get(*r as u64)
                    .is_some_and(|m| m.scope as usize == scope)
            });
            // A row that left and came back is listed twice.
            list.rids.sort_unstable();
            list.rids.dedup();
            list.stale = 0;
        }
    }

    /// Rows listed under the scopes `allowed` admits (live ones, at most: stale entries are
    /// subtracted).
    fn count(&self, allowed: &[bool]) -> usize {
        self.by_scope
            .iter()
            .zip(allowed)
            .filter(|(_, a)| **a)
            .map(|(l, _)| l.rids.len() - l.stale.min(l.rids.len()))
            .sum()
    }

    /// Bytes held by the row map (metadata slots, ids, scope lists), for the memory report.
    pub(super) fn heap_bytes(&self) -> usize {
        let ids: usize = (0..self.meta.capacity() as u64)
            .filter_map(|r| self.meta.get(r))
            .map(|m| m.id.len() + 16)
            .sum();
        let lists: usize = self.by_scope.iter().map(|l| l.rids.capacity() * 4).sum();
        self.meta.capacity() * std::mem::size_of::<Option<RowMeta>>() + ids + lists
    }
}

/// Exactly the rows a filter admits, when they are few (see [`exact_limit`]): their ids in
/// ascending order and a bitmap over row ids for constant-time tests.
pub struct Admitted {
    pub rids: Vec<u32>,
    bits: Vec<u64>,
}

impl Admitted {
    #[inline]
    pub fn contains(&self, rid: u64) -> bool {
        self.bits
            .get((rid / 64) as usize)
            .is_some_and(|w| w & (1 << (rid % 64)) != 0)
    }
}

/// The visibility and kind filter over live rows, evaluated from the in-memory row map (no
/// SQLite access): used by vector search, full-text search and by-kind listing alike.
pub struct RowFilter<'a> {
    pub(super) rows: RwLockReadGuard<'a, RowMap>,
    pub(super) allowed_scopes: Vec<bool>,
    pub(super) allowed_kinds: Option<Vec<bool>>,
    pub(super) allowed_typed: Option<Vec<bool>>,
    pub(super) admitted: Option<Admitted>,
}

impl RowFilter<'_> {
    pub fn admits(&self, rid: u64) -> bool {
        self.rows.get(rid).is_some_and(|m| {
            self.allowed_scopes
                .get(m.scope as usize)
                .copied()
                .unwrap_or(false)
                && self
                    .allowed_kinds
                    .as_ref()
                    .is_none_or(|ks| ks.get(m.kind as usize).copied().unwrap_or(false))
                && self
                    .allowed_typed
                    .as_ref()
                    .is_none_or(|ts| ts.get(m.typed as usize).copied().unwrap_or(false))
        })
    }

    pub fn id(&self, rid: u64) -> Option<Arc<str>> {
        self.rows.get(rid).map(|m| m.id.clone())
    }

    /// The admitted rows, listed, when they are few enough to score exactly.
    pub fn admitted(&self) -> Option<&Admitted> {
        self.admitted.as_ref()
    }

    /// A test that never refuses a row [`RowFilter::admits`] admits and costs one bit test
    /// when the admitted rows are few (otherwise it admits everything): hot loops over rows
    /// of every tenant (posting lists) skip the others before touching anything else.
    #[inline]
    pub fn may_admit(&self, rid: u64) -> bool {
        self.admitted.as_ref().is_none_or(|a| a.contains(rid))
    }

    /// Lists the admitted rows when the scopes' lists hold at most `limit` rows.
    pub(super) fn list_if_few(&mut self, limit: usize) {
        if self.rows.count(&self.allowed_scopes) > limit {
            return;
        }
        let mut rids: Vec<u32> = Vec::new();
        let mut stale = false;
        for (list, _) in self
            .rows
            .by_scope
            .iter()
            .zip(&self.allowed_scopes)
            .filter(|(_, a)| **a)
        {
            stale |= list.stale > 0;
            rids.extend(list.rids.iter().filter(|r| self.admits(**r as u64)));
        }
        rids.sort_unstable();
        if stale {
            rids.dedup();
        }
        let words = rids.last().map_or(0, |r| *r as usize / 64 + 1);
        let mut bits = vec![0u64; words];
        for r in &rids {
            bits[*r as usize / 64] |= 1 << (r % 64);
        }
        self.admitted = Some(Admitted { rids, bits });
    }
}
