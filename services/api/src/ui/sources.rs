//! `/ui/sources`: every registered source of every kind with its polling status (refreshed
//! live); a source's page with its totals, skips by reason with examples, last error and
//! recent tasks; register, enable, disable and remove, each after a confirmation page.
//! The writes go through `evident-sources` like `POST /api/v1/sources/{kind}` and
//! `DELETE /api/v1/sources/{kind}/{id}`.

use std::collections::HashMap;
use std::fmt::Write;

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use evident_kb::listing::TaskQuery;
use evident_sources::{self as sources, SourceRequest};
use evident_store::indexers::IndexerSource;
use serde::Deserialize;
use serde_json::Value;

use super::layout::{self, badge, esc, link, url_enc};
use super::queue::{TASK_HEAD, task_rows};
use super::session::{CsrfForm, Ctx};
use crate::AppState;
use crate::error::{ApiError, ApiResult};

/// `disabled`, `error`, `ok` or `pending` (`evident_kb::overview::source_state`).
pub fn state_of(s: &IndexerSource) -> &'static str {
    evident_kb::overview::source_state(s)
}

/// Numbers and maps of numbers of a stats object, compactly (`commits 12 · skipped: binary 2`).
fn compact(v: &Value) -> String {
    let Some(map) = v.as_object() else {
        return String::new();
    };
    let mut parts = Vec::new();
    for (k, v) in map {
        match v {
            Value::Number(n) => parts.push(format!("{} {n}", esc(k))),
            Value::Object(m) if m.values().all(Value::is_number) && !m.is_empty() => {
                let inner: Vec<String> =
                    m.iter().map(|(kk, n)| format!("{} {n}", esc(kk))).collect();
                parts.push(format!("{}: {}", esc(k), inner.join(", ")));
            }
            _ => {}
        }
    }
    parts.join(" · ")
}

fn retry_at(s: &IndexerSource) -> String {
    s.status
        .stats
        .get("retryAt")
        .and_then(Value::as_i64)
        .map(layout::time)
        .unwrap_or_else(|| "—".into())
}

fn source_link(ctx: &Ctx, id: &str) -> String {
    link(&ctx.link(&format!("/ui/sources/{}", url_enc(id)), ""), id)
}

async fn live(s: &AppState, ctx: &Ctx) -> ApiResult<String> {
    let list = sources::list(&s.kb, &ctx.vis()?, None).await?;
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|src| {
            let err = src.status.last_error.as_deref().unwrap_or("");
            let short: String = err.chars().take(100).collect();
            vec![
                source_link(ctx, &src.id),
                esc(&src.kind),
                format!(
                    "<span class=\"state\" data-source=\"{}\">{}</span>",
                    esc(&src.id),
                    badge(state_of(src))
                ),
                layout::opt_time(src.status.last_poll_at),
                compact(&src.status.stats["totals"]),
                format!("<span title=\"{}\">{}</span>", esc(err), esc(&short)),
                retry_at(src),
            ]
        })
        .collect();
    Ok(layout::table(
        "sources",
        &[
            "source",
            "kind",
            "state",
            "last poll",
            "totals",
            "last error",
            "retry at",
        ],
        &rows,
    ))
}

fn add_form(ctx: &Ctx, kind: &str, id: &str, interval: &str, settings: &str) -> String {
    let mut kinds = String::new();
    for k in sources::KINDS {
        let sel = if k.kind == kind { " selected" } else { "" };
        let _ = write!(kinds, "<option{sel}>{}</option>", k.kind);
    }
    let inner = format!(
        "<label>kind <select name=\"kind\">{kinds}</select></label>\
         <label>id <input name=\"id\" value=\"{}\" placeholder=\"default: client.name\"></label>\
         <label>interval (s) <input name=\"intervalSecs\" value=\"{}\" size=\"6\"></label>\
         <label class=\"wide\">settings (JSON object, as in <code>POST /api/v1/sources/{{kind}}</code>)\
         <textarea name=\"settings\" rows=\"4\" placeholder='{{\"path\": \"/srv/repos/shop\"}}'>{}</textarea></label>\
         <button type=\"submit\">Review</button>",
        esc(id),
        esc(interval),
        esc(settings)
    );
    format!(
        "<details class=\"add\"><summary>Add a source</summary>{}</details>",
        ctx.form("/ui/sources", &inner)
    )
}

