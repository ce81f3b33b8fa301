//! `/ui/node/{key}`: a node's properties, aliases, edges grouped by type, evidence chunks
//! with their locators, and its neighbourhood drawn as SVG (`depth` to expand, `edgeType`
//! to filter) — the same reads as `GET /api/v1/graph/node/{key}` and `POST /traverse`; a
//! code symbol's callers and callees (a function or method) or implementations and uses (a
//! type), as `GET /api/v1/graph/code/{relation}` answers them.

use std::collections::BTreeMap;
use std::fmt::Write;

use axum::extract::{Path, State};
use axum::response::Response;
use evident_kb::TraverseQuery;
use serde::Deserialize;

use super::graph_svg::{self, Placed};
use super::layout::{self, esc, link, url_enc};
use super::session::Ctx;
use crate::AppState;
use crate::error::ApiResult;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct NodeQuery {
    #[serde(default)]
    depth: Option<usize>,
    #[serde(default)]
    edge_type: Option<String>,
}

/// The page of a node, keeping the scope.
pub fn node_href(ctx: &Ctx, key: &str) -> String {
    ctx.link(&format!("/ui/node/{}", url_enc(key)), "")
}

fn props(view: &evident_kb::NodeView) -> String {
    let mut out = String::from("<dl class=\"props\" id=\"props\">");
    let _ = write!(
        out,
        "<dt>type</dt><dd>{}</dd><dt>label</dt><dd>{}</dd>",
        esc(&view.node_type),
        esc(&view.label)
    );
    for (k, v) in &view.props {
        let v = v
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string());
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    }
    out.push_str("</dl>");
    out
}

fn edges_by_type(ctx: &Ctx, view: &evident_kb::NodeView) -> String {
    let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for e in &view.edges {
        let (dir, other) = if e.from == view.key {
            ("→", &e.to)
        } else {
            ("←", &e.from)
        };
        groups
            .entry(e.edge_type.as_str())
            .or_default()
            .push(format!(
                "{dir} {} <span class=\"muted\">({} evidence)</span>",
                link(&node_href(ctx, other.as_str()), other.as_str()),
                e.evidence_chunk_ids.len()
            ));
    }
    let mut out = String::from("<div id=\"edges\">");
    for (t, items) in groups {
        let _ = write!(
            out,
            "<h3>{} <span class=\"muted\">{}</span></h3><ul>",
            esc(t),
            items.len()
        );
        for i in items {
            let _ = write!(out, "<li>{i}</li>");
        }
        out.push_str("</ul>");
    }
    out.push_str("</div>");
    out
}

