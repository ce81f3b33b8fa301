//! The official Python MCP SDK over stdio and streamable HTTP.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{BIN, Server};

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
