//! MCP through the real binary (`evident serve`) with two clients: the Rust SDK's (rmcp)
//! over streamable HTTP and over stdio through `evident mcp` (child process), and the
//! official Python MCP SDK over both.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam,
    ProgressToken, ReadResourceRequestParams, ServerResult,
};
use rmcp::service::{
    ClientInitializeError, NotificationContext, PeerRequestOptions, RunningService,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::Notify;

mod support;

use support::{BIN, Server};

/// A Rust SDK client that keeps the progress notifications it receives.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    arrived: Arc<Notify>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().expect("lock").push(params);
        self.arrived.notify_waiters();
    }
}

impl Recorder {
    /// The messages of the progress notifications for `token`, so far.
    fn stages(&self, token: &ProgressToken) -> Vec<String> {
        self.progress
            .lock()
            .expect("lock")
            .iter()
            .filter(|p| &p.progress_token == token)
            .filter_map(|p| p.message.clone())
            .collect()
    }

    /// Waits until a progress notification for `token` has arrived.
    async fn first_progress(&self, token: &ProgressToken) {
        self.stage(token, "").await;
    }

    /// Waits until a progress notification for `token` whose message starts with `prefix`
    /// has been handled. The server sends every notification before its result, but the
    /// client handles notifications on its own tasks, so one may be handled after the result
    /// is returned to the caller.
    async fn stage(&self, token: &ProgressToken, prefix: &str) {
        loop {
            let arrived = self.arrived.notified();
            if self.stages(token).iter().any(|s| s.starts_with(prefix)) {
                return;
            }
            tokio::time::timeout(Duration::from_secs(60), arrived)
                .await
                .unwrap_or_else(|_| panic!("progress `{prefix}…` within a minute"));
        }
    }
}

type Client = RunningService<RoleClient, Recorder>;

/// Streamable HTTP to `evident serve`'s `/mcp`.
async fn over_http(server: &Server, token: &str) -> Result<Client, ClientInitializeError> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.url))
            .auth_header(token),
    );
    Recorder::default().serve(transport).await
}

/// `evident mcp` as a desktop agent launches it: a child process speaking stdio.
async fn over_stdio(server: &Server, token: &str) -> Result<Client, ClientInitializeError> {
    let command = tokio::process::Command::new(BIN).configure(|c| {
        c.args(["mcp", "--server", &server.url, "--token", token]);
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start evident mcp");
    Recorder::default().serve(transport).await
}

fn params(tool: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_string())
        .with_arguments(args.as_object().cloned().expect("arguments object"))
}

/// `tools/call` → the result as JSON (panics on an error).
async fn call(client: &Client, tool: &str, args: Value) -> Value {
    let r = client
        .call_tool(params(tool, args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_ne!(r.is_error, Some(true), "{tool}: {r:?}");
    serde_json::to_value(r).expect("json")
}

/// `tools/call` expected to fail → the API's error code the MCP error carries.
async fn refused(client: &Client, tool: &str, args: Value) -> String {
    match client.call_tool(params(tool, args)).await {
        Err(ServiceError::McpError(e)) => e
            .data
            .as_ref()
            .and_then(|d| d["code"].as_str())
            .unwrap_or_default()
            .to_string(),
        other => panic!("{tool} should be refused: {other:?}"),
    }
}

const TOOLS: [&str; 38] = [
    "add_graph_edge",
    "add_graph_node",
    "claim_attention",
    "claim_gap",
    "claim_history",
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
    "store_knowledge",
    "submit_findings",
    "supersede",
    "traverse",
    "verify",
];

/// Initialise, list tools (schemas and annotations), resource templates.
async fn check_server_and_tools(client: &Client) {
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

    let tools = client.list_all_tools().await.expect("tools/list");
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| serde_json::to_value(t).expect("json"))
        .collect();
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, TOOLS);
    for tool in &tools {
        let name = tool["name"].as_str().expect("name");
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 40),
            "{name} has a description for a model"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}: {tool}");
        let write = matches!(
            name,
            "store_knowledge"
                | "memory_put"
                | "record_outcome"
                | "session_append"
                | "save_procedure"
                | "record_procedure_outcome"
                | "delete_procedure"
                | "put_profile"
                | "load_structured"
                | "remove_graph_edge"
                | "learn"
                | "verify"
                | "dispute"
                | "supersede"
                | "report_gaps"
                | "claim_gap"
                | "submit_findings"
                | "fail_gap"
                | "add_graph_node"
                | "add_graph_edge"
        );
        // Appending to the session log or a claim's history, counting an outcome, and gap and
        // graph writes (which add, never replace: their own annotations are checked by the gap
        // loop's test) are not destructive.
        let appends = matches!(
            name,
            "session_append"
                | "record_procedure_outcome"
                | "learn"
                | "verify"
                | "dispute"
                | "supersede"
                | "report_gaps"
                | "claim_gap"
                | "submit_findings"
                | "fail_gap"
                | "add_graph_node"
                | "add_graph_edge"
        );
        let a = &tool["annotations"];
        assert_eq!(a["readOnlyHint"], !write, "{name}: {a}");
        assert_eq!(a["openWorldHint"], false, "{name}: {a}");
        if write && !appends {
            assert_eq!(a["destructiveHint"], true, "{name}: {a}");
            assert_eq!(a["idempotentHint"], true, "{name}: {a}");
        }
    }
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

