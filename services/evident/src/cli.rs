use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use evident_api::bodies::{
    AliasMergeRequest, AliasRegisterRequest, IngestRequest, ReorderRequest, RetrieveRequest,
};
use evident_core::Locator;
use evident_kb::Document;
use serde_json::{Value, json};

use crate::client::Client;

#[derive(Parser)]
#[command(
    name = "evident",
    version,
    about = "Evident: a knowledge service for AI agents — hybrid search with graph expansion and citations"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP API and the queue workers on the embedded store.
    Serve(ServeArgs),
    /// Run queue workers only (no HTTP API), for scale-out.
    Worker(WorkerArgs),
    /// Run source indexers only (pollers: no HTTP API, no queue workers), for scale-out.
    Indexer(WorkerArgs),
    /// Register, list and remove continuously indexed sources of a running server.
    Source(crate::source_cmd::SourceArgs),
    /// Inspect and steer the qualification queue of a running server.
    Queue(QueueArgs),
    /// Ingest a file, a directory of documents, or stdin (`-`) through a running server.
    Ingest(IngestArgs),
    /// Ask a running server; prints the evidence pack with citations.
    Search(SearchArgs),
    /// Inspect and edit the alias registry of a running server.
    Alias(AliasArgs),
    /// Read the knowledge graph of a running server (list nodes by type); add nodes and
    /// edges with evidence.
    Graph(crate::graph_cmd::GraphArgs),
    /// Create, list and revoke API tokens of a running server.
    Token(crate::token_cmd::TokenArgs),
    /// MCP over stdio for agents, bridged to a running server's `/mcp` (see README *MCP*).
    Mcp(crate::mcp_cmd::McpArgs),
    /// Store and read what agents learned about their user (user knowledge, its prefetch).
    Knowledge(crate::memory_cmd::KnowledgeArgs),
    /// Record what was learned from a finished task (significance filter, queued write).
    Outcome(crate::memory_cmd::OutcomeArgs),
    /// The session log of a client and project: short notes bridging orchestrations.
    Session(crate::memory_cmd::SessionArgs),
    /// Claims: evidence-first learned facts with a lifecycle and a history (seed 002).
    Claims(crate::claims_cmd::ClaimsArgs),
    /// Procedural memory: workflows per client/project, matched to tasks, with outcomes.
    Procedure(crate::procedure_cmd::ProcedureArgs),
    /// Knowledge gaps: report, list, claim, show, answer (findings), fail, reorder.
    Gaps(crate::gaps_cmd::GapsArgs),
    /// Prompt-ready context: typed knowledge routed into prompt sections within budgets.
    Context(crate::context_cmd::ContextArgs),
}

#[derive(Args)]
pub struct ServeArgs {
    /// Config file (TOML); also EVIDENT_CONFIG.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Data directory of the embedded store [default: ./evident-data].
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Listen address [default: 127.0.0.1:7878].
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Ingest these files or directories (Markdown, text) once the server is up.
    #[arg(long = "ingest", value_name = "PATH", num_args = 1..)]
    pub ingest: Vec<PathBuf>,
    /// Client id for `--ingest`.
    #[arg(long, default_value = "default")]
    pub client: String,
    /// Serve the API only; leave the queue to `evident worker` processes.
    #[arg(long)]
    pub no_workers: bool,
    /// Do not poll sources; leave that to `evident indexer` processes.
    #[arg(long)]
    pub no_indexers: bool,
    /// Follow these local git repositories (every file and commit, kept up to date) for
    /// `--client`.
    #[arg(long = "index-git", value_name = "REPO", num_args = 1..)]
    pub index_git: Vec<PathBuf>,
}

#[derive(Args)]
pub struct WorkerArgs {
    /// Config file (TOML); also EVIDENT_CONFIG.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Data directory of the embedded store [default: ./evident-data].
    #[arg(long)]
    pub data: Option<PathBuf>,
}

