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
    Learn(LearnArgs),
    /// A claim with its evidence resolved to citations.
    Show { id: String },
    /// Search claims.
    Recall(RecallArgs),
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
    Attention(AttentionArgs),
}

// The arguments of `claims learn` (a plain comment: the variant's doc is its help).
#[derive(Args)]
struct LearnArgs {
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
}

// The arguments of `claims recall` (a plain comment: the variant's doc is its help).
#[derive(Args)]
struct RecallArgs {
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
}

// The arguments of `claims attention` (a plain comment: the variant's doc is its help).
#[derive(Args)]
struct AttentionArgs {
    #[arg(long)]
    actor: Option<String>,
    #[arg(long)]
    session: Option<String>,
    /// TYPE:ID.
    #[arg(long)]
    subject: Option<String>,
    #[arg(long, default_value_t = 10)]
    limit: usize,
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

fn text_or_stdin(text: String) -> anyhow::Result<String> {
    if text == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).context("reading stdin")?;
        Ok(s)
    } else {
        Ok(text)
    }
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
    let out = args.send().await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    match &args.op {
        ClaimsOp::Recall { .. } => out["claims"]
            .as_array()
            .into_iter()
            .flatten()
            .for_each(print_claim),
        ClaimsOp::Attention { .. } => print_attention(&out),
        ClaimsOp::History { .. } => print_history(&out),
        _ => print_claim(&out),
    }
    Ok(())
}

impl ClaimsArgs {
    /// Sends the request of the operation; the server's JSON answer.
    async fn send(&self) -> anyhow::Result<Value> {
        let client = self.server.client()?;
        let path = |id: &str, op: &str| format!("/api/v1/claims/{}{op}", encode_path(id));
        Ok(match &self.op {
            ClaimsOp::Learn(l) => client.post("/api/v1/claims", &self.learn(l)?).await?,
            ClaimsOp::Show { id } => client.get(&path(id, ""), &pairs(&self.query()?)).await?,
            ClaimsOp::History { id } => {
                client
                    .get(&path(id, "/history"), &pairs(&self.query()?))
                    .await?
            }
            ClaimsOp::Recall(r) => {
                client
                    .post("/api/v1/claims/recall", &self.recall(r)?)
                    .await?
            }
            ClaimsOp::Verify(c) => {
                client
                    .post(&path(&c.id, "/verify"), &self.change(c)?)
                    .await?
            }
            ClaimsOp::Dispute(c) => {
                client
                    .post(&path(&c.id, "/dispute"), &self.change(c)?)
                    .await?
            }
            ClaimsOp::Supersede { change, by } => {
                let mut body = self.change(change)?;
                body.by = Some(by.clone());
                client.post(&path(&change.id, "/supersede"), &body).await?
            }
            ClaimsOp::Attention(a) => {
                client
                    .get("/api/v1/claims/attention", &pairs(&self.attention(a)?))
                    .await?
            }
        })
    }

    /// The body of `claims learn` (the text read from stdin when it is `-`).
    fn learn(&self, l: &LearnArgs) -> anyhow::Result<LearnRequest> {
        let subject: Option<Subject> = l
            .subject
            .as_deref()
            .map(|s| {
                let (t, id) = split("subject", s)?;
                serde_json::from_value(json!({"scopeType": t, "scopeId": id}))
                    .with_context(|| format!("subject `{s}`: project, repo, agent or run"))
            })
            .transpose()?;
        Ok(LearnRequest {
            client_id: self.client_id()?,
            project_id: self.project.clone(),
            group_id: self.group.clone(),
            text: text_or_stdin(l.text.clone())?,
            evidence: evidence(&l.evidence)?,
            status: status(&l.status)?,
            confidence: l.confidence,
            subject,
            actor: actor(l.actor.as_deref())?,
            session_id: l.session.clone(),
            domain: l.domain.clone(),
            tags: l.tags.clone(),
            about: l.about.clone(),
            supersedes: l.supersedes.clone(),
        })
    }

    /// The body of `claims recall`.
    fn recall(&self, r: &RecallArgs) -> anyhow::Result<RecallRequest> {
        let subject = r
            .subject
            .as_deref()
            .map(|s| {
                split("subject", s).map(|(t, id)| SubjectFilter {
                    scope_type: t.into(),
                    scope_id: id.into(),
                })
            })
            .transpose()?;
        Ok(RecallRequest {
            client_id: self.client_id()?,
            project_id: self.project.clone(),
            group_id: self.group.clone(),
            question: r.question.clone(),
            status: r
                .status
                .iter()
                .map(|s| status(s))
                .collect::<anyhow::Result<_>>()?,
            domain: r.domain.clone(),
            tags: r.tags.clone(),
            subject,
            actor: r.actor.clone(),
            limit: r.limit,
        })
    }

    /// The query of `claims attention`: the scope, the limit and the filters given.
    fn attention(&self, a: &AttentionArgs) -> anyhow::Result<Vec<(&'static str, String)>> {
        let mut q = self.query()?;
        q.push(("limit", a.limit.to_string()));
        for (k, v) in [("actor", &a.actor), ("session", &a.session)] {
            if let Some(v) = v {
                q.push((k, v.clone()));
            }
        }
        if let Some(s) = &a.subject {
            let (t, id) = split("subject", s)?;
            q.push(("subjectType", t.into()));
            q.push(("subjectId", id.into()));
        }
        Ok(q)
    }
}

/// `claims attention`: each item's severity and reasons, then the claim.
fn print_attention(out: &Value) {
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

/// `claims history`: one line per event, `SEQ CHANGE FROM → TO by TYPE:ID: REASON`.
fn print_history(out: &Value) {
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
