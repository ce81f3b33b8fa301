//! MCP through the real binary (`evident serve`) with two clients: the Rust SDK's (rmcp)
//! over streamable HTTP and over stdio through `evident mcp` (child process), and the
//! official Python MCP SDK over both. One module per part of the acceptance: `client` (the
//! Rust SDK client and its helpers), `listing` (initialise, the tool list, schemas),
//! `calls` (every tool once), `progress` (progress and cancellation), `python` (the
//! official SDK).

use serde_json::json;

#[path = "../support/mod.rs"]
mod support;

mod calls;
mod client;
mod listing;
mod progress;
mod python;

use client::{Transport, read_token, refused};
use support::Server;

/// Everything the acceptance asks of a transport: initialise, list tools, call each tool,
/// open citations, progress, a cancelled long call, and unauthorised calls refused (a bad
/// token before any MCP exchange, saying `bad_token_says`; a read-only token cannot write).
async fn exercise(transport: Transport, name: &str, bad_token_says: &str) {
    let data = tempfile::tempdir().expect("data");
    let server = Server::start(data.path());
    let client = transport
        .connect(&server, &server.token)
        .await
        .expect("initialise");
    listing::check_server_and_tools(&client).await;
    calls::call_every_tool(&client, &format!("Ledger drain over {name}")).await;
    progress::check_search_progress(&client).await;
    progress::check_cancelled_store(&client, &server, &format!("Huge import over {name}")).await;
    client.cancel().await.expect("close");

    let refused_init = transport.connect(&server, "evd_not_a_token").await;
    assert!(
        refused_init
            .as_ref()
            .err()
            .is_some_and(|e| match transport {
                Transport::Http => e.to_string(),
                Transport::Stdio => format!("{e:?}"),
            }
            .contains(bad_token_says)),
        "{:?}",
        refused_init.err()
    );
    let reader = read_token(&server);
    let client = transport
        .connect(&server, &reader)
        .await
        .expect("initialise");
    assert_eq!(
        refused(
            &client,
            "store_knowledge",
            json!({ "subject": "x", "content": "y" })
        )
        .await,
        "forbidden_role"
    );
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_sdk_over_streamable_http() {
    exercise(Transport::Http, "HTTP", "401").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_sdk_over_stdio_through_evident_mcp() {
    // The bridge answers with the server's refusal.
    exercise(Transport::Stdio, "stdio", "invalid_token").await;
}
