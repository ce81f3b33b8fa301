//! Prompt context from the command line: `evident context get` (`POST /api/v1/context`),
//! `evident context profile` (`PUT /api/v1/graph/node/{key}/profile`), the typed-knowledge
//! flags of `evident ingest`, and `evident ingest --structured FILE`
//! (`POST /api/v1/ingest/structured`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use clap::{Args, Subcommand};
use evident_api::bodies::RetrieveRequest;
use evident_api::context_bodies::{ContextRequest, ProfileRequest, StructuredRequest};
use evident_core::KnowledgeType;
use evident_kb::Document;
use evident_kb::context::{Layer, SectionSpec};
use evident_kb::structured::KnowledgeFile;
use serde_json::{Map, Value};

use crate::cli::{ScopeArgs, Server};
use crate::client::{Client, encode_path};

/// Typed-knowledge flags of `evident ingest` (seed 000).
#[derive(Args, Default)]
pub struct TypedArgs {
    /// What the knowledge is: fact, instruction, preference, procedure, note, episodic.
    #[arg(long)]
    knowledge_type: Option<String>,
    /// The prompt section it goes to: user_profile, instructions, context, skills, …
    #[arg(long)]
    info_type: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// The entity (node key) it is about, e.g. `user:alice`.
    #[arg(long)]
    entity: Option<String>,
    /// Text embedded instead of the content.
    #[arg(long)]
    embedding_text: Option<String>,
}

impl TypedArgs {
    /// The typed fields of an ingest body (the rest left default).
    pub fn document_fields(&self) -> anyhow::Result<Document> {
        Ok(Document {
            knowledge_type: self
                .knowledge_type
                .as_deref()
                .map(|k| KnowledgeType::parse("knowledgeType", k))
                .transpose()?,
            info_type: self.info_type.clone(),
            tags: self.tags.clone(),
            entity: self.entity.clone(),
            embedding_text: self.embedding_text.clone(),
            ..Default::default()
        })
    }
}

/// Typed-knowledge filters of `evident search`.
#[derive(Args, Default)]
pub struct TypedFilterArgs {
    /// Only typed knowledge of this knowledge type (repeatable).
    #[arg(long = "knowledge-type")]
    knowledge_types: Vec<String>,
    /// Only typed knowledge of this info type (repeatable).
    #[arg(long = "info-type")]
    info_types: Vec<String>,
    /// Only typed knowledge with this tag (repeatable; any of them).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Only typed knowledge about this entity (a node key).
    #[arg(long)]
    entity: Option<String>,
}

impl TypedFilterArgs {
    /// `base` with these filters.
    pub fn retrieve_fields(&self, base: RetrieveRequest) -> anyhow::Result<RetrieveRequest> {
        Ok(RetrieveRequest {
            knowledge_types: self
                .knowledge_types
                .iter()
                .map(|k| KnowledgeType::parse("knowledgeType", k))
                .collect::<Result<_, _>>()?,
            info_types: self.info_types.clone(),
            tags: self.tags.clone(),
            entity: self.entity.clone(),
            ..base
        })
    }
}

/// Where `ingest --structured` writes.
pub struct StructuredScope {
    pub client_id: Option<String>,
    pub project_id: Option<String>,
    pub group_id: Option<String>,
    pub global: bool,
    /// Default `file:{path}`.
    pub source_urn: Option<String>,
}

/// Sends a knowledge file (JSON, or YAML by its `.yaml`/`.yml` extension: the seed's loader
/// reads both) and prints what was written and each skipped item.
pub async fn ingest_structured(
    client: &Client,
    path: &Path,
    scope: StructuredScope,
) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let file: Value = if matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    ) {
        serde_norway::from_str(&text).with_context(|| format!("{} is not YAML", path.display()))?
    } else {
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?
    };
    let file: KnowledgeFile = serde_json::from_value(file).with_context(|| {
        format!(
            "{}: not a knowledge file ({{metadata, pieces, graph}})",
            path.display()
        )
    })?;
    let body = StructuredRequest {
        client_id: scope.client_id,
        project_id: scope.project_id,
        group_id: scope.group_id,
        global: scope.global,
        source_urn: scope
            .source_urn
            .unwrap_or_else(|| format!("file:{}", path.display())),
        metadata: file.metadata,
        pieces: file.pieces,
        graph: file.graph,
    };
    let report = client.post("/api/v1/ingest/structured", &body).await?;
    let w = &report["written"];
    println!(
        "{}: {} piece(s), {} entit(ies), {} node(s), {} edge(s) written",
        report["sourceUrn"].as_str().unwrap_or("?"),
        w["pieces"],
        w["entities"],
        w["nodes"],
        w["edges"]
    );
    for s in report["skipped"].as_array().into_iter().flatten() {
        println!(
            "skipped {}[{}]{}: {}",
            s["section"].as_str().unwrap_or("?"),
            s["index"],
            s["id"]
                .as_str()
                .map(|i| format!(" ({i})"))
                .unwrap_or_default(),
            s["reason"].as_str().unwrap_or("")
        );
    }
    Ok(())
}

