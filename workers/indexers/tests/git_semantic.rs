//! Semantic edges end to end: small multi-file repositories (Python, Java) indexed through the
//! git indexer; callers, callees and implementations answered exactly by `traverse` over the
//! edge types `calls`, `extends`, `implements`, `uses_type` in both directions; a commit that
//! renames a method moves its `calls` edges, and a caller left untouched loses its stale edge
//! (the definition's change re-resolves it), the old node going with its last evidence.

use std::collections::BTreeSet;

use evident_core::{NodeKey, keys};
use evident_store::{Direction, TraverseOptions};

mod support;

use support::git::{Harness, cfg_path, commit, harness, init_repo};

/// The nodes one hop from `key` along `edge_type` in `direction`.
async fn hop(
    h: &Harness,
    key: &NodeKey,
    edge_type: &str,
    direction: Direction,
) -> BTreeSet<String> {
    let sub =
        h.kb.stores()
            .graph
            .traverse(
                &h.vis(),
                std::slice::from_ref(key),
                &TraverseOptions {
                    max_depth: 1,
                    direction,
                    edge_types: vec![edge_type.to_string()],
                    max_nodes: 10_000,
                },
            )
            .await
            .expect("traverse");
    sub.edges
        .into_iter()
        .map(|e| {
            let other = if e.from == *key { e.to } else { e.from };
            other.as_str().to_string()
        })
        .collect()
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| k.to_string()).collect()
}

// The repositories of `tests/fixtures/semantic` (shared with the code-question tests).
const SHAPES_PY: &str = include_str!("../../../tests/fixtures/semantic/geo/geo/shapes.py");

const REPORT_PY: &str = include_str!("../../../tests/fixtures/semantic/geo/geo/report.py");

const STATS_PY: &str = include_str!("../../../tests/fixtures/semantic/geo/geo/stats.py");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_callers_and_bases_follow_the_code_and_a_rename_moves_its_edges() {
    let h = harness().await;
    let work = h.dir.path().join("geo");
    let repo = init_repo(&work);
    commit(
        &repo,
        &[
            ("geo/__init__.py", Some(b"")),
            ("geo/shapes.py", Some(SHAPES_PY.as_bytes())),
            ("geo/report.py", Some(REPORT_PY.as_bytes())),
            ("geo/stats.py", Some(STATS_PY.as_bytes())),
        ],
        "Shapes",
        ("Jan", "jan@example.com"),
    );
    h.register("acme.geo", cfg_path("geo", &work, &[])).await;
    h.poll("acme.geo").await;
    h.drain().await;

    let k = |q: &str| keys::callable("geo", q);
    let area = k("geo.shapes.Square.area");
    assert_eq!(
        hop(&h, &area, "calls", Direction::In).await,
        set(&[
            "symbol:geo/geo.report.report()",
            "symbol:geo/geo.stats.total()"
        ]),
    );
    assert_eq!(
        hop(&h, &k("geo.report.report"), "calls", Direction::Out).await,
        set(&[
            "symbol:geo/geo.shapes.Square.__init__()",
            "symbol:geo/geo.shapes.Square.area()"
        ]),
    );
    // `self.area()` in the base resolves to the base's own method.
    assert_eq!(
        hop(&h, &k("geo.shapes.Shape.describe"), "calls", Direction::Out).await,
        set(&["symbol:geo/geo.shapes.Shape.area()"]),
    );
    let shape = keys::symbol("geo", "geo.shapes.Shape");
    assert_eq!(
        hop(&h, &shape, "extends", Direction::In).await,
        set(&["symbol:geo/geo.shapes.Square"]),
    );
    // `len` is not in the repository: no edge, the name kept on the caller.
    let total =
        h.kb.stores()
            .graph
            .get_nodes(&h.vis(), &[k("geo.stats.total")])
            .await
            .expect("nodes");
    assert_eq!(
        total[0].props["callsUnresolved"],
        serde_json::json!(["len"])
    );

    // Rename `Square.area` to `surface`; `report.py` follows, `stats.py` is left behind.
    let renamed = SHAPES_PY.replace(
        "    def area(self):\n        return self.side",
        "    def surface(self):\n        return self.side",
    );
    commit(
        &repo,
        &[
            ("geo/shapes.py", Some(renamed.as_bytes())),
            (
                "geo/report.py",
                Some(REPORT_PY.replace("sq.area()", "sq.surface()").as_bytes()),
            ),
        ],
        "Rename area to surface",
        ("Jan", "jan@example.com"),
    );
    h.poll("acme.geo").await;
    h.drain().await;
    let surface = k("geo.shapes.Square.surface");
    assert_eq!(
        hop(&h, &surface, "calls", Direction::In).await,
        set(&["symbol:geo/geo.report.report()"]),
    );
    // `stats.py` did not change, but its `s.area()` now resolves to the inherited `Shape.area`.
    assert_eq!(
        hop(&h, &k("geo.stats.total"), "calls", Direction::Out).await,
        set(&[
            "symbol:geo/geo.shapes.Square.__init__()",
            "symbol:geo/geo.shapes.Shape.area()"
        ]),
    );
    assert!(
        !h.node_exists(&area).await,
        "the old method's node went with its last edge"
    );
    let report = h.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");

    // Deleting the definitions takes every edge into them away.
    commit(
        &repo,
        &[("geo/shapes.py", None)],
        "No more shapes",
        ("Jan", "jan@example.com"),
    );
    h.poll("acme.geo").await;
    h.drain().await;
    assert!(
        hop(&h, &k("geo.report.report"), "calls", Direction::Out)
            .await
            .is_empty()
    );
    assert!(!h.node_exists(&surface).await);
    assert!(!h.node_exists(&shape).await);
    let report = h.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
}

