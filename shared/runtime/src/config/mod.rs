//! Layered configuration: compiled-in defaults < file < `EVIDENT__SECTION__KEY` env < CLI.
//!
//! Layers are merged as TOML tables and deserialised once with `deny_unknown_fields`, so an
//! unknown key in any layer (including the environment) is an error naming the key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use evident_ai::{EmbedderConfig, OllamaConfig};
use evident_kb::PoolConfig;
use serde::Deserialize;

/// The commented default configuration, compiled in.
pub const DEFAULT_TOML: &str = include_str!("../../../../deploy/config/evident.default.toml");
const ENV_PREFIX: &str = "EVIDENT__";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("config: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub auth: AuthSettings,
    pub store: StoreConfig,
    pub embedder: EmbedderSettings,
    pub write_pools: PoolConfig,
    pub chunking: ChunkingSettings,
    pub log: LogConfig,
    /// `[memory]`: agent memory settings.
    #[serde(default)]
    pub memory: MemorySettings,
    /// `[gaps]`: knowledge gaps.
    #[serde(default)]
    pub gaps: GapSettings,
    pub queue: evident_qualifier::QueueConfig,
    pub git: GitSettings,
    pub indexers: IndexerSettings,
    pub sources: SourcesConfig,
    /// `[transcription]`: the commands transcription sources may name (the only programs the
    /// server runs for a source).
    #[serde(default)]
    pub transcription: evident_sources::commands::TranscriptionSettings,
    /// `[egress]`: what outbound requests may reach beyond the public internet.
    pub egress: evident_egress::EgressConfig,
    /// `[arango]`: needed when a role is on ArangoDB.
    #[serde(default)]
    pub arango: Option<evident_store_arango::ArangoConfig>,
    /// `[weaviate]`: needed when a role is on Weaviate.
    #[serde(default)]
    pub weaviate: Option<evident_store_weaviate::WeaviateConfig>,
    /// `[mongo]`: needed when a role is on MongoDB.
    #[serde(default)]
    pub mongo: Option<evident_store_mongo::MongoConfig>,
}

/// Where the graph and the alias registry live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GraphBackend {
    #[default]
    Embedded,
    Arango,
}

/// Where chunks and their vectors live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkBackend {
    #[default]
    Embedded,
    Weaviate,
}

/// Where the queue, the source registry, indexer state and session memory live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueBackend {
    #[default]
    Embedded,
    Mongo,
}

/// `[indexers]`: the loop that polls registered sources.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexerSettings {
    /// How often the loop looks for sources whose interval has passed.
    pub poll_tick_secs: u64,
    /// Sources polled at the same time (a slow mailbox does not hold up the others).
    pub concurrent_polls: usize,
}

/// `[git]`: how the git indexer works.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitSettings {
    /// Mirrors of remote repositories; a relative path is under `store.data_dir`.
    pub mirrors_dir: PathBuf,
    /// Files per structural task and commits per history task.
    pub files_per_task: usize,
    pub commits_per_task: usize,
    /// Sources (files, commits) ingested concurrently within one task.
    pub parallel_ingests: usize,
    /// Token budget of one code chunk.
    pub code_chunk_tokens: usize,
}

/// `[sources]`: sources registered at start-up (they can also be registered by API or CLI).
/// Every kind takes the keys of its API request in snake case (`client`, `project`,
/// `group`, `id`, `interval_secs`, `enabled`, then the kind's settings). The kinds are
/// those of [`evident_sources::KINDS`]: `[[sources.KIND]]` of any other name is refused.
#[derive(Debug, Clone, Default)]
pub struct SourcesConfig {
    /// Folders local sources may read (symlinks resolved; checked at registration and at
    /// every poll). Empty: no local path is allowed, except what the command line names.
    pub roots: Vec<PathBuf>,
    /// `[sources.credentials.NAME]`: the environment variables sources may name for their
    /// credentials, with the clients and hosts each may serve.
    pub credentials:
        std::collections::BTreeMap<String, evident_sources::credentials::CredentialRule>,
    /// The `[[sources.KIND]]` entries, by kind.
    pub entries: std::collections::BTreeMap<String, Vec<toml::Table>>,
}

