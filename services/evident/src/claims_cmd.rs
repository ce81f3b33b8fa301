//! Claims of a running server (README *Claims*): `evident claims learn|show|recall|verify|
//! dispute|supersede|history|attention`. Sends the API's own bodies
//! (`evident_api::claim_bodies`).

use anyhow::Context;
use clap::{Args, Subcommand};
use evident_api::claim_bodies::{LearnRequest, RecallRequest, SubjectFilter, TransitionRequest};
use evident_core::claims::{Actor, ClaimStatus, EvidenceRef, Subject};
use serde_json::{Value, json};

use crate::client::encode_path;

#[derive(Args)]
pub struct ClaimsArgs {
    #[command(subcommand)]
    op: ClaimsOp,
    /// Client id.
    #[arg(long, global = true)]
    client: Option<String>,
    /// Project id (needs --client).
    #[arg(long, global = true)]
    project: Option<String>,
    /// Group id (needs --client).
    #[arg(long, global = true)]
    group: Option<String>,
    /// Print the server's JSON answer instead of lines.
    #[arg(long, global = true)]
    json: bool,
    #[command(flatten)]
    server: crate::cli::Server,
}

/// What a change names besides the claim.
#[derive(Args)]
struct Change {
    /// The claim id (`clm_…`).
    id: String,
    /// Why.
    #[arg(long)]
    reason: Option<String>,
    /// Evidence as KIND:REF (file, url, tool_result, message, artifact, model_inference,
    /// human_assertion, user_statement, chunk); repeatable.
    #[arg(long = "evidence")]
    evidence: Vec<String>,
    /// Who acts, TYPE:ID (agent, user, system, tool) [default: the token, as an agent].
    #[arg(long)]
    actor: Option<String>,
}

#[derive(Subcommand)]
enum ClaimsOp {
    /// Learn a claim: TEXT with at least one --evidence.
    Learn {
        /// The fact (`-` reads stdin).
        text: String,
        /// Evidence as KIND:REF (`chunk:ID`, `file:src/a.rs`, `url:https://…`); repeatable.
        #[arg(long = "evidence")]
        evidence: Vec<String>,
        /// hypothesis, inferred or observed.
        #[arg(long, default_value = "observed")]
        status: String,
        /// 0..=1.
        #[arg(long, default_value_t = 1.0)]
        confidence: f64,
        /// What it is about, TYPE:ID (project, repo, agent, run).
        #[arg(long)]
        subject: Option<String>,
        /// Who learned it, TYPE:ID.
        #[arg(long)]
        actor: Option<String>,
        #[arg(long)]
        session: Option<String>,
        #[arg(long)]
        domain: Option<String>,
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// Graph refs it is about (`service:payments`); repeatable.
        #[arg(long = "about")]
        about: Vec<String>,
        /// The claim it proposes to replace.
        #[arg(long)]
        supersedes: Option<String>,
    },
    /// A claim with its evidence resolved to citations.
    Show { id: String },
    /// Search claims.
    Recall {
        question: String,
        /// Statuses to include (repeatable); active ones when absent.
        #[arg(long = "status")]
        status: Vec<String>,
        #[arg(long)]
        domain: Option<String>,
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// Only claims about TYPE:ID.
        #[arg(long)]
        subject: Option<String>,
        /// Only claims of this actor id.
        #[arg(long)]
        actor: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Mark a claim verified.
    Verify(Change),
    /// Mark a claim disputed.
    Dispute(Change),
    /// Replace a claim by a newer one (admin or the token that learned it).
    Supersede {
        #[command(flatten)]
        change: Change,
        /// The claim that replaces it.
        #[arg(long)]
        by: String,
    },
    /// A claim's events, oldest first.
    History { id: String },
    /// Claims that need a person, most severe first.
    Attention {
        #[arg(long)]
        actor: Option<String>,
        #[arg(long)]
        session: Option<String>,
        /// TYPE:ID.
        #[arg(long)]
        subject: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
}

fn split<'a>(what: &str, raw: &'a str) -> anyhow::Result<(&'a str, &'a str)> {
    raw.split_once(':')
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .with_context(|| format!("{what} `{raw}`: write TYPE:VALUE"))
}

/// `KIND:REF` → an evidence ref (checked by the server's own parser of the kind).
fn evidence(raw: &[String]) -> anyhow::Result<Vec<EvidenceRef>> {
    raw.iter()
        .map(|e| {
            let (kind, reference) = split("evidence", e)?;
            serde_json::from_value(json!({"kind": kind, "ref": reference}))
                .with_context(|| format!("evidence `{e}`: unknown kind `{kind}`"))
        })
        .collect()
}

fn actor(raw: Option<&str>) -> anyhow::Result<Option<Actor>> {
    raw.map(|a| {
        let (t, id) = split("actor", a)?;
        serde_json::from_value(json!({"type": t, "id": id}))
            .with_context(|| format!("actor `{a}`: the type is agent, user, system or tool"))
    })
    .transpose()
}

fn status(raw: &str) -> anyhow::Result<ClaimStatus> {
    ClaimStatus::parse(raw).with_context(|| format!("`{raw}` is not a claim status"))
}

/// One line per claim: id, status, confidence, text, then its citations.
fn print_claim(c: &Value) {
    let stale = if c["evidenceStale"] == true {
        " (evidence stale)"
    } else {
        ""
    };
    println!(
        "{} {}{} {:.2} {}",
        c["id"].as_str().unwrap_or("?"),
        c["status"].as_str().unwrap_or("?"),
        stale,
        c["confidence"].as_f64().unwrap_or(0.0),
        c["text"].as_str().unwrap_or("")
    );
    for e in c["citations"].as_array().into_iter().flatten() {
        let at = e["citation"].as_str().or(e["ref"].as_str()).unwrap_or("");
        let gone = if e["live"] == false { " (gone)" } else { "" };
        println!("  {} {}{}", e["kind"].as_str().unwrap_or("?"), at, gone);
    }
}

impl ClaimsArgs {
    fn client_id(&self) -> anyhow::Result<String> {
        self.client.clone().context("give --client ID")
    }

