//! Exact nearest neighbours from the stored f32 embeddings, for measuring what the graph
//! (quantized i8 vectors, approximate search) gives up: `evident-bench retrieve` reports the
//! vector channel's recall@k against this. One pass over the chunks table serves every query,
//! so it costs a scan of the stored embeddings, not one per query.

use std::collections::BinaryHeap;

use evident_core::{TypedFilter, Visibility};
use evident_store::Result;
use rusqlite::Connection;

use crate::vectors::{RowFilter, normalize};
use crate::{EmbeddedStore, sqlite_err};

/// A candidate in a query's bounded heap (min-heap on similarity through `Reverse` order).
#[derive(PartialEq)]
struct Scored(f32, u64);

impl Eq for Scored {}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Reversed: the heap's top is the weakest kept candidate.
        other.0.total_cmp(&self.0).then(self.1.cmp(&other.1))
    }
}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The `k` admitted rows nearest each of `queries` by exact cosine over the stored embeddings.
fn exact_top_k(
    conn: &Connection,
    filter: &RowFilter<'_>,
    queries: &[Vec<f32>],
    k: usize,
) -> Result<Vec<Vec<u64>>> {
    let mut heaps: Vec<BinaryHeap<Scored>> = queries.iter().map(|_| BinaryHeap::new()).collect();
    let mut stmt = conn
        .prepare("SELECT rid, embedding FROM chunks")
        .map_err(sqlite_err)?;
    let mut rows = stmt.query([]).map_err(sqlite_err)?;
    let mut v: Vec<f32> = Vec::new();
    while let Some(r) = rows.next().map_err(sqlite_err)? {
        let rid = r.get::<_, i64>(0).map_err(sqlite_err)? as u64;
        if !filter.admits(rid) {
            continue;
        }
        let blob: Vec<u8> = r.get(1).map_err(sqlite_err)?;
        v.clear();
        v.extend(
            blob.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        normalize(&mut v);
        for (q, heap) in queries.iter().zip(heaps.iter_mut()) {
            let s: f32 = q.iter().zip(&v).map(|(a, b)| a * b).sum();
            heap.push(Scored(s, rid));
            if heap.len() > k {
                heap.pop();
            }
        }
    }
    Ok(heaps
        .into_iter()
        .map(|h| h.into_sorted_vec().into_iter().map(|s| s.1).collect())
        .collect())
}

impl EmbeddedStore {
    /// Chunk ids of the `k` rows visible to `vis` nearest each query, by exact cosine over
    /// the stored f32 embeddings (a full scan: for benchmarks measuring recall, not serving).
    pub async fn exact_vector_top_k(
        &self,
        vis: &Visibility,
        queries: &[Vec<f32>],
        k: usize,
    ) -> Result<Vec<Vec<String>>> {
        let (vis, mut queries) = (vis.clone(), queries.to_vec());
        queries.iter_mut().for_each(|q| normalize(q));
        self.read(move |conn, inner| {
            let filter = inner.vectors.row_filter(&vis, &[], &TypedFilter::default());
            let top = exact_top_k(conn, &filter, &queries, k)?;
            Ok(top
                .into_iter()
                .map(|rids| {
                    rids.into_iter()
                        .filter_map(|r| filter.id(r).map(|id| id.to_string()))
                        .collect()
                })
                .collect())
        })
        .await
    }
}