impl<'de> Deserialize<'de> for SourcesConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        // `deny_unknown_fields` does not combine with `flatten`: kinds are checked here.
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            roots: Vec<PathBuf>,
            #[serde(default)]
            credentials:
                std::collections::BTreeMap<String, evident_sources::credentials::CredentialRule>,
            #[serde(flatten)]
            entries: std::collections::BTreeMap<String, Vec<toml::Table>>,
        }
        let raw = Raw::deserialize(d)?;
        if let Some(unknown) = raw
            .entries
            .keys()
            .find(|k| evident_sources::kind_info(k).is_none())
        {
            return Err(D::Error::custom(format!(
                "unknown field `{unknown}`, expected `roots`, `credentials` or a source kind ({})",
                evident_sources::KINDS
                    .iter()
                    .map(|k| k.kind)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(SourcesConfig {
            roots: raw.roots,
            credentials: raw.credentials,
            entries: raw.entries,
        })
    }
}

impl SourcesConfig {
    /// The entries of one kind.
    pub fn of(&self, kind: &str) -> &[toml::Table] {
        self.entries.get(kind).map_or(&[], Vec::as_slice)
    }
}

use evident_sources::camel_case as camel;

fn to_json(v: &toml::Value) -> serde_json::Value {
    match v {
        toml::Value::String(s) => s.clone().into(),
        toml::Value::Integer(i) => (*i).into(),
        toml::Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, Into::into)
        }
        toml::Value::Boolean(b) => (*b).into(),
        toml::Value::Datetime(d) => d.to_string().into(),
        toml::Value::Array(a) => a.iter().map(to_json).collect(),
        toml::Value::Table(t) => t.iter().map(|(k, v)| (camel(k), to_json(v))).collect(),
    }
}

