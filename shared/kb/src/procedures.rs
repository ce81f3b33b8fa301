//! Procedural memory (seed 003, *Procedural Memory*): workflows the orchestrator reuses, per
//! client (optionally per project), with how often each succeeded.
//!
//! # Matching a task
//!
//! The trigger pattern is embedded when a procedure is saved (`_`, `-`, `.` and `/` read as
//! spaces, so `email_with_question` embeds as words) and the vector stored with it; a match
//! embeds the task once and asks the store for the nearest triggers. Then, per candidate:
//!
//! - `similarity = 0.8 · cosine(task, trigger) + 0.2 · overlap`, where `overlap` is the share
//!   of the trigger's content words found in the task (lower-cased, split on anything but
//!   letters and digits, words under three letters and a few stop words dropped, plural and
//!   `-ed`/`-ing` endings stripped). The embedding carries meaning ("crashes" near "bug"),
//!   the overlap rewards a task that names the trigger's own words.
//! - A procedure **matches** when `similarity ≥` [`MIN_SIMILARITY`] (0.4).
//! - `score = similarity × success rate × decay`, with the success rate
//!   `successes / (successes + failures)` ([`UNTRIED_SUCCESS_RATE`] = 0.5 before the first
//!   outcome) and `decay = 0.5 ^ (days since last used / half-life)` — days since it was
//!   created when never used; the half-life is `[memory] procedure_half_life_days`
//!   (default [`DEFAULT_HALF_LIFE_DAYS`] = 30). An unused procedure loses half its priority
//!   every half-life.
//! - Order: user-defined procedures that match come first, by similarity; then learned ones
//!   that match, by score (then similarity, then id). At most `limit` are returned.
//! - Nothing matches ("missing procedure"): `procedures` is empty and `closest` holds the
//!   [`CLOSEST`] most similar candidates with their similarity, so the caller sees how far
//!   the nearest ones were (and may ask the user, then save the answer).
//!
//! The store returns every visible procedure whose cosine could still reach the threshold
//! (`cosine ≥ (0.4 − 0.2) / 0.8 = 0.25`; at most [`MAX_CANDIDATES`], the nearest first), so
//! the threshold is exact; the embedded store scans its vectors in memory.

use std::collections::HashSet;

use evident_ai::Priority;
use evident_core::validate::{self, FieldError};
use evident_store::procedures::{
    NearestQuery, Procedure, ProcedureSource, ProcedureStep, ScoredProcedure,
};
use evident_store::queue::Millis;
use evident_store::{ErrorKind, StoreError};
use serde::Serialize;

use crate::{Kb, KbError, Result};

/// A procedure matches a task from this similarity on.
pub const MIN_SIMILARITY: f32 = 0.4;
/// Weight of the embedding's cosine in the similarity…
pub const COSINE_WEIGHT: f32 = 0.8;
/// …and of the trigger words found in the task.
pub const OVERLAP_WEIGHT: f32 = 0.2;
/// The lowest cosine that can still reach [`MIN_SIMILARITY`] (with a full overlap).
pub const CANDIDATE_COSINE: f32 = (MIN_SIMILARITY - OVERLAP_WEIGHT) / COSINE_WEIGHT;
/// Most candidates a match ranks (the nearest by cosine).
pub const MAX_CANDIDATES: usize = 256;
/// Near misses shown when nothing matches.
pub const CLOSEST: usize = 3;
/// The success rate of a procedure without outcomes.
pub const UNTRIED_SUCCESS_RATE: f64 = 0.5;
/// Default half-life of the usage decay, in days.
pub const DEFAULT_HALF_LIFE_DAYS: u64 = 30;
pub const DEFAULT_MATCH_LIMIT: usize = 5;
pub const MAX_MATCH_LIMIT: usize = 50;
pub const DEFAULT_LIST_LIMIT: usize = 100;
pub const MAX_LIST_LIMIT: usize = 1000;
/// Longest trigger pattern, in characters.
pub const MAX_TRIGGER_CHARS: usize = 500;
/// Longest task description, in bytes.
pub const MAX_TASK_BYTES: usize = 16 * 1024;
pub const MAX_STEPS: usize = 50;
/// Longest agent or action name, in bytes.
pub const MAX_NAME_BYTES: usize = 200;
/// Largest `params` of one step, as JSON.
pub const MAX_PARAMS_BYTES: usize = 16 * 1024;
/// Longest procedure id, in bytes.
pub const MAX_ID_BYTES: usize = 128;

