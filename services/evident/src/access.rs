//! Authentication set-up of `evident serve`: the API's [`AuthConfig`] from `[auth]`, the
//! local operator token of a loopback server, the bootstrap token of a deployment, and the
//! refusal to serve a network address without authentication.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use evident_api::auth::{AuthConfig, jwt::JwtVerifier, rate::RateLimit};
use evident_core::access::{Grant, token_hash};
use evident_runtime::config::AuthSettings;
use evident_store::access::{AccessStore, TokenRecord};

/// Name of the local token file in the data directory.
pub const LOCAL_TOKEN_FILE: &str = "local-token";

/// The API's authentication from `[auth]`, refusing an unsafe combination with `listen`.
/// A JWKS URL is fetched through `egress` (and again every `jwks_refresh_secs`, until
/// `cancel`).
pub async fn auth_config(
    settings: &AuthSettings,
    listen: SocketAddr,
    egress: &evident_egress::EgressPolicy,
    cancel: &tokio_util::sync::CancellationToken,
) -> anyhow::Result<AuthConfig> {
    let loopback = listen.ip().is_loopback();
    if !settings.required && !loopback {
        bail!(
            "refusing to listen on {listen} with `auth.required = false`: anyone on the network \
             would be an operator. Turn authentication on, or listen on 127.0.0.1."
        );
    }
    let jwt = if settings.jwt.enabled {
        let fetcher = match settings.jwt.jwks_url.as_str() {
            "" => None,
            url => Some(JwksFetcher::new(url, egress)?),
        };
        let jwks = match (settings.jwt.jwks_file.as_str(), &fetcher) {
            ("", None) => None,
            ("", Some(f)) => Some(f.fetch().await?),
            (path, None) => Some(
                std::fs::read_to_string(path)
                    .with_context(|| format!("reading auth.jwt.jwks_file {path}"))?,
            ),
            (_, Some(_)) => bail!("auth.jwt: set jwks_file or jwks_url, not both"),
        };
        let secret = match settings.jwt.hs256_secret_env.as_str() {
            "" => None,
            var => Some(std::env::var(var).with_context(|| {
                format!("auth.jwt.hs256_secret_env names {var}, which is not set")
            })?),
        };
        if jwks.is_none() && secret.is_none() {
            bail!("auth.jwt is enabled but names neither jwks_file nor hs256_secret_env");
        }
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
        let verifier = Arc::new(
            JwtVerifier::new(
                jwks.as_deref(),
                secret.as_deref().map(str::as_bytes),
                non_empty(&settings.jwt.issuer),
                non_empty(&settings.jwt.audience),
            )
            .context("auth.jwt")?,
        );
        if let Some(f) = fetcher {
            tokio::spawn(f.refresh(
                verifier.clone(),
                Duration::from_secs(settings.jwt.jwks_refresh_secs.max(60)),
                cancel.clone(),
            ));
        }
        Some(verifier)
    } else {
        None
    };
    let rate_limit = (settings.rate_limit_per_sec > 0.0).then_some(RateLimit {
        per_sec: settings.rate_limit_per_sec,
        burst: settings.rate_limit_burst.max(1.0),
    });
    let failed_auth = (settings.failed_auth_per_sec > 0.0).then_some(RateLimit {
        per_sec: settings.failed_auth_per_sec,
        burst: settings.failed_auth_burst.max(1.0),
    });
    Ok(AuthConfig {
        required: settings.required,
        jwt,
        rate_limit,
        cache_ttl: Duration::from_secs(settings.cache_secs),
        failed_auth,
    })
}

/// Tokens a fresh server provides: the bootstrap token (when its variable is set) and, on
/// loopback, the local token file. Fails when a network-facing server would have no way in.
pub async fn provision(
    settings: &AuthSettings,
    listen: SocketAddr,
    data_dir: &Path,
    store: &Arc<dyn AccessStore>,
    now: i64,
) -> anyhow::Result<Option<PathBuf>> {
    if !settings.required {
        eprintln!(
            "warning: authentication is off (auth.required = false); every caller is an operator"
        );
        return Ok(None);
    }
    let mut has_way_in = settings.jwt.enabled;
    if !settings.bootstrap_token_env.is_empty() {
        match std::env::var(&settings.bootstrap_token_env) {
            Ok(secret) if secret.len() >= 32 => {
                ensure_token(
                    store,
                    "tok_bootstrap",
                    "bootstrap operator token",
                    &secret,
                    now,
                )
                .await?;
                has_way_in = true;
            }
            Ok(_) => bail!(
                "{} must hold at least 32 characters (a random secret)",
                settings.bootstrap_token_env
            ),
            Err(_) => {}
        }
    }
    let mut local = None;
    if listen.ip().is_loopback() && settings.local_token {
        local = Some(local_token(data_dir, store, now).await?);
        has_way_in = true;
    }
    if !has_way_in
        && store
            .list_tokens(None)
            .await?
            .iter()
            .all(|t| !t.is_live(now))
    {
        bail!(
            "authentication is on but nothing can authenticate: set {} (auth.bootstrap_token_env) \
             to an operator secret, enable auth.jwt, or create a token first",
            if settings.bootstrap_token_env.is_empty() {
                "a bootstrap token variable"
            } else {
                settings.bootstrap_token_env.as_str()
            }
        );
    }
    Ok(local)
}

