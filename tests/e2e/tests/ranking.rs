//! Ranking through the real router (issue 19 items 4 and 5): score-aware fusion keeps a
//! decisive BM25 match first against chunks that merely name the query's entity, and the
//! reranker (`rerank: true`) puts the chunk whose path names the question first; a
//! malformed `rerank` is a 4xx with `{code, message}`.

use evident_e2e::{Embed, TestApp};
use serde_json::{Value, json};

async fn ingest(app: &TestApp, urn: &str, title: Option<&str>, content: &str) {
    let mut body = json!({"clientId": "acme", "sourceUrn": urn, "kind": "doc", "content": content});
    if let Some(t) = title {
        body["title"] = json!(t);
    }
    app.post_ok("/api/v1/ingest", &body).await;
}

async fn retrieve(app: &TestApp, body: Value) -> Value {
    app.post_ok("/api/v1/retrieve", &body).await
}

fn first_urn(pack: &Value) -> &str {
    pack["items"][0]["sourceUrn"].as_str().unwrap_or("")
}

/// The case: the one chunk holding every word of the question, against five
/// comments that mention the person the question names and one of its words each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decisive_text_match_outranks_chunks_that_only_name_the_entity() {
    let app = TestApp::new(Embed::Hashing).await;
    ingest(
        &app,
        "issue:title",
        Some("Compaction stalls the writer under sustained ingest"),
        "Compaction stalls the writer under sustained ingest: the merge holds the lock \
         while it rewrites segments, so compaction stalls every writer behind it.",
    )
    .await;
    for i in 0..5 {
        ingest(
            &app,
            &format!("issue:comment-{i}"),
            None,
            &format!(
                "Comment {i} by user:alice about the release notes, the writer docs and \
                 the dashboard colours; user:alice will look again next week."
            ),
        )
        .await;
    }
    let pack = retrieve(
        &app,
        json!({"clientId": "acme", "query": "compaction stalls writer ingest user:alice", "maxResults": 10}),
    )
    .await;
    assert_eq!(first_urn(&pack), "issue:title", "{pack}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerank_puts_the_chunk_whose_title_names_the_question_first() {
    let app = TestApp::new(Embed::Hashing).await;
    // Both hold the words; the note repeats them (BM25 prefers it), the guide is titled by
    // them.
    ingest(
        &app,
        "doc:note",
        Some("Weekly note"),
        "Token budget, token budget, token budget: the budget of tokens came up again \
         in the weekly note, with the token budget of every section.",
    )
    .await;
    ingest(
        &app,
        "doc:guide",
        Some("Token budget"),
        "Each section of the prompt context is cut to its own limit, counted by the \
         built-in WordPiece tokens; the token budget is per section.",
    )
    .await;
    let body = |rerank: bool| json!({"clientId": "acme", "query": "token budget", "maxResults": 5, "rerank": rerank, "expandGraph": false});
    let plain = retrieve(&app, body(false)).await;
    let reranked = retrieve(&app, body(true)).await;
    assert_eq!(first_urn(&reranked), "doc:guide", "{reranked}");
    assert_eq!(
        plain["items"].as_array().map(Vec::len),
        reranked["items"].as_array().map(Vec::len),
        "the reranker reorders, it neither adds nor drops"
    );
    let (s, v) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "token budget", "rerank": "yes"}),
        )
        .await;
    assert!(s.is_client_error(), "{s} {v}");
    assert!(v["code"].is_string() && v["message"].is_string(), "{v}");
}