const DAY_MS: f64 = 24.0 * 3600.0 * 1000.0;

/// A procedure's definition as a caller gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewProcedure {
    pub trigger_pattern: String,
    pub steps: Vec<ProcedureStep>,
    /// `learned` or `user_defined`.
    pub source: String,
}

/// A procedure as answered: the stored one plus its success rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcedureView {
    #[serde(flatten)]
    pub procedure: Procedure,
    /// `successCount / (successCount + failureCount)`; null before the first outcome.
    pub success_rate: Option<f64>,
}

impl From<Procedure> for ProcedureView {
    fn from(procedure: Procedure) -> Self {
        ProcedureView {
            success_rate: procedure.success_rate(),
            procedure,
        }
    }
}

/// One ranked procedure of a match.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcedureMatch {
    #[serde(flatten)]
    pub procedure: ProcedureView,
    /// `0.8 · cosine + 0.2 · overlap` (module docs).
    pub similarity: f32,
    /// `similarity × success rate × decay`: the order of learned procedures.
    pub score: f64,
}

/// The answer of a match.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcedureMatches {
    /// What matched, best first (user-defined first).
    pub procedures: Vec<ProcedureMatch>,
    /// When nothing matched: the nearest candidates, most similar first; else empty.
    pub closest: Vec<ProcedureMatch>,
    /// The threshold a procedure's similarity had to reach.
    pub min_similarity: f32,
}

fn ids(client: &str, project: Option<&str>) -> Result<()> {
    validate::identifier("clientId", client)?;
    if let Some(p) = project {
        validate::identifier("projectId", p)?;
    }
    Ok(())
}

fn check_id(id: &str) -> Result<()> {
    validate::bounded_text("id", id, MAX_ID_BYTES)?;
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    {
        return Err(FieldError::Invalid {
            field: "id",
            reason: "use letters, digits, `-`, `_`, `.` and `:`".into(),
        }
        .into());
    }
    Ok(())
}

fn check_step(i: usize, s: &ProcedureStep) -> Result<()> {
    let named = |field: &'static str, v: &str| -> Result<()> {
        validate::bounded_text(field, v, MAX_NAME_BYTES)
            .map_err(|e| KbError::Invalid(format!("steps[{i}]: {e}")))
    };
    named("agent", &s.agent)?;
    named("action", &s.action)?;
    if let Some(p) = &s.params {
        if !p.is_object() {
            return Err(KbError::Invalid(format!(
                "steps[{i}].params must be a JSON object"
            )));
        }
        let size = serde_json::to_vec(p).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > MAX_PARAMS_BYTES {
            return Err(KbError::Invalid(format!(
                "steps[{i}].params is {size} bytes as JSON; the limit is {MAX_PARAMS_BYTES}"
            )));
        }
    }
    Ok(())
}

