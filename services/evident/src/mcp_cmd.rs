//! `evident mcp`: MCP over stdio for desktop agents, bridged to a running server's `/mcp`.
//!
//! A line-level JSON-RPC proxy: every message read from stdin (one JSON value per line) is
//! POSTed to `/mcp` with the bearer token; the server answers JSON (or, when a call reports
//! progress, an event stream whose messages are relayed in order as they arrive), written
//! to stdout one per line. Requests run concurrently; `notifications/cancelled` aborts the
//! named request's HTTP call and is passed on, both of which cancel it on the server.
//! Diagnostics go to stderr only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

#[derive(Args)]
pub struct McpArgs {
    #[command(flatten)]
    server: crate::cli::Server,
}

/// What the bridge shares between its tasks.
struct Bridge {
    http: reqwest::Client,
    url: String,
    token: Option<String>,
    /// The protocol version the server negotiated (sent as `MCP-Protocol-Version`).
    version: Mutex<Option<String>>,
    /// In-flight requests by JSON-RPC id, for cancellation.
    inflight: Mutex<HashMap<String, AbortHandle>>,
    out: mpsc::UnboundedSender<String>,
}

pub async fn run(args: McpArgs) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .context("building HTTP client")?;
    let (out, mut lines_out) = mpsc::unbounded_channel::<String>();
    let bridge = Arc::new(Bridge {
        http,
        url: format!("{}/mcp", args.server.server.trim_end_matches('/')),
        token: crate::access::cli_token(args.server.token.as_deref()),
        version: Mutex::new(None),
        inflight: Mutex::new(HashMap::new()),
        out,
    });
    // One writer: whole lines, never interleaved.
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = lines_out.recv().await {
            if stdout.write_all(line.as_bytes()).await.is_err()
                || stdout.write_all(b"\n").await.is_err()
                || stdout.flush().await.is_err()
            {
                break;
            }
        }
    });
    let mut tasks = JoinSet::new();
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = stdin.next_line().await.context("reading stdin")? {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                bridge.send(&json!({
                    "jsonrpc": "2.0", "id": null,
                    "error": { "code": -32700, "message": format!("parse error: {e}") }
                }));
                continue;
            }
        };
        if msg["method"] == "notifications/cancelled" {
            // Stop relaying the call (closing its request cancels it on the server) and
            // pass the notification on, so the server stops it even before it notices.
            if let Some(h) = bridge.take(&msg["params"]["requestId"]) {
                h.abort();
            }
            let b = bridge.clone();
            tasks.spawn(async move { b.forward(msg).await });
            continue;
        }
        let id = msg
            .get("id")
            .filter(|_| msg.get("method").is_some())
            .cloned();
        let b = bridge.clone();
        let key = id.as_ref().map(id_key);
        let handle = tasks.spawn(async move {
            b.forward(msg).await;
            if let Some(k) = key {
                b.inflight.lock().map(|mut m| m.remove(&k)).ok();
            }
        });
        if let Some(id) = id
            && let Ok(mut m) = bridge.inflight.lock()
        {
            m.insert(id_key(&id), handle);
        }
        while tasks.try_join_next().is_some() {}
    }
    // stdin closed: let the calls in flight answer, then stop.
    while tasks.join_next().await.is_some() {}
    drop(bridge);
    let _ = writer.await;
    Ok(())
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Bridge {
    fn send(&self, v: &Value) {
        let _ = self.out.send(v.to_string());
    }

    fn take(&self, id: &Value) -> Option<AbortHandle> {
        self.inflight.lock().ok()?.remove(&id_key(id))
    }

    /// POSTs one message and relays its answers as they arrive; a transport failure on a
    /// request becomes a JSON-RPC error naming it (notifications fail silently but for
    /// stderr).
    async fn forward(&self, msg: Value) {
        let id = msg.get("id").cloned();
        let is_request = id.is_some() && msg.get("method").is_some();
        let is_initialize = msg["method"] == "initialize";
        let relay = |a: Value| {
            if is_initialize
                && let Some(v) = a["result"]["protocolVersion"].as_str()
                && let Ok(mut version) = self.version.lock()
            {
                *version = Some(v.to_string());
            }
            self.send(&a);
        };
        if let Err((code, message)) = self.post(&msg, relay).await {
            if is_request {
                self.send(&json!({
                    "jsonrpc": "2.0", "id": id,
                    "error": { "code": -32603, "message": message, "data": { "code": code } }
                }));
            } else {
                eprintln!("evident mcp: {message}");
            }
        }
    }

    /// POSTs `msg`; each JSON-RPC message of the answer goes to `relay` as soon as it is
    /// read (an event stream's progress notifications before its result).
    async fn post(
        &self,
        msg: &Value,
        mut relay: impl FnMut(Value),
    ) -> Result<(), (String, String)> {
        let mut req = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .json(msg);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let version = self.version.lock().ok().and_then(|v| v.clone());
        if let Some(v) = version {
            req = req.header("mcp-protocol-version", v);
        }
        let mut resp = req.send().await.map_err(|e| {
            (
                "unreachable".to_string(),
                format!(
                    "cannot reach the Evident server at {} — is `evident serve` running? ({e})",
                    self.url
                ),
            )
        })?;
        let status = resp.status();
        if status.as_u16() == 202 || status.as_u16() == 204 {
            return Ok(());
        }
        let sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let unreadable = |e: reqwest::Error| {
            (
                "unreadable_answer".to_string(),
                format!("reading the answer: {e}"),
            )
        };
        if sse {
            let mut events = EventStream::default();
            while let Some(bytes) = resp.chunk().await.map_err(unreadable)? {
                events.feed(&bytes).into_iter().for_each(&mut relay);
            }
            events.finish().into_iter().for_each(&mut relay);
            return Ok(());
        }
        let body = resp.text().await.map_err(unreadable)?;
        match serde_json::from_str::<Value>(&body) {
            // A JSON-RPC answer (errors included) is relayed whatever the status.
            Ok(v) if v.get("jsonrpc").is_some() || v.is_array() => {
                relay(v);
                Ok(())
            }
            // The API's own refusals: `{code, message}` (401 without a valid token, 429…).
            Ok(v) => Err((
                v["code"].as_str().unwrap_or("http_error").to_string(),
                format!(
                    "HTTP {}: {} {}{}",
                    status.as_u16(),
                    v["code"].as_str().unwrap_or(""),
                    v["message"].as_str().unwrap_or(""),
                    if status.as_u16() == 401 {
                        " — pass --token or set EVIDENT_TOKEN"
                    } else {
                        ""
                    }
                ),
            )),
            Err(_) => Err((
                "http_error".to_string(),
                format!("HTTP {}: {}", status.as_u16(), body.trim()),
            )),
        }
    }
}

