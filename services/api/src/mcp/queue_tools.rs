//! Queue steering for operators' agents (`steer_task`): retry a task in `error`, or move a
//! waiting task to a position — what `POST /api/v1/queue/{taskId}/{retry,reorder,prioritize}`
//! and `evident queue retry|reorder` do, under the same rule: an admin of the task's own
//! scope, and a task outside the grant does not exist for the caller.

use axum::http::StatusCode;
use evident_core::access::{Intent, Role};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use super::EvidentMcp;
use super::access::Caller;
use super::params::SteerTaskArgs;
use crate::error::ApiError;

type ToolResult = Result<CallToolResult, ErrorData>;

#[tool_router(router = queue_router, vis = "pub(super)")]
impl EvidentMcp {
    /// For operators (admin grant): `action` `retry` moves a task in `error` back to the
    /// queue after its cause was fixed; `reorder` moves a waiting task to `position` among
    /// the tasks of its priority (1 = next). Returns the task as it is afterwards.
    #[tool(annotations(
        title = "Steer a queued task",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn steer_task(
        &self,
        Parameters(a): Parameters<SteerTaskArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let caller = Caller::of(&ctx)?;
        let tasks = &self.state.tasks;
        // Like the REST guard: unknown and not-yours are the same answer.
        let task = tasks
            .queue()
            .get(&a.task_id)
            .await
            .map_err(|e| super::access::kb_error(e.into()))?
            .filter(|t| caller.principal.grant.covers_data(&t.scope));
        let scope = task.as_ref().map(|t| t.scope.clone());
        let r = async {
            let task = task.ok_or_else(|| {
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    format!("task `{}` not found", a.task_id),
                )
            })?;
            caller.authorize(Role::Admin, &task.scope, Intent::Write)?;
            let now = self.state.clock.now_ms();
            let done = match (a.action.as_str(), a.position) {
                ("retry", None) => tasks.retry(&task.task_id, now).await,
                ("reorder", Some(p)) => tasks.reorder(&task.task_id, p, now).await,
                ("retry", Some(_)) => {
                    return Err(ApiError::bad_request(
                        "invalid_request",
                        "`position` goes with `reorder`, not `retry`",
                    ));
                }
                ("reorder", None) => {
                    return Err(ApiError::bad_request(
                        "missing_field",
                        "`reorder` needs `position` (1 = next)",
                    ));
                }
                (other, _) => {
                    return Err(ApiError::bad_request(
                        "invalid_request",
                        format!("`action` must be `retry` or `reorder`, not `{other}`"),
                    ));
                }
            };
            Ok(done?)
        }
        .await;
        self.audited(&caller, "steer_task", scope, r).await
    }
}
