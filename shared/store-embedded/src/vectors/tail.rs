//! The tail — committed rows not yet in the graph — and the indexer that drains it.
//!
//! Why a bounded tail: every search scans the tail exactly, so its cost grows with the
//! backlog. Bulk ingest outpaces HNSW insertion (a durable write costs a share of an fsync, an
//! insertion a few hundred distance computations), so an unbounded tail let a 1M-chunk ingest
//! end with 570k vectors pending and searches paying for them. With a bound, a write that
//! would overfill the tail waits *before* it is written (nothing half-done, nothing held)
//! until the indexer has made room: ingest slows to the indexing rate before search degrades.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use evident_store::StoreError;

use super::VectorIndex;
use super::graph::{index_threads, quantize, reserve};

/// Rows moved from the tail into the graph per batch.
const BATCH: usize = 256;
/// Save the graph after this many additions, or an eighth of its size if more (a save
/// writes the whole graph: at 1M vectors ~1.6 GB), and whenever the tail drains after
/// changes and 30 s passed.
const SAVE_EVERY: usize = 20_000;
/// Default bound on the tail (`[store] vector_backlog`): an exact scan of 30k vectors costs
/// a search a few milliseconds at worst, and the indexer drains it within a minute even
/// while searches share the cores (50k took 78 s at 1M chunks with retrieves running).
pub const DEFAULT_BACKLOG: usize = 30_000;

pub(super) struct Tail {
    pub(super) pending: BTreeMap<u64, Arc<[f32]>>,
    /// Highest row id ever pushed (or loaded).
    pub(super) last_pushed: u64,
    pub(super) added_since_save: usize,
}

impl VectorIndex {
    /// Sets the tail bound (`0`: unbounded).
    pub fn set_backlog_bound(&self, bound: usize) {
        self.backlog_bound.store(bound, Ordering::Relaxed);
        self.room.notify_waiters();
    }

    pub fn backlog_bound(&self) -> usize {
        self.backlog_bound.load(Ordering::Relaxed)
    }

    /// Whether `rows` more vectors fit in the tail now. Always yes without a running
    /// indexer (nothing would make room), while it is failing (the tail is the only index
    /// that works then), and when the tail is empty (a write larger than the bound still
    /// goes through, alone).
    fn has_room(&self, rows: usize) -> bool {
        let bound = self.backlog_bound();
        if bound == 0
            || !self.indexer_running.load(Ordering::Acquire)
            || self.indexer_failing.load(Ordering::Acquire)
        {
            return true;
        }
        let pending = self.tail.lock().pending.len();
        pending == 0 || pending + rows <= bound
    }

