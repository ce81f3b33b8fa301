//! `/ui/queue`: tasks filtered by state, kind, client and source, refreshed live; a task's
//! page with its attempts, backoff and last error; retry, prioritise ("run next") and
//! reorder (a position within its priority) as forms, each the REST route of the same name.

use std::collections::HashMap;
use std::fmt::Write;

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use evident_kb::listing::TaskQuery;
use evident_store::queue::{TaskRecord, TaskState};
use serde::Deserialize;

use super::layout::{self, badge, esc, link, url_enc};
use super::session::{CsrfForm, Ctx};
use crate::AppState;
use crate::error::ApiResult;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Filter {
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    source_urn: Option<String>,
    #[serde(default)]
    after: Option<String>,
}

fn given(v: &Option<String>) -> Option<String> {
    v.clone().filter(|v| !v.is_empty())
}

/// The link to a task's page.
pub fn task_link(ctx: &Ctx, id: &str) -> String {
    link(&ctx.link(&format!("/ui/queue/{}", url_enc(id)), ""), id)
}

/// One row per task (shared with a source's page).
pub fn task_rows(ctx: &Ctx, tasks: &[TaskRecord]) -> Vec<Vec<String>> {
    tasks
        .iter()
        .map(|t| {
            let error = t.last_error.as_deref().unwrap_or("");
            let short: String = error.chars().take(120).collect();
            vec![
                task_link(ctx, &t.task_id),
                esc(&t.kind),
                format!("<span class=\"urn\">{}</span>", esc(&t.source_urn)),
                badge(t.state.as_str()),
                t.priority.to_string(),
                t.attempts.to_string(),
                layout::opt_time(t.next_retry_at),
                format!("<span title=\"{}\">{}</span>", esc(error), esc(&short)),
                layout::time(t.updated_at),
            ]
        })
        .collect()
}

pub const TASK_HEAD: &[&str] = &[
    "task",
    "kind",
    "source",
    "state",
    "priority",
    "attempts",
    "retry at",
    "last error",
    "updated",
];

async fn live(s: &AppState, ctx: &Ctx, f: &Filter) -> ApiResult<String> {
    let query = TaskQuery {
        state: given(&f.state),
        client_id: ctx.client().map(str::to_string),
        source_urn: given(&f.source_urn),
        after: given(&f.after),
        limit: Some(200),
    };
    let grant = ctx.principal.grant.clone();
    let page = s.tasks.list(query, |scope| grant.sees(scope)).await?;
    let kind = given(&f.kind);
    let tasks: Vec<TaskRecord> = page
        .tasks
        .into_iter()
        .filter(|t| kind.as_ref().is_none_or(|k| &t.kind == k))
        .collect();
    let mut out = String::from("<p class=\"counts\">");
    for (state, n) in &page.counts {
        let _ = write!(
            out,
            "<a href=\"{}\">{} <b>{n}</b></a> ",
            esc(&ctx.link("/ui/queue", &format!("state={state}"))),
            badge(state)
        );
    }
    out.push_str("</p>");
    out.push_str(&layout::table("tasks", TASK_HEAD, &task_rows(ctx, &tasks)));
    if let Some(next) = page.next {
        let extra = format!(
            "state={}&kind={}&sourceUrn={}&after={}",
            url_enc(f.state.as_deref().unwrap_or("")),
            url_enc(f.kind.as_deref().unwrap_or("")),
            url_enc(f.source_urn.as_deref().unwrap_or("")),
            url_enc(&next)
        );
        let _ = write!(
            out,
            "<p>{}</p>",
            link(&ctx.link("/ui/queue", &extra), "next page →")
        );
    }
    Ok(out)
}

fn filter_form(ctx: &Ctx, f: &Filter) -> String {
    let mut states = String::from("<option value=\"\">any state</option>");
    for st in TaskState::ALL {
        let sel = if f.state.as_deref() == Some(st.as_str()) {
            " selected"
        } else {
            ""
        };
        let _ = write!(states, "<option{sel}>{}</option>", st.as_str());
    }
    let hidden = layout::scope_inputs(&ctx.scope);
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/ui/queue\">{hidden}\
         <select name=\"state\" id=\"state\">{states}</select>\
         <input name=\"kind\" placeholder=\"kind\" value=\"{}\" size=\"10\">\
         <input name=\"sourceUrn\" placeholder=\"source urn\" value=\"{}\" size=\"20\">\
         <button type=\"submit\">Filter</button></form>",
        esc(f.kind.as_deref().unwrap_or("")),
        esc(f.source_urn.as_deref().unwrap_or(""))
    )
}

pub async fn list(State(s): State<AppState>, ctx: Ctx) -> ApiResult<Response> {
    let f: Filter = ctx.params()?;
    let live = live(&s, &ctx, &f).await?;
    if ctx.fragment {
        return Ok(layout::fragment(live));
    }
    let body = format!(
        "{}<div id=\"live\" data-live>{live}</div>",
        filter_form(&ctx, &f)
    );
    Ok(layout::page(&ctx, "/ui/queue", "Queue", &body))
}

