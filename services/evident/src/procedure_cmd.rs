//! Procedural memory of a running server (README *Agent memory*):
//! `evident procedure add|update|ls|show|rm|match|outcome`. Sends the API's own bodies
//! (`evident_api::bodies::procedures`).

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use evident_api::bodies::procedures::{
    MatchProceduresRequest, ProcedureOutcomeRequest, SaveProcedureRequest,
};
use evident_store::procedures::ProcedureStep;
use serde_json::Value;

use crate::client::encode_path;

#[derive(Args)]
pub struct ProcedureArgs {
    #[command(subcommand)]
    op: ProcedureOp,
    /// Client id.
    #[arg(long, global = true)]
    client: Option<String>,
    /// Project id: reads see its procedures besides the client's; writes go into it.
    #[arg(long, global = true)]
    project: Option<String>,
    #[command(flatten)]
    server: crate::cli::Server,
}

/// A procedure's definition on the command line.
#[derive(Args)]
struct Definition {
    /// What kind of task it is for (`bug_report`, `email with a deadline question`).
    #[arg(long)]
    trigger: String,
    /// A step, in order: `AGENT:ACTION` or `AGENT:ACTION:{json params}` (repeatable).
    #[arg(long = "step", required = true)]
    steps: Vec<String>,
    /// `user_defined` (told by a user: preferred when it matches) or `learned`.
    #[arg(long, default_value = "user_defined")]
    source: String,
}