const PRICED_JAVA: &str =
    include_str!("../../../tests/fixtures/semantic/shop/src/shop/Priced.java");

const ITEM_JAVA: &str =
    include_str!("../../../tests/fixtures/semantic/shop/src/shop/model/Item.java");

const BOOK_JAVA: &str =
    include_str!("../../../tests/fixtures/semantic/shop/src/shop/model/Book.java");

const CART_JAVA: &str = include_str!("../../../tests/fixtures/semantic/shop/src/shop/Cart.java");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_implementations_and_callers_are_exact() {
    let h = harness().await;
    let work = h.dir.path().join("shop");
    let repo = init_repo(&work);
    commit(
        &repo,
        &[
            ("src/shop/Priced.java", Some(PRICED_JAVA.as_bytes())),
            ("src/shop/Cart.java", Some(CART_JAVA.as_bytes())),
            ("src/shop/model/Item.java", Some(ITEM_JAVA.as_bytes())),
            ("src/shop/model/Book.java", Some(BOOK_JAVA.as_bytes())),
        ],
        "Shop",
        ("Jan", "jan@example.com"),
    );
    h.register("acme.shop", cfg_path("shop", &work, &[])).await;
    h.poll("acme.shop").await;
    h.drain().await;

    let t = |q: &str| keys::symbol("shop", q);
    let k = |q: &str| keys::callable("shop", q);
    assert_eq!(
        hop(&h, &t("shop.Priced"), "implements", Direction::In).await,
        set(&["symbol:shop/shop.Cart", "symbol:shop/shop.model.Item"]),
    );
    assert_eq!(
        hop(&h, &t("shop.model.Item"), "extends", Direction::In).await,
        set(&["symbol:shop/shop.model.Book"]),
    );
    assert_eq!(
        hop(&h, &k("shop.model.Item.price"), "calls", Direction::In).await,
        set(&[
            "symbol:shop/shop.Cart.price()",
            "symbol:shop/shop.model.Book.price()"
        ]),
    );
    assert_eq!(
        hop(&h, &k("shop.Cart.price"), "calls", Direction::Out).await,
        set(&[
            "symbol:shop/shop.Cart.fee()",
            "symbol:shop/shop.model.Book.price()",
            "symbol:shop/shop.model.Item.price()",
        ]),
    );
    assert_eq!(
        hop(&h, &t("shop.model.Item"), "uses_type", Direction::In).await,
        set(&["symbol:shop/shop.Cart"]),
    );

    // A rename of `fee` moves the caller's edge; the old node goes.
    commit(
        &repo,
        &[(
            "src/shop/Cart.java",
            Some(CART_JAVA.replace("fee()", "charge()").as_bytes()),
        )],
        "Rename fee",
        ("Jan", "jan@example.com"),
    );
    h.poll("acme.shop").await;
    h.drain().await;
    assert_eq!(
        hop(&h, &k("shop.Cart.charge"), "calls", Direction::In).await,
        set(&["symbol:shop/shop.Cart.price()"]),
    );
    assert!(!h.node_exists(&k("shop.Cart.fee")).await);
    let report = h.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
}

