//! `evident graph nodes`: list the nodes of a type (all threads, meetings, repositories…)
//! of a running server, a page at a time (`GET /api/v1/graph/nodes`); `evident graph
//! add-node|add-edge`: an agent's graph write with its evidence (`POST /api/v1/graph/…`);
//! `evident graph callers|callees|implementations|uses SYMBOL`: code questions
//! (`GET /api/v1/graph/code/{relation}`, in [`crate::code_cmd`]).

use clap::{Args, Subcommand};
use serde_json::Value;

use crate::cli::{ScopeArgs, Server};

#[derive(Args)]
pub struct GraphArgs {
    #[command(subcommand)]
    op: GraphOp,
    #[command(flatten)]
    scope: ScopeArgs,
    #[command(flatten)]
    server: Server,
}

#[derive(Subcommand)]
enum GraphOp {
    /// List the nodes of a type in key order, one page (the next page's `--after` is printed).
    Nodes {
        /// Node type: `thread`, `meeting`, `repository`, `issue`, `person`, `file`, …
        #[arg(long = "type")]
        node_type: String,
        /// Start after this key (the `next:` key of the previous page).
        #[arg(long)]
        after: Option<String>,
        /// Nodes per page (1..=500).
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Add a node, with evidence (`--chunk` ids you can see and/or `--evidence` text).
    AddNode {
        key: String,
        #[arg(long = "type")]
        node_type: String,
        #[arg(long)]
        label: Option<String>,
        #[command(flatten)]
        evidence: EvidenceArgs,
    },
    /// Add an edge `FROM EDGE_TYPE TO`, with evidence.
    AddEdge {
        from: String,
        edge_type: String,
        to: String,
        #[command(flatten)]
        evidence: EvidenceArgs,
    },
    #[command(flatten)]
    Code(crate::code_cmd::CodeOp),
    /// Remove an agent-written edge `FROM EDGE_TYPE TO` (edges indexed from sources stay).
    RmEdge {
        from: String,
        edge_type: String,
        to: String,
    },
}

/// The evidence and gap of a graph write.
#[derive(Args)]
struct EvidenceArgs {
    /// A chunk id that supports it (repeat).
    #[arg(long = "chunk")]
    chunks: Vec<String>,
    /// A short text that supports it (stored as an assertion chunk).
    #[arg(long = "evidence")]
    text: Option<String>,
    /// The knowledge gap this write is for.
    #[arg(long)]
    gap: Option<String>,
}

pub async fn run(args: GraphArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    use crate::gaps_cmd::{evidence, graph_body};
    match args.op {
        GraphOp::Code(op) => crate::code_cmd::run(&client, op, &scope_query(&args.scope)).await,
        GraphOp::AddNode {
            key,
            node_type,
            label,
            evidence: e,
        } => {
            let body = serde_json::json!({"key": key, "type": node_type, "label": label,
                "evidence": evidence(&e.chunks, &e.text)});
            let v = client
                .post(
                    "/api/v1/graph/nodes",
                    &graph_body(body, &args.scope, &e.gap),
                )
                .await?;
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(())
        }
        GraphOp::AddEdge {
            from,
            edge_type,
            to,
            evidence: e,
        } => {
            let body = serde_json::json!({"from": from, "edgeType": edge_type, "to": to,
                "evidence": evidence(&e.chunks, &e.text)});
            let v = client
                .post(
                    "/api/v1/graph/edges",
                    &graph_body(body, &args.scope, &e.gap),
                )
                .await?;
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(())
        }
        GraphOp::RmEdge {
            from,
            edge_type,
            to,
        } => {
            let mut query: Vec<(&str, &str)> =
                vec![("from", &from), ("edgeType", &edge_type), ("to", &to)];
            query.extend(scope_query(&args.scope));
            let v = client.delete("/api/v1/graph/edges", &query).await?;
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(())
        }
        GraphOp::Nodes {
            node_type,
            after,
            limit,
            json,
        } => {
            let limit = limit.to_string();
            let mut query: Vec<(&str, &str)> = vec![("type", &node_type), ("limit", &limit)];
            if let Some(a) = &after {
                query.push(("after", a));
            }
            query.extend(scope_query(&args.scope));
            let page = client.get("/api/v1/graph/nodes", &query).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print!("{}", render_page(&page));
            }
            Ok(())
        }
    }
}

/// One line per node (key, type, label), then where the next page starts.
fn render_page(page: &Value) -> String {
    let nodes = page["nodes"].as_array().cloned().unwrap_or_default();
    let mut out = String::new();
    if nodes.is_empty() {
        out.push_str("No nodes.\n");
    }
    for n in &nodes {
        out.push_str(&format!(
            "{}\t{}\t{}\n",
            n["key"].as_str().unwrap_or("?"),
            n["type"].as_str().unwrap_or("?"),
            n["label"].as_str().unwrap_or("")
        ));
    }
    if let Some(next) = page["nextAfter"].as_str() {
        out.push_str(&format!("next: --after {next}\n"));
    }
    out
}

/// The scope's query parameters that are set.
fn scope_query(scope: &ScopeArgs) -> Vec<(&'static str, &str)> {
    [
        ("clientId", &scope.client),
        ("projectId", &scope.project),
        ("groupId", &scope.group),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_page_prints_its_nodes_and_where_the_next_starts() {
        let page = json!({
            "nodes": [{"key": "thread:a", "type": "thread", "label": "Subject A"}],
            "nextAfter": "thread:a"
        });
        assert_eq!(
            render_page(&page),
            "thread:a\tthread\tSubject A\nnext: --after thread:a\n"
        );
        let last = json!({"nodes": [], "nextAfter": null});
        assert_eq!(render_page(&last), "No nodes.\n");
    }
}