#[derive(Args)]
struct QueueArgs {
    #[command(subcommand)]
    op: QueueOp,
    #[command(flatten)]
    server: Server,
}

#[derive(Subcommand)]
enum QueueOp {
    /// List tasks (newest last), with counts by state.
    Ls {
        /// queued, processing, retry_wait, done or error.
        #[arg(long)]
        state: Option<String>,
        #[arg(long)]
        client: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Move a task to the front of its priority.
    Prioritize { task_id: String },
    /// Put a task at an explicit position within its priority (1 = first).
    Reorder { task_id: String, position: i64 },
    /// Re-queue a task that ended in `error` (after fixing its cause).
    Retry { task_id: String },
}

#[derive(Args)]
pub struct Server {
    /// Base URL of the Evident server.
    #[arg(
        long,
        env = "EVIDENT_SERVER",
        default_value = "http://127.0.0.1:7878",
        global = true
    )]
    pub(crate) server: String,
    /// API token (default: `./evident-data/local-token` of a local server).
    #[arg(long, env = "EVIDENT_TOKEN", global = true, hide_env_values = true)]
    pub(crate) token: Option<String>,
}

impl Server {
    pub fn client(&self) -> anyhow::Result<Client> {
        Client::new(&self.server, self.token.as_deref())
    }
}

#[derive(Args)]
pub(crate) struct ScopeArgs {
    /// Client id (omit with --global).
    #[arg(long, global = true)]
    pub(crate) client: Option<String>,
    #[arg(long, global = true)]
    pub(crate) project: Option<String>,
    #[arg(long, global = true)]
    pub(crate) group: Option<String>,
}

#[derive(Args)]
struct IngestArgs {
    /// File, directory (Markdown and text files inside it), or `-` for stdin.
    path: PathBuf,
    #[command(flatten)]
    scope: ScopeArgs,
    /// Write global data, visible to every client.
    #[arg(long)]
    global: bool,
    /// Chunk kind.
    #[arg(long, default_value = "doc")]
    kind: String,
    /// Source URN (files default to `file:<path>`; required for stdin).
    #[arg(long)]
    urn: Option<String>,
    #[arg(long)]
    title: Option<String>,
    /// Relationship in `a|EDGE|b`, `a->EDGE->b` or `a -[EDGE]-> b` form (repeatable).
    #[arg(long = "rel")]
    relationships: Vec<String>,
    /// Main node key, e.g. `jira:ABC-12`.
    #[arg(long)]
    main_node: Option<String>,
    /// Put the ingests on the qualification queue (202 + task id) instead of waiting.
    #[arg(long)]
    queue: bool,
    /// Priority 0..=9 (≤ 2 is interactive).
    #[arg(long, default_value_t = 4)]
    priority: u8,
    #[command(flatten)]
    typed: crate::context_cmd::TypedArgs,
    /// PATH is a structured knowledge file (JSON or YAML: metadata, pieces, graph), loaded
    /// through `POST /api/v1/ingest/structured`.
    #[arg(long)]
    structured: bool,
    #[command(flatten)]
    server: Server,
}

#[derive(Args)]
struct SearchArgs {
    query: String,
    #[command(flatten)]
    scope: ScopeArgs,
    /// Only these chunk kinds (repeatable).
    #[arg(long = "kind")]
    kinds: Vec<String>,
    #[arg(long, default_value_t = 5)]
    max: usize,
    /// Skip graph expansion.
    #[arg(long)]
    no_graph: bool,
    /// Print the raw JSON evidence pack.
    #[arg(long)]
    json: bool,
    /// When nothing relevant is found, open a knowledge gap with the query (needs a write
    /// grant; see *Knowledge gaps*).
    #[arg(long)]
    record_gap: bool,
    /// Rerank the candidates (title, path, symbol and heading matches, adjacent terms).
    #[arg(long)]
    rerank: bool,
    #[command(flatten)]
    typed: crate::context_cmd::TypedFilterArgs,
    #[command(flatten)]
    server: Server,
}

