//! The entity index of the embedded store (`GraphStore::match_entities`): names in words
//! find their nodes (people by name, types by their words, files by name, aliases), under
//! the reader's visibility, in step with writes and purges; and a data dir from before the
//! index opens with every node indexed (the migration at open).

use evident_core::{EdgeWrite, Evidence, NodeKey, NodeWrite, Scope, Visibility};
use evident_store::conformance::vector_space;
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};
use serde_json::{Map, json};

fn open(dir: &std::path::Path) -> EmbeddedStore {
    EmbeddedStore::open(EmbeddedOptions::new(dir, vector_space()).background_indexer(false))
        .expect("open")
}

fn ev(chunk: &str, scope: &Scope) -> Vec<Evidence> {
    vec![Evidence {
        chunk_id: chunk.into(),
        scope: scope.clone(),
    }]
}

fn node(key: &str, t: &str, label: &str, props: serde_json::Value, e: Vec<Evidence>) -> NodeWrite {
    let props: Map<String, serde_json::Value> = serde_json::from_value(props).expect("props");
    NodeWrite {
        key: NodeKey::from_canonical(key),
        node_type: t.into(),
        label: label.into(),
        props,
        evidence: e,
        mention_only: false,
    }
}

async fn write(store: &EmbeddedStore) {
    let acme = Scope::client("acme");
    let other = Scope::client("other");
    let g = store.stores().graph;
    g.upsert(
        "acme",
        vec![
            node(
                "user:jan_novak_example_com",
                "person",
                "Jan Novák",
                json!({"name": "Jan Novák", "email": "jan.novak@example.com"}),
                ev("c1", &acme),
            ),
            node(
                "symbol:r/com.acme.FieldSpec",
                "symbol",
                "FieldSpec",
                json!({}),
                ev("c2", &acme),
            ),
            node(
                "file:r/src/mail/mbox.rs",
                "file",
                "src/mail/mbox.rs",
                json!({}),
                ev("c3", &acme),
            ),
        ],
        vec![EdgeWrite {
            from: NodeKey::from_canonical("service:billing"),
            to: NodeKey::from_canonical("service:ledger"),
            edge_type: "depends_on".into(),
            props: Map::new(),
            evidence: ev("c4", &acme),
        }],
    )
    .await
    .expect("acme");
    g.upsert(
        "other",
        vec![node(
            "user:eve",
            "person",
            "Eve Novák",
            json!({}),
            ev("o1", &other),
        )],
        vec![],
    )
    .await
    .expect("other");
}

async fn keys(store: &EmbeddedStore, client: &str, q: &str) -> Vec<String> {
    let vis = Visibility::of(Scope::client(client));
    store
        .stores()
        .graph
        .match_entities(&vis, q, 5)
        .await
        .expect("match")
        .into_iter()
        .map(|m| m.node.key.as_str().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_in_words_find_their_nodes_under_visibility_and_in_step_with_purges() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = open(dir.path());
    write(&store).await;
    assert_eq!(
        keys(&store, "acme", "what did Jan Novak change").await[0],
        "user:jan_novak_example_com"
    );
    assert_eq!(
        keys(&store, "acme", "how does the field spec work").await[0],
        "symbol:r/com.acme.FieldSpec"
    );
    assert_eq!(
        keys(&store, "acme", "the mbox parser").await[0],
        "file:r/src/mail/mbox.rs"
    );
    assert_eq!(
        keys(&store, "acme", "what does billing depend on").await[0],
        "service:billing"
    );
    assert!(keys(&store, "acme", "the weather today").await.is_empty());
    // Another client's Novák is never matched for acme, and acme's never for it.
    assert!(
        !keys(&store, "acme", "novak")
            .await
            .contains(&"user:eve".to_string())
    );
    assert_eq!(keys(&store, "other", "novak").await, ["user:eve"]);
    // A match says what matched and how much of the name it covers.
    let vis = Visibility::of(Scope::client("acme"));
    let m = store
        .stores()
        .graph
        .match_entities(&vis, "field spec", 1)
        .await
        .expect("m");
    assert!(m[0].coverage > 0.99 && !m[0].matched.is_empty(), "{m:?}");

    // An alias registered later is a name of its canonical node.
    let aliases = store.stores().aliases;
    aliases
        .register(
            "acme",
            &NodeKey::from_canonical("service:money_keeper"),
            &NodeKey::from_canonical("service:ledger"),
        )
        .await
        .expect("alias");
    assert_eq!(
        keys(&store, "acme", "the money keeper").await[0],
        "service:ledger"
    );

    // Purged evidence: the node goes, and with it its names.
    store
        .stores()
        .graph
        .remove_evidence("acme", &["c2".to_string()])
        .await
        .expect("purge");
    assert!(
        !keys(&store, "acme", "field spec")
            .await
            .iter()
            .any(|k| k.contains("FieldSpec"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_dir_from_before_the_entity_index_is_indexed_at_open() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = open(dir.path());
    write(&store).await;
    drop(store);
    {
        // What a data dir written before the index looks like: neither table nor marker.
        let c = rusqlite::Connection::open(dir.path().join("evident.db")).expect("db");
        c.execute_batch(
            "DROP TABLE entity_terms; DROP TABLE entity_names; DELETE FROM meta WHERE key = 'entity_index';",
        )
        .expect("old shape");
    }
    let store = open(dir.path());
    assert_eq!(
        keys(&store, "acme", "Jan Novak").await[0],
        "user:jan_novak_example_com"
    );
    assert_eq!(
        keys(&store, "acme", "field spec").await[0],
        "symbol:r/com.acme.FieldSpec"
    );
}
