//! Evident on MongoDB: the qualification queue ([`TaskQueue`](evident_store::queue::TaskQueue)),
//! the source registry ([`SourceRegistry`](evident_store::SourceRegistry) and the registry step
//! of a [`SequencedWriter`](evident_store::SequencedWriter)), indexer sources with their
//! polling leases and cursors ([`IndexerStore`](evident_store::indexers::IndexerStore)), session
//! memory ([`MemoryStore`](evident_store::memory::MemoryStore)), procedural memory
//! ([`ProcedureStore`](evident_store::procedures::ProcedureStore)) and a readiness check.
//!
//! # Commands and transports
//!
//! Every operation is a database command document (`find` + `getMore`, `findAndModify`,
//! `insert`, `update`, `delete`, `aggregate`, `createIndexes`, `ping`) built by a pure function
//! and sent through a [`Transport`]: `DriverTransport` (feature `driver`, the official
//! `mongodb` driver's `run_command`; `find` and `aggregate` through `run_cursor_command`, which
//! follows the cursor in the session that opened it, handed back as one exhausted batch) in
//! production, [`RecordedTransport`] in the wire tests (`tests/wire.rs`, fixtures in
//! `tests/fixtures/`), which need neither a server nor the driver. Commands go to the primary
//! with the server's default read and write concerns. `run_command` does not retry writes:
//! a lost reply surfaces as `Unavailable`; lease operations are guarded by epochs and
//! conditional filters, upserts are idempotent, but an `enqueue` retried after a lost reply
//! may add the task twice (tasks are processed at least once).
//!
//! # Layout
//!
//! | collection | `_id` | holds |
//! |---|---|---|
//! | `tasks` | `t` + 12-digit sequence | queue tasks (fields in the `queue` module docs) |
//! | `task_payloads` | content hash | task bodies, stored once |
//! | `counters` | `"tasks"` | the task sequence |
//! | `sources` | `{partition, sourceUrn}` | the source registry |
//! | `indexer_sources` | source id | polled sources, status, polling lease (`owner`, `leaseExpiresAt`, `leaseEpoch`) |
//! | `indexer_cursors` | `{source, key}` | cursors, fenced by the lease epoch of their writer |
//! | `memory` | `{clientId, sessionId, key}` | session memory, `expiresAt` a BSON date |
//! | `session_log` | timestamp + counter | the session log, `expiresAt` a BSON date |
//! | `procedures` | `{clientId, procedureId}` | procedural memory (`procedures` module) |
//! | `gaps` | gap id | knowledge gaps with their history, changed by compare-and-set on `rev` (`gaps` module) |
//!
//! JSON values (payloads, configs, stats, cursors, memory values) are stored as JSON text:
//! exact round trips, and user keys can never be read as operators. Times are the callers'
//! milliseconds (Int64), except `memory.expiresAt`, a BSON date for the TTL index.
//! Indexes are created at [`MongoStore::open`] (`createIndexes` is idempotent); see
//! [`schema`].
//!
//! # Claims (no multi-document transactions needed)
//!
//! A claim is one `findAndModify` over the *head* tasks (each source's oldest unfinished task
//! carries `head: true`), sorted in claim order, filtered by eligibility; then one indexed
//! query verifies that no older unfinished task of the source and no other live lease exists,
//! and undoes the claim exactly if one does. The head marker (and the claim's index `hint`)
//! makes a claim O(log n + k) — k the heads ahead of the first eligible one that wait for a
//! retry or hold a live lease — whatever the backlog behind the heads; the verification makes them correct under concurrent claimers, enqueuers,
//! operators and crashes. Hand-overs of the marker are recorded (`fixAt`) in the same write as
//! the state change and swept by claimers if their writer died. The full invariant is in the
//! `queue` module docs.
//!
//! # TTL
//!
//! `memory_ttl` (`expiresAt`, `expireAfterSeconds: 0`) lets the server delete expired entries
//! (its monitor runs about every minute); every read also filters `expiresAt > now`, so an
//! entry is invisible from its expiry on, purged or not. `purge_expired` deletes them at once.
//!
//! # Failures
//!
//! See [`classify`]: no answer, not primary, shutting down, time limits, write concern
//! failures and retryable labels → `Unavailable`; write conflicts and lost races (duplicate
//! keys not expected by the operation) → `Conflict`; refused credentials or roles →
//! `Unavailable` with a message saying what to fix; malformed requests → `Invalid`; index
//! conflicts → `Incompatible`. Unknown server errors are `Unavailable` (retrying is safe;
//! nothing is dropped).
//!
//! Must not: hold the connection string anywhere but in the driver's client, log it, or
//! decide anything from error message text.