/// Stores a token for `secret` under `id` unless it is there already (re-created after a
/// revocation or a changed secret).
async fn ensure_token(
    store: &Arc<dyn AccessStore>,
    id: &str,
    name: &str,
    secret: &str,
    now: i64,
) -> anyhow::Result<()> {
    let hash = token_hash(secret);
    if let Some(t) = store.token_by_hash(&hash).await? {
        if t.is_live(now) {
            return Ok(());
        }
        bail!("the token in the bootstrap variable was revoked; set a new secret");
    }
    // A new secret for the same id: the old record is revoked and kept under a dated id.
    let id = match store.token(id).await? {
        None => id.to_string(),
        Some(_) => {
            store.revoke_token(id, now).await?;
            format!("{id}_{now}")
        }
    };
    store
        .create_token(operator_token(id, name, hash, now))
        .await?;
    Ok(())
}

/// An operator token minted by `serve` itself (bootstrap or local), never expiring.
fn operator_token(id: String, name: &str, secret_hash: String, now: i64) -> TokenRecord {
    TokenRecord {
        id,
        name: name.into(),
        secret_hash,
        grant: Grant::operator(),
        created_at: now,
        expires_at: None,
        revoked_at: None,
        created_by: Some("serve".into()),
    }
}

/// The local operator token: reused while it is live, else minted and written with mode 0600.
async fn local_token(
    data_dir: &Path,
    store: &Arc<dyn AccessStore>,
    now: i64,
) -> anyhow::Result<PathBuf> {
    let path = data_dir.join(LOCAL_TOKEN_FILE);
    if let Ok(secret) = std::fs::read_to_string(&path) {
        let secret = secret.trim();
        if let Some(t) = store.token_by_hash(&token_hash(secret)).await?
            && t.is_live(now)
        {
            return Ok(path);
        }
    }
    let (id, secret) =
        evident_api::auth::new_token_secret().map_err(|e| anyhow::anyhow!("{}", e.message))?;
    store
        .create_token(operator_token(
            format!("{id}_local"),
            "local operator token",
            token_hash(&secret),
            now,
        ))
        .await?;
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    write_private(&path, &secret)?;
    Ok(path)
}

fn write_private(path: &Path, secret: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    // `mode` applies only to a file it creates: a leftover temp file is narrowed too.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    f.write_all(secret.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The token the CLI sends: `--token` / `EVIDENT_TOKEN`, else the local token file of the
/// default data directory (`./evident-data`, or `EVIDENT__STORE__DATA_DIR`).
pub fn cli_token(explicit: Option<&str>) -> Option<String> {
    if let Some(t) = explicit.filter(|t| !t.is_empty()) {
        return Some(t.to_string());
    }
    let dir = std::env::var("EVIDENT__STORE__DATA_DIR").unwrap_or_else(|_| "./evident-data".into());
    std::fs::read_to_string(Path::new(&dir).join(LOCAL_TOKEN_FILE))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Fetches a JWKS document over HTTPS through the egress policy.
struct JwksFetcher {
    url: String,
    http: reqwest::Client,
}

impl JwksFetcher {
    fn new(url: &str, egress: &evident_egress::EgressPolicy) -> anyhow::Result<JwksFetcher> {
        let parsed = url::Url::parse(url).with_context(|| format!("auth.jwt.jwks_url {url}"))?;
        if parsed.scheme() != "https" {
            bail!("auth.jwt.jwks_url must be https: {url}");
        }
        egress
            .check_literal(&parsed)
            .map_err(|e| anyhow::anyhow!("auth.jwt.jwks_url: {e}"))?;
        let http = egress
            .client_builder()
            .timeout(Duration::from_secs(20))
            .build()
            .context("building the JWKS client")?;
        Ok(JwksFetcher {
            url: url.to_string(),
            http,
        })
    }

    async fn fetch(&self) -> anyhow::Result<String> {
        let resp = self
            .http
            .get(&self.url)
            .send()
            .await
            .with_context(|| format!("fetching the JWKS at {}", self.url))?;
        if !resp.status().is_success() {
            bail!("fetching the JWKS at {}: HTTP {}", self.url, resp.status());
        }
        resp.text()
            .await
            .with_context(|| format!("reading the JWKS at {}", self.url))
    }

    /// Fetches the document again every `every`; a failed fetch keeps the current keys.
    async fn refresh(
        self,
        verifier: Arc<JwtVerifier>,
        every: Duration,
        cancel: tokio_util::sync::CancellationToken,
    ) {
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
            match self.fetch().await {
                Ok(text) => match verifier.replace_keys(&text) {
                    Ok(n) => tracing::info!(keys = n, url = %self.url, "JWKS refreshed"),
                    Err(e) => {
                        tracing::warn!(error = %e, url = %self.url, "JWKS refresh refused; keeping the current keys")
                    }
                },
                Err(e) => {
                    tracing::warn!(error = %e, "JWKS refresh failed; keeping the current keys")
                }
            }
        }
    }
}
