//! A store SIGKILLed mid-write at 100k chunks reopens with its saved HNSW graph loaded and
//! verified (checksum), not rebuilt from scratch: only the rows written after the last save
//! are caught up from SQLite, and queries answer from the loaded graph at once.
//!
//! The writer is a child process (this test binary run again with the ignored
//! `child_writes_until_killed` test selected), so the kill is a real SIGKILL of a process
//! holding the store open, its background indexer saving as it does in production.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use evident_core::{Scope, Visibility};
use evident_store::conformance::chunk;
use evident_store::{ChunkFilter, Health, SourceWrite, VectorSpace};
use evident_store_embedded::vectors::GraphOrigin;
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

const DIM: usize = 16;
const DIR_VAR: &str = "EVIDENT_TEST_SIGKILL_DIR";
const CHUNKS_VAR: &str = "EVIDENT_TEST_SIGKILL_CHUNKS";

fn chunks() -> usize {
    std::env::var(CHUNKS_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

fn open(dir: &Path, background: bool) -> EmbeddedStore {
    let space = VectorSpace {
        embedder: "test:noise".into(),
        dim: DIM,
    };
    EmbeddedStore::open(EmbeddedOptions::new(dir, space).background_indexer(background))
        .expect("open")
}

/// A distinct, deterministic vector per chunk (xorshift), so nearest-neighbour answers are
/// unambiguous.
fn vector(i: usize) -> Vec<f32> {
    let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..DIM)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

/// Chunks `ids` of client `c` (or the one chunk of tenant `t` for id `usize::MAX`).
async fn write(store: &EmbeddedStore, ids: std::ops::Range<usize>, client: &str) {
    let scope = Scope::client(client);
    let urn = format!("urn:{client}:{}", ids.start);
    let chunks = ids
        .map(|i| {
            let id = format!("{client}{i}");
            let text = format!("passage {i}");
            (chunk(&scope, &urn, &id, "doc", &text, i), vector(i))
        })
        .collect();
    store
        .stores()
        .writer
        .apply(SourceWrite {
            partition: client.into(),
            source_urn: urn,
            upsert_chunks: chunks,
            ..Default::default()
        })
        .await
        .expect("write");
}

/// The saved graph's high-water mark (0 before the first save).
fn saved_mark(dir: &Path) -> u64 {
    std::fs::read(dir.join("vectors.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["high_water"].as_u64())
        .unwrap_or(0)
}

/// Run only as the child of the test below: writes the corpus with the background indexer
/// running, waits until the indexer has saved a graph holding at least half of it, says so,
/// and keeps writing until it is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of a_sigkilled_store_loads_its_saved_graph"]
async fn child_writes_until_killed() {
    let dir = std::path::PathBuf::from(std::env::var_os(DIR_VAR).expect("run by the parent test"));
    let n = chunks();
    let store = open(&dir, true);
    write(&store, 0..1, "t").await;
    for start in (0..n).step_by(1000) {
        write(&store, start..(start + 1000).min(n), "c").await;
    }
    println!("INGESTED {n}");
    while saved_mark(&dir) < n as u64 / 2 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    write(&store, n..n + 500, "c").await;
    println!("WROTE {}", n + 500);
    let mut next = n + 500;
    loop {
        write(&store, next..next + 100, "c").await;
        next += 100;
    }
}

/// Kills the child if the test fails before it does.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn nearest(store: &EmbeddedStore, client: &str, i: usize) -> Option<String> {
    let vis = Visibility::of(Scope::client(client));
    store
        .stores()
        .chunks
        .search_vector(&vis, &vector(i), &ChunkFilter::default(), 1)
        .await
        .expect("knn")
        .first()
        .map(|h| h.chunk_id.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_store_loads_its_saved_graph() {
    let dir = tempfile::tempdir().expect("tmp");
    let n = chunks();
    let child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "child_writes_until_killed",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(DIR_VAR, dir.path())
        .env(CHUNKS_VAR, n.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the writer");
    let mut child = Killed(child);
    let stdout = BufReader::new(child.0.stdout.take().expect("stdout"));
    let wrote = stdout
        .lines()
        .map_while(Result::ok)
        .find(|l| l.starts_with("WROTE "))
        .expect("the writer reports its progress");
    assert_eq!(wrote, format!("WROTE {}", n + 500));
    child.0.kill().expect("SIGKILL");
    child.0.wait().expect("reaped");

    let store = open(dir.path(), false);
    let GraphOrigin::Loaded {
        vectors,
        high_water,
    } = store.vector_index().origin().clone()
    else {
        panic!("graph not loaded: {:?}", store.vector_index().origin());
    };
    let (indexed, pending) = store.vector_index_status();
    let live = store.vector_index().live_rows();
    assert!(
        high_water >= n as u64 / 2 && vectors >= n / 2,
        "{vectors} at {high_water}"
    );
    assert_eq!(indexed, vectors, "nothing added to the loaded graph yet");
    assert!(live > n + 500, "every acknowledged write survived: {live}");
    // Only rows above the mark are caught up: the loaded graph holds the rest.
    assert!(
        indexed + pending >= live,
        "{indexed} + {pending} cover {live}"
    );
    assert!(
        pending < live - n / 2,
        "{pending} pending of {live}: not a rebuild"
    );
    let health = store.check().await;
    assert!(health.ready);
    let detail = health.detail.unwrap_or_default();
    assert!(detail.contains("graph loaded from disk"), "{detail}");
    for i in [0, n / 3, n - 1, n + 499] {
        assert_eq!(
            nearest(&store, "c", i).await,
            Some(format!("c{i}")),
            "chunk {i}"
        );
    }
    assert_eq!(
        nearest(&store, "t", 5).await,
        Some("t0".into()),
        "the one-chunk tenant"
    );
    store.drain_vector_index().expect("catch up");
    assert_eq!(store.vector_index_status(), (live, 0));
}