#[derive(Args)]
struct AliasArgs {
    #[command(subcommand)]
    op: AliasOp,
    #[arg(long, global = true)]
    client: Option<String>,
    #[command(flatten)]
    server: Server,
}

#[derive(Subcommand)]
enum AliasOp {
    /// What an alias resolves to.
    Resolve { alias: String },
    /// Register ALIAS → CANONICAL (or ALIAS as its own canonical).
    Register {
        alias: String,
        canonical: Option<String>,
    },
    /// Re-point every alias of SOURCE (and SOURCE itself) to TARGET.
    Merge { source: String, target: String },
    /// Aliases of a canonical key.
    List { canonical: String },
    /// Totals and the most-seen aliases.
    Stats,
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => crate::serve::run(args).await,
        Command::Worker(args) => crate::serve::run_workers(args).await,
        Command::Indexer(args) => crate::serve::run_indexers(args).await,
        Command::Source(args) => crate::source_cmd::run(args).await,
        Command::Queue(args) => queue(args).await,
        Command::Ingest(args) => ingest(args).await,
        Command::Search(args) => search(args).await,
        Command::Alias(args) => alias(args).await,
        Command::Graph(args) => crate::graph_cmd::run(args).await,
        Command::Token(args) => crate::token_cmd::run(args).await,
        Command::Mcp(args) => crate::mcp_cmd::run(args).await,
        Command::Knowledge(args) => crate::memory_cmd::knowledge(args).await,
        Command::Outcome(args) => crate::memory_cmd::outcome(args).await,
        Command::Session(args) => crate::memory_cmd::session(args).await,
        Command::Claims(args) => crate::claims_cmd::run(args).await,
        Command::Procedure(args) => crate::procedure_cmd::run(args).await,
        Command::Gaps(args) => crate::gaps_cmd::run(args).await,
        Command::Context(args) => crate::context_cmd::run(args).await,
    }
}

impl ScopeArgs {
    pub(crate) fn ids(&self) -> (Option<String>, Option<String>, Option<String>) {
        (
            self.client.clone(),
            self.project.clone(),
            self.group.clone(),
        )
    }
}

