//! `evident source`: register (git, or any kind from `key=value` settings), list and
//! remove the sources the indexers poll.

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use evident_sources::git::service::GitSourceRequest;
use serde_json::{Value, json};

use crate::cli::{ScopeArgs, Server};
use crate::client::Client;

#[derive(Args)]
pub(crate) struct SourceArgs {
    #[command(subcommand)]
    op: SourceOp,
    #[command(flatten)]
    scope: ScopeArgs,
    #[command(flatten)]
    server: Server,
}

#[derive(Subcommand)]
enum SourceOp {
    /// Follow a source: `git LOCATION`, or any other kind with its settings as KEY=VALUE
    /// (`evident source add mbox path=/srv/mail/team.mbox`, `evident source add github
    /// repo=acme/shop token_env=GITHUB_TOKEN interval_secs=600`).
    Add {
        #[command(subcommand)]
        kind: AddSource,
    },
    /// Registered sources with their polling status.
    Ls,
    /// Stop following a source and remove what it indexed.
    Rm { id: String },
}

#[derive(Subcommand)]
enum AddSource {
    /// A git repository (URL or local path).
    Git(GitSource),
    /// mbox, maildir, imap, github, gitlab, jira, confluence, transcripts, documents, web:
    /// KIND KEY=VALUE… (values are JSON when they parse as JSON, text otherwise).
    #[command(external_subcommand)]
    Other(Vec<String>),
}

// The arguments of `source add git` (a plain comment: the variant's doc is its help).
#[derive(Args)]
struct GitSource {
    /// Clone URL (https, file://) or path of a local repository.
    location: String,
    /// Name in node keys (default: from the location).
    #[arg(long)]
    name: Option<String>,
    /// Source id (default: CLIENT.NAME).
    #[arg(long)]
    id: Option<String>,
    /// Branch name or glob to follow (repeatable; default: the default branch).
    #[arg(long = "branch")]
    branches: Vec<String>,
    /// Polling interval in seconds.
    #[arg(long)]
    interval: Option<u64>,
    /// Environment variable (on the server) holding the access token.
    #[arg(long)]
    token_env: Option<String>,
    /// Where `#12` in commit messages points, e.g. `github:owner/repo`.
    #[arg(long)]
    issue_tracker: Option<String>,
}

/// The body of `source add KIND KEY=VALUE…`: relative paths that exist become absolute.
fn settings_body(pairs: &[String]) -> anyhow::Result<serde_json::Value> {
    let mut body = serde_json::Map::new();
    for pair in pairs {
        let (k, v) = pair
            .split_once('=')
            .with_context(|| format!("`{pair}`: settings are KEY=VALUE"))?;
        let key = evident_sources::camel_case(k.trim_start_matches("--"));
        let mut value: serde_json::Value =
            serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
        if let Some(text) = value.as_str() {
            let p = std::path::Path::new(text);
            if (key == "path" || key.ends_with("File")) && p.is_relative() && p.exists() {
                value = json!(
                    p.canonicalize()
                        .with_context(|| format!("resolving {text}"))?
                );
            }
        }
        body.insert(key, value);
    }
    Ok(serde_json::Value::Object(body))
}

/// What a source follows, for listings.
fn source_target(s: &serde_json::Value) -> String {
    let c = &s["config"];
    for key in ["name", "repo", "path", "host", "project", "space"] {
        if let Some(v) = c[key].as_str() {
            return v.to_string();
        }
    }
    c["urls"][0].as_str().unwrap_or("?").to_string()
}

/// The scope flags into a kind's flat settings (`evident source add KIND key=value…`).
fn scope_json(scope: &ScopeArgs, body: &mut Value) {
    for (k, v) in [
        ("clientId", &scope.client),
        ("projectId", &scope.project),
        ("groupId", &scope.group),
    ] {
        if let Some(v) = v {
            body[k] = json!(v);
        }
    }
}

pub(crate) async fn run(args: SourceArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    let mut scope_q: Vec<(&str, &str)> = Vec::new();
    for (k, v) in [
        ("clientId", &args.scope.client),
        ("projectId", &args.scope.project),
        ("groupId", &args.scope.group),
    ] {
        if let Some(v) = v {
            scope_q.push((k, v));
        }
    }
    match args.op {
        SourceOp::Add {
            kind: AddSource::Git(git),
        } => add_git(&client, &args.scope, git).await,
        SourceOp::Add {
            kind: AddSource::Other(words),
        } => add_other(&args.scope, &args.server, &words).await,
        SourceOp::Ls => list(&client, &scope_q).await,
        SourceOp::Rm { id } => remove(&client, &scope_q, &id).await,
    }
}

/// `source add git LOCATION`: registers a repository (a local path is sent absolute).
async fn add_git(client: &Client, scope: &ScopeArgs, git: GitSource) -> anyhow::Result<()> {
    if scope.client.is_none() {
        bail!("give --client ID");
    }
    let (client_id, project_id, group_id) = scope.ids();
    let GitSource {
        location,
        name,
        id,
        branches,
        interval,
        token_env,
        issue_tracker,
    } = git;
    let mut body = GitSourceRequest {
        client_id,
        project_id,
        group_id,
        id,
        name,
        branches,
        interval_secs: interval,
        token_env,
        issue_tracker,
        ..Default::default()
    };
    let local = std::path::Path::new(&location);
    if local.exists() {
        let abs = local
            .canonicalize()
            .with_context(|| format!("resolving {location}"))?;
        body.path = Some(abs);
    } else {
        body.url = Some(location.clone());
    }
    let out = client.post("/api/v1/sources/git", &body).await?;
    println!(
        "following {} as `{}` (every {} s); `evident source ls --client {}` shows progress",
        location,
        out["id"].as_str().unwrap_or("?"),
        out["intervalSecs"],
        scope.client.as_deref().unwrap_or("")
    );
    Ok(())
}

