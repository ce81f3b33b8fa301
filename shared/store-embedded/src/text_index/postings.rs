//! The in-memory structures of the text index: posting lists per term, per-partition
//! statistics, and the per-row maps. Mutated only under [`super::TextIndex`]'s lock.

use std::collections::HashMap;

use crate::dense::DenseMap;

use super::Analyzed;

#[derive(Default)]
pub(super) struct Postings {
    pub(super) rids: Vec<u32>,
    pub(super) tfs: Vec<u16>,
    /// Document frequency per partition (partition id, postings of that partition still in
    /// the lists), sorted by partition id: most terms occur in a handful of partitions.
    pub(super) df: Vec<(u32, u32)>,
    /// Some row id is below the one before it (a re-indexed row appended again): scoring
    /// then scans the list instead of binary-searching it. Lists are built in commit (row-id)
    /// order, and loaded sorted.
    pub(super) unsorted: bool,
}

impl Postings {
    pub(super) fn df_add(&mut self, part: u32, delta: i64) {
        match self.df.binary_search_by_key(&part, |e| e.0) {
            Ok(i) => {
                let n = (self.df[i].1 as i64 + delta).max(0) as u32;
                if n == 0 {
                    self.df.remove(i);
                } else {
                    self.df[i].1 = n;
                }
            }
            Err(i) if delta > 0 => self.df.insert(i, (part, delta as u32)),
            Err(_) => {}
        }
    }

    /// Room for one more posting, growing a full list by a quarter (at least 4) instead of
    /// `Vec`'s doubling: the lists are most of the index's bytes, and doubling left them ~40%
    /// empty on average (860 against 608 bytes per chunk at 1M chunks; at 300k, 254 → 198 MiB
    /// with a quarter). Still amortised O(1) per posting (each byte is copied ~4 times over a
    /// list's growth rather than ~once).
    pub(super) fn reserve_one(&mut self) {
        let len = self.rids.len();
        if len == self.rids.capacity() {
            let more = (len / 4).max(4);
            self.rids.reserve_exact(more);
            self.tfs.reserve_exact(more);
        }
    }

    pub(super) fn df_in(&self, parts: &[u32]) -> u32 {
        parts
            .iter()
            .filter_map(|p| {
                self.df
                    .binary_search_by_key(p, |e| e.0)
                    .ok()
                    .map(|i| self.df[i].1)
            })
            .sum()
    }
}

/// The BM25 statistics of one partition (a client, or `""` for global data).
#[derive(Default)]
pub(super) struct PartStats {
    /// Live rows.
    pub(super) docs: u32,
    pub(super) total_len: u64,
    /// Removed rows whose postings are still in the lists (and still counted in `df`).
    pub(super) dead: Vec<u32>,
}

/// A partition's stale postings are dropped once they are this share of its rows (×4 >
/// live) and at least this many, so a small partition's purges don't sweep the whole index
/// each time.
const MIN_COMPACTION: usize = 64;

#[derive(Default)]
pub(super) struct Inner {
    pub(super) term_ids: HashMap<Box<str>, u32>,
    /// Each term's text, by term id (the inverse of `term_ids`, for saving).
    pub(super) term_text: Vec<Box<str>>,
    pub(super) postings: Vec<Postings>,
    /// Live rows and their length in terms.
    pub(super) doc_len: DenseMap<u32>,
    /// Partition of every row with postings in the lists (live, or removed and not yet
    /// compacted). A row's partition never changes (its chunk id derives from it).
    pub(super) row_part: DenseMap<u32>,
    /// Hash of each live row's title, to tell whether a relocated chunk needs re-indexing.
    pub(super) title_hash: DenseMap<u64>,
    pub(super) part_ids: HashMap<Box<str>, u32>,
    /// Each partition's name, by partition id.
    pub(super) part_names: Vec<Box<str>>,
    pub(super) parts: Vec<PartStats>,
    pub(super) live_postings: usize,
}

impl Inner {
    pub(super) fn part_id(&mut self, partition: &str) -> u32 {
        if let Some(id) = self.part_ids.get(partition) {
            return *id;
        }
        let id = self.parts.len() as u32;
        self.part_ids.insert(partition.into(), id);
        self.part_names.push(partition.into());
        self.parts.push(PartStats::default());
        id
    }

    pub(super) fn term_id(&mut self, term: Box<str>) -> u32 {
        if let Some(id) = self.term_ids.get(&*term) {
            return *id;
        }
        let id = self.postings.len() as u32;
        self.term_ids.insert(term.clone(), id);
        self.term_text.push(term);
        self.postings.push(Postings::default());
        id
    }