/// The JSON messages of an event stream, parsed as its bytes arrive: the `data:` lines of
/// each event (an empty line ends it); empty priming events and other fields skipped.
#[derive(Default)]
struct EventStream {
    pending: Vec<u8>,
    data: Vec<String>,
}

impl EventStream {
    fn feed(&mut self, bytes: &[u8]) -> Vec<Value> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                out.extend(self.dispatch());
            } else if let Some(d) = line.strip_prefix("data:") {
                self.data.push(d.strip_prefix(' ').unwrap_or(d).to_string());
            }
        }
        out
    }

    /// The event the stream ended in, if it was not closed by an empty line.
    fn finish(mut self) -> Option<Value> {
        self.feed(b"\n\n").pop()
    }

    fn dispatch(&mut self) -> Option<Value> {
        let data = std::mem::take(&mut self.data);
        if data.is_empty() {
            return None;
        }
        serde_json::from_str(&data.join("\n")).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_streams_yield_their_messages_in_order_however_they_are_cut() {
        let body = "id: 0\nretry: 3000\ndata:\n\n\
                    data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                    event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\r\ndata: \"result\":{}}\r\n\r\n";
        for cut in 1..body.len() {
            let mut events = EventStream::default();
            let mut msgs = events.feed(&body.as_bytes()[..cut]);
            msgs.extend(events.feed(&body.as_bytes()[cut..]));
            msgs.extend(events.finish());
            assert_eq!(msgs.len(), 2, "cut at {cut}");
            assert_eq!(msgs[0]["method"], "notifications/progress");
            assert_eq!(msgs[1]["id"], 1);
        }
        // A stream closed without its last empty line still yields its last event.
        let mut events = EventStream::default();
        assert!(events.feed(b"data: {\"id\":2}").is_empty());
        assert_eq!(events.finish().map(|v| v["id"].clone()), Some(json!(2)));
    }
}