#[derive(Args)]
pub struct ContextArgs {
    #[command(subcommand)]
    op: ContextOp,
    #[command(flatten)]
    scope: ScopeArgs,
    #[command(flatten)]
    server: Server,
}

#[derive(Subcommand)]
enum ContextOp {
    /// Prompt sections for a task, each within its token budget, every line cited.
    Get {
        /// The task or question.
        query: Option<String>,
        /// The entity the prompt is for (a node key, e.g. `user:alice`).
        #[arg(long)]
        entity: Option<String>,
        /// A section `NAME=BUDGET` or `NAME=BUDGET:infoType,infoType` (repeatable).
        #[arg(long = "section")]
        sections: Vec<String>,
        /// A layer to draw from (repeatable): pieces, graph, metadata, memory, outcomes,
        /// userKnowledge, claims.
        #[arg(long)]
        include: Vec<String>,
        /// Graph hops from the entity (0..=3).
        #[arg(long)]
        max_depth: Option<usize>,
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Write (replace) a node's profile; KEY `global` writes the global profile.
    Profile {
        key: String,
        /// A property `NAME=VALUE` (repeatable).
        #[arg(long = "set", required = true)]
        set: Vec<String>,
        #[arg(long = "type")]
        node_type: Option<String>,
        #[arg(long)]
        label: Option<String>,
        /// Write global data (visible to every client).
        #[arg(long)]
        global: bool,
    },
}

/// `NAME=BUDGET[:a,b]` as a section.
fn parse_section(raw: &str) -> anyhow::Result<(String, SectionSpec)> {
    let (name, rest) = raw
        .split_once('=')
        .with_context(|| format!("--section {raw}: use NAME=BUDGET[:infoType,…]"))?;
    let (budget, types) = match rest.split_once(':') {
        Some((b, t)) => (b, Some(t.split(',').map(str::to_string).collect())),
        None => (rest, None),
    };
    let budget_tokens = budget
        .parse()
        .with_context(|| format!("--section {raw}: `{budget}` is not a number of tokens"))?;
    Ok((
        name.to_string(),
        SectionSpec {
            info_types: types,
            budget_tokens,
        },
    ))
}

pub async fn run(args: ContextArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    let (client_id, project_id, group_id) = args.scope.ids();
    match args.op {
        ContextOp::Get {
            query,
            entity,
            sections,
            include,
            max_depth,
            json,
        } => {
            let sections = sections
                .iter()
                .map(|s| parse_section(s))
                .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
            let include = include
                .iter()
                .map(|l| {
                    serde_json::from_value::<Layer>(Value::String(l.clone()))
                        .with_context(|| format!("--include {l}: not a layer"))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let body = ContextRequest {
                query,
                active_entity: entity,
                client_id,
                project_id,
                group_id,
                sections: (!sections.is_empty()).then_some(sections),
                include: (!include.is_empty()).then_some(include),
                max_depth,
                ..Default::default()
            };
            let answer = client.post("/api/v1/context", &body).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&answer)?);
                return Ok(());
            }
            print_answer(&answer);
        }
        ContextOp::Profile {
            key,
            set,
            node_type,
            label,
            global,
        } => {
            let mut properties = Map::new();
            for pair in &set {
                let (k, v) = pair
                    .split_once('=')
                    .with_context(|| format!("--set {pair}: use NAME=VALUE"))?;
                properties.insert(k.to_string(), Value::String(v.to_string()));
            }
            let body = ProfileRequest {
                client_id: if global { None } else { client_id },
                project_id,
                group_id,
                global,
                node_type,
                label,
                properties,
            };
            let path = format!("/api/v1/graph/node/{}/profile", encode_path(&key));
            let out = client.put(&path, &body).await?;
            println!(
                "{} {}",
                out["status"].as_str().unwrap_or("?"),
                out["sourceUrn"].as_str().unwrap_or("?")
            );
        }
    }
    Ok(())
}

/// Each section under a `## name (n tokens)` header, then its citations.
fn print_answer(answer: &Value) {
    for (name, text) in answer["sections"].as_object().into_iter().flatten() {
        let truncated = if answer["truncated"][name] == Value::Bool(true) {
            ", truncated"
        } else {
            ""
        };
        println!("## {name} ({} tokens{truncated})", answer["tokens"][name]);
        println!("{}", text.as_str().unwrap_or(""));
        for item in answer["items"][name].as_array().into_iter().flatten() {
            println!(
                "  {} {}",
                item["marker"].as_str().unwrap_or(""),
                item["citation"].as_str().unwrap_or("")
            );
        }
        println!();
    }
    if let Some(u) = answer["unavailable"].as_array() {
        let names: Vec<&str> = u.iter().filter_map(Value::as_str).collect();
        println!("not available: {}", names.join(", "));
    }
}