async fn ingest(args: IngestArgs) -> anyhow::Result<()> {
    if args.scope.client.is_none() && !args.global {
        bail!("give --client ID (or --global for data every client sees)");
    }
    let client = args.server.client()?;
    if args.structured {
        let (client_id, project_id, group_id) = args.scope.ids();
        return crate::context_cmd::ingest_structured(
            &client,
            &args.path,
            crate::context_cmd::StructuredScope {
                client_id,
                project_id,
                group_id,
                global: args.global,
                source_urn: args.urn.clone(),
            },
        )
        .await;
    }
    let docs = local_documents(&args)?;
    let (mut ok, mut failed) = (0usize, 0usize);
    for (urn, content, display) in docs {
        let body = document_request(&args, urn.clone(), content, display)?;
        let path = if args.queue {
            "/api/v1/ingest-queue"
        } else {
            "/api/v1/ingest"
        };
        match client.post_with_priority(path, &body, args.priority).await {
            Ok(out) if args.queue => {
                ok += 1;
                println!("queued {:<14} {urn}", out["taskId"].as_str().unwrap_or("?"));
            }
            Ok(out) => {
                ok += 1;
                println!(
                    "{:<18} {urn}  chunks {} (+{} −{}), edges {}",
                    out["status"].as_str().unwrap_or("?"),
                    out["chunks"]["total"],
                    out["chunks"]["added"],
                    out["chunks"]["removed"],
                    out["edges"]
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!("failed            {urn}: {e:#}");
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {} source(s) failed", ok + failed);
    }
    Ok(())
}

/// The documents `evident ingest` sends: stdin as one document under `--urn`, or the
/// Markdown and text files under the path (`--urn` names the first).
fn local_documents(args: &IngestArgs) -> anyhow::Result<Vec<(String, String, Option<String>)>> {
    if args.path.as_os_str() == "-" {
        let urn = args.urn.clone().context("reading stdin needs --urn")?;
        let mut content = String::new();
        std::io::stdin()
            .read_to_string(&mut content)
            .context("stdin is not UTF-8 text")?;
        return Ok(vec![(urn, content, None)]);
    }
    let files = crate::local_files::collect(&args.path)?;
    if files.is_empty() {
        bail!("no Markdown or text files under {}", args.path.display());
    }
    let mut docs = Vec::new();
    for f in files {
        let content = std::fs::read_to_string(&f.path)
            .with_context(|| format!("reading {}", f.path.display()))?;
        let urn = if args.urn.is_some() && docs.is_empty() {
            args.urn.clone().unwrap_or_default()
        } else {
            f.urn.clone()
        };
        docs.push((urn, content, Some(f.display)));
    }
    Ok(docs)
}

/// One document's ingest body with the command's scope, kind, title and typed labels.
fn document_request(
    args: &IngestArgs,
    urn: String,
    content: String,
    display: Option<String>,
) -> anyhow::Result<IngestRequest> {
    let (client_id, project_id, group_id) = args.scope.ids();
    let body = IngestRequest(Document {
        client_id,
        project_id,
        group_id,
        global: args.global,
        source_urn: urn,
        kind: args.kind.clone(),
        content,
        title: args.title.clone().or_else(|| display.clone()),
        relationships: (!args.relationships.is_empty()).then(|| args.relationships.clone()),
        main_node_key: args.main_node.clone(),
        locator: display.as_ref().map(|d| Locator::Document {
            uri: d.clone(),
            char_start: 0,
            char_end: 0,
            page: None,
            section: None,
        }),
        ..args.typed.document_fields()?
    });
    Ok(body)
}

async fn search(args: SearchArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    let (client_id, project_id, group_id) = args.scope.ids();
    let body = RetrieveRequest {
        client_id,
        project_id,
        group_id,
        kinds: args.kinds,
        max_results: args.max,
        expand_graph: !args.no_graph,
        record_gap: args.record_gap,
        rerank: args.rerank,
        ..args
            .typed
            .retrieve_fields(RetrieveRequest::new(args.query))?
    };
    let pack = client.post("/api/v1/retrieve", &body).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&pack)?);
        return Ok(());
    }
    print!("{}", render_pack(&pack));
    Ok(())
}

