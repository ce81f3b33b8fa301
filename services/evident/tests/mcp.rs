//! MCP through the real binary: `evident serve`, then `evident mcp` (stdio bridged to the
//! server's `/mcp`) driven line by line, and the official Python MCP SDK over stdio and
//! streamable HTTP (skipped, saying so, only when pip cannot install it).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_evident");

struct Server {
    child: Child,
    _stderr: BufReader<ChildStderr>,
    url: String,
    token: String,
}

impl Server {
    fn start(data: &Path) -> Server {
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--data"])
            .arg(data)
            .env("RUST_LOG", "warn")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start evident serve");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut seen = String::new();
        let url = loop {
            let mut line = String::new();
            let n = stderr.read_line(&mut line).expect("read stderr");
            assert!(n > 0, "server exited; it said:\n{seen}");
            seen.push_str(&line);
            if line.contains("listening on ") {
                break line
                    .split_whitespace()
                    .find(|w| w.starts_with("http://"))
                    .expect("url in banner")
                    .to_string();
            }
        };
        let token = std::fs::read_to_string(data.join("local-token")).expect("local token");
        Server {
            child,
            _stderr: stderr,
            url,
            token: token.trim().to_string(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `evident mcp` as a desktop agent runs it.
struct Bridge {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Bridge {
    fn start(server: &Server, token: &str) -> Bridge {
        let mut child = Command::new(BIN)
            .args(["mcp", "--server", &server.url, "--token", token])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start evident mcp");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Bridge {
            child,
            stdin,
            stdout,
            next: 1,
        }
    }

    fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{msg}").expect("write");
        stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(v["id"], id, "{v}");
        v
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        let v = self.request("tools/call", json!({ "name": tool, "arguments": args }));
        assert!(v.get("error").is_none(), "{tool}: {v}");
        v["result"].clone()
    }

    fn close(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "evident mcp exits cleanly at EOF");
    }
}

#[test]
fn stdio_bridge_store_search_get_node_and_refusals() {
    let data = tempfile::tempdir().expect("data");
    let server = Server::start(data.path());
    let mut mcp = Bridge::start(&server, &server.token);

    let init = mcp.request(
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "test", "version": "1" }
        }),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "evident", "{init}");
    // A notification gets no answer; the next line answers the next request.
    mcp.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let tools = mcp.request("tools/list", json!({}));
    assert_eq!(
        tools["result"]["tools"].as_array().map(Vec::len),
        Some(10),
        "{tools}"
    );

    // The operator token covers every client: name one.
    let stored = mcp.call(
        "store_knowledge",
        json!({
            "clientId": "acme",
            "subject": "Ledger drain",
            "content": "When service:ledger backs up, run the ledger-drain job and page the on-call."
        }),
    );
    assert_eq!(
        stored["structuredContent"]["sourceUrn"], "knowledge:ledger_drain",
        "{stored}"
    );
    let found = mcp.call(
        "search",
        json!({ "clientId": "acme", "query": "ledger backs up drain job" }),
    );
    let item = &found["structuredContent"]["items"][0];
    assert_eq!(item["sourceUrn"], "knowledge:ledger_drain", "{found}");
    assert!(item["citation"].is_string());
    assert!(
        found["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("<untrusted-source-data source=\"knowledge:ledger_drain\""))
    );
    let node = mcp.call(
        "get_node",
        json!({ "clientId": "acme", "key": "service:ledger" }),
    );
    assert_eq!(node["structuredContent"]["node"]["key"], "service:ledger");
    let uri = item["resource"].as_str().expect("uri");
    let read = mcp.request("resources/read", json!({ "uri": uri }));
    assert!(
        read["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("ledger-drain")),
        "{read}"
    );
    // Errors carry the API's code.
    let missing = mcp.request(
        "tools/call",
        json!({ "name": "get_node", "arguments": { "clientId": "acme", "key": "service:none" } }),
    );
    assert_eq!(missing["error"]["data"]["code"], "not_found", "{missing}");
    mcp.close();

    // A bad token: the bridge answers each request with the server's refusal.
    let mut bad = Bridge::start(&server, "evd_not_a_token");
    let refused = bad.request("tools/list", json!({}));
    assert_eq!(
        refused["error"]["data"]["code"], "invalid_token",
        "{refused}"
    );
    bad.close();
}

/// A virtualenv with the official Python MCP SDK, made once under the target directory;
/// `None` (the test then says it is skipped) when pip cannot install it.
fn python_with_mcp() -> Option<PathBuf> {
    let base =
        PathBuf::from(option_env!("CARGO_TARGET_TMPDIR").unwrap_or(env!("CARGO_MANIFEST_DIR")))
            .join("mcp-venv");
    let python = base.join("bin/python");
    let has_mcp = |p: &Path| {
        Command::new(p)
            .args(["-c", "import mcp.client.streamable_http"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if has_mcp(&python) {
        return Some(python);
    }
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
                "mcp>=1.10",
            ])
            .status()
            .is_ok_and(|s| s.success());
    (made && has_mcp(&python)).then_some(python)
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
    let Some(python) = python_with_mcp() else {
        eprintln!(
            "SKIPPED the_official_python_sdk_over_stdio_and_http: pip could not install the \
             Python MCP SDK (`mcp`) into a virtualenv"
        );
        return;
    };
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
