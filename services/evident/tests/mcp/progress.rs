//! Progress notifications and cancellation of a long call.

use std::time::Duration;

use rmcp::model::{CallToolRequest, ClientRequest, ServerResult};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use crate::client::{Client, call, params};
use crate::support::Server;

/// A search reports its stages to the client (the SDK sends a progress token with every
/// request).
pub async fn check_search_progress(client: &Client) {
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params(
                "search",
                json!({ "clientId": "acme", "query": "ledger drain job" }),
            ))),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send");
    let token = handle.progress_token.clone();
    let answer = handle.await_response().await.expect("search");
    assert!(
        matches!(answer, ServerResult::CallToolResult(_)),
        "{answer:?}"
    );
    client.service().stage(&token, "expanded the graph").await;
    client.service().stage(&token, "searched: ").await;
}

/// A store of a large document, cancelled once it reports its first stage: the server
/// stops it (the audit log says `cancelled`) and nothing of it is stored.
pub async fn check_cancelled_store(client: &Client, server: &Server, subject: &str) {
    let content: String = (0..4000)
        .map(|i| {
            let words: Vec<String> = (0..110).map(|j| format!("t{i}w{j}")).collect();
            format!("Part {i} of a very long import. {}\n\n", words.join(" "))
        })
        .collect();
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params(
                "store_knowledge",
                json!({ "clientId": "acme", "subject": subject, "content": content }),
            ))),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send");
    let token = handle.progress_token.clone();
    client.service().first_progress(&token).await;
    handle
        .cancel(Some("the user stopped it".into()))
        .await
        .expect("cancel");

    // The server records how the write ended; wait for that record.
    let http = reqwest::Client::new();
    let rest = |path: String| {
        let http = http.clone();
        let url = format!("{}{path}", server.url);
        let token = server.token.clone();
        async move {
            http.get(url)
                .bearer_auth(token)
                .send()
                .await
                .expect("GET")
                .json::<Value>()
                .await
                .expect("json")
        }
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let outcomes = loop {
        let audit =
            rest("/api/v1/audit?clientId=acme&route=mcp:store_knowledge&limit=1000".into()).await;
        let outcomes: Vec<String> = audit["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["outcome"] != "ok")
            .filter_map(|e| e["outcome"].as_str().map(str::to_string))
            .collect();
        if !outcomes.is_empty() {
            break outcomes;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled store never ended: {audit}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(outcomes, ["cancelled"]);
    let urn = format!("knowledge:{}", subject.to_lowercase().replace(' ', "_"));
    let sources = call(client, "source_status", json!({ "clientId": "acme" })).await;
    assert!(
        !sources.to_string().contains(&urn),
        "nothing of the cancelled store is stored: {sources}"
    );
    let found = call(
        client,
        "search",
        json!({ "clientId": "acme", "query": "Part 17 of a very long import t17w3" }),
    )
    .await;
    assert!(!found.to_string().contains(&urn), "{found}");
}
