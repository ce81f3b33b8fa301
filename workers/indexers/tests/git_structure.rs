//! The git indexer end to end over the embedded store: distinct paths and names under the
//! documented keys, re-indexing a source written under the old keys, and files without a known
//! extension indexed by their content.

use std::path::Path;

use evident_ai::Priority;
use evident_code::chunks::CodeChunking;
use evident_code::skip::SkipReason;
use evident_core::{NodeKey, Scope, keys};

mod support;

use support::git::{cfg_path, commit, harness, init_repo};

const CART_JAVA: &str = "package com.acme;\n\nimport java.util.List;\n\npublic class Cart {\n    private List<Integer> items;\n\n    public static Builder builder() {\n        return new Builder();\n    }\n\n    public void add(Item item, int n) {}\n\n    public void add(String... names) {}\n\n    public int total() {\n        int sum = 0;\n        for (int i : items) { sum += i; }\n        return sum;\n    }\n\n    public static class Builder {\n        Cart build() { return new Cart(); }\n    }\n}\n";

/// The keys the README documents in its vocabulary section (the shop examples).
fn readme_example_keys() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README");
    let section = readme
        .split_once("Node types:")
        .and_then(|(_, rest)| rest.split_once("Edge types:"))
        .map(|(s, _)| s)
        .expect("vocabulary section");
    section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            ["repository:", "branch:", "file:", "symbol:", "import:"]
                .iter()
                .any(|ns| t.starts_with(ns))
        })
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distinct_paths_and_names_are_distinct_nodes_under_the_documented_keys() {
    let h = harness().await;
    let work = h.dir.path().join("shop");
    let repo = init_repo(&work);
    commit(
        &repo,
        &[
            ("a/b_c.rs", Some(b"pub fn one() {}\n")),
            ("a_b/c.rs", Some(b"pub fn two() {}\n")),
            ("src/Cart.java", Some(CART_JAVA.as_bytes())),
            (
                "src/cart.java",
                Some(b"package com.acme;\n\nclass cart {}\n"),
            ),
            (
                "src/lib.rs",
                Some(b"use std::sync::Arc;\n\npub fn f() {}\n"),
            ),
            // The README's overload and nesting examples.
            (
                "shop/src/geo.rs",
                Some(b"pub struct Point;\nimpl std::fmt::Debug for Point { fn fmt(&self) {} }\nimpl std::fmt::Display for Point { fn fmt(&self) {} }\nimpl From<u8> for Point { fn from(x: u8) -> Point { Point } }\nimpl From<u16> for Point { fn from(x: u16) -> Point { Point } }\n"),
            ),
            (
                "pkg/mod.py",
                Some(b"class C:\n    @property\n    def x(self): return 1\n    @x.setter\n    def x(self, v): pass\n\ndef outer():\n    def inner(): pass\n    return inner\n"),
            ),
            ("src/api.js", Some(b"const api = { run() {} };\n")),
        ],
        "Two of each",
        ("Jan", "jan@example.com"),
    );
    h.register("acme.shop", cfg_path("shop", &work, &[])).await;
    h.poll("acme.shop").await;
    h.drain().await;

    let vis = h.vis();
    let documented = readme_example_keys();
    assert!(
        documented.len() >= 5 && documented.contains(&"file:shop/src/Cart.java".to_string()),
        "{documented:?}"
    );
    let mut expected: Vec<String> = documented;
    expected.extend(
        [
            "file:shop/a/b_c.rs",
            "file:shop/a_b/c.rs",
            "file:shop/src/cart.java",
            "symbol:shop/com.acme.Cart",
            "symbol:shop/com.acme.Cart.builder()",
            "symbol:shop/com.acme.Cart.Builder",
            "symbol:shop/com.acme.cart",
        ]
        .map(String::from),
    );
    for k in &expected {
        let found = h.kb.node(&vis, k).await.expect("node").key;
        if evident_core::refs::normalize_ref(k).is_some_and(|n| n.as_str() != k) {
            // An exact key is in the store as written, and names exactly that node.
            assert!(
                h.node_exists(&NodeKey::from_canonical(k.as_str())).await,
                "{k} is in the store"
            );
            assert_eq!(found.as_str(), k);
        }
    }
    // The old folded spellings still resolve (registered as aliases).
    for (old, now) in [
        ("import:java_util_list", "import:java.util.List"),
        (
            "symbol:shop_com_acme_cart_total",
            "symbol:shop/com.acme.Cart.total()",
        ),
        ("file:shop_a_b_c_rs", "file:shop/a/b_c.rs"),
    ] {
        let got = h.kb.node(&vis, old).await.expect("node").key;
        if old.starts_with("file:") {
            // Two files fold alike: the spelling names one of them.
            assert!(
                ["file:shop/a/b_c.rs", "file:shop/a_b/c.rs"].contains(&got.as_str()),
                "{got}"
            );
        } else {
            assert_eq!(got.as_str(), now);
        }
    }
    let report = h.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_indexed_under_the_old_keys_reindexes_itself() {
    let h = harness().await;
    let work = h.dir.path().join("shop");
    let repo = init_repo(&work);
    commit(
        &repo,
        &[("src/Cart.java", Some(CART_JAVA.as_bytes()))],
        "Cart",
        ("Jan", "jan@example.com"),
    );
    h.register("acme.shop", cfg_path("shop", &work, &[])).await;
    let first = h.poll("acme.shop").await;
    assert!(!first.reindexed, "a new source has nothing to re-read");
    h.drain().await;
    let reference = h.store.check_integrity().await.expect("integrity");

    // What an older data directory holds: the file under folded keys (scheme 1), and no
    // record of the key scheme.
    let ctx = evident_code::structure::RepoContext {
        source_id: "acme.shop".into(),
        repository: "shop".into(),
        scope: Scope::client("acme"),
    };
    let f = evident_code::structure::FileVersion {
        branch: "main",
        commit: None,
        path: "src/Cart.java",
        content: CART_JAVA,
    };
    let s = evident_code::structure::analyse(f.path, CART_JAVA).expect("parse");
    let mut old = evident_code::structure::file_source(&ctx, &f, &s, &CodeChunking::default())
        .expect("source");
    let fold = |k: &NodeKey| evident_core::refs::normalize_ref(k.as_str()).expect("folds");
    for n in &mut old.nodes {
        n.key = fold(&n.key);
    }
    for e in &mut old.edges {
        (e.from, e.to) = (fold(&e.from), fold(&e.to));
    }
    for c in &mut old.chunks {
        c.refs = c.refs.iter().map(fold).collect();
    }
    old.fingerprint = "scheme-1".into();
    h.kb.ingest_prepared(old, Priority::DEFAULT)
        .await
        .expect("old write");
    let old_file = NodeKey::from_canonical("file:shop_src_cart_java");
    assert!(h.node_exists(&old_file).await);
    h.kb.stores()
        .indexers
        .delete_cursor(
            &evident_store::indexers::SourceKey::new("acme", "acme.shop"),
            "test-poller",
            "keys-version",
        )
        .await
        .expect("forget the scheme");

    let again = h.poll("acme.shop").await;
    assert!(again.reindexed, "{again:?}");
    assert_eq!(again.files_queued, 1, "{again:?}");
    h.drain().await;
    assert!(!h.node_exists(&old_file).await, "old keys are gone");
    assert!(h.node_exists(&keys::file("shop", "src/Cart.java")).await);
    let after = h.store.check_integrity().await.expect("integrity");
    assert!(after.is_ok(), "{after:?}");
    assert_eq!(
        (after.chunks, after.nodes, after.edges),
        (reference.chunks, reference.nodes, reference.edges)
    );
    // Recorded: the next poll has nothing to do.
    assert_eq!(h.poll("acme.shop").await.tasks, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_without_a_known_extension_are_indexed_when_their_content_is_text() {
    let h = harness().await;
    let work = h.dir.path().join("r");
    let repo = init_repo(&work);
    commit(
        &repo,
        &[
            (".ci/run", Some(b"#!/bin/sh\nset -eu\ncargo nextest run\n")),
            ("tests/ui/parse.expected", Some(b"error: expected `;`\n")),
            (
                "LICENSE-MIT",
                Some(b"Permission is hereby granted, free of charge\n"),
            ),
            ("assets/logo.png", Some(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")),
            ("data/latin1", Some(b"caf\xe9 cr\xe8me\n")),
            ("src/main.rs", Some(b"fn main() {}\n")),
        ],
        "Scripts, outputs, licence and two non-text files",
        ("Jan", "jan@example.com"),
    );
    h.register("r", cfg_path("r", &work, &[])).await;
    let report = h.poll("r").await;
    assert_eq!(
        report.skipped.get(&SkipReason::Binary),
        Some(&1),
        "{report:?}"
    );
    assert_eq!(
        report.skipped.get(&SkipReason::NotText),
        Some(&1),
        "{report:?}"
    );
    assert_eq!(report.files_queued, 4, "{report:?}");
    for example in ["assets/logo.png (binary)", "data/latin1 (not_text)"] {
        assert!(
            report.skipped_examples.iter().any(|e| e == example),
            "{example} in {:?}",
            report.skipped_examples
        );
    }
    h.drain().await;
    for path in [
        ".ci/run",
        "tests/ui/parse.expected",
        "LICENSE-MIT",
        "src/main.rs",
    ] {
        assert!(h.node_exists(&keys::file("r", path)).await, "{path}");
    }
    // Not indexed as files (their nodes exist only as what the commit created).
    for path in ["assets/logo.png", "data/latin1"] {
        assert!(
            h.source_urns(&format!("git:r:blob:main:{path}"))
                .await
                .is_empty(),
            "{path}"
        );
    }
    assert_eq!(h.source_urns("git:r:blob:main:").await.len(), 4);
}