/// Validates a definition and refuses credentials anywhere in it; its source.
fn check(def: &NewProcedure) -> Result<ProcedureSource> {
    let source = ProcedureSource::parse(&def.source).ok_or_else(|| FieldError::Invalid {
        field: "source",
        reason: format!("`{}` is not one of learned, user_defined", def.source),
    })?;
    validate::bounded_text(
        "triggerPattern",
        &def.trigger_pattern,
        MAX_TRIGGER_CHARS * 4,
    )?;
    let chars = def.trigger_pattern.chars().count();
    if chars > MAX_TRIGGER_CHARS {
        return Err(FieldError::Invalid {
            field: "triggerPattern",
            reason: format!("is {chars} characters long; the limit is {MAX_TRIGGER_CHARS}"),
        }
        .into());
    }
    if def.steps.is_empty() {
        return Err(FieldError::Empty { field: "steps" }.into());
    }
    if def.steps.len() > MAX_STEPS {
        return Err(FieldError::Invalid {
            field: "steps",
            reason: format!("{} steps; the limit is {MAX_STEPS}", def.steps.len()),
        }
        .into());
    }
    for (i, s) in def.steps.iter().enumerate() {
        check_step(i, s)?;
    }
    let mut scan = crate::credentials::Scan::default();
    scan.text("triggerPattern", &def.trigger_pattern)?;
    for (i, s) in def.steps.iter().enumerate() {
        scan.text(&format!("steps[{i}].agent"), &s.agent)?;
        scan.text(&format!("steps[{i}].action"), &s.action)?;
        if let Some(p) = &s.params {
            scan.json(&format!("steps[{i}].params"), p)?;
        }
    }
    Ok(source)
}

/// The text a trigger is embedded as: its separators read as spaces.
pub fn trigger_text(trigger: &str) -> String {
    trigger.replace(['_', '-', '.', '/'], " ")
}

const STOP_WORDS: [&str; 24] = [
    "the", "and", "for", "with", "from", "that", "this", "about", "into", "when", "what", "which",
    "how", "are", "was", "were", "has", "have", "been", "our", "your", "their", "its", "not",
];

/// Content words, lower-cased, with plural and `-ed`/`-ing` endings stripped.
pub fn terms(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| {
            for suffix in ["ing", "ed", "es", "s"] {
                if let Some(stem) = w.strip_suffix(suffix)
                    && stem.chars().count() >= 3
                {
                    return stem.to_string();
                }
            }
            w
        })
        .collect()
}

/// The share of the trigger's terms found among the task's.
fn overlap(task: &HashSet<String>, trigger: &str) -> f32 {
    let trigger = terms(trigger);
    if trigger.is_empty() {
        return 0.0;
    }
    trigger.iter().filter(|t| task.contains(*t)).count() as f32 / trigger.len() as f32
}

/// `0.5 ^ (days since last used (or created) / half-life)`.
pub fn decay(p: &Procedure, now: Millis, half_life_days: f64) -> f64 {
    let since = p.last_used_at.unwrap_or(p.created_at);
    let days = (now - since).max(0) as f64 / DAY_MS;
    0.5f64.powf(days / half_life_days.max(f64::MIN_POSITIVE))
}

/// Ranks a match's candidates (module docs): the pure half of [`Kb::match_procedures`].
pub fn rank(
    candidates: Vec<ScoredProcedure>,
    task: &str,
    now: Millis,
    half_life_days: f64,
    limit: usize,
) -> ProcedureMatches {
    let task_terms = terms(task);
    let mut scored: Vec<ProcedureMatch> = candidates
        .into_iter()
        .map(|c| {
            let similarity = COSINE_WEIGHT * c.cosine.max(0.0)
                + OVERLAP_WEIGHT * overlap(&task_terms, &c.procedure.trigger_pattern);
            let rate = c.procedure.success_rate().unwrap_or(UNTRIED_SUCCESS_RATE);
            let score = similarity as f64 * rate * decay(&c.procedure, now, half_life_days);
            ProcedureMatch {
                procedure: c.procedure.into(),
                similarity,
                score,
            }
        })
        .collect();
    let user_defined =
        |m: &ProcedureMatch| m.procedure.procedure.source == ProcedureSource::UserDefined;
    let id = |m: &ProcedureMatch| m.procedure.procedure.id.clone();
    scored.sort_by(|a, b| {
        let matching = |m: &ProcedureMatch| m.similarity >= MIN_SIMILARITY;
        matching(b)
            .cmp(&matching(a))
            .then_with(|| user_defined(b).cmp(&user_defined(a)))
            .then_with(|| {
                if user_defined(a) {
                    std::cmp::Ordering::Equal
                } else {
                    b.score.total_cmp(&a.score)
                }
            })
            .then_with(|| b.similarity.total_cmp(&a.similarity))
            .then_with(|| id(a).cmp(&id(b)))
    });
    let matched = scored
        .iter()
        .take_while(|m| m.similarity >= MIN_SIMILARITY)
        .count();
    let mut misses = scored.split_off(matched);
    scored.truncate(limit);
    let closest = if scored.is_empty() {
        misses.sort_by(|a, b| {
            b.similarity
                .total_cmp(&a.similarity)
                .then_with(|| id(a).cmp(&id(b)))
        });
        misses.truncate(CLOSEST);
        misses
    } else {
        Vec::new()
    };
    ProcedureMatches {
        procedures: scored,
        closest,
        min_similarity: MIN_SIMILARITY,
    }
}