    /// Drops the postings of `rows` (removed rows of the partitions they belong to) from
    /// every list, with their document frequencies. One sweep over the postings.
    pub(super) fn sweep(&mut self, rows: &[u32]) {
        if rows.is_empty() {
            return;
        }
        let gone: std::collections::HashSet<u32> = rows.iter().copied().collect();
        let Inner {
            postings, row_part, ..
        } = self;
        let mut dropped = 0;
        for p in postings.iter_mut() {
            let mut k = 0;
            for i in 0..p.rids.len() {
                let rid = p.rids[i];
                if gone.contains(&rid) {
                    if let Some(&part) = row_part.get(rid as u64) {
                        p.df_add(part, -1);
                    }
                    dropped += 1;
                } else {
                    p.rids[k] = rid;
                    p.tfs[k] = p.tfs[i];
                    k += 1;
                }
            }
            p.rids.truncate(k);
            p.tfs.truncate(k);
        }
        self.live_postings -= dropped.min(self.live_postings);
        for rid in rows {
            self.row_part.remove(*rid as u64);
        }
    }

    pub(super) fn remove_row(&mut self, rid: u64) -> Option<u32> {
        let len = self.doc_len.remove(rid)?;
        self.title_hash.remove(rid);
        let part = *self.row_part.get(rid)?;
        let stats = &mut self.parts[part as usize];
        stats.docs -= 1;
        stats.total_len -= len as u64;
        stats.dead.push(rid as u32);
        Some(part)
    }

    /// Compacts a partition whose stale postings reached their share (its own rows only).
    pub(super) fn maybe_compact(&mut self, part: u32) {
        let stats = &self.parts[part as usize];
        if stats.dead.len() >= MIN_COMPACTION && stats.dead.len() * 4 > stats.docs as usize {
            let dead = std::mem::take(&mut self.parts[part as usize].dead);
            self.sweep(&dead);
        }
    }

    /// Drops every stale posting now (after loading: a loaded index then equals one built
    /// from scratch).
    pub(super) fn compact_all(&mut self) {
        let dead: Vec<u32> = self
            .parts
            .iter_mut()
            .flat_map(|p| std::mem::take(&mut p.dead))
            .collect();
        self.sweep(&dead);
    }

    pub(super) fn insert(&mut self, rid: u64, partition: &str, analyzed: Analyzed) {
        if self.doc_len.contains(rid) {
            return; // already indexed (idempotent publish)
        }
        let part = self.part_id(partition);
        if self.row_part.contains(rid) {
            // Removed earlier and indexed again (a re-titled relocated chunk): its stale
            // postings go first, or it would be counted twice.
            let dead = &mut self.parts[part as usize].dead;
            dead.retain(|r| *r as u64 != rid);
            self.sweep(&[rid as u32]);
        }
        let rid = rid as u32;
        for (term, n) in analyzed.terms {
            let id = self.term_id(term);
            let p = &mut self.postings[id as usize];
            p.unsorted |= p.rids.last().is_some_and(|last| *last > rid);
            p.reserve_one();
            p.rids.push(rid);
            p.tfs.push(n);
            p.df_add(part, 1);
            self.live_postings += 1;
        }
        self.doc_len.insert(rid as u64, analyzed.len);
        self.row_part.insert(rid as u64, part);
        self.title_hash.insert(rid as u64, analyzed.title_hash);
        let stats = &mut self.parts[part as usize];
        stats.docs += 1;
        stats.total_len += analyzed.len as u64;
    }

    /// Bytes held, estimated from lengths and capacities (what the memory budget counts).
    pub(super) fn heap_bytes(&self) -> (usize, usize) {
        let postings: usize = self
            .postings
            .iter()
            .map(|p| p.rids.capacity() * 4 + p.tfs.capacity() * 2 + p.df.capacity() * 8 + 72)
            .sum();
        let terms: usize = self.term_text.iter().map(|t| t.len() * 2 + 56).sum();
        let rows =
            self.doc_len.heap_bytes() + self.row_part.heap_bytes() + self.title_hash.heap_bytes();
        (postings + terms, rows)
    }
}

#[cfg(test)]
mod growth_tests {
    use super::Postings;

    /// A list grows by a quarter: never more than a quarter (or 4) empty, the same capacity
    /// for row ids and term frequencies, and few enough regrowths to stay amortised O(1).
    #[test]
    fn a_full_list_grows_by_a_quarter() {
        let mut p = Postings::default();
        let mut growths = 0;
        for rid in 0..200_000u32 {
            let before = p.rids.capacity();
            p.reserve_one();
            if p.rids.capacity() != before {
                growths += 1;
                let len = p.rids.len();
                assert!(p.rids.capacity() <= len + (len / 4).max(4), "{len}");
            }
            p.rids.push(rid);
            p.tfs.push(1);
            assert_eq!(p.rids.capacity(), p.tfs.capacity());
        }
        let len = p.rids.len();
        assert!(p.rids.capacity() * 4 <= len * 5 + 16, "slack ≤ a quarter");
        // log_1.25(200,000 / 4) ≈ 49 growths, plus the first few of 4.
        assert!((40..=60).contains(&growths), "{growths} growths");
    }
}
