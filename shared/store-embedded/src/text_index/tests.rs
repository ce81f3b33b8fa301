use super::*;

#[test]
fn terms_fold_case_and_diacritics_stem_and_drop_stop_words() {
    let a = Analyzed::of(None, "How is parse_config() used in Příliš?");
    let mut terms: Vec<&str> = a.terms.iter().map(|(t, _)| &**t).collect();
    terms.sort();
    assert_eq!(
        terms,
        [
            "=parse",
            "=used",
            "config",
            "pars",
            "parse_config",
            "prilis",
            "use"
        ]
    );
    // Exact forms are not counted in the length: pars, config, parse_config, use, prilis.
    assert_eq!(a.len, 5);
}

#[test]
fn the_title_hash_is_stable_and_tells_none_from_empty() {
    assert_eq!(hash_title(None, None), 0);
    assert_ne!(hash_title(Some(""), None), hash_title(None, None));
    // FNV-1a 64 of "a" (published test vector): saved files depend on it.
    assert_eq!(hash_title(Some("a"), None), 0xaf63_dc4c_8601_ec8c);
    // A heading changes it; where the title ends is part of it.
    assert_ne!(
        hash_title(Some("a"), Some("b")),
        hash_title(Some("a"), None)
    );
    assert_ne!(
        hash_title(Some("ab"), Some("")),
        hash_title(Some("a"), Some("b"))
    );
    assert_ne!(hash_title(None, Some("b")), hash_title(Some(""), Some("b")));
}

#[test]
fn the_heading_is_a_field_of_its_own() {
    let a = Analyzed::of_fields(Fields {
        title: Some("shared/core/src/access.rs"),
        heading: Some("evident_core::access::token_hash"),
        body: "pub fn token_hash(secret: &str) -> String { hex(sha256(secret)) }",
        refs: &[evident_core::NodeKey::from_canonical(
            "symbol:evident/evident_core::access::token_hash()",
        )],
    });
    let count = |t: &str| a.terms.iter().find(|(w, _)| &**w == t).map(|(_, n)| *n);
    // The name it defines, once (heading and ref agree), outside the length.
    assert_eq!(count("#tokenhash"), Some(1));
    assert_eq!(count("token_hash"), Some(HEADING_WEIGHT + 1));
    assert_eq!(count("secret"), Some(2));
    let locator = evident_core::Locator::File {
        path: "a.rs".into(),
        line_start: 1,
        line_end: 2,
        commit: None,
        symbol: Some("a::f".into()),
    };
    assert_eq!(heading_of(&locator), Some("a::f"));
}

#[test]
fn a_path_titles_file_name_counts_more_than_its_directories() {
    let a = Analyzed::of(Some("shared/kb/src/retrieve/fusion.rs"), "fn fuse() {}");
    let count = |t: &str| a.terms.iter().find(|(w, _)| &**w == t).map(|(_, n)| *n);
    assert_eq!(count("fusion"), Some(TITLE_WEIGHT + FILE_NAME_WEIGHT));
    assert_eq!(count("retriev"), Some(TITLE_WEIGHT));
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
        let store = EmbeddedStore::open(
            EmbeddedOptions::new(dir.path(), vector_space()).background_indexer(false),
        )
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
        let store = EmbeddedStore::open(
            EmbeddedOptions::new(dir.path(), vector_space()).background_indexer(false),
        )
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
        let store = EmbeddedStore::open(
            EmbeddedOptions::new(dir.path(), vector_space()).background_indexer(false),
        )
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
        let store = EmbeddedStore::open(
            EmbeddedOptions::new(dir.path(), vector_space()).background_indexer(false),
        )
        .expect("reopen");
        assert_eq!(scores(&store, &vis, "ledger").await, retitled);
        assert_ne!(retitled, before);
    }
}

