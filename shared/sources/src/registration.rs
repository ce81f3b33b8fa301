//! Registering continuously polled sources of every kind (API, CLI, configuration file):
//! one flat request shape — the common fields (`clientId`, `projectId`, `groupId`, `id`,
//! `intervalSecs`, `enabled`) beside the kind's own settings — checked by the kind before
//! anything is stored.
//!
//! Everything a source writes lives under the URN prefix `{family}:{id}:` (`mail:inbox:…`,
//! `tracker:shop-issues:…`), which is what unregistering purges.

use evident_ai::Priority;
use evident_core::{Visibility, validate};
use evident_kb::{Kb, KbError, TaskSubmitter};
use evident_store::indexers::{IndexerSource, PollStatus, SourceKey};
use evident_store::queue::{Millis, TaskRecord};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::access::{Access, AccessError};

/// Polling interval when none is given.
pub const DEFAULT_INTERVAL_SECS: u64 = 300;

/// The settings of one kind of source, as stored in [`IndexerSource::config`].
pub trait SourceConfig: DeserializeOwned + Serialize {
    /// The `kind` it is registered under (`mbox`, `github`, …).
    const KIND: &'static str;
    /// The URN namespace of what it writes (`mail`, `tracker`, …).
    const FAMILY: &'static str;
    /// Checks what deserialisation cannot (paths absolute, URLs well-formed, …).
    fn validate(&self) -> Result<(), String>;
    /// A readable name for the default id (`{client}.{name}`).
    fn name(&self) -> String;
    /// The local paths it reads: each must lie under `[sources] roots`.
    fn local_paths(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }
    /// The URLs it fetches: each must pass the egress policy.
    fn remote_urls(&self) -> Vec<String> {
        Vec::new()
    }
    /// The operator's transcription commands it names ([`crate::commands`]): each must be
    /// configured.
    fn commands(&self) -> Vec<String> {
        Vec::new()
    }
    /// The environment variables it names for credentials, with their setting's name
    /// (`("tokenEnv", "GITHUB_TOKEN")`): each must be allowed for the source's client and
    /// hosts ([`crate::credentials`]).
    fn credential_envs(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// Settings that passed their kind's checks, with what access they need.
struct Checked {
    config: Value,
    name: String,
    paths: Vec<std::path::PathBuf>,
    urls: Vec<String>,
    commands: Vec<String>,
    envs: Vec<(&'static str, String)>,
}

impl Checked {
    /// Every check of [`Access`] but the resolution of host names: paths under the roots,
    /// URL literals, commands configured, credential variables allowed for `client`.
    fn check_local(&self, access: &Access, client: &str) -> Result<(), AccessError> {
        for p in &self.paths {
            access.path(p)?;
        }
        for u in &self.urls {
            access.url_literal(u)?;
        }
        self.check_named(access, client)
    }

    /// The commands configured, the credential variables allowed for `client`.
    fn check_named(&self, access: &Access, client: &str) -> Result<(), AccessError> {
        for c in &self.commands {
            access.commands.transcription(c)?;
        }
        for (field, env) in &self.envs {
            access.credentials.check(field, env, client, &self.urls)?;
        }
        Ok(())
    }
}

/// Settings that make the server run a program, by kind (JSON paths into the settings). A
/// source may only name one of the operator's commands there (a string); a program and its
/// arguments are refused for every role, whatever the kind's own parsing would say.
const PROGRAM_SETTINGS: &[(&str, &[&str])] = &[("transcripts", &["recordings", "command"])];

/// Refuses a program (anything but a command's name) in `config`'s program settings.
pub fn refuse_programs(kind: &str, config: &Map<String, Value>) -> Result<(), KbError> {
    for (k, path) in PROGRAM_SETTINGS {
        if *k != kind {
            continue;
        }
        let mut at = config.get(path[0]);
        for key in &path[1..] {
            at = at.and_then(|v| v.get(key));
        }
        if at.is_some_and(|v| !v.is_string()) {
            let field = path.join(".");
            return Err(KbError::BadRequest {
                code: "command_not_allowed",
                message: format!(
                    "`{field}` names one of the server's transcription commands (a string); a program and its arguments are never accepted from a request or a source's settings: the operator defines commands in the server's configuration ([transcription.commands.NAME])"
                ),
            });
        }
    }
    Ok(())
}

/// A registrable kind: its names and how its settings are checked.
pub struct KindInfo {
    pub kind: &'static str,
    pub family: &'static str,
    check: fn(Value) -> Result<Checked, String>,
}

fn check<C: SourceConfig>(config: Value) -> Result<Checked, String> {
    let c: C = serde_json::from_value(config).map_err(|e| e.to_string())?;
    c.validate()?;
    // No file name holds a NUL byte: refused here rather than failing at every poll.
    if let Some(p) = c
        .local_paths()
        .iter()
        .find(|p| p.as_os_str().as_encoded_bytes().contains(&0))
    {
        return Err(format!(
            "the path `{}` contains a NUL byte",
            p.display().to_string().escape_debug()
        ));
    }
    Ok(Checked {
        config: serde_json::to_value(&c).map_err(|e| e.to_string())?,
        name: c.name(),
        paths: c.local_paths(),
        urls: c.remote_urls(),
        commands: c.commands(),
        envs: c.credential_envs(),
    })
}

const fn kind<C: SourceConfig>() -> KindInfo {
    KindInfo {
        kind: C::KIND,
        family: C::FAMILY,
        check: check::<C>,
    }
}

/// Every kind a source can be registered as.
pub const KINDS: &[KindInfo] = &[
    kind::<crate::kinds::git::GitSourceConfig>(),
    kind::<crate::kinds::mail::MboxConfig>(),
    kind::<crate::kinds::mail::MaildirConfig>(),
    kind::<crate::kinds::mail::ImapConfig>(),
    kind::<crate::kinds::tracker::GithubConfig>(),
    kind::<crate::kinds::tracker::GitlabConfig>(),
    kind::<crate::kinds::tracker::JiraConfig>(),
    kind::<crate::kinds::wiki::ConfluenceConfig>(),
    kind::<crate::kinds::meetings::TranscriptsConfig>(),
    kind::<crate::kinds::documents::DocumentsConfig>(),
    kind::<crate::kinds::documents::WebConfig>(),
];

pub fn kind_info(kind: &str) -> Option<&'static KindInfo> {
    KINDS.iter().find(|k| k.kind == kind)
}

/// The URN prefix of everything a source wrote.
pub fn urn_prefix(kind: &str, id: &str) -> String {
    let family = kind_info(kind).map_or(kind, |k| k.family);
    format!("{family}:{id}:")
}

/// Reads a source's settings back (they were checked at registration).
pub fn config_of<C: SourceConfig>(source: &IndexerSource) -> Result<C, String> {
    if source.kind != C::KIND {
        return Err(format!(
            "source `{}` is a {} source, not {}",
            source.id,
            source.kind,
            C::KIND
        ));
    }
    serde_json::from_value(source.config.clone())
        .map_err(|e| format!("source `{}` has unreadable settings: {e}", source.id))
}

pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> KbError {
    validate::FieldError::Invalid {
        field,
        reason: reason.into(),
    }
    .into()
}

pub(crate) fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// A source id: 1..=128 chars of `[a-z0-9._-]`.
pub fn check_id(id: &str) -> Result<(), KbError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_')
        });
    if ok {
        Ok(())
    } else {
        Err(invalid("id", "use 1..=128 of a-z, 0-9, '.', '-', '_'"))
    }
}