/// A new procedure id: `proc-` and 16 hex digits no other call of this process repeats.
fn new_id(now: Millis) -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i64(now);
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("proc-{:016x}", h.finish())
}

fn not_found(id: &str) -> KbError {
    KbError::NotFound {
        what: format!("procedure `{id}`"),
    }
}

fn scope_conflict(id: &str) -> KbError {
    KbError::Conflict {
        code: "procedure_scope_conflict",
        message: format!(
            "procedure `{id}` lives in another scope of this client (a procedure's scope never \
             changes: use its own projectId, or another id)"
        ),
    }
}

impl Kb {
    /// The half-life of the usage decay, in days (default [`DEFAULT_HALF_LIFE_DAYS`]).
    pub fn with_procedure_half_life_days(mut self, days: u64) -> Self {
        self.procedure_half_life_days = days.max(1);
        self
    }

    pub fn procedure_half_life_days(&self) -> u64 {
        self.procedure_half_life_days
    }

    async fn embed_one(&self, text: String) -> Result<Vec<f32>> {
        let mut v = self.embedder.embed(&[text], Priority::INTERACTIVE).await?;
        v.pop()
            .ok_or_else(|| KbError::Invalid("the embedder returned no vector".into()))
    }

    /// Saves a procedure in (client, project): a new one (`id` generated when `None`), or —
    /// with the `id` of one in the same scope — its new definition, statistics kept.
    pub async fn save_procedure(
        &self,
        client: &str,
        project: Option<&str>,
        id: Option<String>,
        def: NewProcedure,
        now: Millis,
    ) -> Result<ProcedureView> {
        ids(client, project)?;
        if let Some(id) = &id {
            check_id(id)?;
        }
        let source = check(&def)?;
        let vector = self.embed_one(trigger_text(&def.trigger_pattern)).await?;
        let p = Procedure {
            id: id.unwrap_or_else(|| new_id(now)),
            client_id: client.to_string(),
            project_id: project.map(str::to_string),
            trigger_pattern: def.trigger_pattern.trim().to_string(),
            steps: def.steps,
            source,
            success_count: 0,
            failure_count: 0,
            usage_count: 0,
            last_used_at: None,
            created_at: now,
            updated_at: now,
        };
        let id = p.id.clone();
        match self.stores.procedures.put_procedure(p, vector).await {
            Ok(stored) => {
                tracing::debug!(client, ?project, id = %stored.id, "procedure saved");
                Ok(stored.into())
            }
            Err(StoreError {
                kind: ErrorKind::Conflict,
                ..
            }) => Err(scope_conflict(&id)),
            Err(e) => Err(e.into()),
        }
    }