/// A readable evidence pack: ranked items with citations, then the graph around them.
pub fn render_pack(pack: &Value) -> String {
    let mut out = String::new();
    let items = pack["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        out.push_str("No evidence found.\n");
    }
    for (i, item) in items.iter().enumerate() {
        let content = item["content"].as_str().unwrap_or("");
        let excerpt: String = content
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(300)
            .collect();
        out.push_str(&format!(
            "[{}] {}  (score {:.4}, {})\n    {}{}\n",
            i + 1,
            item["citation"].as_str().unwrap_or("?"),
            item["score"].as_f64().unwrap_or(0.0),
            item["kind"].as_str().unwrap_or("?"),
            excerpt,
            if content.chars().count() > 300 {
                "…"
            } else {
                ""
            }
        ));
    }
    if let Some(gap) = pack["recordedGap"]["gapId"].as_str() {
        out.push_str(&format!("Nothing relevant: recorded knowledge gap {gap}\n"));
    }
    let edges = pack["graph"]["edges"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !edges.is_empty() {
        out.push_str("\nGraph:\n");
        for e in edges.iter().take(20) {
            out.push_str(&format!(
                "  {} -[{}]-> {}  (evidence: {})\n",
                e["from"].as_str().unwrap_or("?"),
                e["edgeType"].as_str().unwrap_or("?"),
                e["to"].as_str().unwrap_or("?"),
                e["evidenceChunkIds"]
                    .as_array()
                    .map(|a| a.len())
                    .unwrap_or(0)
            ));
        }
    }
    out.push_str(&format!("\n{}\n", pack["summary"].as_str().unwrap_or("")));
    out
}

async fn queue(args: QueueArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    let task_path = |task_id: &str, action: &str| {
        format!(
            "/api/v1/queue/{}/{action}",
            crate::client::encode_path(task_id)
        )
    };
    match args.op {
        QueueOp::Ls {
            state,
            client: client_id,
            limit,
        } => {
            let limit = limit.to_string();
            let mut query: Vec<(&str, &str)> = vec![("limit", &limit)];
            if let Some(s) = &state {
                query.push(("state", s));
            }
            if let Some(c) = &client_id {
                query.push(("clientId", c));
            }
            print_tasks(&client.get("/api/v1/queue", &query).await?)?;
        }
        QueueOp::Prioritize { task_id } => {
            let out = client
                .post(&task_path(&task_id, "prioritize"), &json!({}))
                .await?;
            print_position(&task_id, &out);
        }
        QueueOp::Reorder { task_id, position } => {
            let out = client
                .post(
                    &task_path(&task_id, "reorder"),
                    &ReorderRequest { position },
                )
                .await?;
            print_position(&task_id, &out);
        }
        QueueOp::Retry { task_id } => {
            let out = client
                .post(&task_path(&task_id, "retry"), &json!({}))
                .await?;
            println!("{} is {}", task_id, out["state"].as_str().unwrap_or("?"));
        }
    }
    Ok(())
}

/// The queue listing as a table, then the counts by state.
fn print_tasks(out: &Value) -> anyhow::Result<()> {
    println!(
        "{:<14} {:<8} {:<11} {:>3} {:>7}  source",
        "task", "kind", "state", "pri", "retries"
    );
    for t in out["tasks"].as_array().cloned().unwrap_or_default() {
        println!(
            "{:<14} {:<8} {:<11} {:>3} {:>7}  {}{}",
            t["taskId"].as_str().unwrap_or("?"),
            t["kind"].as_str().unwrap_or("?"),
            t["state"].as_str().unwrap_or("?"),
            t["priority"],
            t["retries"],
            t["sourceUrn"].as_str().unwrap_or("?"),
            t["lastError"]
                .as_str()
                .map(|e| format!("  ({e})"))
                .unwrap_or_default()
        );
    }
    println!("\n{}", serde_json::to_string(&out["counts"])?);
    Ok(())
}

fn print_position(task_id: &str, out: &Value) {
    println!(
        "{} is now at position {} of priority {}",
        task_id, out["queuePosition"], out["priority"]
    );
}

async fn alias(args: AliasArgs) -> anyhow::Result<()> {
    let client_id = args.client.context("give --client ID")?;
    let client = args.server.client()?;
    let out = match args.op {
        AliasOp::Resolve { alias } => {
            client
                .get(
                    "/api/v1/alias/resolve",
                    &[("clientId", &client_id), ("alias", &alias)],
                )
                .await?
        }
        AliasOp::Register { alias, canonical } => {
            client
                .post(
                    "/api/v1/alias/register",
                    &AliasRegisterRequest {
                        client_id,
                        alias,
                        canonical,
                    },
                )
                .await?
        }
        AliasOp::Merge { source, target } => {
            client
                .post(
                    "/api/v1/alias/merge",
                    &AliasMergeRequest {
                        client_id,
                        source,
                        target,
                    },
                )
                .await?
        }
        AliasOp::List { canonical } => {
            client
                .get(
                    &format!(
                        "/api/v1/alias/list/{}",
                        crate::client::encode_path(&canonical)
                    ),
                    &[("clientId", &client_id)],
                )
                .await?
        }
        AliasOp::Stats => {
            client
                .get("/api/v1/alias/stats", &[("clientId", &client_id)])
                .await?
        }
    };
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
