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

#[test]
fn the_title_hash_is_stable_and_tells_none_from_empty() {
    assert_eq!(hash_title(None), 0);
    assert_ne!(hash_title(Some("")), hash_title(None));
    // FNV-1a 64 of "a" (published test vector): saved files depend on it.
    assert_eq!(hash_title(Some("a")), 0xaf63_dc4c_8601_ec8c);
}

#[test]
fn a_path_titles_file_name_counts_more_than_its_directories() {
    let a = Analyzed::of(Some("shared/kb/src/retrieve/fusion.rs"), "fn fuse() {}");
    let count = |t: &str| a.terms.iter().find(|(w, _)| &**w == t).map(|(_, n)| *n);
    assert_eq!(count("fusion"), Some(TITLE_WEIGHT + FILE_NAME_WEIGHT));
    assert_eq!(count("retrieve"), Some(TITLE_WEIGHT));
    assert_eq!(count("fuse"), Some(1));
    // A prose title has no file name.
    let b = Analyzed::of(Some("Token budget"), "x");
    let count = |t: &str| b.terms.iter().find(|(w, _)| &**w == t).map(|(_, n)| *n);
    assert_eq!(count("budget"), Some(TITLE_WEIGHT));
}

/// Scores through the store: a client's BM25 scores depend on its own data (and global data)
/// only.
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