pub(crate) fn check_interval(interval: u64) -> Result<u64, KbError> {
    if (5..=7 * 86_400).contains(&interval) {
        Ok(interval)
    } else {
        Err(invalid("intervalSecs", "between 5 seconds and 7 days"))
    }
}

/// The scope a source is registered in: a client is required (sources are never global).
pub(crate) fn registration_scope<'a>(
    client_id: Option<&'a str>,
    project_id: Option<&str>,
    group_id: Option<&str>,
) -> Result<(&'a str, evident_core::Scope), KbError> {
    let client = client_id.ok_or(validate::FieldError::Missing { field: "clientId" })?;
    Ok((
        client,
        evident_kb::scope(Some(client), project_id, group_id)?,
    ))
}

/// `snake_case` → `camelCase`: configuration files and the CLI take the API's setting names
/// in either spelling.
pub fn camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' || c == '-' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The source `id` of the client a task was queued for (`scope`), or `None` once it was
/// unregistered (its tasks are then dropped as done: the purge task cleans up).
pub async fn registered(
    indexers: &dyn evident_store::indexers::IndexerStore,
    scope: &evident_core::Scope,
    id: &str,
) -> Result<Option<IndexerSource>, evident_kb::TaskError> {
    let Some(client) = scope.client_id.as_deref() else {
        tracing::info!(source_id = %id, "task of a source without a client; dropped as done");
        return Ok(None);
    };
    let found = indexers
        .get_source(&SourceKey::new(client, id))
        .await
        .map_err(|e| evident_kb::TaskError::from(KbError::from(e)))?;
    if found.is_none() {
        tracing::info!(client_id = %client, source_id = %id, "source no longer registered; task dropped as done");
    }
    Ok(found)
}