    fn query(&self) -> anyhow::Result<Vec<(&'static str, String)>> {
        let mut q = vec![("clientId", self.client_id()?)];
        for (k, v) in [("projectId", &self.project), ("groupId", &self.group)] {
            if let Some(v) = v {
                q.push((k, v.clone()));
            }
        }
        Ok(q)
    }

    fn change(&self, c: &Change) -> anyhow::Result<TransitionRequest> {
        Ok(TransitionRequest {
            client_id: self.client_id()?,
            project_id: self.project.clone(),
            group_id: self.group.clone(),
            reason: c.reason.clone(),
            evidence: evidence(&c.evidence)?,
            actor: actor(c.actor.as_deref())?,
            ..Default::default()
        })
    }
}

fn pairs<'a>(q: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    q.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

pub async fn run(args: ClaimsArgs) -> anyhow::Result<()> {
    let out = send(&args).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    print_answer(&args.op, &out);
    Ok(())
}

/// The learn body of `evident claims learn`.
fn learn_body(args: &ClaimsArgs) -> anyhow::Result<LearnRequest> {
    let ClaimsOp::Learn {
        text,
        evidence: ev,
        status: st,
        confidence,
        subject,
        actor: who,
        session,
        domain,
        tags,
        about,
        supersedes,
    } = &args.op
    else {
        anyhow::bail!("not a learn");
    };
    let subject: Option<Subject> = subject
        .as_deref()
        .map(|s| {
            let (t, id) = split("subject", s)?;
            serde_json::from_value(json!({"scopeType": t, "scopeId": id}))
                .with_context(|| format!("subject `{s}`: project, repo, agent or run"))
        })
        .transpose()?;
    Ok(LearnRequest {
        client_id: args.client_id()?,
        project_id: args.project.clone(),
        group_id: args.group.clone(),
        text: crate::client::text_or_stdin(text.clone())?,
        evidence: evidence(ev)?,
        status: status(st)?,
        confidence: *confidence,
        subject,
        actor: actor(who.as_deref())?,
        session_id: session.clone(),
        domain: domain.clone(),
        tags: tags.clone(),
        about: about.clone(),
        supersedes: supersedes.clone(),
    })
}

/// The recall body of `evident claims recall`.
fn recall_body(args: &ClaimsArgs) -> anyhow::Result<RecallRequest> {
    let ClaimsOp::Recall {
        question,
        status: st,
        domain,
        tags,
        subject,
        actor,
        limit,
    } = &args.op
    else {
        anyhow::bail!("not a recall");
    };
    let subject = subject
        .as_deref()
        .map(|s| {
            split("subject", s).map(|(t, id)| SubjectFilter {
                scope_type: t.into(),
                scope_id: id.into(),
            })
        })
        .transpose()?;
    Ok(RecallRequest {
        client_id: args.client_id()?,
        project_id: args.project.clone(),
        group_id: args.group.clone(),
        question: question.clone(),
        status: st
            .iter()
            .map(|s| status(s))
            .collect::<anyhow::Result<_>>()?,
        domain: domain.clone(),
        tags: tags.clone(),
        subject,
        actor: actor.clone(),
        limit: *limit,
    })
}

/// The attention query of `evident claims attention`.
fn attention_query(args: &ClaimsArgs) -> anyhow::Result<Vec<(&'static str, String)>> {
    let ClaimsOp::Attention {
        actor,
        session,
        subject,
        limit,
    } = &args.op
    else {
        anyhow::bail!("not an attention");
    };
    let mut q = args.query()?;
    q.push(("limit", limit.to_string()));
    for (k, v) in [("actor", actor), ("session", session)] {
        if let Some(v) = v {
            q.push((k, v.clone()));
        }
    }
    if let Some(s) = subject {
        let (t, id) = split("subject", s)?;
        q.push(("subjectType", t.into()));
        q.push(("subjectId", id.into()));
    }
    Ok(q)
}

/// Sends the command's request; the server's answer.
async fn send(args: &ClaimsArgs) -> anyhow::Result<Value> {
    let client = args.server.client()?;
    let path = |id: &str, op: &str| format!("/api/v1/claims/{}{op}", encode_path(id));
    Ok(match &args.op {
        ClaimsOp::Learn { .. } => client.post("/api/v1/claims", &learn_body(args)?).await?,
        ClaimsOp::Show { id } => client.get(&path(id, ""), &pairs(&args.query()?)).await?,
        ClaimsOp::History { id } => {
            client
                .get(&path(id, "/history"), &pairs(&args.query()?))
                .await?
        }
        ClaimsOp::Recall { .. } => {
            client
                .post("/api/v1/claims/recall", &recall_body(args)?)
                .await?
        }
        ClaimsOp::Verify(c) => {
            client
                .post(&path(&c.id, "/verify"), &args.change(c)?)
                .await?
        }
        ClaimsOp::Dispute(c) => {
            client
                .post(&path(&c.id, "/dispute"), &args.change(c)?)
                .await?
        }
        ClaimsOp::Supersede { change, by } => {
            let mut body = args.change(change)?;
            body.by = Some(by.clone());
            client.post(&path(&change.id, "/supersede"), &body).await?
        }
        ClaimsOp::Attention { .. } => {
            let q = attention_query(args)?;
            client.get("/api/v1/claims/attention", &pairs(&q)).await?
        }
    })
}

/// Lines for a person: claims with their citations, attention items, history events.
fn print_answer(op: &ClaimsOp, out: &Value) {
    match op {
        ClaimsOp::Recall { .. } => out["claims"]
            .as_array()
            .into_iter()
            .flatten()
            .for_each(print_claim),
        ClaimsOp::Attention { .. } => {
            for item in out["items"].as_array().into_iter().flatten() {
                let reasons: Vec<&str> = item["reasons"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                print!(
                    "[{}: {}] ",
                    item["severity"].as_str().unwrap_or("?"),
                    reasons.join(", ")
                );
                print_claim(item);
            }
        }
        ClaimsOp::History { .. } => {
            for e in out["events"].as_array().into_iter().flatten() {
                println!(
                    "{} {} {} → {} by {}:{}{}",
                    e["seq"],
                    e["change"].as_str().unwrap_or("?"),
                    e["from"].as_str().unwrap_or("-"),
                    e["to"].as_str().unwrap_or("?"),
                    e["actor"]["type"].as_str().unwrap_or("?"),
                    e["actor"]["id"].as_str().unwrap_or("?"),
                    e["reason"]
                        .as_str()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                );
            }
        }
        _ => print_claim(out),
    }
}
