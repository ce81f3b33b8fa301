//! `evident graph callers|callees|implementations|uses SYMBOL [--depth N]`: code questions
//! over the semantic edges of indexed repositories (`GET /api/v1/graph/code/{relation}`),
//! printed one symbol a line: its key, type and where it is defined.

use clap::{Args, Subcommand};
use serde_json::Value;

use crate::client::Client;

#[derive(Subcommand)]
pub enum CodeOp {
    /// The functions and methods that call SYMBOL (a key, or a name such as `Cart.price`).
    Callers(CodeArgs),
    /// What SYMBOL calls (callees inside the indexed repositories).
    Callees(CodeArgs),
    /// The types that implement or extend SYMBOL.
    Implementations(CodeArgs),
    /// The symbols whose signatures, fields or annotations use the type SYMBOL.
    Uses(CodeArgs),
}

/// A code question's symbol and how far to follow it.
#[derive(Args)]
pub struct CodeArgs {
    /// A symbol's node key (`symbol:shop/shop.Cart.price()`) or a name (`price`,
    /// `Cart.price`, `shop.Cart.price`); an ambiguous name is answered for every match.
    symbol: String,
    /// Hops to follow (1..=5; the server's default: 1): 2 adds the callers of the callers,
    /// and so on.
    #[arg(long)]
    depth: Option<usize>,
    /// Most symbols listed per match (1..=1000; the server's default: 200).
    #[arg(long)]
    max_nodes: Option<usize>,
    /// Print the raw JSON answer.
    #[arg(long)]
    json: bool,
}

pub async fn run(client: &Client, op: CodeOp, scope: &[(&str, &str)]) -> anyhow::Result<()> {
    let (relation, a) = match op {
        CodeOp::Callers(a) => ("callers", a),
        CodeOp::Callees(a) => ("callees", a),
        CodeOp::Implementations(a) => ("implementations", a),
        CodeOp::Uses(a) => ("uses", a),
    };
    // Limits left out are left to the server, which holds the defaults.
    let depth = a.depth.map(|d| d.to_string());
    let max_nodes = a.max_nodes.map(|n| n.to_string());
    let mut query: Vec<(&str, &str)> = vec![("symbol", &a.symbol)];
    query.extend(depth.as_deref().map(|d| ("depth", d)));
    query.extend(max_nodes.as_deref().map(|n| ("maxNodes", n)));
    query.extend_from_slice(scope);
    let answer = client
        .get(&format!("/api/v1/graph/code/{relation}"), &query)
        .await?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print!("{}", render(&answer));
    }
    Ok(())
}

/// `key  type  path:line` of a node.
fn line(node: &Value) -> String {
    let props = &node["props"];
    let at = match (props["path"].as_str(), props["lineStart"].as_u64()) {
        (Some(p), Some(l)) => format!("\t{p}:{l}"),
        (Some(p), None) => format!("\t{p}"),
        _ => String::new(),
    };
    format!(
        "{}\t{}{at}",
        node["key"].as_str().unwrap_or("?"),
        node["type"].as_str().unwrap_or("?")
    )
}

/// Per matched symbol: its line, then each result indented with its depth.
fn render(answer: &Value) -> String {
    let mut out = String::new();
    if let Some(note) = answer["note"].as_str() {
        out.push_str(&format!("note: {note}\n"));
    }
    let relation = answer["relation"].as_str().unwrap_or("results");
    for m in answer["matches"].as_array().into_iter().flatten() {
        out.push_str(&format!("{}\n", line(&m["symbol"])));
        let results = m["results"].as_array().cloned().unwrap_or_default();
        if results.is_empty() {
            out.push_str(&format!("  no {relation}\n"));
        }
        for r in &results {
            out.push_str(&format!("  {}\t{}\n", r["depth"], line(r)));
        }
        if m["truncated"].as_bool() == Some(true) {
            out.push_str("  … more (raise --max-nodes)\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_prints_each_match_and_its_results() {
        let node = |key: &str, t: &str, path: &str, line: u64| {
            json!({"key": key, "type": t, "label": "x",
                "props": {"path": path, "lineStart": line}, "evidenceChunkIds": []})
        };
        let mut caller = node("symbol:s/s.B.run()", "method", "s/B.java", 3);
        caller["depth"] = json!(1);
        let answer = json!({
            "symbol": "run", "relation": "callers", "depth": 1, "ambiguous": true,
            "truncatedMatches": false,
            "note": "`run` is ambiguous: it names 2 symbols, each answered on its own",
            "matches": [
                {"symbol": node("symbol:s/s.A.run()", "method", "s/A.java", 7),
                 "results": [caller], "edges": [], "truncated": false},
                {"symbol": node("symbol:s/s.C.run()", "method", "s/C.java", 2),
                 "results": [], "edges": [], "truncated": true},
            ]
        });
        assert_eq!(
            render(&answer),
            "note: `run` is ambiguous: it names 2 symbols, each answered on its own\n\
             symbol:s/s.A.run()\tmethod\ts/A.java:7\n  1\tsymbol:s/s.B.run()\tmethod\ts/B.java:3\n\
             symbol:s/s.C.run()\tmethod\ts/C.java:2\n  no callers\n  … more (raise --max-nodes)\n"
        );
    }
}