/// `POST /api/v1/sources/{kind}`: the common fields and the kind's settings, side by side.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceRequest {
    pub client_id: Option<String>,
    pub project_id: Option<String>,
    pub group_id: Option<String>,
    /// Default: `{clientId}.{name}` where the kind names the source (a file stem, a project).
    pub id: Option<String>,
    pub interval_secs: Option<u64>,
    pub enabled: Option<bool>,
    /// The kind's settings (unknown keys are refused by the kind).
    pub config: Map<String, Value>,
}

impl SourceRequest {
    /// Splits a flat JSON object into the common fields and the kind's settings.
    pub fn from_json(body: Value) -> Result<SourceRequest, KbError> {
        let Value::Object(mut config) = body else {
            return Err(KbError::Invalid("a source is a JSON object".into()));
        };
        let mut text = |field: &'static str| -> Result<Option<String>, KbError> {
            match config.remove(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(_) => Err(invalid(field, "must be a string")),
            }
        };
        let (client_id, project_id, group_id, id) = (
            text("clientId")?,
            text("projectId")?,
            text("groupId")?,
            text("id")?,
        );
        let interval_secs = match config.remove("intervalSecs") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .ok_or_else(|| invalid("intervalSecs", "must be a whole number"))?,
            ),
        };
        let enabled = match config.remove("enabled") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(b),
            Some(_) => return Err(invalid("enabled", "must be true or false")),
        };
        Ok(SourceRequest {
            client_id,
            project_id,
            group_id,
            id,
            interval_secs,
            enabled,
            config,
        })
    }

    /// The source this request registers as `kind` (its settings validated; what it may
    /// reach is checked by [`Self::to_source_with`]).
    pub fn to_source(&self, kind: &str, now: Millis) -> Result<IndexerSource, KbError> {
        Ok(self.checked(kind, now)?.0)
    }

    /// [`Self::to_source`], and its local paths under `[sources] roots`, its URLs' schemes
    /// and IP literals allowed by the egress policy (host names are resolved and checked by
    /// [`register_with`]), the commands it names configured and its credential variables
    /// allowed.
    pub fn to_source_with(
        &self,
        kind: &str,
        now: Millis,
        access: &Access,
    ) -> Result<IndexerSource, KbError> {
        let (source, checked) = self.checked(kind, now)?;
        let client = source.scope.client_id.as_deref().unwrap_or_default();
        checked.check_local(access, client)?;
        Ok(source)
    }

    /// The source, and what it needs.
    fn checked(&self, kind: &str, now: Millis) -> Result<(IndexerSource, Checked), KbError> {
        let info = kind_info(kind).ok_or_else(|| KbError::NotFound {
            what: format!(
                "source kind `{kind}` (known: {})",
                KINDS.iter().map(|k| k.kind).collect::<Vec<_>>().join(", ")
            ),
        })?;
        // First, whatever else is wrong: a request carrying a program is refused as such.
        refuse_programs(kind, &self.config)?;
        let (client, scope) = registration_scope(
            self.client_id.as_deref(),
            self.project_id.as_deref(),
            self.group_id.as_deref(),
        )?;
        let checked = (info.check)(Value::Object(self.config.clone()))
            .map_err(|r| invalid("source", format!("{kind}: {r}")))?;
        let id = match &self.id {
            Some(id) => id.clone(),
            None => format!("{}.{}", slug(client), slug(&checked.name)),
        };
        check_id(&id)?;
        let source = IndexerSource {
            id,
            kind: kind.to_string(),
            scope,
            config: checked.config.clone(),
            interval_secs: check_interval(self.interval_secs.unwrap_or(DEFAULT_INTERVAL_SECS))?,
            enabled: self.enabled.unwrap_or(true),
            created_at: now,
            updated_at: now,
            status: PollStatus::default(),
        };
        Ok((source, checked))
    }
}

