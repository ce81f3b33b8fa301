//! `/ui/chunk/{id}`: the exact span a citation names — a file's lines (numbered) at the
//! commit, a document's page and characters, a message's part, a transcript's time — with
//! the passage itself, as the reader's scope sees it (the read the MCP resource
//! `evident://chunk/{id}` makes).

use std::fmt::Write;

use axum::extract::{Path, State};
use axum::response::Response;
use evident_core::Locator;

use super::layout::{self, esc, link, url_enc};
use super::session::Ctx;
use crate::AppState;
use crate::error::ApiResult;

fn clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

/// Where the span is, in words a person reads.
fn place(loc: &Locator) -> Vec<(&'static str, String)> {
    match loc {
        Locator::File {
            path,
            line_start,
            line_end,
            commit,
            symbol,
        } => {
            let mut v = vec![
                ("file", path.clone()),
                ("lines", format!("{line_start}–{line_end}")),
            ];
            if let Some(c) = commit {
                v.push(("commit", c.clone()));
            }
            if let Some(s) = symbol {
                v.push(("symbol", s.clone()));
            }
            v
        }
        Locator::Document {
            uri,
            char_start,
            char_end,
            page,
            section,
        } => {
            let mut v = vec![("document", uri.clone())];
            if let Some(p) = page {
                v.push(("page", p.to_string()));
            }
            if let Some(s) = section {
                v.push(("section", s.clone()));
            }
            v.push(("characters", format!("{char_start}–{char_end}")));
            v
        }
        Locator::Email {
            message_id,
            mailbox,
            part,
            ..
        } => {
            let mut v = vec![("message", message_id.clone())];
            if let Some(m) = mailbox {
                v.push(("mailbox", m.clone()));
            }
            if let Some(p) = part {
                v.push(("part", p.clone()));
            }
            v
        }
        Locator::Transcript {
            meeting_id,
            start_ms,
            end_ms,
            ..
        } => vec![
            ("meeting", meeting_id.clone()),
            ("time", format!("{} – {}", clock(*start_ms), clock(*end_ms))),
        ],
        other => vec![("citation", other.citation())],
    }
}

/// The passage; a file's lines numbered from where they start in the file.
fn passage(loc: &Locator, content: &str) -> String {
    let Locator::File { line_start, .. } = loc else {
        return format!(
            "<pre class=\"passage\" id=\"passage\">{}</pre>",
            esc(content)
        );
    };
    let mut out = String::from("<pre class=\"passage lines\" id=\"passage\">");
    for (i, line) in content.lines().enumerate() {
        let _ = writeln!(
            out,
            "<span class=\"ln\" data-line=\"{0}\">{0}</span>{1}",
            line_start + i,
            esc(line)
        );
    }
    out.push_str("</pre>");
    out
}

pub async fn page(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ctx: Ctx,
) -> ApiResult<Response> {
    let found =
        s.kb.stores()
            .chunks
            .get(&ctx.vis()?, std::slice::from_ref(&id))
            .await
            .map_err(evident_kb::KbError::from)?;
    let Some(chunk) = found.into_iter().next() else {
        return Err(evident_kb::KbError::NotFound {
            what: format!("chunk `{id}`"),
        }
        .into());
    };
    let mut dl = String::from("<dl class=\"props\" id=\"locator\">");
    for (k, v) in place(&chunk.locator) {
        let _ = write!(dl, "<dt>{k}</dt><dd>{}</dd>", esc(&v));
    }
    let _ = write!(
        dl,
        "<dt>source</dt><dd>{}</dd><dt>kind</dt><dd>{}</dd><dt>citation</dt><dd><code id=\"citation\">{}</code></dd></dl>",
        esc(&chunk.source_urn),
        esc(&chunk.kind),
        esc(&chunk.locator.citation())
    );
    let refs: Vec<String> = chunk
        .graph_refs
        .iter()
        .map(|k| {
            link(
                &ctx.link(&format!("/ui/node/{}", url_enc(k.as_str())), ""),
                k.as_str(),
            )
        })
        .collect();
    let body = format!(
        "{dl}<p class=\"trust\">Source text (untrusted data).</p>{}<h2>Mentions</h2><p>{}</p>",
        passage(&chunk.locator, &chunk.content),
        if refs.is_empty() {
            "none".into()
        } else {
            refs.join(" · ")
        }
    );
    let title = chunk
        .title
        .clone()
        .unwrap_or_else(|| chunk.locator.citation());
    Ok(layout::page(&ctx, "/ui/search", &title, &body))
}