fn filter_links(ctx: &Ctx, view: &evident_kb::NodeView, q: &NodeQuery) -> String {
    let base = format!("/ui/node/{}", url_enc(view.key.as_str()));
    let depth = q.depth.unwrap_or(1);
    let mut types: Vec<&str> = view.edges.iter().map(|e| e.edge_type.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    let mut out = String::from("<p class=\"filters\">edges: ");
    out.push_str(&link(&ctx.link(&base, &format!("depth={depth}")), "all"));
    for t in types {
        let _ = write!(
            out,
            " · {}",
            link(
                &ctx.link(&base, &format!("depth={depth}&edgeType={}", url_enc(t))),
                t
            )
        );
    }
    let et = q
        .edge_type
        .as_deref()
        .map(|t| format!("&edgeType={}", url_enc(t)))
        .unwrap_or_default();
    let other = if depth >= 2 { 1 } else { 2 };
    let _ = write!(
        out,
        " — {}</p>",
        link(
            &ctx.link(&base, &format!("depth={other}{et}")),
            if depth >= 2 {
                "collapse to 1 hop"
            } else {
                "expand to 2 hops"
            }
        )
    );
    out
}

async fn neighbourhood(s: &AppState, ctx: &Ctx, key: &str, q: &NodeQuery) -> ApiResult<String> {
    let mut t = TraverseQuery::new(key);
    t.max_depth = q.depth.unwrap_or(1).clamp(1, 2);
    t.max_nodes = graph_svg::MAX_DRAWN;
    t.edge_types = q
        .edge_type
        .iter()
        .filter(|t| !t.is_empty())
        .cloned()
        .collect();
    let view = s.kb.traverse(&ctx.vis()?, &t).await?;
    let placed: Vec<Placed<'_>> = view
        .nodes
        .iter()
        .map(|n| Placed {
            node: &n.node,
            ring: n.depth,
        })
        .collect();
    Ok(graph_svg::render(&placed, &view.edges, &|k| {
        node_href(ctx, k)
    }))
}

/// A symbol's code relations, one hop: callers and callees of a callable, implementations
/// and uses of a type; empty for any other node.
async fn code(s: &AppState, ctx: &Ctx, view: &evident_kb::NodeView) -> ApiResult<String> {
    use evident_kb::code_graph::{CodeQuery, CodeRelation, SYMBOL_TYPES};
    let key = view.key.as_str();
    if !key.starts_with("symbol:") || !SYMBOL_TYPES.contains(&view.node_type.as_str()) {
        return Ok(String::new());
    }
    let relations = if key.ends_with(')') {
        [CodeRelation::Callers, CodeRelation::Callees]
    } else {
        [CodeRelation::Implementations, CodeRelation::Uses]
    };
    let vis = ctx.vis()?;
    let mut out = String::from("<h2>Code</h2><div id=\"code\">");
    for r in relations {
        let answer = s.kb.code_query(&vis, &CodeQuery::new(key, r)).await?;
        let results: Vec<_> = answer.matches.iter().flat_map(|m| &m.results).collect();
        let _ = write!(
            out,
            "<h3>{} <span class=\"muted\">{}</span></h3><ul id=\"{}\">",
            r.as_str(),
            results.len(),
            r.as_str()
        );
        if results.is_empty() {
            out.push_str("<li class=\"muted\">none</li>");
        }
        for n in results {
            let k = n.node.key.as_str();
            let at = n.node.props.get("path").and_then(|p| p.as_str());
            let _ = write!(
                out,
                "<li>{} <span class=\"muted\">{}{}</span></li>",
                link(&node_href(ctx, k), k),
                esc(&n.node.node_type),
                at.map(|p| format!(" · {}", esc(p))).unwrap_or_default()
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</div>");
    Ok(out)
}

fn evidence(ctx: &Ctx, chunks: &[evident_core::Chunk]) -> String {
    let mut out = String::from("<ol class=\"evidence\" id=\"evidence\">");
    for c in chunks {
        let text: String = c.content.chars().take(400).collect();
        let _ = write!(
            out,
            "<li><div class=\"cite\">{} <span class=\"muted\">{}</span></div><pre class=\"passage\">{}</pre></li>",
            link(
                &ctx.link(&format!("/ui/chunk/{}", url_enc(&c.id)), ""),
                &c.locator.citation()
            ),
            esc(&c.kind),
            esc(&text)
        );
    }
    out.push_str("</ol>");
    out
}

/// Claims citing the node's evidence and gaps about the node, when there are any.
async fn knowledge(
    s: &AppState,
    ctx: &Ctx,
    key: &str,
    chunks: &[evident_core::Chunk],
) -> ApiResult<String> {
    let vis = ctx.vis()?;
    let ids: Vec<String> = chunks.iter().map(|c| c.id.clone()).collect();
    let claims = s.kb.claims_citing(&vis, &ids).await?;
    let gaps = match ctx.client() {
        Some(_) => s.kb.gaps_about(vis.reader(), key).await?,
        None => Vec::new(),
    };
    let mut out = String::new();
    if !claims.is_empty() {
        out.push_str("<h2>Claims</h2><ul id=\"claims\">");
        for c in &claims {
            let _ = write!(
                out,
                "<li><span class=\"muted\">{} · {:.2}</span> {}</li>",
                esc(c.claim.status.as_str()),
                c.claim.confidence,
                esc(&c.claim.text)
            );
        }
        out.push_str("</ul>");
    }
    if !gaps.is_empty() {
        out.push_str("<h2>Gaps</h2><ul id=\"gaps\">");
        for g in &gaps {
            let _ = write!(
                out,
                "<li><span class=\"muted\">{} · p{}</span> {}</li>",
                esc(g.state.as_str()),
                g.priority,
                esc(&g.question)
            );
        }
        out.push_str("</ul>");
    }
    Ok(out)
}

pub async fn page(
    State(s): State<AppState>,
    Path(key): Path<String>,
    ctx: Ctx,
) -> ApiResult<Response> {
    let q: NodeQuery = ctx.params()?;
    let vis = ctx.vis()?;
    let view = s.kb.node(&vis, &key).await?;
    let canonical = view.key.as_str().to_string();
    let aliases = match ctx.client() {
        Some(c) => s.kb.alias_list(c, &canonical).await.unwrap_or_default(),
        None => Vec::new(),
    };
    let chunks = s.kb.node_evidence(&vis, &canonical, 20).await?;
    let knowledge = knowledge(&s, &ctx, &canonical, &chunks).await?;
    let graph = neighbourhood(&s, &ctx, &canonical, &q).await?;
    let code = code(&s, &ctx, &view).await?;
    let alias_list: Vec<String> = aliases.iter().map(|a| esc(a.alias.as_str())).collect();
    let body = format!(
        "<p class=\"key\"><code>{}</code></p><div class=\"cols\"><section>{}<h2>Aliases</h2><p id=\"aliases\">{}</p>\
         {}<h2>Edges</h2>{}</section><section><h2>Neighbourhood</h2>{}{}</section></div><h2>Evidence</h2>{}{}",
        esc(&canonical),
        props(&view),
        if alias_list.is_empty() {
            "<span class=\"muted\">none</span>".to_string()
        } else {
            alias_list.join(", ")
        },
        code,
        edges_by_type(&ctx, &view),
        filter_links(&ctx, &view, &q),
        graph,
        evidence(&ctx, &chunks),
        knowledge
    );
    let title = if view.label.is_empty() {
        canonical.clone()
    } else {
        view.label.clone()
    };
    Ok(layout::page(&ctx, "", &title, &body))
}
