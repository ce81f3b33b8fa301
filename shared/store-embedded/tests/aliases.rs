//! `register_many` is `register` pair by pair, in one write.

use evident_core::NodeKey;
use evident_store::{AliasRegistry, VectorSpace};
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

fn key(s: &str) -> NodeKey {
    NodeKey::from_canonical(s)
}

#[tokio::test]
async fn register_many_is_register_pair_by_pair() {
    let dir = tempfile::tempdir().expect("tmp");
    let space = VectorSpace {
        embedder: "test".into(),
        dim: 4,
    };
    let store =
        EmbeddedStore::open(EmbeddedOptions::new(dir.path(), space).background_indexer(false))
            .expect("open");
    store
        .register_many("c", &[])
        .await
        .expect("nothing to register");
    store
        .register_many(
            "c",
            &[
                (key("file:r_a_rs"), key("file:r/a.rs")),
                (key("import:std_sync_arc"), key("import:std.sync.Arc")),
                // Chains end at their canonical key, as with `register`.
                (key("file:old"), key("file:r_a_rs")),
            ],
        )
        .await
        .expect("register");
    let got = store
        .resolve(
            "c",
            &[
                key("file:r_a_rs"),
                key("import:std_sync_arc"),
                key("file:old"),
                key("file:unknown"),
            ],
        )
        .await
        .expect("resolve");
    let got: Vec<&str> = got.iter().map(NodeKey::as_str).collect();
    assert_eq!(
        got,
        vec![
            "file:r/a.rs",
            "import:std.sync.Arc",
            "file:r/a.rs",
            "file:unknown"
        ]
    );
    // A cycle is refused, and nothing of the batch is written.
    let err = store
        .register_many(
            "c",
            &[
                (key("x:new"), key("x:target")),
                (key("file:r/a.rs"), key("file:old")),
            ],
        )
        .await;
    assert!(err.is_err());
    let after = store.resolve("c", &[key("x:new")]).await.expect("resolve");
    assert_eq!(after[0].as_str(), "x:new");
}