#[test]
fn structure_tasks_of_both_versions_are_read() {
    use evident_indexers::git::GitTask;
    // A task stored before `base` existed.
    let v1 = serde_json::json!({
        "type": "ingest-git-structure", "v": 1, "sourceId": "acme.shop", "branch": "main",
        "commit": "0123456789abcdef0123456789abcdef01234567", "paths": ["a.py"], "deleted": []
    });
    let GitTask::IngestGitStructure { v, base, .. } = serde_json::from_value(v1).expect("v1")
    else {
        panic!("structure task")
    };
    assert_eq!((v, base), (1, None));
    let v2 = GitTask::IngestGitStructure {
        v: 2,
        source_id: "acme.shop".into(),
        branch: "main".into(),
        commit: "b".repeat(40),
        paths: vec!["a.py".into()],
        deleted: vec![],
        base: Some("a".repeat(40)),
        plan: None,
    };
    let back: GitTask = serde_json::from_value(v2.to_value()).expect("v2");
    assert_eq!(back, v2);
    assert!(v2.to_value().get("plan").is_none());
    let v3 = GitTask::IngestGitStructure {
        v: 3,
        source_id: "acme.shop".into(),
        branch: "main".into(),
        commit: "b".repeat(40),
        paths: vec!["a.py".into()],
        deleted: vec![],
        base: None,
        plan: Some("1-0-00000000000000ff".into()),
    };
    let back: GitTask = serde_json::from_value(v3.to_value()).expect("v3");
    assert_eq!(back, v3);
}

/// One file a batch: the first batch of the plan writes every Python file with its edges,
/// the later batches of the same plan find theirs written; nothing is missing, and a commit
/// after it (a new plan) still moves the edges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batches_of_one_plan_write_each_file_once_and_lose_nothing() {
    let mut h = harness().await;
    h.poller.batches.files = 1;
    let work = h.dir.path().join("geo");
    let repo = init_repo(&work);
    commit(
        &repo,
        &[
            ("geo/__init__.py", Some(b"")),
            ("geo/shapes.py", Some(SHAPES_PY.as_bytes())),
            ("geo/report.py", Some(REPORT_PY.as_bytes())),
            ("geo/stats.py", Some(STATS_PY.as_bytes())),
            ("README.md", Some(b"# Geo\n\nShapes and their areas.\n")),
        ],
        "Shapes",
        ("Jan", "jan@example.com"),
    );
    h.register("acme.geo", cfg_path("geo", &work, &[])).await;
    h.poll("acme.geo").await;
    h.drain().await;
    let k = |q: &str| keys::callable("geo", q);
    assert_eq!(
        hop(&h, &k("geo.shapes.Square.area"), "calls", Direction::In).await,
        set(&[
            "symbol:geo/geo.report.report()",
            "symbol:geo/geo.stats.total()"
        ]),
    );
    assert_eq!(
        hop(
            &h,
            &keys::symbol("geo", "geo.shapes.Shape"),
            "extends",
            Direction::In
        )
        .await,
        set(&["symbol:geo/geo.shapes.Square"]),
    );
    assert!(h.node_exists(&keys::file("geo", "README.md")).await);
    commit(
        &repo,
        &[(
            "geo/report.py",
            Some(REPORT_PY.replace("sq.area()", "sq.describe()").as_bytes()),
        )],
        "Describe",
        ("Jan", "jan@example.com"),
    );
    h.poll("acme.geo").await;
    h.drain().await;
    assert_eq!(
        hop(&h, &k("geo.report.report"), "calls", Direction::Out).await,
        set(&[
            "symbol:geo/geo.shapes.Square.__init__()",
            "symbol:geo/geo.shapes.Shape.describe()"
        ]),
    );
    let report = h.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
}
