//! In-memory BM25 index over chunk text (title weighted ×2), maintained in the commit critical
//! section like the vector row map, and rebuilt from SQLite at open.
//!
//! Why not FTS5: FTS5 scores every match of an OR query through the virtual-table machinery;
//! measured here at 4 ms p50 / 16 ms p99 per query at 10k chunks and growing linearly. Plain
//! term-at-a-time scoring over compact posting lists into a dense score buffer does the same
//! work in tens of microseconds per thousand postings, and a chunk is searchable the moment its
//! commit is published. Terms come from [`crate::tokens`]: words, identifier parts
//! (`retrieveWithExpansion` → `retrieve`, `expansion`) and whole identifiers; stop words are
//! neither indexed nor queried.

use std::cell::RefCell;
use std::collections::HashMap;

use parking_lot::RwLock;

use crate::dense::DenseMap;
use crate::vectors::RowFilter;

const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Title tokens count this many times.
const TITLE_WEIGHT: u16 = 2;

use crate::tokens::terms;

#[derive(Default)]
struct Postings {
    rids: Vec<u32>,
    tfs: Vec<u16>,
    /// Document frequency per partition (partition id, postings of that partition still in
    /// the lists), sorted by partition id: most terms occur in a handful of partitions.
    df: Vec<(u32, u32)>,
}