    /// Waits until `rows` new vectors fit in the tail (see [`VectorIndex::has_room`]). Called
    /// before a write is sent to the committer, so the wait holds no lock and writes nothing.
    pub async fn wait_for_room(&self, rows: usize) {
        if rows == 0 {
            return;
        }
        let mut waited: Option<Instant> = None;
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.has_room(rows) {
                break;
            }
            waited.get_or_insert_with(Instant::now);
            notified.await;
        }
        if let Some(since) = waited {
            self.backlog_waits.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                rows,
                waited_ms = since.elapsed().as_millis() as u64,
                "write waited for the vector backlog"
            );
        }
    }

    /// Moves up to one batch from the tail into the graph. Returns how many were moved.
    pub fn index_batch(&self) -> Result<usize, StoreError> {
        let _one_at_a_time = self.indexing.lock();
        let batch: Vec<(u64, Arc<[f32]>)> = {
            let tail = self.tail.lock();
            tail.pending
                .iter()
                .take(BATCH)
                .map(|(k, v)| (*k, v.clone()))
                .collect()
        };
        if batch.is_empty() {
            return Ok(0);
        }
        {
            let needed = self.hnsw.read().size() + batch.len();
            if needed > self.hnsw.read().capacity() {
                reserve(&self.hnsw.write(), (needed * 2).max(4096))?;
            }
        }
        let mut batch_rest: &[(u64, Arc<[f32]>)] = &batch;
        if self.hnsw.read().size() == 0 {
            // usearch counts the first vector before its node exists, and a search that sees
            // a non-empty graph starts at that node: the first add must exclude searches.
            let hnsw = self.hnsw.write();
            let (rid, v) = &batch[0];
            let _slot = self.slots.take();
            hnsw.add(*rid, &quantize(v))
                .map_err(|e| StoreError::corrupt(format!("adding to vector index: {e}")))?;
            batch_rest = &batch[1..];
        }
        self.add_parallel(batch_rest)?;
        let mut tail = self.tail.lock();
        for (rid, _) in &batch {
            tail.pending.remove(rid);
        }
        tail.added_since_save += batch.len();
        drop(tail);
        self.room.notify_waiters();
        Ok(batch.len())
    }

    /// Adds rows not yet in the graph on every core (usearch takes concurrent adds).
    fn add_parallel(&self, rows: &[(u64, Arc<[f32]>)]) -> Result<(), StoreError> {
        let hnsw = self.hnsw.read();
        let fresh: Vec<&(u64, Arc<[f32]>)> = rows
            .iter()
            .filter(|(rid, _)| !hnsw.contains(*rid))
            .collect();
        let per_thread = fresh.len().div_ceil(index_threads()).max(1);
        std::thread::scope(|scope| {
            let workers: Vec<_> = fresh
                .chunks(per_thread)
                .map(|part| {
                    let hnsw = &hnsw;
                    let slots = &self.slots;
                    scope.spawn(move || -> Result<(), StoreError> {
                        let _slot = slots.take();
                        for (rid, v) in part {
                            hnsw.add(*rid, &quantize(v)).map_err(|e| {
                                StoreError::corrupt(format!("adding to vector index: {e}"))
                            })?;
                        }
                        Ok(())
                    })
                })
                .collect();
            workers.into_iter().try_for_each(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(StoreError::corrupt("vector indexing thread panicked")))
            })
        })
    }

    /// Persists the graph and its high-water mark. Holds off additions (the indexing lock),
    /// not searches: a save of a large graph takes seconds.
    pub fn save(&self) -> Result<(), StoreError> {
        let _no_additions = self.indexing.lock();
        let hnsw = self.hnsw.read();
        // The graph is frozen (no additions, no removals): everything in it was committed
        // before now, so an fsync of the WAL from here makes it durable (ADR 0009).
        if let Some(barrier) = self.durable.get() {
            barrier()?;
        }
        let high_water = {
            let mut tail = self.tail.lock();
            tail.added_since_save = 0;
            match tail.pending.keys().next() {
                Some(first) => first - 1,
                None => tail.last_pushed,
            }
        };
        super::graph::write_saved(
            &hnsw,
            &self.index_path,
            &self.state_path,
            &self.space,
            high_water,
        )?;
        tracing::debug!(high_water, indexed = hnsw.size(), "vector index saved");
        Ok(())
    }

    fn save_logged(&self) {
        if let Err(e) = self.save() {
            tracing::warn!(error = %e, "vector index save failed; will retry");
        }
    }

    /// Background loop: index the tail, save now and then. Returns when `shutdown` is called.
    pub fn run_indexer(self: &Arc<Self>) {
        self.indexer_running.store(true, Ordering::Release);
        let mut last_save = Instant::now();
        while !self.stop.load(Ordering::Acquire) {
            match self.index_batch() {
                Ok(0) => {
                    self.indexer_failing.store(false, Ordering::Release);
                    let dirty = self.tail.lock().added_since_save;
                    if dirty > 0 && last_save.elapsed() > Duration::from_secs(30) {
                        self.save_logged();
                        last_save = Instant::now();
                        // The backlog is drained: its insertion buffers are free now.
                        crate::memory_stats::trim_after("vector backlog drained");
                    }
                    let mut tail = self.tail.lock();
                    if tail.pending.is_empty() && !self.stop.load(Ordering::Acquire) {
                        self.wake.wait_for(&mut tail, Duration::from_secs(5));
                    }
                }
                Ok(_) => {
                    self.indexer_failing.store(false, Ordering::Release);
                    let every = SAVE_EVERY.max(self.indexed() / 8);
                    if self.tail.lock().added_since_save >= every {
                        self.save_logged();
                        last_save = Instant::now();
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "vector indexing failed; the tail stays searchable exactly");
                    self.indexer_failing.store(true, Ordering::Release);
                    self.room.notify_waiters();
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
        self.indexer_running.store(false, Ordering::Release);
        self.room.notify_waiters();
    }

    /// Blocks until the tail is empty (tests and benchmarks use this to measure the graph).
    pub fn drain(&self) -> Result<(), StoreError> {
        while self.index_batch()? > 0 {}
        Ok(())
    }

    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Release);
        self.wake.notify_all();
    }
}