/// Whether registering `req` as `kind` would read local files (a path, a `file://` URL, a CA
/// file): the API requires a stronger role for those. Settings that do not parse name none
/// (their registration fails anyway).
pub fn reads_local_files(kind: &str, req: &SourceRequest) -> bool {
    kind_info(kind)
        .and_then(|k| (k.check)(Value::Object(req.config.clone())).ok())
        .is_some_and(|c| !c.paths.is_empty())
}

/// Checks what a stored source may reach — its local paths under `[sources] roots`, its
/// URLs (resolved) under the egress policy, the commands it names, its credential
/// variables — as registration does.
///
/// Settings that no longer parse pass here: the source's poll reports them (it cannot run
/// anything it cannot read).
pub async fn check_access(source: &IndexerSource, access: &Access) -> Result<(), AccessError> {
    let Some(checked) = kind_info(&source.kind).and_then(|k| (k.check)(source.config.clone()).ok())
    else {
        return Ok(());
    };
    let client = source.scope.client_id.as_deref().unwrap_or_default();
    checked.check_local(access, client)?;
    for u in &checked.urls {
        access.url(u).await?;
    }
    Ok(())
}

/// Checks the commands and the credential variables a stored source names, as registration
/// did (no I/O). Settings that no longer parse pass here: the poll reports them.
pub fn check_named(source: &IndexerSource, access: &Access) -> Result<(), AccessError> {
    match kind_info(&source.kind).and_then(|k| (k.check)(source.config.clone()).ok()) {
        Some(c) => c.check_named(
            access,
            source.scope.client_id.as_deref().unwrap_or_default(),
        ),
        None => Ok(()),
    }
}

/// Stores a checked source. Ids belong to their client: the same id in another client is
/// another source, never a conflict (nothing here reads or reveals another client's ids). An
/// id this client already uses for another kind or another of its scopes is refused (409
/// `source_id_in_use`, naming only this client's source).
pub async fn put(kb: &Kb, source: IndexerSource, now: Millis) -> Result<IndexerSource, KbError> {
    if let Some(existing) = kb.stores().indexers.get_source(&source.key()).await?
        && (existing.scope.partition() != source.scope.partition() || existing.kind != source.kind)
    {
        return Err(KbError::Conflict {
            code: "source_id_in_use",
            message: format!(
                "this client already has a {} source `{}` in scope {}; unregister it or choose another id",
                existing.kind,
                source.id,
                evident_kb::describe_scope(&existing.scope)
            ),
        });
    }
    Ok(kb.stores().indexers.put_source(&source, now).await?)
}

/// Registers (or updates) a source of `kind`, under the process's [`Access`]
/// ([`crate::access::current`]).
pub async fn register(
    kb: &Kb,
    kind: &str,
    req: &SourceRequest,
    now: Millis,
) -> Result<IndexerSource, KbError> {
    register_with(kb, &crate::access::current(), kind, req, now).await
}

/// Registers (or updates) a source of `kind`: settings checked, local paths under
/// `[sources] roots`, URLs allowed by the egress policy (host names resolved).
pub async fn register_with(
    kb: &Kb,
    access: &Access,
    kind: &str,
    req: &SourceRequest,
    now: Millis,
) -> Result<IndexerSource, KbError> {
    let source = req.to_source_with(kind, now, access)?;
    check_access(&source, access).await?;
    put(kb, source, now).await
}

/// Sources the reader may see, of one kind or all.
pub async fn list(
    kb: &Kb,
    vis: &Visibility,
    kind: Option<&str>,
) -> Result<Vec<IndexerSource>, KbError> {
    Ok(kb
        .stores()
        .indexers
        .list_sources(kind)
        .await?
        .into_iter()
        .filter(|s| vis.admits(&s.scope))
        .collect())
}

