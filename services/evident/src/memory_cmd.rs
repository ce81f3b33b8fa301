//! Agent memory of a running server (README *Agent memory*): `evident knowledge add|context`,
//! `evident outcome record FILE`, `evident session append|recent`.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

/// The scope every memory command writes or reads.
#[derive(Args)]
struct MemoryScope {
    /// Client id.
    #[arg(long, global = true)]
    client: Option<String>,
    /// Project id (needs --client).
    #[arg(long, global = true)]
    project: Option<String>,
}

impl MemoryScope {
    fn client(&self) -> anyhow::Result<&str> {
        self.client.as_deref().context("give --client ID")
    }

    /// `clientId` and `projectId` for a JSON body.
    fn body(&self) -> anyhow::Result<Value> {
        let mut body = json!({ "clientId": self.client()? });
        if let Some(p) = &self.project {
            body["projectId"] = p.as_str().into();
        }
        Ok(body)
    }

    /// `clientId` and `projectId` for a query string.
    fn query(&self) -> anyhow::Result<Vec<(&'static str, String)>> {
        let mut q = vec![("clientId", self.client()?.to_string())];
        if let Some(p) = &self.project {
            q.push(("projectId", p.clone()));
        }
        Ok(q)
    }
}

fn pairs<'a>(q: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    q.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[derive(Args)]
pub struct KnowledgeArgs {
    #[command(subcommand)]
    op: KnowledgeOp,
    #[command(flatten)]
    scope: MemoryScope,
    #[command(flatten)]
    server: crate::cli::Server,
}

#[derive(Subcommand)]
enum KnowledgeOp {
    /// Store (or update) what is known about the user on one subject.
    Add {
        /// preference, domain, team, tech_stack, personal or general.
        #[arg(long)]
        category: String,
        /// What it is about; the same subject again updates it.
        #[arg(long)]
        subject: String,
        /// The knowledge (`-` reads stdin).
        content: String,
    },
    /// Print the user-context prefetch (Markdown per category, newest first).
    Context {
        /// Size limit in bytes (256..=65536).
        #[arg(long)]
        max_bytes: Option<usize>,
    },
}

pub async fn knowledge(args: KnowledgeArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    match args.op {
        KnowledgeOp::Add {
            category,
            subject,
            content,
        } => {
            let mut body = args.scope.body()?;
            body["category"] = category.into();
            body["subject"] = subject.into();
            body["content"] = crate::client::text_or_stdin(content)?.into();
            let out = client.post("/api/v1/knowledge", &body).await?;
            println!(
                "{} {}",
                out["status"].as_str().unwrap_or("stored"),
                out["sourceUrn"].as_str().unwrap_or("")
            );
        }
        KnowledgeOp::Context { max_bytes } => {
            let mut q = args.scope.query()?;
            if let Some(m) = max_bytes {
                q.push(("maxBytes", m.to_string()));
            }
            let out = client.get("/api/v1/user-context", &pairs(&q)).await?;
            print!("{}", out["markdown"].as_str().unwrap_or(""));
            if out["truncated"] == true {
                eprintln!("(more items than fit in the size limit)");
            }
        }
    }
    Ok(())
}

#[derive(Args)]
pub struct OutcomeArgs {
    #[command(subcommand)]
    op: OutcomeOp,
    #[command(flatten)]
    scope: MemoryScope,
    #[command(flatten)]
    server: crate::cli::Server,
}

#[derive(Subcommand)]
enum OutcomeOp {
    /// Record a finished task's outcome from a JSON file (`-`: stdin) with the fields of
    /// `POST /api/v1/outcomes`; `--client`/`--project` fill in the scope when it names none.
    Record { file: PathBuf },
}

fn read_json(path: &PathBuf) -> anyhow::Result<Value> {
    let text = if path.as_os_str() == "-" {
        crate::client::text_or_stdin("-".into())?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
    };
    serde_json::from_str(&text).with_context(|| format!("{}: not valid JSON", path.display()))
}

pub async fn outcome(args: OutcomeArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    match args.op {
        OutcomeOp::Record { file } => {
            let mut body = read_json(&file)?;
            let Some(obj) = body.as_object_mut() else {
                anyhow::bail!("{}: the outcome must be a JSON object", file.display());
            };
            if !obj.contains_key("clientId") {
                for (k, v) in args.scope.body()?.as_object().into_iter().flatten() {
                    obj.insert(k.clone(), v.clone());
                }
            }
            let out = client.post("/api/v1/outcomes", &body).await?;
            if out["ingested"] == true {
                println!(
                    "queued {} (task {})",
                    out["sourceUrn"].as_str().unwrap_or(""),
                    out["queueTaskId"].as_str().unwrap_or("")
                );
            } else {
                println!(
                    "not ingested: {}",
                    out["reason"].as_str().unwrap_or("not significant")
                );
            }
        }
    }
    Ok(())
}

#[derive(Args)]
pub struct SessionArgs {
    #[command(subcommand)]
    op: SessionOp,
    #[command(flatten)]
    scope: MemoryScope,
    #[command(flatten)]
    server: crate::cli::Server,
}

#[derive(Subcommand)]
enum SessionOp {
    /// Append a note (≤ 200 characters) to the session log of --client [--project].
    Append {
        /// chat, background or orchestrator_decision.
        #[arg(long, default_value = "chat")]
        source: String,
        /// The task it refers to.
        #[arg(long)]
        task: Option<String>,
        /// Details as a JSON object.
        #[arg(long)]
        details: Option<String>,
        /// The note (`-` reads stdin).
        summary: String,
    },
    /// Print the newest entries, newest first (`TIME  SOURCE  SUMMARY`).
    Recent {
        /// How many, 1..=50.
        #[arg(long, default_value_t = 10)]
        n: usize,
        /// Print the JSON answer.
        #[arg(long)]
        json: bool,
    },
}

pub async fn session(args: SessionArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    match args.op {
        SessionOp::Append {
            source,
            task,
            details,
            summary,
        } => {
            let mut body = args.scope.body()?;
            body["source"] = source.into();
            body["summary"] = crate::client::text_or_stdin(summary)?.trim().into();
            if let Some(t) = task {
                body["taskId"] = t.into();
            }
            if let Some(d) = details {
                let details: Value =
                    serde_json::from_str(&d).context("--details must be a JSON object")?;
                body["details"] = details;
            }
            let out = client.post("/api/v1/session-memory", &body).await?;
            println!("appended at {}", out["timestamp"]);
        }
        SessionOp::Recent { n, json: as_json } => {
            let mut q = args.scope.query()?;
            q.push(("recent", n.to_string()));
            let out = client.get("/api/v1/session-memory", &pairs(&q)).await?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&out)?);
                return Ok(());
            }
            for e in out["entries"].as_array().into_iter().flatten() {
                let at = e["timestamp"]
                    .as_u64()
                    .map(|ms| {
                        humantime::format_rfc3339_seconds(
                            std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms),
                        )
                        .to_string()
                    })
                    .unwrap_or_default();
                println!(
                    "{at}\t{}\t{}",
                    e["source"].as_str().unwrap_or(""),
                    e["summary"].as_str().unwrap_or("")
                );
            }
        }
    }
    Ok(())
}