    /// Replaces the definition of an existing procedure of exactly (client, project).
    pub async fn update_procedure(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
        def: NewProcedure,
        now: Millis,
    ) -> Result<ProcedureView> {
        self.own_procedure(client, project, id).await?;
        self.save_procedure(client, project, Some(id.to_string()), def, now)
            .await
    }

    /// The procedure of `id` that (client, project) sees.
    pub async fn procedure(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
    ) -> Result<ProcedureView> {
        ids(client, project)?;
        check_id(id)?;
        self.stores
            .procedures
            .get_procedure(client, project, id)
            .await?
            .map(Into::into)
            .ok_or_else(|| not_found(id))
    }

    /// A visible procedure that lives in exactly (client, project): 404 when not visible,
    /// 409 when it lives in the client's scope and the call names a project.
    async fn own_procedure(&self, client: &str, project: Option<&str>, id: &str) -> Result<()> {
        let found = self.procedure(client, project, id).await?;
        if found.procedure.project_id.as_deref() != project {
            return Err(scope_conflict(id));
        }
        Ok(())
    }

    /// The procedures (client, project) sees, by id, after `after`, at most `limit`.
    pub async fn procedures(
        &self,
        client: &str,
        project: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ProcedureView>> {
        ids(client, project)?;
        if !(1..=MAX_LIST_LIMIT).contains(&limit) {
            return Err(FieldError::Invalid {
                field: "limit",
                reason: format!("must be 1..={MAX_LIST_LIMIT}"),
            }
            .into());
        }
        Ok(self
            .stores
            .procedures
            .list_procedures(client, project, after, limit)
            .await?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Deletes a procedure of exactly (client, project).
    pub async fn delete_procedure(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
    ) -> Result<()> {
        self.own_procedure(client, project, id).await?;
        if !self
            .stores
            .procedures
            .delete_procedure(client, project, id)
            .await?
        {
            return Err(not_found(id));
        }
        tracing::debug!(client, ?project, id, "procedure deleted");
        Ok(())
    }

    /// Records one use of a procedure (client, project) sees: its counters and last use move
    /// in one atomic store write.
    pub async fn record_procedure_outcome(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
        success: bool,
        now: Millis,
    ) -> Result<ProcedureView> {
        ids(client, project)?;
        check_id(id)?;
        let after = self
            .stores
            .procedures
            .record_procedure_outcome(client, project, id, success, now)
            .await?
            .ok_or_else(|| not_found(id))?;
        tracing::debug!(
            client,
            ?project,
            id,
            success,
            uses = after.usage_count,
            "procedure outcome"
        );
        Ok(after.into())
    }

    /// The procedures (client, project) sees that match `task`, ranked (module docs).
    pub async fn match_procedures(
        &self,
        client: &str,
        project: Option<&str>,
        task: &str,
        limit: usize,
        now: Millis,
    ) -> Result<ProcedureMatches> {
        ids(client, project)?;
        if task.trim().is_empty() {
            return Err(FieldError::Empty { field: "task" }.into());
        }
        if task.len() > MAX_TASK_BYTES {
            return Err(FieldError::TooLong {
                field: "task",
                len: task.len(),
                max: MAX_TASK_BYTES,
            }
            .into());
        }
        if !(1..=MAX_MATCH_LIMIT).contains(&limit) {
            return Err(FieldError::Invalid {
                field: "limit",
                reason: format!("must be 1..={MAX_MATCH_LIMIT}"),
            }
            .into());
        }
        let vector = self.embed_one(task.to_string()).await?;
        let candidates = self
            .stores
            .procedures
            .nearest_procedures(NearestQuery {
                client,
                project,
                vector: &vector,
                min_cosine: CANDIDATE_COSINE,
                max: MAX_CANDIDATES,
                closest: CLOSEST,
            })
            .await?;
        Ok(rank(
            candidates,
            task,
            now,
            self.procedure_half_life_days as f64,
            limit,
        ))
    }
}

#[cfg(test)]
mod tests;
