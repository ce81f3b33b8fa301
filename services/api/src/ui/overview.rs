//! `/ui`: per client, the indexed sources and chunks, the graph's nodes and edges, the polled
//! sources by state, the queue by state and priority, and the last hour's throughput
//! (`Kb::overview`). A figure that is a bound rather than exact ends in `+` and the page says
//! why under the tiles.

use std::fmt::Write;

use axum::extract::State;
use axum::response::Response;
use evident_store::queue::TaskState;

use super::layout::{self, badge, esc};
use super::session::Ctx;
use crate::AppState;
use crate::error::ApiResult;

fn tile(id: &str, label: &str, value: String) -> String {
    format!(
        "<div class=\"tile\" id=\"{id}\"><b>{value}</b><span>{}</span></div>",
        esc(label)
    )
}

fn queue_table(o: &evident_kb::overview::Overview) -> String {
    let priorities: Vec<u8> = {
        let mut p: Vec<u8> = o
            .queue
            .by_state_priority
            .iter()
            .map(|(_, p, _)| *p)
            .collect();
        p.sort_unstable();
        p.dedup();
        p
    };
    let mut head = vec!["state".to_string()];
    head.extend(priorities.iter().map(|p| format!("p{p}")));
    head.push("total".into());
    let rows: Vec<Vec<String>> = TaskState::ALL
        .iter()
        .map(|st| {
            let mut row = vec![badge(st.as_str())];
            for p in &priorities {
                let n: u64 = o
                    .queue
                    .by_state_priority
                    .iter()
                    .filter(|(s, pr, _)| s == st && pr == p)
                    .map(|(_, _, n)| n)
                    .sum();
                row.push(n.to_string());
            }
            row.push(o.queue.state(*st).to_string());
            row
        })
        .collect();
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    layout::table("queue-depth", &head, &rows)
}

/// Says which figures are bounds (`+`) and why, so a capped figure is never read as exact.
fn bounds_note(o: &evident_kb::overview::Overview) -> String {
    let mut notes = Vec::new();
    if o.sources_capped {
        notes.push(format!(
            "chunks and indexed sources count the first {} sources",
            evident_kb::listing::MAX_SOURCES
        ));
    }
    if o.throughput_capped {
        notes.push(format!(
            "more than {} tasks of a final state ended in the last hour (the count stops \
             there so the page stays fast)",
            evident_kb::overview::MAX_COUNTED_TASKS
        ));
    }
    if notes.is_empty() {
        return String::new();
    }
    format!(
        "<p class=\"muted\" id=\"capped\">+ at least: {}.</p>",
        esc(&notes.join("; "))
    )
}

pub async fn page(State(s): State<AppState>, ctx: Ctx) -> ApiResult<Response> {
    let grant = ctx.principal.grant.clone();
    let o =
        s.kb.overview(
            &s.tasks,
            &ctx.vis()?,
            ctx.client(),
            |sc| grant.sees(sc),
            s.clock.now_ms(),
        )
        .await?;
    let capped = if o.throughput_capped { "+" } else { "" };
    let sources_capped = if o.sources_capped { "+" } else { "" };
    let mut body = String::from("<div class=\"tiles\">");
    body.push_str(&tile(
        "chunks",
        "chunks",
        format!("{}{sources_capped}", o.chunks),
    ));
    body.push_str(&tile(
        "indexed",
        "indexed sources",
        format!("{}{sources_capped}", o.indexed_sources),
    ));
    body.push_str(&tile("nodes", "graph nodes", o.nodes.to_string()));
    body.push_str(&tile("edges", "graph edges", o.edges.to_string()));
    body.push_str(&tile(
        "done-hour",
        "tasks done, last hour",
        format!("{}{capped}", o.done_last_hour),
    ));
    body.push_str(&tile(
        "errors-hour",
        "tasks failed, last hour",
        format!("{}{capped}", o.errors_last_hour),
    ));
    body.push_str("</div>");
    body.push_str(&bounds_note(&o));
    body.push_str("<h2>Polled sources</h2><p id=\"source-states\">");
    if o.sources_by_state.is_empty() {
        body.push_str("<span class=\"muted\">none registered</span>");
    }
    for (state, n) in &o.sources_by_state {
        let _ = write!(body, "{} <b>{n}</b> ", badge(state));
    }
    let _ = write!(
        body,
        "</p><p>{}</p><h2>Queue by state and priority</h2>{}",
        layout::link(&ctx.link("/ui/sources", ""), "all sources →"),
        queue_table(&o)
    );
    let title = match ctx.client() {
        Some(c) => format!("Overview · {c}"),
        None => "Overview".to_string(),
    };
    Ok(layout::page(&ctx, "/ui", &title, &body))
}