pub async fn list(State(s): State<AppState>, ctx: Ctx) -> ApiResult<Response> {
    let live = live(&s, &ctx).await?;
    if ctx.fragment {
        return Ok(layout::fragment(live));
    }
    let body = format!(
        "{}<div id=\"live\" data-live>{live}</div>",
        add_form(&ctx, "git", "", "", "")
    );
    Ok(layout::page(&ctx, "/ui/sources", "Sources", &body))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddForm {
    kind: String,
    #[serde(default)]
    id: String,
    #[serde(default)]
    interval_secs: String,
    #[serde(default)]
    settings: String,
    #[serde(default)]
    confirmed: Option<String>,
}

/// The request the form describes: its settings with the page's scope and the common fields.
fn request_of(ctx: &Ctx, f: &AddForm) -> ApiResult<SourceRequest> {
    let mut body = if f.settings.trim().is_empty() {
        serde_json::Map::new()
    } else {
        match serde_json::from_str::<Value>(&f.settings) {
            Ok(Value::Object(m)) => m,
            _ => {
                return Err(ApiError::bad_request(
                    "invalid_form",
                    "settings must be a JSON object",
                ));
            }
        }
    };
    for (k, v) in [
        ("clientId", &ctx.scope.client_id),
        ("projectId", &ctx.scope.project_id),
        ("groupId", &ctx.scope.group_id),
    ] {
        body.remove(k);
        if let Some(v) = v {
            body.insert(k.into(), v.as_str().into());
        }
    }
    if !f.id.trim().is_empty() {
        body.insert("id".into(), f.id.trim().into());
    }
    if !f.interval_secs.trim().is_empty() {
        let n: u64 = f.interval_secs.trim().parse().map_err(|_| {
            ApiError::bad_request("invalid_form", "interval must be a whole number of seconds")
        })?;
        body.insert("intervalSecs".into(), n.into());
    }
    Ok(SourceRequest::from_json(Value::Object(body))?)
}

/// First post: the source as it would be stored, and a confirmation form; second post
/// (`confirmed=1`): registered, as `POST /api/v1/sources/{kind}`.
pub async fn add(
    State(s): State<AppState>,
    ctx: Ctx,
    CsrfForm(f): CsrfForm<AddForm>,
) -> ApiResult<Response> {
    let req = request_of(&ctx, &f)?;
    if f.confirmed.as_deref() == Some("1") {
        let source = sources::register(&s.kb, &f.kind, &req, s.clock.now_ms()).await?;
        return Ok(redirect(
            &ctx.link(&format!("/ui/sources/{}", url_enc(&source.id)), ""),
        ));
    }
    // Checked as registration would (commands, credential variables, paths): the preview
    // shows nothing a registration would refuse.
    let preview = req.to_source_with(&f.kind, s.clock.now_ms(), &sources::access::current())?;
    let shown = serde_json::to_string_pretty(&preview.config).unwrap_or_default();
    let inner = format!(
        "<input type=\"hidden\" name=\"kind\" value=\"{}\"><input type=\"hidden\" name=\"id\" value=\"{}\">\
         <input type=\"hidden\" name=\"intervalSecs\" value=\"{}\"><input type=\"hidden\" name=\"settings\" value=\"{}\">\
         <input type=\"hidden\" name=\"confirmed\" value=\"1\"><button type=\"submit\" id=\"confirm\">Register</button>",
        esc(&f.kind),
        esc(&f.id),
        esc(&f.interval_secs),
        esc(&f.settings)
    );
    let body = format!(
        "<p>Register the {} source <b>{}</b> (every {} s) with these settings?</p><pre>{}</pre>{}{}",
        esc(&f.kind),
        esc(&preview.id),
        preview.interval_secs,
        esc(&shown),
        ctx.form("/ui/sources", &inner),
        link(&ctx.link("/ui/sources", ""), "Cancel")
    );
    Ok(layout::page(
        &ctx,
        "/ui/sources",
        "Register a source?",
        &body,
    ))
}

fn redirect(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

fn details(src: &IndexerSource) -> String {
    let st = &src.status;
    let totals = &st.stats["totals"];
    let mut out = String::from("<dl class=\"props\" id=\"source\">");
    for (k, v) in [
        ("kind", esc(&src.kind)),
        ("state", badge(state_of(src))),
        (
            "scope",
            esc(&evident_core::access::describe_scope(&src.scope)),
        ),
        ("interval", format!("{} s", src.interval_secs)),
        ("last poll", layout::opt_time(st.last_poll_at)),
        ("last success", layout::opt_time(st.last_success_at)),
        ("retry at", retry_at(src)),
        ("totals", compact(totals)),
        ("last poll's counts", compact(&st.stats["lastPoll"])),
    ] {
        let _ = write!(out, "<dt>{k}</dt><dd>{v}</dd>");
    }
    out.push_str("</dl>");
    if let Some(skipped) = totals
        .get("skipped")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
    {
        let rows: Vec<Vec<String>> = skipped
            .iter()
            .map(|(r, n)| vec![esc(r), esc(&n.to_string())])
            .collect();
        out.push_str("<h2>Skipped, by reason</h2>");
        out.push_str(&layout::table("skipped", &["reason", "items"], &rows));
        if let Some(ex) = totals.get("skippedExamples").and_then(Value::as_array) {
            out.push_str("<ul class=\"examples\">");
            for e in ex.iter().take(20) {
                let _ = write!(
                    out,
                    "<li>{}</li>",
                    esc(e.as_str().unwrap_or(&e.to_string()))
                );
            }
            out.push_str("</ul>");
        }
    }
    if let Some(e) = &st.last_error {
        let _ = write!(
            out,
            "<h2>Last error</h2><pre class=\"error\">{}</pre>",
            esc(e)
        );
    }
    let config = serde_json::to_string_pretty(&src.config).unwrap_or_default();
    let _ = write!(
        out,
        "<details><summary>Settings</summary><pre>{}</pre></details>",
        esc(&config)
    );
    out
}

/// The confirmation of `action` (`enable`, `disable`, `remove`), or the buttons asking it.
fn actions(ctx: &Ctx, src: &IndexerSource, confirm: Option<&str>) -> String {
    let base = format!("/ui/sources/{}", url_enc(&src.id));
    if let Some(action @ ("enable" | "disable" | "remove")) = confirm {
        let what = match action {
            "remove" => "Remove this source and everything it wrote?",
            "disable" => "Stop polling this source?",
            _ => "Poll this source again?",
        };
        let button = format!("<button type=\"submit\" id=\"confirm\">Yes, {action}</button>");
        return format!(
            "<div class=\"confirm\"><p>{what}</p>{}{}</div>",
            ctx.form(&format!("{base}/{action}"), &button),
            link(&ctx.link(&base, ""), "Cancel")
        );
    }
    let toggle = if src.enabled { "disable" } else { "enable" };
    let mut out = String::from("<div class=\"actions\">");
    for action in [toggle, "remove"] {
        let _ = write!(
            out,
            "<a class=\"button\" id=\"{action}\" href=\"{}\">{action}</a>",
            esc(&ctx.link(&base, &format!("confirm={action}")))
        );
    }
    out.push_str("</div>");
    out
}

#[derive(Deserialize, Default)]
struct ShowQuery {
    #[serde(default)]
    confirm: Option<String>,
}

pub async fn show(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ctx: Ctx,
) -> ApiResult<Response> {
    let q: ShowQuery = ctx.params()?;
    let src = sources::get(&s.kb, &ctx.vis()?, None, &id).await?;
    // Its tasks: the page of the client's tasks, those under the source's URN prefix, newest first.
    let prefix = sources::urn_prefix(&src.kind, &src.id);
    let query = TaskQuery {
        client_id: src.scope.client_id.clone(),
        limit: Some(evident_kb::listing::MAX_TASKS),
        ..Default::default()
    };
    let grant = ctx.principal.grant.clone();
    let page = s.tasks.list(query, |scope| grant.sees(scope)).await?;
    let mut tasks: Vec<_> = page
        .tasks
        .into_iter()
        .filter(|t| t.source_urn.starts_with(&prefix))
        .collect();
    tasks.reverse();
    tasks.truncate(50);
    let body = format!(
        "{}{}<h2>Recent tasks</h2>{}",
        actions(&ctx, &src, q.confirm.as_deref()),
        details(&src),
        layout::table("source-tasks", TASK_HEAD, &task_rows(&ctx, &tasks))
    );
    Ok(layout::page(
        &ctx,
        "/ui/sources",
        &format!("Source {}", src.id),
        &body,
    ))
}

async fn set_enabled(s: &AppState, ctx: &Ctx, id: &str, enabled: bool) -> ApiResult<Response> {
    let mut src = sources::get(&s.kb, &ctx.vis()?, None, id).await?;
    src.enabled = enabled;
    let now = s.clock.now_ms();
    src.updated_at = now;
    sources::put(&s.kb, src, now).await?;
    Ok(redirect(
        &ctx.link(&format!("/ui/sources/{}", url_enc(id)), ""),
    ))
}

pub async fn enable(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ctx: Ctx,
    CsrfForm(_): CsrfForm<HashMap<String, String>>,
) -> ApiResult<Response> {
    set_enabled(&s, &ctx, &id, true).await
}

pub async fn disable(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ctx: Ctx,
    CsrfForm(_): CsrfForm<HashMap<String, String>>,
) -> ApiResult<Response> {
    set_enabled(&s, &ctx, &id, false).await
}

/// Unregisters the source and queues the removal of what it wrote, as `DELETE`.
pub async fn remove(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ctx: Ctx,
    CsrfForm(_): CsrfForm<HashMap<String, String>>,
) -> ApiResult<Response> {
    let task =
        sources::unregister(&s.kb, &s.tasks, &ctx.vis()?, None, &id, s.clock.now_ms()).await?;
    Ok(redirect(&ctx.link(
        &format!("/ui/queue/{}", url_enc(&task.task_id)),
        "",
    )))
}
