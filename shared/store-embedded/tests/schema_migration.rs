//! A data dir of schema 1 (polled sources keyed by id alone) opens migrated to schema 2
//! (keyed by client and id): every source, its status, lease and cursors kept.

use evident_store::conformance::vector_space;
use evident_store::indexers::SourceKey;
use evident_store_embedded::{EmbeddedOptions, EmbeddedStore};

/// The two tables as schema 1 created them, with rows as a schema-1 build wrote them.
const V1: &str = r#"
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES ('schema_version', '1');
CREATE TABLE indexer_sources(
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL,
    client_id        TEXT,
    project_id       TEXT,
    group_id         TEXT,
    config           TEXT NOT NULL,
    interval_secs    INTEGER NOT NULL,
    enabled          INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    last_poll_at     INTEGER,
    last_success_at  INTEGER,
    last_error       TEXT,
    stats            TEXT NOT NULL,
    owner            TEXT,
    lease_expires_at INTEGER
) WITHOUT ROWID;
CREATE TABLE indexer_cursors(
    source_id TEXT NOT NULL,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY(source_id, key)
) WITHOUT ROWID;
INSERT INTO indexer_sources VALUES
    ('acme.docs', 'documents', 'acme', 'web', NULL, '{"path":"/srv/docs"}', 300, 1, 10, 20,
     30, 30, NULL, '{"files":3}', 'replica-1', 99999),
    ('beta.mail', 'mbox', 'beta', NULL, NULL, '{"path":"/srv/mail/b.mbox"}', 60, 0, 11, 21,
     NULL, NULL, 'cannot read', '{}', NULL, NULL);
INSERT INTO indexer_cursors VALUES
    ('acme.docs', 'file:a.md', '{"hash":"h1"}'),
    ('acme.docs', 'file:b.md', '{"hash":"h2"}'),
    ('beta.mail', 'offset', '42');
"#;

fn open(dir: &std::path::Path) -> EmbeddedStore {
    EmbeddedStore::open(EmbeddedOptions::new(dir, vector_space()).background_indexer(false))
        .expect("open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_1_data_dir_keeps_its_sources_keyed_by_client() {
    let dir = tempfile::tempdir().expect("tmp");
    {
        let c = rusqlite::Connection::open(dir.path().join("evident.db")).expect("db");
        c.execute_batch(V1).expect("schema 1");
    }
    let store = open(dir.path());
    let ix = store.stores().indexers;
    let docs = ix
        .get_source(&SourceKey::new("acme", "acme.docs"))
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(docs.kind, "documents");
    assert_eq!(docs.scope.project_id.as_deref(), Some("web"));
    assert_eq!(docs.config["path"], "/srv/docs");
    assert_eq!(docs.status.stats["files"], 3);
    assert_eq!(docs.status.owner.as_deref(), Some("replica-1"));
    assert_eq!(
        ix.list_cursors(&docs.key()).await.expect("cursors").len(),
        2
    );
    let mail = ix
        .get_source(&SourceKey::new("beta", "beta.mail"))
        .await
        .expect("read")
        .expect("kept");
    assert!(!mail.enabled);
    assert_eq!(mail.status.last_error.as_deref(), Some("cannot read"));
    assert_eq!(
        ix.get_cursor(&mail.key(), "offset").await.expect("cursor"),
        Some(serde_json::json!(42))
    );
    // Keyed by client now: the id under another client is another (absent) source.
    assert!(
        ix.get_source(&SourceKey::new("beta", "acme.docs"))
            .await
            .expect("read")
            .is_none()
    );
    drop(ix);
    drop(store);
    // The version moved on, and a second open finds nothing left to migrate.
    let c = rusqlite::Connection::open(dir.path().join("evident.db")).expect("db");
    let v: String = c
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .expect("version");
    assert_eq!(v, "2");
    drop(c);
    let store = open(dir.path());
    assert_eq!(
        store
            .stores()
            .indexers
            .list_sources(None)
            .await
            .expect("list")
            .len(),
        2
    );
}
