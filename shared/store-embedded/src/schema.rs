//! The SQLite schema. One file per data directory is the system of record for chunks,
//! graph, aliases, sources and the queue; the text and vector indexes are derived state.

use rusqlite::{Connection, OptionalExtension};

/// Bump when the schema changes incompatibly; `open` refuses a newer file and migrates an
/// older one ([`migrate`]). 2: polled sources keyed by (client, id), not by id alone.
pub const SCHEMA_VERSION: i64 = 2;

pub const DDL: &str = r#"
CREATE TABLE IF NOT EXISTS meta(
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- AUTOINCREMENT: row ids are never reused, so the vector index's high-water mark is exact.
CREATE TABLE IF NOT EXISTS chunks(
    rid          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    partition    TEXT NOT NULL,
    client_id    TEXT,
    project_id   TEXT,
    group_id     TEXT,
    source_urn   TEXT NOT NULL,
    kind         TEXT NOT NULL,
    title        TEXT,
    content      TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    locator      TEXT NOT NULL,
    graph_refs   TEXT NOT NULL,
    metadata     TEXT NOT NULL,
    observed_at  TEXT,
    ordinal      INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    embedding    BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks(partition, source_urn, ordinal);
CREATE INDEX IF NOT EXISTS chunks_kind ON chunks(kind, rid);

CREATE TABLE IF NOT EXISTS nodes(
    nid        INTEGER PRIMARY KEY,
    partition  TEXT NOT NULL,
    key        TEXT NOT NULL,
    type       TEXT NOT NULL,
    label      TEXT NOT NULL,
    props      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE(partition, key)
);
-- Listing by type pages in key order (`list_nodes`); it also serves every `type = ?` filter.
DROP INDEX IF EXISTS nodes_type;
CREATE INDEX IF NOT EXISTS nodes_type_key ON nodes(type, key);

CREATE TABLE IF NOT EXISTS node_evidence(
    nid        INTEGER NOT NULL REFERENCES nodes(nid) ON DELETE CASCADE,
    chunk_id   TEXT NOT NULL,
    client_id  TEXT,
    project_id TEXT,
    group_id   TEXT,
    PRIMARY KEY(nid, chunk_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS node_evidence_chunk ON node_evidence(chunk_id);

CREATE TABLE IF NOT EXISTS edges(
    eid       INTEGER PRIMARY KEY,
    partition TEXT NOT NULL,
    from_key  TEXT NOT NULL,
    edge_type TEXT NOT NULL,
    to_key    TEXT NOT NULL,
    props     TEXT NOT NULL,
    UNIQUE(partition, from_key, edge_type, to_key)
);
CREATE INDEX IF NOT EXISTS edges_to ON edges(partition, to_key);

CREATE TABLE IF NOT EXISTS edge_evidence(
    eid        INTEGER NOT NULL REFERENCES edges(eid) ON DELETE CASCADE,
    chunk_id   TEXT NOT NULL,
    client_id  TEXT,
    project_id TEXT,
    group_id   TEXT,
    PRIMARY KEY(eid, chunk_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edge_evidence_chunk ON edge_evidence(chunk_id);

-- The entity index (`entity_index`): analysed names per node, kept with the node.
CREATE TABLE IF NOT EXISTS entity_terms(
    term TEXT NOT NULL,
    nid  INTEGER NOT NULL REFERENCES nodes(nid) ON DELETE CASCADE,
    PRIMARY KEY(term, nid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entity_terms_node ON entity_terms(nid);
CREATE TABLE IF NOT EXISTS entity_names(
    nid   INTEGER PRIMARY KEY REFERENCES nodes(nid) ON DELETE CASCADE,
    sig   INTEGER NOT NULL,
    names TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS aliases(
    client        TEXT NOT NULL,
    alias_key     TEXT NOT NULL,
    canonical_key TEXT NOT NULL,
    seen_count    INTEGER NOT NULL DEFAULT 0,
    first_seen_at TEXT NOT NULL,
    last_seen_at  TEXT NOT NULL,
    PRIMARY KEY(client, alias_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS aliases_canonical ON aliases(client, canonical_key);

CREATE TABLE IF NOT EXISTS sources(
    partition       TEXT NOT NULL,
    source_urn      TEXT NOT NULL,
    client_id       TEXT,
    project_id      TEXT,
    group_id        TEXT,
    kind            TEXT NOT NULL,
    title           TEXT,
    content_hash    TEXT NOT NULL,
    status          TEXT NOT NULL,
    chunk_count     INTEGER NOT NULL,
    last_indexed_at TEXT NOT NULL,
    last_error      TEXT,
    PRIMARY KEY(partition, source_urn)
) WITHOUT ROWID;

-- The qualification queue. Payloads are stored once by content hash, however often a task
-- is retried or re-enqueued.
CREATE TABLE IF NOT EXISTS task_payloads(
    hash TEXT PRIMARY KEY,
    body TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS tasks(
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    kind             TEXT NOT NULL,
    partition        TEXT NOT NULL,
    client_id        TEXT,
    project_id       TEXT,
    group_id         TEXT,
    source_urn       TEXT NOT NULL,
    priority         INTEGER NOT NULL,
    queue_position   INTEGER,
    state            TEXT NOT NULL,
    retries          INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_retry_at    INTEGER,
    last_error       TEXT,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    lease_epoch      INTEGER NOT NULL DEFAULT 0,
    payload_hash     TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
-- Claiming walks unfinished tasks in claim order and stops at the first eligible one, so a
-- claim costs O(log n) however long the backlog (the partial index holds no done tasks).
DROP INDEX IF EXISTS tasks_claim;
CREATE INDEX IF NOT EXISTS tasks_claim_order ON tasks(priority, queue_position IS NULL, queue_position, seq)
    WHERE state IN ('queued', 'retry_wait', 'processing');
-- The per-source "older unfinished task" check. (Listings by source scan: they are rare and
-- every index here costs each of the three writes a task goes through.)
DROP INDEX IF EXISTS tasks_source;
CREATE INDEX IF NOT EXISTS tasks_source_open ON tasks(partition, source_urn, seq)
    WHERE state IN ('queued', 'retry_wait', 'processing');
-- "Does another task of this source hold a lease?" (an older task retried while a newer one
-- runs must wait). At most a task or two per source are processing: a probe, not a walk.
CREATE INDEX IF NOT EXISTS tasks_source_leased ON tasks(partition, source_urn)
    WHERE state = 'processing';
-- "What finished in the last hour" (the console's throughput) reads only the window. Partial:
-- a task enters it once, when it ends.
CREATE INDEX IF NOT EXISTS tasks_finished ON tasks(state, updated_at)
    WHERE state IN ('done', 'error');

-- Session memory: small JSON values per (client, session, key) that expire.
CREATE TABLE IF NOT EXISTS memory(
    client_id  TEXT NOT NULL,
    session_id TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY(client_id, session_id, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_expiry ON memory(expires_at);

-- The session log: short entries per (client, project); project '' is the client's own log.
CREATE TABLE IF NOT EXISTS session_log(
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    client_id  TEXT NOT NULL,
    project_id TEXT NOT NULL,
    timestamp  INTEGER NOT NULL,
    source     TEXT NOT NULL,
    summary    TEXT NOT NULL,
    details    TEXT,
    task_id    TEXT,
    expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS session_log_order ON session_log(client_id, project_id, timestamp, seq);
CREATE INDEX IF NOT EXISTS session_log_expiry ON session_log(expires_at);

-- Knowledge gaps: the record as JSON beside the columns claims and listings use; their
-- history append-only, numbered per gap.
CREATE TABLE IF NOT EXISTS gaps(
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    partition        TEXT NOT NULL,
    id               TEXT NOT NULL,
    state            TEXT NOT NULL,
    priority         INTEGER NOT NULL,
    position         INTEGER,
    question_key     TEXT NOT NULL,
    lease_expires_at INTEGER,
    record           TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS gaps_id ON gaps(partition, id);
CREATE INDEX IF NOT EXISTS gaps_claim_order ON gaps(partition, priority, position IS NULL, position, seq)
    WHERE state IN ('open', 'acquiring');
CREATE INDEX IF NOT EXISTS gaps_question ON gaps(partition, question_key, state);
CREATE INDEX IF NOT EXISTS gaps_leased ON gaps(partition, state, lease_expires_at);
CREATE TABLE IF NOT EXISTS gap_events(
    partition TEXT NOT NULL,
    gap_id    TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    event     TEXT NOT NULL,
    PRIMARY KEY(partition, gap_id, seq)
) WITHOUT ROWID;

-- API tokens: the secret is never stored, only its SHA-256.
CREATE TABLE IF NOT EXISTS tokens(
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    client_id   TEXT,
    grant_json  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    revoked_at  INTEGER,
    created_by  TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tokens_client ON tokens(client_id, created_at);

-- Audit log of writes and admin actions, append-only.
CREATE TABLE IF NOT EXISTS audit(
    id         TEXT PRIMARY KEY,
    at         INTEGER NOT NULL,
    token_id   TEXT NOT NULL,
    client_id  TEXT,
    route      TEXT NOT NULL,
    event      TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS audit_at ON audit(at);
CREATE INDEX IF NOT EXISTS audit_client_at ON audit(client_id, at);

-- Claims (seed 002): the current state as JSON (`doc`) beside the columns listings filter
-- on; the append-only events; and which claims each evidence chunk backs.
CREATE TABLE IF NOT EXISTS claims(
    partition    TEXT NOT NULL,
    id           TEXT NOT NULL,
    client_id    TEXT,
    project_id   TEXT,
    group_id     TEXT,
    status       TEXT NOT NULL,
    stale        INTEGER NOT NULL,
    confidence   REAL NOT NULL,
    actor_id     TEXT NOT NULL,
    session_id   TEXT,
    subject_type TEXT,
    subject_id   TEXT,
    domain       TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    version      INTEGER NOT NULL,
    doc          TEXT NOT NULL,
    PRIMARY KEY(partition, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS claims_recent ON claims(client_id, updated_at);
CREATE TABLE IF NOT EXISTS claim_events(
    partition TEXT NOT NULL,
    claim_id  TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    doc       TEXT NOT NULL,
    PRIMARY KEY(partition, claim_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claim_evidence(
    partition TEXT NOT NULL,
    chunk_id  TEXT NOT NULL,
    claim_id  TEXT NOT NULL,
    PRIMARY KEY(partition, chunk_id, claim_id)
) WITHOUT ROWID;
-- Procedural memory: workflows per (client, id) in the client's own scope (project '') or
-- one project's. `vector` is the trigger's unit-length embedding (f32 little-endian); the
-- store keeps a copy of every row in memory for matching (`procedures.rs`).
CREATE TABLE IF NOT EXISTS procedures(
    client_id     TEXT NOT NULL,
    id            TEXT NOT NULL,
    project_id    TEXT NOT NULL,
    trigger       TEXT NOT NULL,
    steps         TEXT NOT NULL,
    source        TEXT NOT NULL,
    success_count INTEGER NOT NULL,
    failure_count INTEGER NOT NULL,
    usage_count   INTEGER NOT NULL,
    last_used_at  INTEGER,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    vector        BLOB NOT NULL,
    UNIQUE(client_id, id)
);

-- Chunk rows deleted, or changed in what the in-memory indexes hold, in commit order: the
-- saved text index and row map (`text.index`) record the sequence they include, and a load
-- re-reads the rows changed after it (`restart.rs`). Pruned up to a saved sequence.
CREATE TABLE IF NOT EXISTS chunk_changes(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    rid INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS chunks_deleted_log AFTER DELETE ON chunks
BEGIN
    INSERT INTO chunk_changes(rid) VALUES (old.rid);
END;
CREATE TRIGGER IF NOT EXISTS chunks_changed_log
AFTER UPDATE OF client_id, project_id, group_id, kind, title, content, metadata ON chunks
WHEN old.client_id IS NOT new.client_id OR old.project_id IS NOT new.project_id
    OR old.group_id IS NOT new.group_id OR old.kind IS NOT new.kind
    OR old.title IS NOT new.title OR old.content IS NOT new.content
    OR old.metadata IS NOT new.metadata
BEGIN
    INSERT INTO chunk_changes(rid) VALUES (old.rid);
END;
"#;

/// Continuously polled sources, their cursors, and which replica polls each (a lease). A
/// source is identified by its client and its id within it: the same id in two clients is
/// two sources.
pub const INDEXER_DDL: &str = r#"
CREATE TABLE IF NOT EXISTS indexer_sources(
    client_id        TEXT NOT NULL,
    id               TEXT NOT NULL,
    kind             TEXT NOT NULL,
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
    lease_expires_at INTEGER,
    PRIMARY KEY(client_id, id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS indexer_cursors(
    client_id TEXT NOT NULL,
    source_id TEXT NOT NULL,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY(client_id, source_id, key)
) WITHOUT ROWID;
"#;

/// Creates what is missing and brings an older data dir up to [`SCHEMA_VERSION`].
pub fn create(conn: &Connection) -> rusqlite::Result<()> {
    migrate(conn)?;
    conn.execute_batch(DDL)?;
    conn.execute_batch(INDEXER_DDL)
}

/// Schema 1 → 2: `indexer_sources` keyed by `id` alone becomes keyed by `(client_id, id)`,
/// and each cursor takes its source's client. Every row is kept (a source always had a
/// client; one without would be kept under the empty client). One transaction: a crash
/// leaves schema 1, and the next open migrates again.
pub fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let pk_of_client: Option<i64> = conn
        .query_row(
            "SELECT pk FROM pragma_table_info('indexer_sources') WHERE name = 'client_id'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if pk_of_client.is_none_or(|pk| pk > 0) {
        return Ok(()); // a new data dir, or already keyed by client
    }
    let cols = "kind, project_id, group_id, config, interval_secs, enabled, created_at, updated_at,                 last_poll_at, last_success_at, last_error, stats, owner, lease_expires_at";
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch(&format!(
        "ALTER TABLE indexer_sources RENAME TO indexer_sources_v1;
         ALTER TABLE indexer_cursors RENAME TO indexer_cursors_v1;
         {INDEXER_DDL}
         INSERT INTO indexer_sources(client_id, id, {cols})
             SELECT coalesce(client_id, ''), id, {cols} FROM indexer_sources_v1;
         INSERT INTO indexer_cursors(client_id, source_id, key, value)
             SELECT coalesce(s.client_id, ''), c.source_id, c.key, c.value
             FROM indexer_cursors_v1 c JOIN indexer_sources_v1 s ON s.id = c.source_id;
         DROP TABLE indexer_cursors_v1;
         DROP TABLE indexer_sources_v1;
         UPDATE meta SET value = '{SCHEMA_VERSION}' WHERE key = 'schema_version';"
    ))?;
    tx.commit()?;
    tracing::info!(
        "data dir migrated to schema {SCHEMA_VERSION}: polled sources are keyed by client and id"
    );
    Ok(())
}

/// Connection settings. `synchronous=FULL` because a write is acknowledged only once durable.
/// Prepared statements kept per connection (`prepare_cached`).
const STATEMENT_CACHE: usize = 256;

pub fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "busy_timeout", 10_000)?;
    let cache = crate::budget::DEFAULT_CACHE_PER_CONNECTION; // resized by `[store] memory_budget`
    conn.pragma_update(None, "cache_size", crate::budget::cache_size_pragma(cache))?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "wal_autocheckpoint", 8000)?;
    // rusqlite keeps 16 prepared statements by default; one source write alone runs more
    // distinct statements than that (chunks, nodes, edges, evidence, sources, queue), so the
    // cache evicted and re-prepared statements on every write.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}