#[derive(Subcommand)]
enum ProcedureOp {
    /// Save a new procedure (or, with --id of an existing one, replace its definition).
    Add {
        /// The procedure's id (default: generated).
        #[arg(long)]
        id: Option<String>,
        #[command(flatten)]
        def: Definition,
    },
    /// Replace the definition of an existing procedure (statistics kept).
    Update {
        id: String,
        #[command(flatten)]
        def: Definition,
    },
    /// List procedures by id (`ID  SOURCE  USES  RATE  TRIGGER`).
    Ls {
        /// Only ids after this one (paging).
        #[arg(long)]
        after: Option<String>,
        /// At most this many (1..=1000).
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Print the JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Print one procedure as JSON.
    Show { id: String },
    /// Delete a procedure.
    Rm { id: String },
    /// The procedures matching a task, best first (or the closest ones when none matches).
    Match {
        /// The task (`-` reads stdin).
        task: String,
        /// At most this many (1..=50).
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// Print the JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Record whether following a procedure succeeded.
    Outcome {
        id: String,
        /// It succeeded.
        #[arg(long, conflicts_with = "failure", required_unless_present = "failure")]
        success: bool,
        /// It failed.
        #[arg(long)]
        failure: bool,
    },
}

/// `AGENT:ACTION[:PARAMS]`, PARAMS a JSON object.
fn parse_step(raw: &str) -> anyhow::Result<ProcedureStep> {
    let mut parts = raw.splitn(3, ':');
    let (Some(agent), Some(action)) = (parts.next(), parts.next()) else {
        bail!("--step `{raw}`: write AGENT:ACTION or AGENT:ACTION:{{json params}}");
    };
    let params = parts
        .next()
        .map(serde_json::from_str::<Value>)
        .transpose()
        .with_context(|| format!("--step `{raw}`: the params are not valid JSON"))?;
    Ok(ProcedureStep {
        agent: agent.to_string(),
        action: action.to_string(),
        params,
    })
}

impl ProcedureArgs {
    fn client_id(&self) -> anyhow::Result<String> {
        self.client.clone().context("give --client ID")
    }

    fn save_body(
        &self,
        id: Option<String>,
        def: &Definition,
    ) -> anyhow::Result<SaveProcedureRequest> {
        Ok(SaveProcedureRequest {
            client_id: self.client_id()?,
            project_id: self.project.clone(),
            id,
            trigger_pattern: def.trigger.clone(),
            steps: def
                .steps
                .iter()
                .map(|s| parse_step(s))
                .collect::<anyhow::Result<_>>()?,
            source: def.source.clone(),
        })
    }

    fn query(&self) -> anyhow::Result<Vec<(&'static str, String)>> {
        let mut q = vec![("clientId", self.client_id()?)];
        if let Some(p) = &self.project {
            q.push(("projectId", p.clone()));
        }
        Ok(q)
    }
}

fn pairs<'a>(q: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    q.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// `ID  SOURCE  USES  RATE  TRIGGER` of a procedure as answered.
fn line(p: &Value) -> String {
    let rate = p["successRate"]
        .as_f64()
        .map(|r| format!("{:.0}%", r * 100.0))
        .unwrap_or_else(|| "-".into());
    format!(
        "{}\t{}\t{}\t{rate}\t{}",
        p["id"].as_str().unwrap_or(""),
        p["source"].as_str().unwrap_or(""),
        p["usageCount"],
        p["triggerPattern"].as_str().unwrap_or("")
    )
}

fn steps(p: &Value) -> String {
    p["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            format!(
                "{}:{}",
                s["agent"].as_str().unwrap_or(""),
                s["action"].as_str().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

fn print_match(out: &Value) {
    let procedures = out["procedures"].as_array().cloned().unwrap_or_default();
    if procedures.is_empty() {
        println!(
            "no procedure matches (similarity below {:.2}); closest:",
            out["minSimilarity"].as_f64().unwrap_or_default()
        );
    }
    let listed = if procedures.is_empty() {
        out["closest"].as_array().cloned().unwrap_or_default()
    } else {
        procedures
    };
    for m in &listed {
        println!(
            "{:.2}\t{:.3}\t{}\n\t{}",
            m["similarity"].as_f64().unwrap_or_default(),
            m["score"].as_f64().unwrap_or_default(),
            line(m),
            steps(m)
        );
    }
}

pub async fn run(args: ProcedureArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    match &args.op {
        ProcedureOp::Add { id, def } => {
            let body = args.save_body(id.clone(), def)?;
            let out = client.post("/api/v1/procedures", &body).await?;
            println!("saved {}", out["id"].as_str().unwrap_or(""));
        }
        ProcedureOp::Update { id, def } => {
            let body = args.save_body(None, def)?;
            let path = format!("/api/v1/procedures/{}", encode_path(id));
            let out = client.put(&path, &body).await?;
            println!("updated {}", out["id"].as_str().unwrap_or(""));
        }
        ProcedureOp::Ls { after, limit, json } => {
            let mut q = args.query()?;
            q.push(("limit", limit.to_string()));
            if let Some(a) = after {
                q.push(("after", a.clone()));
            }
            let out = client.get("/api/v1/procedures", &pairs(&q)).await?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&out)?);
                return Ok(());
            }
            for p in out["procedures"].as_array().into_iter().flatten() {
                println!("{}", line(p));
            }
        }
        ProcedureOp::Show { id } => {
            let q = args.query()?;
            let path = format!("/api/v1/procedures/{}", encode_path(id));
            let out = client.get(&path, &pairs(&q)).await?;
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
        ProcedureOp::Rm { id } => {
            let q = args.query()?;
            let path = format!("/api/v1/procedures/{}", encode_path(id));
            client.delete(&path, &pairs(&q)).await?;
            println!("deleted {id}");
        }
        ProcedureOp::Match { task, limit, json } => {
            let task = if task == "-" {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                    .context("reading stdin")?;
                s
            } else {
                task.clone()
            };
            let body = MatchProceduresRequest {
                client_id: args.client_id()?,
                project_id: args.project.clone(),
                task,
                limit: Some(*limit),
            };
            let out = client.post("/api/v1/procedures/match", &body).await?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                print_match(&out);
            }
        }
        ProcedureOp::Outcome { id, success, .. } => {
            let body = ProcedureOutcomeRequest {
                client_id: args.client_id()?,
                project_id: args.project.clone(),
                success: *success,
            };
            let path = format!("/api/v1/procedures/{}/outcome", encode_path(id));
            let out = client.post(&path, &body).await?;
            println!("{}", line(&out));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_agent_action_and_optional_json_params() {
        let s = parse_step("Coding:fix:{\"lang\": \"rust:2024\"}").expect("step");
        assert_eq!((s.agent.as_str(), s.action.as_str()), ("Coding", "fix"));
        assert_eq!(s.params, Some(serde_json::json!({"lang": "rust:2024"})));
        assert_eq!(parse_step("Git:pr").expect("step").params, None);
        assert!(parse_step("Git").is_err());
        assert!(parse_step("Git:pr:{oops").is_err());
    }
}
