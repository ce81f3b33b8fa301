//! The saved text index and row map: loaded (not rebuilt) on reopen, equal to a rebuild,
//! caught up with what changed after the save (also after a crash), and rebuilt when the file
//! is damaged or belongs to another data dir.

use std::path::Path;

use evident_core::{Scope, Typed, TypedFilter, Visibility};
use evident_store::conformance::{DIM, axis, chunk, vector_space};
use evident_store::{ChunkFilter, ChunkStore, RecordUpdate, SourceWrite, SourceWriter};

use crate::{EmbeddedOptions, EmbeddedStore, TextIndexOrigin};

const WORDS: &[&str] = &[
    "ledger",
    "invoice",
    "audit",
    "parser",
    "config",
    "retrieval",
    "vector",
    "graph",
    "commit",
    "branch",
    "release",
    "tenant",
    "quota",
    "index",
    "segment",
    "restart",
    "budget",
    "memory",
    "latency",
    "payload",
    "schema",
    "cursor",
    "lease",
    "queue",
];

fn open(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open(EmbeddedOptions::new(dir, vector_space()).background_indexer(false))
        .expect("open")
}

/// Deterministic text of chunk `i`: a few words drawn by a small LCG.
fn text(i: usize) -> String {
    let mut x = (i as u64)
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1);
    (0..12)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            WORDS[(x >> 33) as usize % WORDS.len()]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One source of `n` chunks starting at `first`; every fifth chunk titled, every seventh
/// typed as a fact, kinds alternating.
fn source(scope: &Scope, urn: &str, first: usize, n: usize) -> SourceWrite {
    let upsert_chunks = (first..first + n)
        .map(|i| {
            let id = format!("{}:{urn}:{i}", scope.partition());
            let kind = if i % 3 == 0 { "decision" } else { "doc" };
            let mut c = chunk(scope, urn, &id, kind, &text(i), i - first);
            if i % 5 == 0 {
                c.title = Some(format!("{} notes", WORDS[i % WORDS.len()]));
            }
            if i % 7 == 0 {
                Typed {
                    info_type: Some("fact".into()),
                    ..Default::default()
                }
                .insert_into(&mut c.metadata);
            }
            (c, axis(DIM, i % 4, 0.1))
        })
        .collect();
    SourceWrite {
        partition: scope.partition().to_string(),
        source_urn: urn.to_string(),
        upsert_chunks,
        record: RecordUpdate::Keep,
        ..Default::default()
    }
}

fn readers() -> Vec<Visibility> {
    vec![
        Visibility::of(Scope::client("a")),
        Visibility::of(Scope::client("b")),
        Visibility::of(Scope {
            client_id: Some("a".into()),
            project_id: Some("p1".into()),
            group_id: None,
        }),
        Visibility::of(Scope::global()),
    ]
}