/// A `[[sources.KIND]]` entry as the JSON body of the kind's registration request: keys
/// in camel case, `client`/`project`/`group` as the scope fields (GitLab and Jira have a
/// `project` setting of their own).
fn request_body(kind: &str, entry: &toml::Table) -> serde_json::Value {
    entry
        .iter()
        .map(|(k, v)| {
            let key = match k.as_str() {
                "client" => "clientId".to_string(),
                "project" if kind != "gitlab" && kind != "jira" => "projectId".to_string(),
                "group" => "groupId".to_string(),
                other => camel(other),
            };
            (key, to_json(v))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

impl Config {
    /// What sources may reach: `[egress]`, `[sources] roots`, the commands of
    /// `[transcription]` and the variables of `[sources.credentials]`.
    pub fn access(&self) -> Result<evident_sources::access::Access, ConfigError> {
        let egress = self.egress.policy().map_err(ConfigError::Invalid)?;
        let commands = evident_sources::commands::Commands::new(&self.transcription)
            .map_err(ConfigError::Invalid)?;
        let credentials =
            evident_sources::credentials::CredentialRules::new(&self.sources.credentials)
                .map_err(ConfigError::Invalid)?;
        Ok(evident_sources::access::Access::new(
            egress,
            evident_sources::access::SourceRoots::new(&self.sources.roots),
        )
        .with_commands(commands)
        .with_credentials(credentials))
    }
}

impl SourcesConfig {
    /// Every non-git entry as `(kind, request)`, in the order of [`evident_sources::KINDS`].
    pub fn requests(
        &self,
    ) -> Result<Vec<(&'static str, evident_sources::SourceRequest)>, ConfigError> {
        let mut out = Vec::new();
        for kind in evident_sources::KINDS
            .iter()
            .map(|k| k.kind)
            .filter(|k| *k != "git")
        {
            for (i, entry) in self.of(kind).iter().enumerate() {
                let req = evident_sources::SourceRequest::from_json(request_body(kind, entry))
                    .map_err(|e| ConfigError::Invalid(format!("sources.{kind}[{i}]: {e}")))?;
                out.push((kind, req));
            }
        }
        Ok(out)
    }

    /// The `[[sources.git]]` entries as registration requests.
    pub fn git_requests(
        &self,
    ) -> Result<Vec<evident_sources::git::service::GitSourceRequest>, ConfigError> {
        self.of("git")
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                serde_json::from_value(request_body("git", entry))
                    .map_err(|e| ConfigError::Invalid(format!("sources.git[{i}]: {e}")))
            })
            .collect()
    }
}

impl GitSettings {
    /// Where mirrors live for a data directory.
    pub fn mirrors(&self, data_dir: &Path) -> PathBuf {
        if self.mirrors_dir.is_absolute() {
            self.mirrors_dir.clone()
        } else {
            data_dir.join(&self.mirrors_dir)
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    pub request_timeout_secs: u64,
    /// Browser origins allowed by CORS (none by default).
    #[serde(default)]
    pub cors_origins: Vec<String>,
    /// The web console's session cookie is `Secure` (behind TLS).
    #[serde(default)]
    pub ui_secure_cookie: bool,
}

/// `[auth]`: who may call the API.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    pub required: bool,
    pub local_token: bool,
    #[serde(default)]
    pub bootstrap_token_env: String,
    pub cache_secs: u64,
    pub rate_limit_per_sec: f64,
    pub rate_limit_burst: f64,
    /// Failed authentications per client address (a second, and the burst); 0: no limit.
    pub failed_auth_per_sec: f64,
    pub failed_auth_burst: f64,
    pub jwt: JwtSettings,
}

fn hour() -> u64 {
    3600
}

/// `[auth.jwt]`: identity-provider tokens.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtSettings {
    pub enabled: bool,
    #[serde(default)]
    pub jwks_file: String,
    /// JWKS fetched over HTTPS through the egress policy, at start and every
    /// `jwks_refresh_secs` (key rotation).
    #[serde(default)]
    pub jwks_url: String,
    #[serde(default = "hour")]
    pub jwks_refresh_secs: u64,
    #[serde(default)]
    pub hs256_secret_env: String,
    #[serde(default)]
    pub issuer: String,
    #[serde(default)]
    pub audience: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    pub data_dir: PathBuf,
    /// Graph and aliases: `embedded` or `arango`.
    #[serde(default)]
    pub graph: GraphBackend,
    /// Chunks: `embedded` or `weaviate`.
    #[serde(default)]
    pub chunks: ChunkBackend,
    /// Queue, source registry, indexer state, session memory: `embedded` or `mongo`.
    #[serde(default)]
    pub queue: QueueBackend,
    /// Bytes the embedded store's in-memory structures may hold (0: no cap): bytes or a
    /// string with a unit (`"4GiB"`).
    #[serde(default, deserialize_with = "size::deserialize")]
    pub memory_budget: u64,
    /// Embedded store: most vectors waiting for the HNSW graph before writes wait (`0`:
    /// unbounded). Every search scans them exactly, so the bound caps what a backlog costs
    /// a search; ingest slows to the indexing rate instead.
    #[serde(default = "default_vector_backlog")]
    pub vector_backlog: usize,
}

fn default_vector_backlog() -> usize {
    evident_store_embedded::vectors::DEFAULT_BACKLOG
}

impl StoreConfig {
    /// Whether any role is served by the embedded store (which then owns `data_dir`).
    pub fn uses_embedded(&self) -> bool {
        self.graph == GraphBackend::Embedded
            || self.chunks == ChunkBackend::Embedded
            || self.queue == QueueBackend::Embedded
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EmbedderKind {
    Static,
    Hashing,
    Ollama,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedderSettings {
    pub kind: EmbedderKind,
    pub dim: usize,
    pub url: String,
    pub model: String,
    pub batch_size: usize,
    pub timeout_secs: u64,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkingSettings {
    pub max_tokens: usize,
    pub min_tokens: usize,
}

impl ChunkingSettings {
    pub fn to_chunking(&self) -> evident_core::chunking::ChunkingConfig {
        evident_core::chunking::ChunkingConfig {
            max_tokens: self.max_tokens,
            min_tokens: self.min_tokens,
        }
    }
}

/// `[gaps]`: what the built-in acquirer of knowledge gaps may do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GapSettings {
    /// Fetch the `http(s)` URLs a gap names (through the egress policy). Default off.
    #[serde(default)]
    pub fetch_urls: bool,
}

/// `[memory]`: how long agent memory lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySettings {
    /// Days a session-log entry lives after it is written (the seed's
    /// `session_memory_ttl_days`).
    pub session_log_ttl_days: u64,
    /// Half-life of a procedure's usage decay in matches, in days: an unused procedure's
    /// score halves every this many days (`evident_kb::procedures`).
    pub procedure_half_life_days: u64,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            session_log_ttl_days: 7,
            procedure_half_life_days: evident_kb::procedures::DEFAULT_HALF_LIFE_DAYS,
        }
    }
}

impl MemorySettings {
    /// The lifetime in seconds, refused when zero or over a year.
    pub fn session_log_ttl_secs(&self) -> Result<u64, ConfigError> {
        match self.session_log_ttl_days {
            1..=366 => Ok(self.session_log_ttl_days * 24 * 3600),
            d => Err(ConfigError::Invalid(format!(
                "memory.session_log_ttl_days = {d}: use 1..=366"
            ))),
        }
    }

    /// The decay's half-life in days, refused when zero or over ten years.
    pub fn procedure_half_life_days(&self) -> Result<u64, ConfigError> {
        match self.procedure_half_life_days {
            1..=3660 => Ok(self.procedure_half_life_days),
            d => Err(ConfigError::Invalid(format!(
                "memory.procedure_half_life_days = {d}: use 1..=3660"
            ))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    pub level: String,
    pub format: LogFormat,
}

impl EmbedderSettings {
    pub fn to_embedder_config(&self) -> Result<EmbedderConfig, ConfigError> {
        match self.kind {
            EmbedderKind::Static => Ok(EmbedderConfig::Static),
            EmbedderKind::Hashing => {
                if self.dim == 0 {
                    return Err(ConfigError::Invalid(
                        "embedder.kind = \"hashing\" needs embedder.dim".into(),
                    ));
                }
                Ok(EmbedderConfig::Hashing { dim: self.dim })
            }
            EmbedderKind::Ollama => {
                if self.url.is_empty() || self.model.is_empty() || self.dim == 0 {
                    return Err(ConfigError::Invalid("embedder.kind = \"ollama\" needs embedder.url, embedder.model and embedder.dim".into()));
                }
                Ok(EmbedderConfig::Ollama(OllamaConfig {
                    url: self.url.clone(),
                    model: self.model.clone(),
                    dim: self.dim,
                    batch_size: self.batch_size,
                    timeout_secs: self.timeout_secs,
                }))
            }
        }
    }
}

fn parse_table(text: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    text.parse::<toml::Table>().map_err(|e| ConfigError::Parse {
        origin: origin.to_string(),
        message: e.to_string(),
    })
}

/// Deep-merges `over` into `base` (tables merge, everything else replaces).
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// An env value is read as a TOML value when it parses as one (numbers, booleans, arrays),
/// otherwise as a plain string.
fn env_value(raw: &str) -> toml::Value {
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()))
}

impl Config {
    /// Loads defaults, then `file` (if any), then the given environment.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut table = parse_table(DEFAULT_TOML, "defaults")?;
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            merge(&mut table, parse_table(&text, &path.display().to_string())?);
        }
        for (name, value) in env {
            let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            let parts: Vec<String> = rest.split("__").map(str::to_lowercase).collect();
            if parts.len() != 2 || parts.iter().any(String::is_empty) {
                return Err(ConfigError::Invalid(format!(
                    "{name}: expected EVIDENT__SECTION__KEY"
                )));
            }
            let mut section = toml::Table::new();
            section.insert(parts[1].clone(), env_value(&value));
            let mut over = toml::Table::new();
            over.insert(parts[0].clone(), toml::Value::Table(section));
            merge(&mut table, over);
        }
        let cfg: Config = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Parse {
                origin: "merged configuration".into(),
                message: e.to_string(),
            })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Loads from the process environment (`EVIDENT_CONFIG` names the file unless `file` is given).
    pub fn from_env(file: Option<&Path>) -> Result<Config, ConfigError> {
        let env_file = std::env::var_os("EVIDENT_CONFIG").map(PathBuf::from);
        Config::load(file.or(env_file.as_deref()), std::env::vars())
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let missing = |role: &str, backend: &str| {
            Err(ConfigError::Invalid(format!(
                "store.{role} = \"{backend}\" needs a [{backend}] section (url and credentials)"
            )))
        };
        if self.store.graph == GraphBackend::Arango && self.arango.is_none() {
            return missing("graph", "arango");
        }
        if self.store.chunks == ChunkBackend::Weaviate && self.weaviate.is_none() {
            return missing("chunks", "weaviate");
        }
        if self.store.queue == QueueBackend::Mongo && self.mongo.is_none() {
            return missing("queue", "mongo");
        }
        self.egress.policy().map_err(ConfigError::Invalid)?;
        if self.server.max_body_bytes < 1024 {
            return Err(ConfigError::Invalid(
                "server.max_body_bytes must be at least 1024".into(),
            ));
        }
        if self.chunking.max_tokens < 16 || self.chunking.min_tokens >= self.chunking.max_tokens {
            return Err(ConfigError::Invalid(
                "chunking.max_tokens must be ≥ 16 and above chunking.min_tokens".into(),
            ));
        }
        if self.queue.heartbeat_secs == 0 || self.queue.heartbeat_secs * 2 > self.queue.lease_secs {
            return Err(ConfigError::Invalid(
                "queue.heartbeat_secs must be ≥ 1 and at most half of queue.lease_secs".into(),
            ));
        }
        if self.queue.backoff_initial_secs == 0
            || self.queue.backoff_cap_secs < self.queue.backoff_initial_secs
        {
            return Err(ConfigError::Invalid(
                "queue.backoff_initial_secs must be ≥ 1 and ≤ queue.backoff_cap_secs".into(),
            ));
        }
        if self.indexers.poll_tick_secs == 0 || self.indexers.concurrent_polls == 0 {
            return Err(ConfigError::Invalid(
                "indexers: poll_tick_secs and concurrent_polls must be ≥ 1".into(),
            ));
        }
        if self.git.files_per_task == 0
            || self.git.commits_per_task == 0
            || self.git.parallel_ingests == 0
            || self.git.code_chunk_tokens < 32
        {
            return Err(ConfigError::Invalid(
                "git: files_per_task, commits_per_task and parallel_ingests must be ≥ 1, code_chunk_tokens ≥ 32".into(),
            ));
        }
        let access = self.access()?;
        for (i, g) in self.sources.git_requests()?.iter().enumerate() {
            let source = g
                .to_source(0)
                .map_err(|e| ConfigError::Invalid(format!("sources.git[{i}]: {e}")))?;
            evident_sources::check_named(&source, &access)
                .map_err(|e| ConfigError::Invalid(format!("sources.git[{i}]: {e}")))?;
        }
        for (i, (kind, req)) in self.sources.requests()?.iter().enumerate() {
            let source = req
                .to_source(kind, 0)
                .map_err(|e| ConfigError::Invalid(format!("sources ({kind} entry {i}): {e}")))?;
            // A configured source names configured commands and allowed credential
            // variables, like any other.
            evident_sources::check_named(&source, &access)
                .map_err(|e| ConfigError::Invalid(format!("sources ({kind} entry {i}): {e}")))?;
        }
        if self.write_pools.interactive == 0 || self.write_pools.bulk == 0 {
            return Err(ConfigError::Invalid("write_pools sizes must be ≥ 1".into()));
        }
        self.embedder.to_embedder_config().map(|_| ())
    }
}

pub mod size;
#[cfg(test)]
mod tests;
