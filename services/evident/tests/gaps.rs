//! The seed 004 loop through the real binary: gaps reported with the CLI, an agent (the Rust
//! MCP SDK over streamable HTTP) claims the first, submits Markdown findings and builds two
//! nodes and an edge citing them → `constructed`; `retrieve` then answers the question with
//! the findings cited and the new edge in its graph; the second gap is answered by the
//! server's built-in acquirer (its queue workers) from an already indexed document.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

#[path = "mcp/client.rs"]
#[allow(dead_code)] // the progress recorder and the stdio transport serve the MCP tests
mod client;

use client::{Client, Transport, refused};
use support::Server;

/// An MCP agent over streamable HTTP with the server's operator token.
async fn connect(server: &Server) -> Client {
    Transport::Http
        .connect(server, &server.token)
        .await
        .expect("initialise")
}

/// `tools/call` → the JSON the tool answered (its text content parsed).
async fn call(client: &Client, tool: &str, args: Value) -> Value {
    let v = client::call(client, tool, args).await;
    let text = v["content"][0]["text"].as_str().expect("text content");
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gap_loop_through_the_binary_with_an_mcp_agent_and_the_builtin_acquirer() {
    let data = tempfile::tempdir().expect("data");
    let server = Server::start(data.path());
    server.ok_in(
        "ingest - --client acme --urn doc:runbook --kind doc",
        &[],
        Some("The ledger nightly job reconciles settlements at 02:00 UTC every day."),
    );
    let out = server.ok(
        "gaps report --client acme --priority 1",
        &["Which broker does the payments service publish to?"],
    );
    let first = out.split('\t').next().expect("gap id").to_string();
    let out = server.ok(
        "gaps report --client acme --priority 2 --builtin",
        &["When does the ledger nightly job reconcile settlements?"],
    );
    let second = out.split('\t').next().expect("gap id").to_string();

    let agent = connect(&server).await;
    // One acquisition per client at a time: while the built-in acquirer works on the second
    // gap (its worker may take it first) the claim answers `{gap: null}`; bounded wait.
    let deadline = Instant::now() + Duration::from_secs(60);
    let claim = loop {
        let claim = call(&agent, "claim_gap", json!({"clientId": "acme"})).await;
        if !claim["gap"].is_null() {
            break claim;
        }
        assert!(
            Instant::now() < deadline,
            "the client's other acquisition ends"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(claim["gap"]["gapId"], first.as_str(), "{claim}");
    let epoch = claim["epoch"].as_i64().expect("epoch");
    // Giving the gap up with a credential in the reason is refused; the claim stands.
    let code = refused(
        &agent,
        "fail_gap",
        json!({"clientId": "acme", "gapId": first, "epoch": epoch,
               "reason": "login with AKIAZ3MHQ7RT2LQKXW5P failed"}),
    )
    .await;
    assert_eq!(code, "credential_detected");
    let findings = call(
        &agent,
        "submit_findings",
        json!({"clientId": "acme", "gapId": first, "epoch": epoch,
               "markdown": "# Broker\n\nThe payments service (service:payments) publishes settlement events to broker:kafka_eu_1.",
               "sources": ["https://wiki.example/payments"]}),
    )
    .await;
    assert_eq!(findings["state"], "acquired", "{findings}");
    let cited = findings["findings"]["chunkIds"].clone();
    // No evidence: refused, nothing written.
    let code = refused(
        &agent,
        "add_graph_edge",
        json!({"clientId": "acme", "from": "service:payments", "edgeType": "publishes_to",
               "to": "broker:kafka_eu_1", "evidence": {}}),
    )
    .await;
    assert_eq!(code, "evidence_required");
    for (key, ty) in [
        ("service:payments", "service"),
        ("broker:kafka_eu_1", "broker"),
    ] {
        call(
            &agent,
            "add_graph_node",
            json!({"clientId": "acme", "gapId": first, "key": key, "type": ty, "evidence": {"chunkIds": cited}}),
        )
        .await;
    }
    call(
        &agent,
        "add_graph_edge",
        json!({"clientId": "acme", "gapId": first, "from": "service:payments", "edgeType": "publishes_to",
               "to": "broker:kafka_eu_1", "evidence": {"chunkIds": cited}}),
    )
    .await;
    let status = call(
        &agent,
        "gap_status",
        json!({"clientId": "acme", "gapId": first}),
    )
    .await;
    assert_eq!(status["state"], "constructed", "{status}");
    assert_eq!(status["graphChanges"].as_array().map(Vec::len), Some(3));
    let graph = call(
        &agent,
        "query_graph",
        json!({"clientId": "acme", "key": "service:payments"}),
    )
    .await;
    assert!(graph.to_string().contains("publishes_to"), "{graph}");

    // Retrieval answers the question from the findings, with the new edge.
    let out = server.ok(
        "search --client acme --json",
        &["payments service publishes settlement events broker"],
    );
    let pack: Value = serde_json::from_str(&out).expect("json pack");
    assert!(
        pack["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["sourceUrn"] == format!("gap-findings:{first}").as_str()),
        "{pack}"
    );
    assert!(
        pack["graph"]["edges"]
            .as_array()
            .expect("edges")
            .iter()
            .any(|e| e["edgeType"] == "publishes_to"),
        "{}",
        pack["graph"]
    );

    // The built-in acquirer (the server's queue workers) answers the second gap; bounded
    // wait for the worker, which runs on its own.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = server.ok("gaps show --client acme", &[&second]);
        let gap: Value = serde_json::from_str(&out).expect("json gap");
        if gap["state"] == "acquired" {
            assert_eq!(
                gap["findingsUrn"],
                format!("gap-findings:{second}").as_str()
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the built-in acquirer answers: {gap}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let out = server.ok("gaps list --client acme", &[]);
    assert!(out.contains(&format!("{first}\tconstructed")), "{out}");
    // The agent takes its edge back; the CLI then finds nothing to remove.
    let removed = call(
        &agent,
        "remove_graph_edge",
        json!({"clientId": "acme", "from": "service:payments", "edgeType": "publishes_to",
               "to": "broker:kafka_eu_1"}),
    )
    .await;
    assert_eq!(removed["removed"]["from"], "service:payments", "{removed}");
    let err = server.refused(
        "graph rm-edge service:payments publishes_to broker:kafka_eu_1 --client acme",
        &[],
    );
    assert!(err.contains("not_found"), "{err}");
    agent.cancel().await.expect("close");
    server.terminate();
}
