//! The `search` tool's `rerank` switch: the reranker puts the chunk whose title names the
//! question first where plain fusion prefers the text that repeats its words; a `rerank`
//! that is not a boolean is refused (the tool's error result).

use serde_json::{Value, json};

use crate::app::*;

fn urns(found: &Value) -> Vec<String> {
    found["structuredContent"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["sourceUrn"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn search_rerank_puts_the_titled_chunk_first() {
    let app = App::new().await;
    let w = app.writer().await;
    for (subject, content) in [
        (
            "Weekly note",
            "Token budget, token budget, token budget: the budget of tokens came up again \
             in the weekly note, with the token budget of every section.",
        ),
        (
            "Token budget",
            "Each section of the prompt context is cut to its own limit, counted by the \
             built-in WordPiece tokens; the token budget is per section.",
        ),
    ] {
        let stored = app
            .call(
                &w,
                "store_knowledge",
                json!({ "subject": subject, "content": content }),
            )
            .await;
        assert_eq!(
            stored["structuredContent"]["status"], "ingested",
            "{stored}"
        );
    }
    let search = |rerank: bool| json!({ "query": "token budget", "maxResults": 5, "expandGraph": false, "rerank": rerank });
    let plain = urns(&app.call(&w, "search", search(false)).await);
    let reranked = urns(&app.call(&w, "search", search(true)).await);
    assert_eq!(
        plain[0], "knowledge:weekly_note",
        "fusion alone prefers the repetition"
    );
    assert_eq!(reranked[0], "knowledge:token_budget", "{reranked:?}");
    let (mut a, mut b) = (plain.clone(), reranked.clone());
    a.sort();
    b.sort();
    assert_eq!(a, b, "the reranker reorders, it neither adds nor drops");

    // A malformed argument is the tool's error result, not a search.
    let bad = app
        .rpc(
            &w,
            "tools/call",
            json!({ "name": "search", "arguments": { "query": "token budget", "rerank": "yes" } }),
        )
        .await;
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(bad["result"].get("structuredContent").is_none(), "{bad}");
}
