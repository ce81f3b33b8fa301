//! `evident token create|ls|revoke`: API keys of a running server (needs an admin token;
//! a local server's operator token is picked up by default).

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

#[derive(Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    op: TokenOp,
    #[command(flatten)]
    server: crate::cli::Server,
}

#[derive(Subcommand)]
enum TokenOp {
    /// Create a token; its secret is printed once and never shown again.
    Create {
        /// The client it covers (omit for `--role operator`).
        #[arg(long)]
        client: Option<String>,
        /// Narrow it to these projects (repeatable).
        #[arg(long = "project")]
        projects: Vec<String>,
        /// Narrow it to these groups (repeatable).
        #[arg(long = "group")]
        groups: Vec<String>,
        /// read, write, admin or operator.
        #[arg(long)]
        role: String,
        /// Lifetime such as `30d`, `12h` (default: until revoked).
        #[arg(long)]
        expires: Option<String>,
        /// A name for listings and the audit log.
        #[arg(long)]
        name: Option<String>,
        /// Print the JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// List tokens (never their secrets).
    Ls {
        #[arg(long)]
        client: Option<String>,
    },
    /// Revoke a token by id.
    Revoke { id: String },
}

fn expiry_secs(text: &str) -> anyhow::Result<u64> {
    let d = humantime::parse_duration(text)
        .with_context(|| format!("--expires {text}: use a duration such as 30d or 12h"))?;
    if d.as_secs() == 0 {
        bail!("--expires must be at least a second");
    }
    Ok(d.as_secs())
}

pub async fn run(args: TokenArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    match args.op {
        TokenOp::Create {
            client: client_id,
            projects,
            groups,
            role,
            expires,
            name,
            json: as_json,
        } => {
            let mut body = json!({ "role": role, "projects": projects, "groups": groups });
            if let Some(c) = client_id {
                body["clientId"] = c.into();
            }
            if let Some(n) = name {
                body["name"] = n.into();
            }
            if let Some(e) = expires {
                body["expiresInSecs"] = expiry_secs(&e)?.into();
            }
            let out = client.post("/api/v1/tokens", &body).await?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                println!("{}", out["secret"].as_str().unwrap_or(""));
                eprintln!(
                    "token {} ({}) created — the secret above is shown once; store it now",
                    out["token"]["id"].as_str().unwrap_or("?"),
                    describe(&out["token"])
                );
            }
        }
        TokenOp::Ls { client: client_id } => {
            let query: Vec<(&str, &str)> = client_id
                .as_deref()
                .map(|c| vec![("clientId", c)])
                .unwrap_or_default();
            let out = client.get("/api/v1/tokens", &query).await?;
            for t in out["tokens"].as_array().into_iter().flatten() {
                let state = if t.get("revokedAt").is_some() {
                    "revoked"
                } else {
                    "live"
                };
                println!(
                    "{}\t{}\t{}\t{}",
                    t["id"].as_str().unwrap_or("?"),
                    state,
                    describe(t),
                    t["name"].as_str().unwrap_or("")
                );
            }
        }
        TokenOp::Revoke { id } => {
            let out = client
                .delete(
                    &format!("/api/v1/tokens/{}", crate::client::encode_path(&id)),
                    &[],
                )
                .await?;
            println!("revoked {}", out["id"].as_str().unwrap_or(&id));
        }
    }
    Ok(())
}

fn describe(token: &Value) -> String {
    let g = &token["grant"];
    let mut s = g["role"].as_str().unwrap_or("?").to_string();
    match g["clientId"].as_str() {
        Some(c) => s.push_str(&format!(" of client {c}")),
        None => s.push_str(" of every client"),
    }
    for (key, label) in [("projects", "projects"), ("groups", "groups")] {
        if let Some(v) = g[key].as_array().filter(|v| !v.is_empty()) {
            let names: Vec<&str> = v.iter().filter_map(Value::as_str).collect();
            s.push_str(&format!(", {label} {}", names.join(",")));
        }
    }
    s
}