fn details(t: &TaskRecord) -> String {
    let rows: Vec<(&str, String)> = vec![
        ("state", badge(t.state.as_str())),
        ("kind", esc(&t.kind)),
        ("source", esc(&t.source_urn)),
        (
            "scope",
            esc(&evident_core::access::describe_scope(&t.scope)),
        ),
        ("priority", t.priority.to_string()),
        (
            "queue position",
            t.queue_position
                .map(|p| p.to_string())
                .unwrap_or_else(|| "—".into()),
        ),
        ("attempts (claims)", t.attempts.to_string()),
        ("retries (operational failures)", t.retries.to_string()),
        ("backoff: next retry at", layout::opt_time(t.next_retry_at)),
        ("lease", esc(t.lease_owner.as_deref().unwrap_or("—"))),
        ("lease expires", layout::opt_time(t.lease_expires_at)),
        ("created", layout::time(t.created_at)),
        ("updated", layout::time(t.updated_at)),
    ];
    let mut out = String::from("<dl class=\"props\" id=\"task\">");
    for (k, v) in rows {
        let _ = write!(out, "<dt>{k}</dt><dd>{v}</dd>");
    }
    out.push_str("</dl>");
    if let Some(e) = &t.last_error {
        let _ = write!(
            out,
            "<h2>Last error</h2><pre class=\"error\" id=\"last-error\">{}</pre>",
            esc(e)
        );
    }
    out
}

fn actions(ctx: &Ctx, t: &TaskRecord) -> String {
    let base = format!("/ui/queue/{}", url_enc(&t.task_id));
    let mut out = String::from("<div class=\"actions\">");
    if t.state == TaskState::Error {
        out.push_str(&ctx.form(
            &format!("{base}/retry"),
            "<button type=\"submit\" id=\"retry\">Retry</button>",
        ));
    }
    if matches!(t.state, TaskState::Queued | TaskState::RetryWait) {
        out.push_str(&ctx.form(
            &format!("{base}/prioritize"),
            "<button type=\"submit\" id=\"prioritize\">Run next</button>",
        ));
        // The queue's own ordering: an explicit position among the waiting tasks of the
        // same priority (1 = first), which claims honour (`TaskQueue::reorder`).
        let current = t.queue_position.unwrap_or(1).max(1);
        out.push_str(&ctx.form(
            &format!("{base}/reorder"),
            &format!(
                "<label>position in p{} <input type=\"number\" name=\"position\" \
                 id=\"position\" min=\"1\" value=\"{current}\" size=\"4\" required></label> \
                 <button type=\"submit\" id=\"reorder\">Move</button>",
                t.priority
            ),
        ));
    }
    out.push_str("</div>");
    out
}

pub async fn show(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ctx: Ctx,
) -> ApiResult<Response> {
    let t = s.tasks.task(&id).await?;
    let body = format!(
        "{}{}<p>{}</p>",
        actions(&ctx, &t),
        details(&t),
        link(
            &ctx.link(
                "/ui/queue",
                &format!("sourceUrn={}", url_enc(&t.source_urn))
            ),
            "other tasks of this source"
        )
    );
    Ok(layout::page(
        &ctx,
        "/ui/queue",
        &format!("Task {id}"),
        &body,
    ))
}

fn back_to(ctx: &Ctx, id: &str) -> Response {
    let to = ctx.link(&format!("/ui/queue/{}", url_enc(id)), "");
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(&to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// Moves an `error` task back to `queued`, as `POST /api/v1/queue/{taskId}/retry`.
pub async fn retry(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ctx: Ctx,
    CsrfForm(_): CsrfForm<HashMap<String, String>>,
) -> ApiResult<Response> {
    s.tasks.retry(&id, s.clock.now_ms()).await?;
    Ok(back_to(&ctx, &id))
}

/// Moves a waiting task to the front, as `POST /api/v1/queue/{taskId}/prioritize`.
pub async fn prioritize(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ctx: Ctx,
    CsrfForm(_): CsrfForm<HashMap<String, String>>,
) -> ApiResult<Response> {
    s.tasks.reorder(&id, 1, s.clock.now_ms()).await?;
    Ok(back_to(&ctx, &id))
}

#[derive(Deserialize)]
pub struct PositionForm {
    position: i64,
}

/// Moves a waiting task to a position within its priority (1 = next), as
/// `POST /api/v1/queue/{taskId}/reorder`.
pub async fn reorder(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ctx: Ctx,
    CsrfForm(form): CsrfForm<PositionForm>,
) -> ApiResult<Response> {
    s.tasks
        .reorder(&id, form.position, s.clock.now_ms())
        .await?;
    Ok(back_to(&ctx, &id))
}
