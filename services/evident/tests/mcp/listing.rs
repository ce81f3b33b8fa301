//! Initialise and `tools/list`: the server's identity, every tool by name, its schema and
//! annotations, and the resource templates.

use serde_json::{Value, json};

use crate::client::Client;

const TOOLS: [&str; 43] = [
    "add_graph_edge",
    "add_graph_node",
    "claim_attention",
    "claim_gap",
    "claim_history",
    "code_callees",
    "code_callers",
    "code_implementations",
    "code_uses",
    "delete_procedure",
    "dispute",
    "fail_gap",
    "gap_status",
    "get_context",
    "get_node",
    "get_user_context",
    "learn",
    "list_nodes",
    "list_procedures",
    "load_structured",
    "match_procedure",
    "memory_get",
    "memory_list",
    "memory_put",
    "put_profile",
    "query_graph",
    "queue_status",
    "recall",
    "record_outcome",
    "record_procedure_outcome",
    "remove_graph_edge",
    "report_gaps",
    "save_procedure",
    "search",
    "session_append",
    "session_recent",
    "source_status",
    "steer_task",
    "store_knowledge",
    "submit_findings",
    "supersede",
    "traverse",
    "verify",
];

/// The tools that write and may replace what they wrote (destructive writes).
const REPLACES: [&str; 8] = [
    "store_knowledge",
    "memory_put",
    "record_outcome",
    "save_procedure",
    "delete_procedure",
    "put_profile",
    "load_structured",
    "remove_graph_edge",
];

/// The tools that write without being destructive: appending to the session log or a
/// claim's history, counting an outcome, gap and graph writes (which add, never replace:
/// their own annotations are checked by the gap loop's test), and steering a queued task.
const APPENDS: [&str; 13] = [
    "session_append",
    "record_procedure_outcome",
    "learn",
    "verify",
    "dispute",
    "supersede",
    "report_gaps",
    "claim_gap",
    "submit_findings",
    "fail_gap",
    "add_graph_node",
    "add_graph_edge",
    "steer_task",
];

/// Initialise, list tools (schemas and annotations), resource templates.
pub async fn check_server_and_tools(client: &Client) {
    check_server_info(client);
    let tools = client.list_all_tools().await.expect("tools/list");
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| serde_json::to_value(t).expect("json"))
        .collect();
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, TOOLS);
    tools.iter().for_each(check_description_and_annotations);
    check_schemas(&tools);

    let templates = client
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list");
    let uris: Vec<String> = templates
        .iter()
        .map(|t| serde_json::to_value(t).expect("json")["uriTemplate"].to_string())
        .collect();
    assert_eq!(
        uris,
        ["\"evident://node/{key}\"", "\"evident://chunk/{id}\""]
    );
}

/// The server says who it is, what it offers, and that source text is untrusted.
fn check_server_info(client: &Client) {
    let info = client.peer_info().expect("initialised");
    let info = serde_json::to_value(&*info).expect("json");
    assert_eq!(info["serverInfo"]["name"], "evident", "{info}");
    assert!(info["capabilities"]["tools"].is_object(), "{info}");
    assert!(info["capabilities"]["resources"].is_object(), "{info}");
    assert!(
        info["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("untrusted")),
        "{info}"
    );
}

/// A description a model can use, an object input schema, and annotations by `REPLACES` and
/// `APPENDS` (a tool in either writes).
fn check_description_and_annotations(tool: &Value) {
    let name = tool["name"].as_str().expect("name");
    assert!(
        tool["description"].as_str().is_some_and(|d| d.len() > 40),
        "{name} has a description for a model"
    );
    assert_eq!(tool["inputSchema"]["type"], "object", "{name}: {tool}");
    let write = REPLACES.contains(&name) || APPENDS.contains(&name);
    let appends = APPENDS.contains(&name);
    let a = &tool["annotations"];
    assert_eq!(a["readOnlyHint"], !write, "{name}: {a}");
    assert_eq!(a["openWorldHint"], false, "{name}: {a}");
    if write && !appends {
        assert_eq!(a["destructiveHint"], true, "{name}: {a}");
        assert_eq!(a["idempotentHint"], true, "{name}: {a}");
    }
}

/// The input and output schemas of `search`, `store_knowledge` and `get_node`.
fn check_schemas(tools: &[Value]) {
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).expect("tool");
    let search = by_name("search");
    assert_eq!(
        search["inputSchema"]["required"],
        json!(["query"]),
        "{search}"
    );
    for p in [
        "query",
        "clientId",
        "projectId",
        "groupId",
        "maxResults",
        "kinds",
    ] {
        assert!(
            search["inputSchema"]["properties"][p]["description"].is_string(),
            "search.{p}: {search}"
        );
    }
    assert!(
        search["outputSchema"]["properties"]["items"].is_object(),
        "{search}"
    );
    let store = by_name("store_knowledge");
    for p in [
        "content",
        "subject",
        "title",
        "kind",
        "relationships",
        "priority",
    ] {
        assert!(
            store["inputSchema"]["properties"][p].is_object(),
            "store_knowledge.{p}"
        );
    }
    assert!(
        store["outputSchema"]["properties"]["sourceUrn"].is_object(),
        "{store}"
    );
    assert!(by_name("get_node")["outputSchema"]["properties"]["evidence"].is_object());
}
