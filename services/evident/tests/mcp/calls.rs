//! Every tool called once through the Rust SDK client, with a subject of its own.

use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use crate::client::{Client, call, refused};

/// Every tool once, with a subject of its own; a citation opened as a resource. The steps
/// share one knowledge piece: its URN is what the later ones look for.
pub async fn call_every_tool(client: &Client, subject: &str) {
    let urn = store_search_and_open(client, subject).await;
    profile_structured_and_context(client).await;
    graph_reads(client).await;
    session_memory(client, &format!("s-{}", urn.len())).await;
    status_and_errors(client, &urn).await;
}

/// `store_knowledge`, then `search` finds it fenced as untrusted data with a citation, and
/// the citation opens as a resource. Returns the stored piece's URN.
async fn store_search_and_open(client: &Client, subject: &str) -> String {
    let stored = call(
        client,
        "store_knowledge",
        json!({
            "clientId": "acme",
            "subject": subject,
            "content": format!("{subject}: when service:ledger backs up, run the ledger-drain job and page the on-call."),
            "relationships": ["service:ledger|DEPENDS_ON|service:postgres"],
            "kind": "procedure"
        }),
    )
    .await;
    let urn = stored["structuredContent"]["sourceUrn"]
        .as_str()
        .expect("sourceUrn")
        .to_string();
    assert!(urn.starts_with("knowledge:"), "{stored}");

    let found = call(
        client,
        "search",
        json!({ "clientId": "acme", "query": format!("{subject} ledger backs up drain job") }),
    )
    .await;
    let item = found["structuredContent"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["sourceUrn"] == urn.as_str())
        .unwrap_or_else(|| panic!("{urn} found: {found}"))
        .clone();
    assert!(item["citation"].is_string(), "{item}");
    let text = found["content"][0]["text"].as_str().expect("text");
    assert!(
        text.contains(&format!(
            "<untrusted-source-data source=\"{urn}\" citation=\""
        )),
        "{text}"
    );

    // The citation opens as a resource: the passage with its locator and citation.
    let uri = item["resource"].as_str().expect("resource uri");
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .expect("resources/read");
    let read = serde_json::to_value(read).expect("json");
    let body = read["contents"][0]["text"].as_str().expect("text");
    assert!(
        body.contains("ledger-drain") && body.contains("citation: "),
        "{read}"
    );
    let meta: Value =
        serde_json::from_str(read["contents"][1]["text"].as_str().expect("json")).expect("json");
    assert_eq!(meta["sourceUrn"], urn.as_str(), "{meta}");
    assert!(meta["locator"].is_object(), "{meta}");
    urn
}

/// `put_profile` and `load_structured`, both seen in `get_context`'s sections.
async fn profile_structured_and_context(client: &Client) {
    call(
        client,
        "put_profile",
        json!({ "clientId": "acme", "key": "service:ledger", "properties": {"owner": "payments team"} }),
    )
    .await;
    let loaded = call(
        client,
        "load_structured",
        json!({ "clientId": "acme", "sourceUrn": "kb:ledger-runbook",
                "pieces": [{"pieceId": "drain-schedule",
                            "content": "The ledger drain runs nightly at 02:00 UTC.",
                            "infoType": "instructions", "entity": "service:ledger"},
                           {"pieceId": "empty", "infoType": "instructions"}] }),
    )
    .await;
    assert_eq!(
        loaded["structuredContent"]["written"]["pieces"], 1,
        "the valid piece written: {loaded}"
    );
    assert_eq!(
        loaded["structuredContent"]["skipped"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "the piece without content skipped with its reason: {loaded}"
    );
    let context = call(
        client,
        "get_context",
        json!({ "clientId": "acme", "activeEntity": "service:ledger", "query": "ledger" }),
    )
    .await;
    assert!(
        context["structuredContent"]["sections"]["instructions"]
            .as_str()
            .is_some_and(|t| t.contains("02:00 UTC")),
        "the loaded piece routed by its info type: {context}"
    );
    assert!(
        context["structuredContent"]["sections"]["user_profile"]
            .as_str()
            .is_some_and(|t| t.contains("owner: payments team")),
        "{context}"
    );
    assert!(
        context["structuredContent"]["sections"]["context"].is_string(),
        "{context}"
    );
    assert!(
        context["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("<untrusted-source-data section=\"context\">")),
        "{context}"
    );
}

/// `get_node` (and its resource), `list_nodes`, `traverse` over the stored relationship.
async fn graph_reads(client: &Client) {
    let node = call(
        client,
        "get_node",
        json!({ "clientId": "acme", "key": "service:ledger" }),
    )
    .await;
    assert_eq!(
        node["structuredContent"]["node"]["key"], "service:ledger",
        "{node}"
    );
    assert!(
        node["structuredContent"]["evidence"][0]["citation"].is_string(),
        "{node}"
    );
    let node_res = client
        .read_resource(ReadResourceRequestParams::new(
            "evident://node/service:ledger?clientId=acme",
        ))
        .await
        .expect("node resource");
    assert!(
        serde_json::to_string(&node_res)
            .expect("json")
            .contains("service:postgres"),
        "{node_res:?}"
    );
    let nodes = call(
        client,
        "list_nodes",
        json!({ "clientId": "acme", "q": "ledger" }),
    )
    .await;
    assert!(
        nodes["structuredContent"]["nodes"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["key"] == "service:ledger")),
        "{nodes}"
    );
    let walk = call(
        client,
        "traverse",
        json!({ "clientId": "acme", "startKey": "service:ledger", "direction": "out" }),
    )
    .await;
    assert!(
        walk["structuredContent"]["edges"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["to"] == "service:postgres")),
        "{walk}"
    );
}

/// `memory_put`, `memory_get`, `memory_list` in one session.
async fn session_memory(client: &Client, session: &str) {
    call(
        client,
        "memory_put",
        json!({ "clientId": "acme", "sessionId": session, "key": "plan", "value": { "step": 2 } }),
    )
    .await;
    let got = call(
        client,
        "memory_get",
        json!({ "clientId": "acme", "sessionId": session, "key": "plan" }),
    )
    .await;
    assert_eq!(got["structuredContent"]["value"]["step"], 2, "{got}");
    let listed = call(
        client,
        "memory_list",
        json!({ "clientId": "acme", "sessionId": session }),
    )
    .await;
    assert_eq!(
        listed["structuredContent"]["entries"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{listed}"
    );
}

/// `queue_status`, `source_status` (which lists the stored piece), and an error as an MCP
/// error carrying the API's code.
async fn status_and_errors(client: &Client, urn: &str) {
    let queue = call(client, "queue_status", json!({ "clientId": "acme" })).await;
    assert!(
        queue["structuredContent"]["counts"]["queued"].is_number(),
        "{queue}"
    );
    let sources = call(client, "source_status", json!({ "clientId": "acme" })).await;
    assert!(
        sources["structuredContent"]["indexed"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["sourceUrn"] == urn)),
        "{sources}"
    );

    // Errors are MCP errors carrying the API's code.
    assert_eq!(
        refused(
            client,
            "get_node",
            json!({ "clientId": "acme", "key": "service:nowhere" })
        )
        .await,
        "not_found"
    );
}
