//! `/ui/search?q=`: the evidence pack of `POST /api/v1/retrieve` as a person reads it —
//! passages with the query's words highlighted (escaped first: stored text is never
//! markup), citations opening the exact span (`/ui/chunk/{id}`), the scores per channel in
//! a `<details>`, and the graph around the results.

use std::fmt::Write;

use axum::extract::State;
use axum::response::Response;
use evident_kb::RetrieveQuery;
use evident_kb::retrieve::{EvidenceItem, EvidencePack};
use serde::Deserialize;

use super::graph_svg::{self, Placed};
use super::layout::{self, esc, link, url_enc};
use super::session::Ctx;
use crate::AppState;
use crate::error::ApiResult;

#[derive(Deserialize, Default)]
struct SearchQuery {
    #[serde(default)]
    q: Option<String>,
}

/// The words of a query worth marking: letters and digits, two characters or more.
fn terms(q: &str) -> Vec<String> {
    let mut t: Vec<String> = q
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect();
    // Longest first, so a longer term wins where two start at one place.
    t.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    t.dedup();
    t
}

/// `text` escaped, with every (ASCII case-insensitive) occurrence of a term in `<mark>`.
pub fn highlight(text: &str, terms: &[String]) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 64);
    let (mut i, mut plain) = (0, 0);
    while i < bytes.len() {
        let hit = text.is_char_boundary(i).then(|| {
            terms.iter().find(|t| {
                let end = i + t.len();
                end <= bytes.len()
                    && text.is_char_boundary(end)
                    && bytes[i..end].eq_ignore_ascii_case(t.as_bytes())
            })
        });
        match hit.flatten() {
            Some(t) => {
                out.push_str(&esc(&text[plain..i]));
                let end = i + t.len();
                let _ = write!(out, "<mark>{}</mark>", esc(&text[i..end]));
                i = end;
                plain = end;
            }
            None => i += 1,
        }
    }
    out.push_str(&esc(&text[plain..]));
    out
}

fn scores(item: &EvidenceItem) -> String {
    let s = &item.scores;
    let mut rows = String::new();
    for (name, v) in [
        ("bm25", s.bm25),
        ("vector", s.vector),
        ("graph", s.graph),
        ("entity", s.entity),
        ("phrase", s.phrase),
    ] {
        let v = v.map(|v| format!("{v:.4}")).unwrap_or_else(|| "—".into());
        let _ = write!(rows, "<tr><th>{name}</th><td>{v}</td></tr>");
    }
    format!(
        "<details class=\"scores\"><summary>score {:.4}</summary><table>{rows}</table></details>",
        item.score
    )
}

fn item_html(ctx: &Ctx, item: &EvidenceItem, terms: &[String]) -> String {
    let cite = link(
        &ctx.link(&format!("/ui/chunk/{}", url_enc(&item.chunk_id)), ""),
        &item.citation,
    );
    let commit = item
        .commit
        .as_ref()
        .map(|c| {
            format!(
                " <span class=\"muted\">{}</span>",
                esc(&serde_json::to_string(c).unwrap_or_default())
            )
        })
        .unwrap_or_default();
    let refs: Vec<String> = item
        .graph_refs
        .iter()
        .take(8)
        .map(|k| {
            link(
                &ctx.link(&format!("/ui/node/{}", url_enc(k.as_str())), ""),
                k.as_str(),
            )
        })
        .collect();
    format!(
        "<li class=\"item\"><div class=\"cite\">{cite} <span class=\"muted\">{}{}</span>{commit}</div>\
         <pre class=\"passage\">{}</pre><div class=\"refs\">{}</div>{}</li>",
        esc(&item.kind),
        item.title
            .as_deref()
            .map(|t| format!(" · {}", esc(t)))
            .unwrap_or_default(),
        highlight(&item.content, terms),
        refs.join(" · "),
        scores(item)
    )
}

fn pack_html(ctx: &Ctx, pack: &EvidencePack, q: &str) -> String {
    let terms = terms(q);
    let mut out = format!(
        "<p class=\"muted\" id=\"summary\">{} · {:.1} ms</p><ol class=\"evidence\" id=\"results\">",
        esc(&pack.summary),
        pack.took_ms
    );
    for item in &pack.items {
        out.push_str(&item_html(ctx, item, &terms));
    }
    out.push_str("</ol>");
    if !pack.graph.nodes.is_empty() {
        let placed: Vec<Placed<'_>> = pack
            .graph
            .nodes
            .iter()
            .map(|n| Placed { node: n, ring: 1 })
            .collect();
        let svg = graph_svg::render(&placed, &pack.graph.edges, &|k| {
            ctx.link(&format!("/ui/node/{}", url_enc(k)), "")
        });
        let _ = write!(out, "<h2>Graph around the results</h2>{svg}");
    }
    out
}

pub async fn page(State(s): State<AppState>, ctx: Ctx) -> ApiResult<Response> {
    let p: SearchQuery = ctx.params()?;
    let q = p.q.unwrap_or_default();
    let hidden = layout::scope_inputs(&ctx.scope);
    let mut body = format!(
        "<form class=\"search\" method=\"get\" action=\"/ui/search\">{hidden}\
         <input type=\"search\" name=\"q\" id=\"q\" value=\"{}\" placeholder=\"Ask about your sources\" autofocus>\
         <button type=\"submit\" id=\"go\">Search</button></form>",
        esc(&q)
    );
    if !q.trim().is_empty() {
        let mut rq = RetrieveQuery::new(q.clone(), ctx.client());
        rq.project_id = ctx.scope.project_id.clone();
        rq.group_id = ctx.scope.group_id.clone();
        let pack = s.kb.retrieve(&rq).await?;
        body.push_str(&pack_html(&ctx, &pack, &q));
    }
    Ok(layout::page(&ctx, "/ui/search", "Search", &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_are_marked_and_everything_escaped() {
        let t = terms("Script parse_config");
        for (text, want) in [
            (
                "<script>x</script>",
                "&lt;<mark>script</mark>&gt;x&lt;/<mark>script</mark>&gt;",
            ),
            ("call parse_config()", "call <mark>parse_config</mark>()"),
            ("é SCRIPT é", "é <mark>SCRIPT</mark> é"),
            ("nothing & here", "nothing &amp; here"),
        ] {
            assert_eq!(highlight(text, &t), want, "{text}");
        }
    }
}
