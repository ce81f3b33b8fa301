//! `evident gaps …`: report, list, claim, show, answer and fail knowledge gaps of a running
//! server (`/api/v1/gaps…`); and the bodies `evident graph add-node|add-edge` send.

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::cli::{ScopeArgs, Server};
use crate::client::{Client, encode_path};

#[derive(Args)]
pub struct GapsArgs {
    #[command(subcommand)]
    op: GapsOp,
    #[command(flatten)]
    scope: ScopeArgs,
    #[command(flatten)]
    server: Server,
}

#[derive(Subcommand)]
enum GapsOp {
    /// Report one or more questions (one gap each).
    Report {
        /// The questions.
        #[arg(required = true)]
        questions: Vec<String>,
        #[arg(long)]
        context: Option<String>,
        /// 0 (most urgent) ..= 9.
        #[arg(long)]
        priority: Option<u8>,
        /// Let the built-in acquirer answer them from the client's sources.
        #[arg(long)]
        builtin: bool,
    },
    /// List gaps in claim order (open and acquiring first).
    List {
        /// open, acquiring, acquired, constructed or failed.
        #[arg(long)]
        state: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Lease the next open gap (prints its id and the claim's epoch).
    Claim {
        #[arg(long)]
        lease_secs: Option<i64>,
    },
    /// A gap's state, findings, graph changes and history.
    Show { gap_id: String },
    /// Submit the findings of a claimed gap: Markdown from a file (`-` for stdin).
    Findings {
        gap_id: String,
        file: std::path::PathBuf,
        /// A source of the findings (repeat).
        #[arg(long = "source")]
        sources: Vec<String>,
        #[arg(long)]
        epoch: Option<i64>,
    },
    /// End an acquisition: failed with a reason, or back to open with `--retry`.
    Fail {
        gap_id: String,
        reason: String,
        #[arg(long)]
        retry: bool,
        #[arg(long)]
        epoch: Option<i64>,
    },
    /// Set a gap's priority (and position) in the claim order.
    Reorder {
        gap_id: String,
        priority: u8,
        #[arg(long)]
        position: Option<i64>,
    },
}

/// The scope fields of a body.
fn with_scope(mut body: Value, scope: &ScopeArgs) -> Value {
    for (k, v) in [
        ("clientId", &scope.client),
        ("projectId", &scope.project),
        ("groupId", &scope.group),
    ] {
        if let Some(v) = v {
            body[k] = v.clone().into();
        }
    }
    body
}

fn scope_query(scope: &ScopeArgs) -> Vec<(&'static str, String)> {
    [
        ("clientId", &scope.client),
        ("projectId", &scope.project),
        ("groupId", &scope.group),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.clone().map(|v| (k, v)))
    .collect()
}

/// One line per gap: id, state, priority, question.
fn render_gaps(gaps: &Value) -> String {
    let list = gaps.as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        return "No gaps.\n".into();
    }
    list.iter()
        .map(|g| {
            format!(
                "{}\t{}\tp{}\t{}\n",
                g["gapId"].as_str().unwrap_or("?"),
                g["state"].as_str().unwrap_or("?"),
                g["priority"],
                g["question"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn read_text(file: &std::path::Path) -> anyhow::Result<String> {
    if file.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        Ok(s)
    } else {
        Ok(std::fs::read_to_string(file)?)
    }
}

pub async fn run(args: GapsArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    let scope = &args.scope;
    match args.op {
        GapsOp::Report {
            questions,
            context,
            priority,
            builtin,
        } => {
            let gaps: Vec<Value> = questions
                .iter()
                .map(|q| {
                    json!({"question": q, "context": context, "priority": priority,
                           "acquirer": if builtin { "builtin" } else { "agent" }})
                })
                .collect();
            let v = client
                .post("/api/v1/gaps", &with_scope(json!({"gaps": gaps}), scope))
                .await?;
            print!("{}", render_gaps(&v["gaps"]));
        }
        GapsOp::List { state, limit } => {
            let mut q = scope_query(scope);
            q.push(("limit", limit.to_string()));
            q.extend(state.map(|s| ("state", s)));
            let v = get(&client, "/api/v1/gaps", &q).await?;
            print!("{}", render_gaps(&v["gaps"]));
        }
        GapsOp::Claim { lease_secs } => {
            let body = with_scope(json!({"leaseSecs": lease_secs}), scope);
            let v = client.post("/api/v1/gaps/claim", &body).await?;
            print_claim(&v);
        }
        GapsOp::Show { gap_id } => {
            let path = format!("/api/v1/gaps/{}", encode_path(&gap_id));
            let v = get(&client, &path, &scope_query(scope)).await?;
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        GapsOp::Findings {
            gap_id,
            file,
            sources,
            epoch,
        } => {
            let body = json!({"markdown": read_text(&file)?, "sources": sources, "epoch": epoch});
            let v = post_gap(&client, scope, &gap_id, "findings", body).await?;
            println!(
                "{}\t{}\t{}",
                v["gapId"].as_str().unwrap_or("?"),
                v["state"].as_str().unwrap_or("?"),
                v["findings"]["sourceUrn"].as_str().unwrap_or("")
            );
        }
        GapsOp::Fail {
            gap_id,
            reason,
            retry,
            epoch,
        } => {
            let body = json!({"reason": reason, "retry": retry, "epoch": epoch});
            let v = post_gap(&client, scope, &gap_id, "fail", body).await?;
            print!("{}", render_gaps(&json!([v])));
        }
        GapsOp::Reorder {
            gap_id,
            priority,
            position,
        } => {
            let body = json!({"priority": priority, "position": position});
            let v = post_gap(&client, scope, &gap_id, "reorder", body).await?;
            print!("{}", render_gaps(&json!([v])));
        }
    }
    Ok(())
}

async fn get(
    client: &Client,
    path: &str,
    query: &[(&'static str, String)],
) -> anyhow::Result<Value> {
    let q: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
    client.get(path, &q).await
}

/// `POST /api/v1/gaps/{id}/{action}` with the scope in the body.
async fn post_gap(
    client: &Client,
    scope: &ScopeArgs,
    gap_id: &str,
    action: &str,
    body: Value,
) -> anyhow::Result<Value> {
    let path = format!("/api/v1/gaps/{}/{action}", encode_path(gap_id));
    client.post(&path, &with_scope(body, scope)).await
}

fn print_claim(v: &Value) {
    if v["gap"].is_null() {
        println!("No gap to claim now.");
    } else {
        println!(
            "{}\tepoch {}\t{}",
            v["gap"]["gapId"].as_str().unwrap_or("?"),
            v["epoch"],
            v["gap"]["question"].as_str().unwrap_or("")
        );
    }
}

/// The evidence of `evident graph add-node|add-edge`: `--chunk` ids and/or `--evidence` text.
pub fn evidence(chunks: &[String], text: &Option<String>) -> Value {
    json!({"chunkIds": chunks, "text": text})
}

/// A graph write's body with its scope and gap.
pub fn graph_body(mut body: Value, scope: &ScopeArgs, gap: &Option<String>) -> Value {
    if let Some(g) = gap {
        body["gapId"] = g.clone().into();
    }
    with_scope(body, scope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_print_one_line_each() {
        let gaps = json!([{"gapId": "g1", "state": "open", "priority": 4, "question": "Why?"}]);
        assert_eq!(render_gaps(&gaps), "g1\topen\tp4\tWhy?\n");
        assert_eq!(render_gaps(&json!([])), "No gaps.\n");
    }

    #[test]
    fn bodies_carry_scope_and_gap() {
        let scope = ScopeArgs {
            client: Some("acme".into()),
            project: None,
            group: None,
        };
        let b = graph_body(json!({"key": "a:b"}), &scope, &Some("g1".into()));
        assert_eq!(b, json!({"key": "a:b", "clientId": "acme", "gapId": "g1"}));
    }
}
