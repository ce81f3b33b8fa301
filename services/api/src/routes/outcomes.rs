//! Task outcomes: `POST /api/v1/outcomes` (the seed's significance filter, then a queued
//! write at priority 4).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use evident_kb::outcomes::{OutcomeAnswer, TaskCategory, TaskOutcome, record_outcome};
use serde::Deserialize;
use serde_json::Value;

use crate::AppState;
use crate::error::ApiResult;
use crate::extract::ApiJson;
use crate::scoped::ScopedRequest;

scoped_request! {
    required:
    /// The seed's task fields and extraction schema, camelCase.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct RecordOutcome {
        pub task_id: String,
        pub category: String,
        #[serde(default)]
        pub action: String,
        #[serde(default)]
        pub step_results: Vec<Value>,
        #[serde(default)]
        pub error: Option<String>,
        #[serde(default)]
        pub final_result: String,
        #[serde(default)]
        pub summary: String,
        #[serde(default)]
        pub key_decisions: Vec<String>,
        #[serde(default)]
        pub patterns_used: Vec<String>,
        #[serde(default)]
        pub artifacts: Vec<String>,
        #[serde(default)]
        pub lessons_learned: Vec<String>,
        #[serde(default)]
        pub topics: Vec<String>,
    }
}

impl RecordOutcome {
    /// The scope and the domain outcome.
    pub fn into_parts(self) -> evident_kb::Result<(evident_core::Scope, TaskOutcome)> {
        let scope = self.write_scope()?;
        let outcome = TaskOutcome {
            task_id: self.task_id,
            category: Some(TaskCategory::parse(&self.category)?),
            action: self.action,
            step_results: self.step_results.len(),
            error: self.error,
            final_result: self.final_result,
            summary: self.summary,
            key_decisions: self.key_decisions,
            patterns_used: self.patterns_used,
            artifacts: self.artifacts,
            lessons_learned: self.lessons_learned,
            topics: self.topics,
        };
        Ok((scope, outcome))
    }
}

/// `202 {ingested: true, sourceUrn, queueTaskId}` when queued; `200 {ingested: false,
/// reason}` when the filter refuses it.
pub async fn record(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<RecordOutcome>,
) -> ApiResult<(StatusCode, Json<OutcomeAnswer>)> {
    let (scope, outcome) = req.into_parts()?;
    let answer = record_outcome(&s.kb, &s.tasks, scope, outcome, s.clock.now_ms()).await?;
    let status = if answer.ingested {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(answer)))
}
