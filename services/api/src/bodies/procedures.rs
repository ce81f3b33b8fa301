//! Request bodies of procedural memory (`/api/v1/procedures…`), shared with the CLI.

use evident_kb::procedures::NewProcedure;
use evident_store::procedures::ProcedureStep;
use serde::{Deserialize, Serialize};

/// `POST /api/v1/procedures` (create, or replace the definition of `id`) and
/// `PUT /api/v1/procedures/{id}` (replace; `id` absent or the path's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SaveProcedureRequest {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Generated (`proc-…`) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub trigger_pattern: String,
    pub steps: Vec<ProcedureStep>,
    /// `learned` or `user_defined`.
    pub source: String,
}

impl SaveProcedureRequest {
    /// The definition the knowledge base takes.
    pub fn definition(&self) -> NewProcedure {
        NewProcedure {
            trigger_pattern: self.trigger_pattern.clone(),
            steps: self.steps.clone(),
            source: self.source.clone(),
        }
    }
}

/// `POST /api/v1/procedures/match`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchProceduresRequest {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The task, in natural language.
    pub task: String,
    /// At most this many procedures (1..=50, default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// `POST /api/v1/procedures/{id}/outcome`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcedureOutcomeRequest {
    pub client_id: String,
    /// The caller's project: a procedure of the client's own scope or of this project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    pub success: bool,
}