mod access;
mod claims;
mod client;
mod config;
mod error;
mod fields;
mod gaps;
mod health;
mod indexers;
mod memory;
mod procedures;
mod queue;
pub mod recorded;
pub mod schema;
mod session_log;
mod sources;

#[cfg(test)]
mod fake;

use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use evident_store::Result;

#[cfg(feature = "driver")]
pub use client::DriverTransport;
pub use client::Transport;
pub use config::MongoConfig;
pub use error::{TransportError, classify, codes, store_error};
pub use recorded::{Exchange, RecordedTransport};

use client::Db;

/// The roles this backend serves, as reported by its health check.
pub const ROLES: [&str; 8] = evident_store::QUEUE_SIDE_ROLES;

struct Inner {
    db: Db,
    /// When (by the claimers' clock) this instance next sweeps interrupted head hand-overs.
    next_repair: AtomicI64,
}

/// Evident's MongoDB store. Cheap to clone (one shared transport).
#[derive(Clone)]
pub struct MongoStore {
    inner: Arc<Inner>,
}

impl MongoStore {
    /// A store over `transport`, using database `database`. Sends nothing: see
    /// [`MongoStore::open`] for the checks and index creation done at start-up.
    pub fn new(transport: Arc<dyn Transport>, database: impl Into<String>) -> MongoStore {
        MongoStore {
            inner: Arc::new(Inner {
                db: Db::new(transport, database),
                next_repair: AtomicI64::new(i64::MIN),
            }),
        }
    }

    /// [`MongoStore::new`], then `{ping: 1}`, the `createIndexes` of
    /// [`schema::index_commands`], and the re-keying of sources written before they were
    /// keyed by client ([`MongoStore::migrate_source_keys`]).
    pub async fn open(
        transport: Arc<dyn Transport>,
        database: impl Into<String>,
    ) -> Result<MongoStore> {
        let store = MongoStore::new(transport, database);
        store.ping().await?;
        store.ensure_indexes().await?;
        store.migrate_source_keys().await?;
        Ok(store)
    }

    /// Connects with the official driver to the server named by the environment variable
    /// `cfg.uri_env`, then [`MongoStore::open`]s the configured database.
    #[cfg(feature = "driver")]
    pub async fn connect(cfg: &MongoConfig) -> Result<MongoStore> {
        cfg.validate()?;
        let uri = std::env::var(&cfg.uri_env).map_err(|_| {
            evident_store::StoreError::invalid(format!(
                "mongo: the environment variable {} (the connection string) is not set",
                cfg.uri_env
            ))
        })?;
        let transport = DriverTransport::connect(&uri, cfg.timeout()).await?;
        tracing::info!(database = %cfg.database, "mongo: connecting");
        MongoStore::open(Arc::new(transport), cfg.database.clone()).await
    }

    /// `{ping: 1}`.
    pub async fn ping(&self) -> Result<()> {
        self.db()
            .run("ping", health::ping_command())
            .await
            .map(drop)
    }

    /// Creates the collections' indexes (idempotent).
    pub async fn ensure_indexes(&self) -> Result<()> {
        for command in schema::index_commands() {
            self.db().run("create indexes", command).await?;
        }
        Ok(())
    }

    /// Deletes the whole database (`{dropDatabase: 1}`): for throw-away test databases and
    /// tooling, never called by the store itself.
    pub async fn drop_database(&self) -> Result<()> {
        self.db()
            .run("drop database", bson::doc! {"dropDatabase": 1})
            .await
            .map(drop)
    }

    /// The database this store uses.
    pub fn database(&self) -> &str {
        self.inner.db.name()
    }

    pub(crate) fn db(&self) -> &Db {
        &self.inner.db
    }
}