/// Everything the text index and the row map answer, for comparing two opens: BM25 hits
/// (ids and exact scores) per reader and query, kind- and label-filtered listings. `exact:
/// false` keeps the hit ids only, sorted: a store that removed rows still counts their
/// postings in document frequencies until it compacts, so its scores differ slightly from a
/// freshly built index's (which a load or rebuild gives) while the rows found do not.
async fn answers_of(store: &EmbeddedStore, exact: bool) -> Vec<String> {
    let mut out = Vec::new();
    let typed = ChunkFilter {
        typed: TypedFilter {
            info_types: vec!["fact".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let decisions = ChunkFilter {
        kinds: vec!["decision".into()],
        ..Default::default()
    };
    for vis in readers() {
        for q in [
            "ledger audit",
            "parser config notes",
            "restart budget memory",
            "quota",
        ] {
            for filter in [&ChunkFilter::default(), &typed] {
                let hits = store
                    .search_text(&vis, q, filter, 5000)
                    .await
                    .expect("search");
                let mut hits: Vec<String> = hits
                    .iter()
                    .map(|h| match exact {
                        true => format!("{}={}", h.chunk_id, h.score.to_bits()),
                        false => h.chunk_id.clone(),
                    })
                    .collect();
                if !exact {
                    hits.sort();
                }
                out.push(format!("{vis:?} {q}: {hits:?}"));
            }
        }
        let listed = store
            .by_kind(&vis, &decisions, 5000)
            .await
            .expect("by kind");
        out.push(format!("{vis:?} decisions: {}", listed.len()));
        let listed = store.by_kind(&vis, &typed, 5000).await.expect("typed");
        out.push(format!("{vis:?} facts: {}", listed.len()));
    }
    out
}

async fn answers(store: &EmbeddedStore) -> Vec<String> {
    answers_of(store, true).await
}

/// Asserts two answer lists are equal, naming the first difference (they are long).
#[track_caller]
fn same(got: &[String], want: &[String], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: answer count");
    if let Some((g, w)) = got.iter().zip(want).find(|(g, w)| g != w) {
        panic!("{what}:\n got  {g}\n want {w}");
    }
}

/// A loaded store answers as the same data rebuilt from SQLite does.
async fn loaded_is_rebuilt(store: EmbeddedStore, dir: &Path) {
    let loaded = answers(&store).await;
    drop(store);
    same(&rebuilt_answers(dir).await, &loaded, "rebuilt = loaded");
}

/// The answers of a store rebuilt from SQLite alone (the saved file removed first).
async fn rebuilt_answers(dir: &Path) -> Vec<String> {
    let _ = std::fs::remove_file(dir.join(crate::restart::FILE));
    let store = open(dir);
    assert_eq!(store.text_index_origin(), TextIndexOrigin::Rebuilt);
    let a = answers(&store).await;
    drop(store);
    a
}

async fn fill(store: &EmbeddedStore) {
    let (a, b) = (Scope::client("a"), Scope::client("b"));
    let p1 = Scope {
        client_id: Some("a".into()),
        project_id: Some("p1".into()),
        group_id: None,
    };
    for (k, scope) in [&a, &b, &p1, &Scope::global()].into_iter().enumerate() {
        for s in 0..5 {
            let first = (k * 5 + s) * 150;
            let urn = format!("doc:{k}-{s}");
            store
                .apply(source(scope, &urn, first, 150))
                .await
                .expect("write");
        }
    }
    // Some rows go before the save.
    let ids: Vec<String> = (0..40).map(|i| format!("a:doc:0-0:{i}")).collect();
    delete(store, "a", "doc:0-0", ids).await;
}

async fn delete(store: &EmbeddedStore, partition: &str, urn: &str, ids: Vec<String>) {
    store
        .apply(SourceWrite {
            partition: partition.into(),
            source_urn: urn.into(),
            delete_chunk_ids: ids,
            ..Default::default()
        })
        .await
        .expect("delete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reopened_store_loads_the_saved_index_and_answers_as_a_rebuild_does() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = open(dir.path());
    assert_eq!(store.text_index_origin(), TextIndexOrigin::Rebuilt);
    fill(&store).await;
    let live = answers_of(&store, false).await;
    store.close().expect("close");
    drop(store);
    assert!(dir.path().join(crate::restart::FILE).exists());

    let store = open(dir.path());
    assert_eq!(store.text_index_origin(), TextIndexOrigin::Loaded);
    same(
        &answers_of(&store, false).await,
        &live,
        "loaded = as it was",
    );
    loaded_is_rebuilt(store, dir.path()).await;
}

/// After a save: new rows, deletions of saved and of new rows, a retitle and a kind change
/// (relocation), rows added to a saved source, a source moved to another project.
async fn change_after_save(store: &EmbeddedStore) {
    let a = Scope::client("a");
    store
        .apply(source(&a, "doc:new", 9000, 120))
        .await
        .expect("new");
    // Deletions of new rows and of saved ones.
    for (partition, urn, rows) in [("a", "doc:new", 9000..9010), ("b", "doc:1-2", 1050..1100)] {
        let ids = rows.map(|i| format!("{partition}:{urn}:{i}")).collect();
        delete(store, partition, urn, ids).await;
    }
    let mut moved = chunk(&a, "doc:0-1", "a:doc:0-1:151", "decision", &text(151), 1);
    moved.title = Some("quota ledger".into());
    store
        .apply(SourceWrite {
            partition: "a".into(),
            source_urn: "doc:0-1".into(),
            relocate_chunks: vec![moved],
            ..Default::default()
        })
        .await
        .expect("relocate");
    store
        .apply(source(&a, "doc:0-3", 5000, 30))
        .await
        .expect("more rows");
    let p2 = Scope {
        client_id: Some("a".into()),
        project_id: Some("p2".into()),
        group_id: None,
    };
    // `move_source` needs a registered source: register one and move it.
    let mut w = source(&a, "doc:moved", 7000, 20);
    w.record = RecordUpdate::Put(evident_store::SourceRecord {
        scope: a.clone(),
        source_urn: "doc:moved".into(),
        kind: "doc".into(),
        title: None,
        content_hash: "sha256:moved".into(),
        status: evident_store::SourceStatus::Indexed,
        chunk_count: 20,
        last_indexed_at: "2026-11-26T00:00:00Z".into(),
        last_error: None,
    });
    store.apply(w).await.expect("moved source");
    assert_eq!(
        store
            .move_source("a", "doc:moved", &p2)
            .await
            .expect("move"),
        Some(20)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_after_the_save_are_caught_up_after_a_crash() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = open(dir.path());
    fill(&store).await;
    store.save_text_index().await.expect("save");
    change_after_save(&store).await;
    let live = answers_of(&store, false).await;
    drop(store); // no close: the file on disk is the one saved above

    let store = open(dir.path());
    assert_eq!(store.text_index_origin(), TextIndexOrigin::Loaded);
    same(&answers_of(&store, false).await, &live, "caught up");
    loaded_is_rebuilt(store, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_or_foreign_file_is_rebuilt() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = open(dir.path());
    fill(&store).await;
    store.close().expect("close");
    drop(store);
    let path = dir.path().join(crate::restart::FILE);
    let good = std::fs::read(&path).expect("saved");
    let before = rebuilt_answers(dir.path()).await;

    let other = tempfile::tempdir().expect("tmp");
    let store = open(other.path());
    fill(&store).await;
    store.close().expect("close");
    drop(store);
    let foreign = std::fs::read(other.path().join(crate::restart::FILE)).expect("other");

    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x10;
    let damaged: [(&str, Vec<u8>); 4] = [
        ("a flipped bit", flipped),
        ("truncated", good[..good.len() - 9].to_vec()),
        ("empty", Vec::new()),
        ("another data dir's", foreign),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&path, bytes).expect("write");
        let store = open(dir.path());
        assert_eq!(
            store.text_index_origin(),
            TextIndexOrigin::Rebuilt,
            "{what}"
        );
        same(&answers(&store).await, &before, "{what}");
        drop(store);
    }
    // The good file again: loaded.
    std::fs::write(&path, good).expect("write");
    let store = open(dir.path());
    assert_eq!(store.text_index_origin(), TextIndexOrigin::Loaded);
    same(&answers(&store).await, &before, "the good file");
}