impl Postings {
    fn df_add(&mut self, part: u32, delta: i64) {
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

    fn df_in(&self, parts: &[u32]) -> u32 {
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
struct PartStats {
    /// Live rows.
    docs: u32,
    total_len: u64,
    /// Removed rows whose postings are still in the lists (and still counted in `df`).
    dead: Vec<u32>,
}

/// A partition's stale postings are dropped once they are this share of its rows (×4 >
/// live) and at least this many, so a small partition's purges don't sweep the whole index
/// each time.
const MIN_COMPACTION: usize = 64;

#[derive(Default)]
struct Inner {
    term_ids: HashMap<Box<str>, u32>,
    postings: Vec<Postings>,
    /// Live rows and their length in terms.
    doc_len: DenseMap<u32>,
    /// Partition of every row with postings in the lists (live, or removed and not yet
    /// compacted). A row's partition never changes (its chunk id derives from it).
    row_part: DenseMap<u32>,
    /// Hash of each live row's title, to tell whether a relocated chunk needs re-indexing.
    title_hash: DenseMap<u64>,
    part_ids: HashMap<Box<str>, u32>,
    parts: Vec<PartStats>,
    live_postings: usize,
}

/// BM25 statistics are kept per partition and a search uses those of the partitions the
/// reader can see (global + its client, `Visibility::partitions`): document count, average
/// length and document frequencies of the union. So a client's scores never depend on
/// another client's data — nothing another client ingests, purges or compacts changes them.
/// (Within a client, projects and groups share the client's statistics.) Every counter of a
/// partition changes only through that partition's own rows: inserts, removals, and the
/// compaction of its own stale postings.
#[derive(Default)]
pub struct TextIndex {
    inner: RwLock<Inner>,
}

thread_local! {
    static SCORES: RefCell<(Vec<f32>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// A text's terms with their weighted counts, and its length: computed before the write (off
/// the commit critical section), inserted at publish.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Analyzed {
    terms: Vec<(Box<str>, u16)>,
    len: u32,
    title_hash: u64,
}

fn hash_title(title: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    title.hash(&mut h);
    h.finish()
}

impl Analyzed {
    pub fn of(title: Option<&str>, content: &str) -> Analyzed {
        let mut tf: HashMap<String, u16> = HashMap::new();
        let mut len = 0u32;
        // Count into the map without allocating a key for terms already seen (the common case).
        let mut count = |w: &str, weight: u16| {
            match tf.get_mut(w) {
                Some(n) => *n = n.saturating_add(weight),
                None => {
                    tf.insert(w.to_string(), weight);
                }
            }
            len += weight as u32;
        };
        if let Some(t) = title {
            terms(t, |w| count(w, TITLE_WEIGHT));
        }
        terms(content, |w| count(w, 1));
        Analyzed {
            terms: tf
                .into_iter()
                .map(|(t, n)| (t.into_boxed_str(), n))
                .collect(),
            len,
            title_hash: hash_title(title),
        }
    }
}

impl Inner {
    fn part_id(&mut self, partition: &str) -> u32 {
        if let Some(id) = self.part_ids.get(partition) {
            return *id;
        }
        let id = self.parts.len() as u32;
        self.part_ids.insert(partition.into(), id);
        self.parts.push(PartStats::default());
        id
    }

    /// Drops the postings of `rows` (removed rows of the partitions they belong to) from
    /// every list, with their document frequencies. One sweep over the postings.
    fn sweep(&mut self, rows: &[u32]) {
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

    fn remove_row(&mut self, rid: u64) -> Option<u32> {
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
    fn maybe_compact(&mut self, part: u32) {
        let stats = &self.parts[part as usize];
        if stats.dead.len() >= MIN_COMPACTION && stats.dead.len() * 4 > stats.docs as usize {
            let dead = std::mem::take(&mut self.parts[part as usize].dead);
            self.sweep(&dead);
        }
    }
}

impl TextIndex {
    pub fn add(&self, rid: u64, partition: &str, title: Option<&str>, content: &str) {
        self.insert(rid, partition, Analyzed::of(title, content));
    }

    /// Indexes a row of `partition` from its analysis (no tokenizing under the lock).
    pub fn insert(&self, rid: u64, partition: &str, analyzed: Analyzed) {
        let mut inner = self.inner.write();
        Self::insert_in(&mut inner, rid, partition, analyzed);
    }

    fn insert_in(inner: &mut Inner, rid: u64, partition: &str, analyzed: Analyzed) {
        if inner.doc_len.contains(rid) {
            return; // already indexed (idempotent publish)
        }
        let part = inner.part_id(partition);
        if inner.row_part.contains(rid) {
            // Removed earlier and indexed again (a re-titled relocated chunk): its stale
            // postings go first, or it would be counted twice.
            let dead = &mut inner.parts[part as usize].dead;
            dead.retain(|r| *r as u64 != rid);
            inner.sweep(&[rid as u32]);
        }
        let rid = rid as u32;
        for (term, n) in analyzed.terms {
            let id = match inner.term_ids.get(&*term) {
                Some(id) => *id,
                None => {
                    let id = inner.postings.len() as u32;
                    inner.term_ids.insert(term, id);
                    inner.postings.push(Postings::default());
                    id
                }
            };
            let p = &mut inner.postings[id as usize];
            p.rids.push(rid);
            p.tfs.push(n);
            p.df_add(part, 1);
            inner.live_postings += 1;
        }
        inner.doc_len.insert(rid as u64, analyzed.len);
        inner.row_part.insert(rid as u64, part);
        inner.title_hash.insert(rid as u64, analyzed.title_hash);
        let stats = &mut inner.parts[part as usize];
        stats.docs += 1;
        stats.total_len += analyzed.len as u64;
    }

    /// Re-indexes rows whose title may have changed (`(row, partition, title, content)`;
    /// their text never does: a relocated chunk keeps its id only while its text is the
    /// same). Rows whose indexed title is this one — the common case — are left alone; the
    /// others lose their old postings in one sweep and are indexed again.
    pub fn retitle(&self, rows: &[(u64, &str, Option<&str>, &str)]) {
        let changed: Vec<(u64, &str, Analyzed)> = {
            let inner = self.inner.read();
            rows.iter()
                .filter(|(rid, _, title, _)| {
                    inner.title_hash.get(*rid) != Some(&hash_title(*title))
                })
                .map(|(rid, part, title, content)| (*rid, *part, Analyzed::of(*title, content)))
                .collect()
        };
        if changed.is_empty() {
            return;
        }
        let mut inner = self.inner.write();
        let mut stale: Vec<u32> = Vec::with_capacity(changed.len());
        for (rid, _, _) in &changed {
            if let Some(part) = inner.remove_row(*rid) {
                inner.parts[part as usize]
                    .dead
                    .retain(|r| *r as u64 != *rid);
                stale.push(*rid as u32);
            }
        }
        inner.sweep(&stale);
        for (rid, part, analyzed) in changed {
            Self::insert_in(&mut inner, rid, part, analyzed);
        }
    }

    /// Forgets rows; their postings are skipped and dropped when their partition compacts.
    pub fn remove(&self, rids: &[u64]) {
        let mut inner = self.inner.write();
        let mut touched: Vec<u32> = Vec::new();
        for rid in rids {
            if let Some(part) = inner.remove_row(*rid)
                && !touched.contains(&part)
            {
                touched.push(part);
            }
        }
        for part in touched {
            inner.maybe_compact(part);
        }
    }

    /// Top `k` rows admitted by `filter`, by BM25 over the query's terms (any term matches;
    /// documents matching more and rarer terms score higher), with the statistics of
    /// `partitions` (the reader's: see [`TextIndex`]). Scores are positive.
    pub fn search(
        &self,
        query: &str,
        partitions: &[&str],
        filter: &RowFilter<'_>,
        k: usize,
    ) -> Vec<(u64, f32)> {
        let inner = self.inner.read();
        let parts: Vec<u32> = partitions
            .iter()
            .filter_map(|p| inner.part_ids.get(*p).copied())
            .collect();
        let (docs, total_len) = parts.iter().fold((0u64, 0u64), |(d, l), p| {
            let s = &inner.parts[*p as usize];
            (d + s.docs as u64, l + s.total_len)
        });
        let n = docs as f32;
        if n == 0.0 || k == 0 {
            return Vec::new();
        }
        let avgdl = (total_len as f32 / n).max(1.0);
        let mut query_terms: Vec<u32> = Vec::new();
        terms(query, |w| {
            if let Some(id) = inner.term_ids.get(w)
                && !query_terms.contains(id)
            {
                query_terms.push(*id);
            }
        });
        SCORES.with(|cell| {
            let (scores, touched) = &mut *cell.borrow_mut();
            for &t in &query_terms {
                let p = &inner.postings[t as usize];
                let df = p.df_in(&parts) as f32;
                if df == 0.0 {
                    continue; // no visible row holds the term
                }
                // Stale postings (removed rows not yet compacted) still count in `df`; never
                // let them push it past the live count (a negative idf would hide matches).
                let df = df.min(n);
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
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
                    let tf = tf as f32;
                    scores[slot] +=
                        idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl as f32 / avgdl));
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_fold_case_and_diacritics_and_drop_stop_words() {
        let mut out = Vec::new();
        terms("How is parse_config() used in Příliš?", |w| {
            out.push(w.to_string())
        });
        assert_eq!(
            out,
            vec!["parse", "config", "parse_config", "used", "prilis"]
        );
    }
}

/// Scores through the store: a client's BM25 scores depend on its own data (and global data)
/// only.
#[cfg(test)]
mod partition_tests {
    use evident_core::{Scope, Visibility};
    use evident_store::conformance::{DIM, axis, chunk, vector_space};
    use evident_store::{ChunkFilter, ChunkStore, RecordUpdate, SourceWrite, SourceWriter};

    use crate::{EmbeddedOptions, EmbeddedStore};

    fn write(scope: &Scope, urn: &str, texts: &[String]) -> SourceWrite {
        SourceWrite {
            partition: scope.partition().to_string(),
            source_urn: urn.to_string(),
            upsert_chunks: texts
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let id = format!("{}:{urn}:{i}", scope.partition());
                    (chunk(scope, urn, &id, "doc", t, i), axis(DIM, i % 4, 0.1))
                })
                .collect(),
            record: RecordUpdate::Keep,
            ..Default::default()
        }
    }

    async fn scores(store: &EmbeddedStore, vis: &Visibility, q: &str) -> Vec<(String, u32)> {
        store
            .search_text(vis, q, &ChunkFilter::default(), 50)
            .await
            .expect("search")
            .into_iter()
            .map(|s| (s.chunk_id, s.score.to_bits()))
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_clients_scores_are_unchanged_by_another_clients_ingest_and_purge() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = EmbeddedStore::open(EmbeddedOptions {
            dir: dir.path().to_path_buf(),
            vector_space: vector_space(),
            background_indexer: false,
        })
        .expect("open");
        let (a, b) = (Scope::client("a"), Scope::client("b"));
        let a_docs: Vec<String> = (0..6)
            .map(|i| format!("invoice ledger reconciliation step {i} for the quarterly audit"))
            .collect();
        store.apply(write(&a, "doc:a", &a_docs)).await.expect("a");
        store
            .apply(write(
                &Scope::global(),
                "doc:g",
                &["global ledger policy".into()],
            ))
            .await
            .expect("global");
        // A also removed some rows of its own earlier (its stale postings are its own).
        store
            .apply(write(&a, "doc:a-old", &["ledger draft".into()]))
            .await
            .expect("a old");
        store
            .apply(SourceWrite {
                partition: "a".into(),
                source_urn: "doc:a-old".into(),
                delete_chunk_ids: vec!["a:doc:a-old:0".into()],
                ..Default::default()
            })
            .await
            .expect("a purge");
        let vis = Visibility::of(a.clone());
        let q = "ledger invoice audit";
        let before = scores(&store, &vis, q).await;
        assert_eq!(before.len(), 7, "{before:?}");

        // B ingests many documents with the same terms (enough that its purge compacts).
        let b_docs: Vec<String> = (0..200)
            .map(|i| format!("ledger invoice {i} audit audit ledger notes"))
            .collect();
        store.apply(write(&b, "doc:b", &b_docs)).await.expect("b");
        assert_eq!(scores(&store, &vis, q).await, before, "after B's ingest");
        // B's reader does see its own statistics.
        assert_ne!(
            scores(&store, &Visibility::of(a.clone()), q).await,
            scores(&store, &Visibility::of(b.clone()), q).await
        );
        let ids: Vec<String> = (0..200).map(|i| format!("b:doc:b:{i}")).collect();
        store
            .apply(SourceWrite {
                partition: "b".into(),
                source_urn: "doc:b".into(),
                delete_chunk_ids: ids,
                ..Default::default()
            })
            .await
            .expect("b purge");
        assert_eq!(scores(&store, &vis, q).await, before, "after B's purge");

        // A reopened store rebuilds the index from SQLite (A's own stale posting is gone, so
        // only A's history can move A's statistics): the same rows are found.
        drop(store);
        let store = EmbeddedStore::open(EmbeddedOptions {
            dir: dir.path().to_path_buf(),
            vector_space: vector_space(),
            background_indexer: false,
        })
        .expect("reopen");
        let ids = |v: Vec<(String, u32)>| {
            let mut ids: Vec<String> = v.into_iter().map(|s| s.0).collect();
            ids.sort();
            ids
        };
        assert_eq!(ids(scores(&store, &vis, q).await), ids(before));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_relocated_chunk_is_counted_once() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = EmbeddedStore::open(EmbeddedOptions {
            dir: dir.path().to_path_buf(),
            vector_space: vector_space(),
            background_indexer: false,
        })
        .expect("open");
        let a = Scope::client("a");
        let docs: Vec<String> = vec!["ledger invoice".into(), "other words".into()];
        store.apply(write(&a, "doc:a", &docs)).await.expect("a");
        let vis = Visibility::of(a.clone());
        let before = scores(&store, &vis, "ledger").await;
        let mut moved = chunk(&a, "doc:a", "a:doc:a:0", "doc", &docs[0], 1);
        store
            .apply(SourceWrite {
                partition: "a".into(),
                source_urn: "doc:a".into(),
                relocate_chunks: vec![moved.clone()],
                ..Default::default()
            })
            .await
            .expect("relocate");
        assert_eq!(scores(&store, &vis, "ledger").await, before, "same title");
        moved.title = Some("Ledger".into());
        for _ in 0..2 {
            store
                .apply(SourceWrite {
                    partition: "a".into(),
                    source_urn: "doc:a".into(),
                    relocate_chunks: vec![moved.clone()],
                    ..Default::default()
                })
                .await
                .expect("retitle");
        }
        let retitled = scores(&store, &vis, "ledger").await;
        // The same as an index built from scratch with the new title.
        drop(store);
        let store = EmbeddedStore::open(EmbeddedOptions {
            dir: dir.path().to_path_buf(),
            vector_space: vector_space(),
            background_indexer: false,
        })
        .expect("reopen");
        assert_eq!(scores(&store, &vis, "ledger").await, retitled);
        assert_ne!(retitled, before);
    }
}