/// One source, if the reader may see it (and it is of `kind`, when given).
pub async fn get(
    kb: &Kb,
    vis: &Visibility,
    kind: Option<&str>,
    id: &str,
) -> Result<IndexerSource, KbError> {
    let not_found = || KbError::NotFound {
        what: format!("{} source `{id}`", kind.unwrap_or("a")),
    };
    // Sources belong to clients: only the reader's client's source of that id is looked at.
    let client = vis.reader().client_id.as_deref().ok_or_else(not_found)?;
    kb.stores()
        .indexers
        .get_source(&SourceKey::new(client, id))
        .await?
        .filter(|s| kind.is_none_or(|k| s.kind == k) && vis.admits(&s.scope))
        .ok_or_else(not_found)
}

/// Unregisters a source and queues the removal of everything it wrote.
pub async fn unregister(
    kb: &Kb,
    tasks: &TaskSubmitter,
    vis: &Visibility,
    kind: Option<&str>,
    id: &str,
    now: Millis,
) -> Result<TaskRecord, KbError> {
    let source = get(kb, vis, kind, id).await?;
    // Queue the purge first: if the process dies between the two steps, the purge still runs
    // and a second DELETE finds nothing left to do but the registration.
    let task = tasks
        .enqueue_purge_prefix(
            source.scope.clone(),
            &urn_prefix(&source.kind, &source.id),
            Priority::DEFAULT,
            now,
        )
        .await?;
    kb.stores().indexers.delete_source(&source.key()).await?;
    Ok(task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn common_fields_split_from_the_kinds_settings() {
        let req = SourceRequest::from_json(json!({
            "clientId": "acme", "intervalSecs": 60, "enabled": false,
            "path": "/var/mail/team.mbox"
        }))
        .expect("request");
        assert_eq!(req.client_id.as_deref(), Some("acme"));
        assert_eq!(req.interval_secs, Some(60));
        assert_eq!(req.enabled, Some(false));
        assert_eq!(req.config.keys().collect::<Vec<_>>(), vec!["path"]);
        let src = req.to_source("mbox", 1).expect("source");
        assert_eq!(src.id, "acme.team");
        assert_eq!(urn_prefix("mbox", &src.id), "mail:acme.team:");
        assert!(!src.enabled);
    }

    #[test]
    fn bad_requests_say_why() {
        let bad = |v: Value, kind: &str| {
            SourceRequest::from_json(v)
                .and_then(|r| r.to_source(kind, 1))
                .expect_err("refused")
                .to_string()
        };
        assert!(bad(json!({"path": "/x.mbox"}), "mbox").contains("clientId"));
        assert!(bad(json!({"clientId": "a", "path": "/x.mbox"}), "fax").contains("fax"));
        assert!(
            bad(
                json!({"clientId": "a", "path": "/x.mbox", "colour": 1}),
                "mbox"
            )
            .contains("colour")
        );
        assert!(bad(json!({"clientId": "a", "path": "rel.mbox"}), "mbox").contains("absolute"));
        assert!(
            bad(
                json!({"clientId": "a", "path": "/x.mbox", "intervalSecs": 1}),
                "mbox"
            )
            .contains("intervalSecs")
        );
        assert!(bad(json!([1]), "mbox").contains("object"));
    }

    #[test]
    fn local_paths_are_named_and_checked_against_the_roots() {
        let req = |v: Value| SourceRequest::from_json(v).expect("request");
        assert!(reads_local_files(
            "mbox",
            &req(json!({"clientId": "a", "path": "/srv/mail/x.mbox"}))
        ));
        assert!(reads_local_files(
            "git",
            &req(json!({"clientId": "a", "name": "r", "url": "file:///srv/r.git"}))
        ));
        assert!(!reads_local_files(
            "web",
            &req(json!({"clientId": "a", "urls": ["https://example.com/"]}))
        ));
        let access = Access::new(
            evident_egress::EgressPolicy::strict(),
            crate::access::SourceRoots::new(["/srv/mail"]),
        );
        let mbox = |p: &str| req(json!({"clientId": "a", "path": p}));
        assert!(
            mbox("/srv/mail/x.mbox")
                .to_source_with("mbox", 1, &access)
                .is_ok()
        );
        let e = mbox("/etc/passwd")
            .to_source_with("mbox", 1, &access)
            .expect_err("outside");
        assert_eq!(e.code(), "path_not_allowed");
        assert_eq!(e.http_status(), 403);
        let e = req(json!({"clientId": "a", "repo": "a/b", "baseUrl": "http://127.0.0.1:1"}))
            .to_source_with("github", 1, &access)
            .expect_err("loopback");
        assert_eq!(e.code(), "egress_refused");
    }
}