/// Max-score pruning ([`super::score`]) returns the top k of plain term-at-a-time scoring:
/// queries mixing words in every row with rare ones, over two tenants, with posting lists
/// made unsorted by re-titled rows.
#[test]
fn pruned_scoring_returns_the_top_k_of_exhaustive_scoring() {
    use evident_core::{Scope, TypedFilter, Visibility};
    use evident_store::VectorSpace;
    use std::collections::HashMap;

    let dir = tempfile::tempdir().expect("tmp");
    let space = VectorSpace {
        embedder: "test".into(),
        dim: 4,
    };
    let rows =
        crate::vectors::VectorIndex::open(dir.path(), space, 0, |_| Ok(Vec::new())).expect("open");
    rows.set_exact_limit(Some(0)); // no listing: every posting is visited, the filter decides
    let index = TextIndex::default();
    let text = |rid: u64| {
        let mut t = String::from("common ");
        for (word, every) in [("often", 2), ("some", 10), ("few", 97)] {
            if rid.is_multiple_of(every) {
                t.push_str(word);
                t.push(' ');
            }
        }
        // Rare words, repeated so term frequencies differ.
        for _ in 0..(rid % 3 + 1) {
            t.push_str(&format!("w{} ", rid % 300));
        }
        t.push_str(&"filler ".repeat((rid % 7) as usize));
        t
    };
    for rid in 1..=3000u64 {
        let client = if rid % 2 == 0 { "a" } else { "b" };
        rows.track_row(rid, &format!("r{rid}"), &Scope::client(client), "doc");
        index.insert(rid, client, Analyzed::of(Some("title"), &text(rid)));
    }
    // Re-titled rows are appended again: the lists of their words are no longer sorted.
    let retitled: Vec<(u64, String)> = [10u64, 20, 600].iter().map(|r| (*r, text(*r))).collect();
    let retitle: Vec<super::Retitle<'_>> = retitled
        .iter()
        .map(|(r, t)| {
            let f = super::Fields {
                title: Some("another title"),
                heading: None,
                body: t.as_str(),
                refs: &[],
            };
            (*r, "a", f)
        })
        .collect();
    index.retitle(&retitle);
    assert!(index.inner.read().postings.iter().any(|p| p.unsorted));

    let vis = Visibility::of(Scope::client("a"));
    let filter = rows.row_filter(&vis, &[], &TypedFilter::default());
    for query in [
        "common often w8",
        "common w10",
        "often some few w12 w200",
        "common",
        "few often",
    ] {
        let got = index.search(query, &["a"], &filter, 10);
        // Exhaustive reference: every posting of every term, the same statistics.
        let inner = index.inner.read();
        let part = inner.part_ids["a"];
        let stats = &inner.parts[part as usize];
        let (n, avgdl) = (
            stats.docs as f32,
            stats.total_len as f32 / stats.docs as f32,
        );
        let mut scores: HashMap<u64, f32> = HashMap::new();
        let mut seen = Vec::new();
        for q in evident_analysis::query_terms(query) {
            let Some(&t) = inner.term_ids.get(q.text.as_str()) else {
                continue;
            };
            if seen.contains(&t) {
                continue;
            }
            seen.push(t);
            let p = &inner.postings[t as usize];
            let df = (p.df_in(&[part]) as f32).min(n);
            let idf = q.weight * (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (&rid, &tf) in p.rids.iter().zip(&p.tfs) {
                let (Some(&dl), true) = (inner.doc_len.get(rid as u64), filter.admits(rid as u64))
                else {
                    continue;
                };
                let tf = tf as f32;
                *scores.entry(rid as u64).or_default() +=
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl as f32 / avgdl));
            }
        }
        let mut want: Vec<(u64, f32)> = scores.into_iter().collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        want.truncate(10);
        assert_eq!(got.len(), want.len(), "{query}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g.1 - w.1).abs() < 1e-4, "{query}: {got:?} vs {want:?}");
        }
        // Same rows, up to ties within float rounding.
        let score_of = |rid: u64| want.iter().find(|w| w.0 == rid).map(|w| w.1);
        for (rid, s) in &got {
            let near_tie = want.last().is_some_and(|l| (l.1 - s).abs() < 1e-4);
            assert!(score_of(*rid).is_some() || near_tie, "{query}: row {rid}");
        }
    }
}