/// `source add KIND KEY=VALUE…`: registers a source of any other kind from its settings.
async fn add_other(scope: &ScopeArgs, server: &Server, words: &[String]) -> anyhow::Result<()> {
    let Some((kind, rest)) = words.split_first() else {
        bail!(
            "give a kind: git, mbox, maildir, imap, github, gitlab, jira, confluence, transcripts, documents, web"
        );
    };
    let flags = OtherFlags::parse(scope, server, rest)?;
    if flags.scope.client.is_none() {
        bail!("give --client ID");
    }
    let client = Client::new(&flags.server, flags.token.as_deref())?;
    let mut body = settings_body(&flags.pairs)?;
    scope_json(&flags.scope, &mut body);
    let out = client
        .post(
            &format!("/api/v1/sources/{}", crate::client::encode_path(kind)),
            &body,
        )
        .await?;
    println!(
        "following {} source `{}` (every {} s); `evident source ls --client {}` shows progress",
        kind,
        out["id"].as_str().unwrap_or("?"),
        out["intervalSecs"],
        flags.scope.client.as_deref().unwrap_or("")
    );
    Ok(())
}

/// The words after `source add KIND`, which reach us unparsed: the scope and server flags
/// among them, and the rest (the settings).
struct OtherFlags {
    scope: ScopeArgs,
    server: String,
    token: Option<String>,
    pairs: Vec<String>,
}

impl OtherFlags {
    /// Takes the scope and server flags (`--flag VALUE` or `--flag=VALUE`) out of `rest`,
    /// starting from those given before the kind; the rest are settings.
    fn parse(scope: &ScopeArgs, server: &Server, rest: &[String]) -> anyhow::Result<Self> {
        let mut out = OtherFlags {
            scope: ScopeArgs {
                client: scope.client.clone(),
                project: scope.project.clone(),
                group: scope.group.clone(),
            },
            server: server.server.clone(),
            token: server.token.clone(),
            pairs: Vec::new(),
        };
        let mut words = rest.iter();
        while let Some(w) = words.next() {
            let (flag, inline) = match w.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (w.as_str(), None),
            };
            let slot = match flag {
                "--client" => &mut out.scope.client,
                "--project" => &mut out.scope.project,
                "--group" => &mut out.scope.group,
                "--server" => {
                    out.server = inline
                        .or_else(|| words.next().cloned())
                        .context("--server needs a URL")?;
                    continue;
                }
                "--token" => {
                    out.token = Some(
                        inline
                            .or_else(|| words.next().cloned())
                            .context("--token needs a value")?,
                    );
                    continue;
                }
                _ => {
                    out.pairs.push(w.clone());
                    continue;
                }
            };
            *slot = Some(
                inline
                    .or_else(|| words.next().cloned())
                    .with_context(|| format!("{flag} needs a value"))?,
            );
        }
        Ok(out)
    }
}

/// `source ls`: one line per source with what it follows, its state and its last poll.
async fn list(client: &Client, scope_q: &[(&str, &str)]) -> anyhow::Result<()> {
    let out = client.get("/api/v1/indexers", scope_q).await?;
    println!(
        "{:<28} {:<11} {:<28} {:<10}  last poll",
        "id", "kind", "following", "status"
    );
    for s in out["sources"].as_array().cloned().unwrap_or_default() {
        let status = &s["status"];
        let state = if status["lastError"].is_string() {
            "error"
        } else if status["lastPollAt"].is_number() {
            "ok"
        } else {
            "pending"
        };
        println!(
            "{:<28} {:<11} {:<28} {:<10}  {}{}",
            s["id"].as_str().unwrap_or("?"),
            s["kind"].as_str().unwrap_or("?"),
            source_target(&s),
            state,
            serde_json::to_string(&status["stats"]).unwrap_or_default(),
            status["lastError"]
                .as_str()
                .map(|e| format!("  ({e})"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

/// `source rm ID`: removes a visible source (its kind looked up first) and queues its purge.
async fn remove(client: &Client, scope_q: &[(&str, &str)], id: &str) -> anyhow::Result<()> {
    let all = client.get("/api/v1/indexers", scope_q).await?;
    let kind = all["sources"]
        .as_array()
        .and_then(|list| list.iter().find(|s| s["id"] == json!(id)))
        .and_then(|s| s["kind"].as_str())
        .map(str::to_string)
        .with_context(|| format!("no source `{id}` visible to this client"))?;
    let out = client
        .delete(
            &format!(
                "/api/v1/sources/{}/{}",
                crate::client::encode_path(&kind),
                crate::client::encode_path(id)
            ),
            scope_q,
        )
        .await?;
    println!(
        "removed {id}; purge queued as {}",
        out["taskId"].as_str().unwrap_or("?")
    );
    Ok(())
}
