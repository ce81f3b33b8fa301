//! Agent memory of a running server (README *Agent memory*): `evident knowledge add|context`,
//! `evident outcome record FILE`.

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

fn text_or_stdin(text: String) -> anyhow::Result<String> {
    if text == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).context("reading stdin")?;
        Ok(s)
    } else {
        Ok(text)
    }
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
            body["content"] = text_or_stdin(content)?.into();
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
