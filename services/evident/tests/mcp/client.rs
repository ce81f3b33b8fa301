//! The Rust SDK client of these tests: a recorder of progress notifications, the two
//! transports, and `tools/call` helpers. Also included by `tests/gaps.rs`.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ProgressNotificationParam, ProgressToken};
use rmcp::service::{ClientInitializeError, NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::sync::Notify;

use crate::support::{BIN, Server};

/// A Rust SDK client that keeps the progress notifications it receives.
#[derive(Clone, Default)]
pub struct Recorder {
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
    pub fn stages(&self, token: &ProgressToken) -> Vec<String> {
        self.progress
            .lock()
            .expect("lock")
            .iter()
            .filter(|p| &p.progress_token == token)
            .filter_map(|p| p.message.clone())
            .collect()
    }

    /// Waits until a progress notification for `token` has arrived.
    pub async fn first_progress(&self, token: &ProgressToken) {
        self.stage(token, "").await;
    }

    /// Waits until a progress notification for `token` whose message starts with `prefix`
    /// has been handled. The server sends every notification before its result, but the
    /// client handles notifications on its own tasks, so one may be handled after the result
    /// is returned to the caller.
    pub async fn stage(&self, token: &ProgressToken, prefix: &str) {
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

pub type Client = RunningService<RoleClient, Recorder>;

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

pub fn params(tool: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_string())
        .with_arguments(args.as_object().cloned().expect("arguments object"))
}

/// `tools/call` → the result as JSON (panics on an error).
pub async fn call(client: &Client, tool: &str, args: Value) -> Value {
    let r = client
        .call_tool(params(tool, args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_ne!(r.is_error, Some(true), "{tool}: {r:?}");
    serde_json::to_value(r).expect("json")
}

/// `tools/call` expected to fail → the API's error code the MCP error carries.
pub async fn refused(client: &Client, tool: &str, args: Value) -> String {
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

/// How the Rust SDK client reaches the server.
#[derive(Clone, Copy)]
pub enum Transport {
    /// Streamable HTTP to `evident serve`'s `/mcp`.
    Http,
    /// A child `evident mcp` bridging stdio to the server.
    Stdio,
}

impl Transport {
    pub async fn connect(
        self,
        server: &Server,
        token: &str,
    ) -> Result<Client, ClientInitializeError> {
        match self {
            Transport::Http => over_http(server, token).await,
            Transport::Stdio => over_stdio(server, token).await,
        }
    }
}

/// A read-only token of client `acme`, made with `evident token create`.
pub fn read_token(server: &Server) -> String {
    let out = server.ok("token create --client acme --role read", &[]);
    out.lines().next().expect("secret").trim().to_string()
}