/// Every tool once, with a subject of its own; a citation opened as a resource.
async fn call_every_tool(client: &Client, subject: &str) {
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

    let session = format!("s-{}", urn.len());
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

    let queue = call(client, "queue_status", json!({ "clientId": "acme" })).await;
    assert!(
        queue["structuredContent"]["counts"]["queued"].is_number(),
        "{queue}"
    );
    let sources = call(client, "source_status", json!({ "clientId": "acme" })).await;
    assert!(
        sources["structuredContent"]["indexed"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["sourceUrn"] == urn.as_str())),
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

/// A search reports its stages to the client (the SDK sends a progress token with every
/// request).
async fn check_search_progress(client: &Client) {
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
async fn check_cancelled_store(client: &Client, server: &Server, subject: &str) {
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

/// How the Rust SDK client reaches the server.
#[derive(Clone, Copy)]
enum Transport {
    /// Streamable HTTP to `evident serve`'s `/mcp`.
    Http,
    /// A child `evident mcp` bridging stdio to the server.
    Stdio,
}

impl Transport {
    async fn connect(self, server: &Server, token: &str) -> Result<Client, ClientInitializeError> {
        match self {
            Transport::Http => over_http(server, token).await,
            Transport::Stdio => over_stdio(server, token).await,
        }
    }
}

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
    check_server_and_tools(&client).await;
    call_every_tool(&client, &format!("Ledger drain over {name}")).await;
    check_search_progress(&client).await;
    check_cancelled_store(&client, &server, &format!("Huge import over {name}")).await;
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

/// A read-only token of client `acme`, made with `evident token create`.
fn read_token(server: &Server) -> String {
    let (ok, out, err) = server.cli(
        &["token", "create", "--client", "acme", "--role", "read"],
        None,
    );
    assert!(ok, "{err}");
    out.lines().next().expect("secret").trim().to_string()
}

/// A Python with the official MCP SDK: `EVIDENT_MCP_PYTHON` (`.ci/run` installs it into a
/// virtualenv), else a virtualenv made once under the target directory. Without the SDK
/// the test fails: it is the third-party client the acceptance names.
fn python_with_mcp() -> PathBuf {
    let has_mcp = |p: &Path| {
        Command::new(p)
            .args(["-c", "import mcp.client.streamable_http"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if let Some(python) = std::env::var_os("EVIDENT_MCP_PYTHON") {
        let python = PathBuf::from(python);
        assert!(
            has_mcp(&python),
            "EVIDENT_MCP_PYTHON={} cannot import the MCP SDK (`mcp`)",
            python.display()
        );
        return python;
    }
    let base =
        PathBuf::from(option_env!("CARGO_TARGET_TMPDIR").unwrap_or(env!("CARGO_MANIFEST_DIR")))
            .join("mcp-venv");
    let python = base.join("bin/python");
    if !has_mcp(&python) {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&base)
            .status()
            .is_ok_and(|s| s.success())
            && Command::new(base.join("bin/pip"))
                .args([
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "mcp==2.3.0",
                ])
                .status()
                .is_ok_and(|s| s.success());
        assert!(
            made && has_mcp(&python),
            "the Python MCP SDK could not be installed into {}: run `.ci/run`, or set \
             EVIDENT_MCP_PYTHON to a python that has `mcp`",
            base.display()
        );
    }
    python
}

const PY_CLIENT: &str = r#"
import asyncio, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BIN, URL, TOKEN = sys.argv[1], sys.argv[2], sys.argv[3]
HEADERS = {"Authorization": f"Bearer {TOKEN}"}

def http_client():
    try:  # SDK 2.x
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client
        return streamable_http_client(URL + "/mcp", http_client=create_mcp_http_client(headers=HEADERS))
    except ImportError:  # SDK 1.x
        from mcp.client.streamable_http import streamablehttp_client
        return streamablehttp_client(URL + "/mcp", headers=HEADERS)

def structured(r):
    v = getattr(r, "structured_content", None)
    return v if v is not None else getattr(r, "structuredContent", None)

def failed(r):
    return bool(getattr(r, "is_error", None) or getattr(r, "isError", None))

async def exercise(session, subject):
    await session.initialize()
    names = {t.name for t in (await session.list_tools()).tools}
    assert {"search", "store_knowledge", "get_node"} <= names, names
    stored = await session.call_tool("store_knowledge", {
        "clientId": "acme", "subject": subject,
        "content": f"{subject}: restart service:gateway with the gateway-bounce job.",
    })
    assert not failed(stored), stored
    urn = structured(stored)["sourceUrn"]
    found = await session.call_tool("search", {"clientId": "acme", "query": f"{subject} gateway-bounce"})
    assert not failed(found), found
    hits = [i for i in structured(found)["items"] if i["sourceUrn"] == urn]
    assert hits and hits[0]["citation"], structured(found)
    assert "<untrusted-source-data" in found.content[0].text
    node = await session.call_tool("get_node", {"clientId": "acme", "key": "service:gateway"})
    assert not failed(node), node
    assert structured(node)["node"]["key"] == "service:gateway"
    assert structured(node)["evidence"][0]["citation"]
    opened = await session.read_resource(hits[0]["resource"])
    assert "gateway-bounce" in opened.contents[0].text
    print(f"ok {subject}", flush=True)

async def main():
    params = StdioServerParameters(command=BIN, args=["mcp", "--server", URL, "--token", TOKEN])
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await exercise(s, "Gateway restarts over stdio")
    async with http_client() as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            await exercise(s, "Gateway restarts over HTTP")

asyncio.run(main())
"#;

#[test]
fn the_official_python_sdk_over_stdio_and_http() {
    let python = python_with_mcp();
    let data = tempfile::tempdir().expect("data");
    let server = Server::start(data.path());
    let script = data.path().join("client.py");
    std::fs::write(&script, PY_CLIENT).expect("script");
    let out = Command::new(python)
        .arg(&script)
        .args([BIN, &server.url, &server.token])
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("ok Gateway restarts over stdio"),
        "{stdout}"
    );
    assert!(stdout.contains("ok Gateway restarts over HTTP"), "{stdout}");
}
