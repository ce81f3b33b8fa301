//! Procedural memory (seed 003, *Procedural Memory*): workflows an orchestrator reuses — a
//! trigger pattern, the steps (`[{agent, action, params?}]`), where it came from (`learned`
//! or `user_defined`), and how it fared (successes, failures, uses, last use).
//!
//! Contract ([`ProcedureStore`]):
//! - A procedure is identified by (client, id) and lives in one scope: its client's own
//!   (`project_id: None`) or one project's. The scope never changes: `put_procedure` of an
//!   id that exists in another scope of the client fails with `Conflict` and writes nothing.
//! - `put_procedure` writes the definition (trigger, steps, source, vector, `updated_at`); a
//!   replaced procedure keeps its statistics and its `created_at`, a new one starts at zero.
//! - A reader `(client, project)` sees the client's own procedures and, with a project, that
//!   project's; never another client's or another project's (the visibility rule without
//!   groups). Reads, `record_procedure_outcome` and `nearest_procedures` apply it.
//! - `record_procedure_outcome` adds one use and one success or failure and moves `last_used_at`
//!   forward to `now` (never back), atomically: N concurrent outcomes add exactly N uses.
//! - `nearest_procedures` ranks by the cosine similarity of the stored vector and the query
//!   vector (computed on normalised vectors; a zero vector has similarity 0), most similar
//!   first, then by id.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::queue::Millis;

/// Where a procedure came from (the seed's `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcedureSource {
    /// Saved by the orchestrator after a successful run.
    Learned,
    /// Told by the user: always preferred to learned ones when it matches.
    UserDefined,
}

impl ProcedureSource {
    pub const ALL: [ProcedureSource; 2] = [ProcedureSource::Learned, ProcedureSource::UserDefined];

    pub fn as_str(self) -> &'static str {
        match self {
            ProcedureSource::Learned => "learned",
            ProcedureSource::UserDefined => "user_defined",
        }
    }

    pub fn parse(raw: &str) -> Option<ProcedureSource> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

/// One step: which agent does what, with optional parameters (a JSON object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcedureStep {
    pub agent: String,
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
}

/// A stored procedure with its statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Procedure {
    pub id: String,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// What kind of task it is for (`email_with_question`, `bug report`).
    pub trigger_pattern: String,
    pub steps: Vec<ProcedureStep>,
    pub source: ProcedureSource,
    pub success_count: u64,
    pub failure_count: u64,
    /// Outcomes recorded (successes + failures).
    pub usage_count: u64,
    /// When the last outcome was recorded (milliseconds since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<Millis>,
    pub created_at: Millis,
    pub updated_at: Millis,
}

impl Procedure {
    /// `success_count / (success_count + failure_count)`; `None` before the first outcome.
    pub fn success_rate(&self) -> Option<f64> {
        let n = self.success_count + self.failure_count;
        (n > 0).then(|| self.success_count as f64 / n as f64)
    }
}

/// A procedure and its cosine similarity to a query vector.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredProcedure {
    pub procedure: Procedure,
    pub cosine: f32,
}

/// What [`ProcedureStore::nearest_procedures`] returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NearestQuery<'a> {
    pub client: &'a str,
    pub project: Option<&'a str>,
    pub vector: &'a [f32],
    /// Candidates: every visible procedure with a cosine at least this…
    pub min_cosine: f32,
    /// …the `max` most similar of them…
    pub max: usize,
    /// …then the `closest` most similar below `min_cosine` (to explain a miss).
    pub closest: usize,
}

#[async_trait]
pub trait ProcedureStore: Send + Sync {
    /// Inserts or replaces the definition of `p` (see the module docs); the procedure as
    /// stored. `vector` is the trigger's embedding.
    async fn put_procedure(&self, p: Procedure, vector: Vec<f32>) -> Result<Procedure>;
    /// The procedure, if `(client, project)` sees it.
    async fn get_procedure(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
    ) -> Result<Option<Procedure>>;
    /// The procedures `(client, project)` sees with an id after `after`, by id, at most `limit`.
    async fn list_procedures(
        &self,
        client: &str,
        project: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Procedure>>;
    /// Deletes the procedure if it lives in exactly `(client, project)`; whether it did.
    async fn delete_procedure(&self, client: &str, project: Option<&str>, id: &str)
    -> Result<bool>;
    /// One use with its result, atomically; the procedure after it, `None` when `(client,
    /// project)` sees no such procedure.
    async fn record_procedure_outcome(
        &self,
        client: &str,
        project: Option<&str>,
        id: &str,
        success: bool,
        now: Millis,
    ) -> Result<Option<Procedure>>;
    /// The candidates of a match (see [`NearestQuery`]), most similar first, then by id.
    async fn nearest_procedures(&self, q: NearestQuery<'_>) -> Result<Vec<ScoredProcedure>>;
}

/// Cosine similarity; 0 when either vector is zero or their lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

/// `v` scaled to unit length (a zero vector stays zero): backends store and compare these.
pub fn normalised(v: &[f32]) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n == 0.0 {
        return v.to_vec();
    }
    v.iter().map(|x| x / n).collect()
}

/// Picks a match's candidates from `(procedure, cosine)` pairs already filtered by
/// visibility (backends that scan in process share this): see [`NearestQuery`].
pub fn select_nearest(
    mut scored: Vec<ScoredProcedure>,
    min_cosine: f32,
    max: usize,
    closest: usize,
) -> Vec<ScoredProcedure> {
    scored.sort_by(|a, b| {
        b.cosine
            .total_cmp(&a.cosine)
            .then_with(|| a.procedure.id.cmp(&b.procedure.id))
    });
    let above = scored.iter().take_while(|s| s.cosine >= min_cosine).count();
    let below: Vec<ScoredProcedure> = scored.drain(above..).take(closest).collect();
    scored.truncate(max);
    scored.extend(below);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_is_scale_free_and_zero_safe() {
        assert!((cosine(&[1.0, 0.0], &[3.0, 0.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
        let n = normalised(&[3.0, 4.0]);
        assert!((n[0] - 0.6).abs() < 1e-6 && (n[1] - 0.8).abs() < 1e-6);
    }

    #[test]
    fn sources_round_trip() {
        for s in ProcedureSource::ALL {
            assert_eq!(ProcedureSource::parse(s.as_str()), Some(s));
        }
        assert_eq!(ProcedureSource::parse("learnt"), None);
    }
}
