//! A small HTTP client for the CLI commands that talk to a running server.

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;

pub struct Client {
    base: String,
    http: reqwest::Client,
    token: Option<String>,
}

/// Percent-encodes a path segment (keys contain `:` and may contain anything).
pub fn encode_path(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b':') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Client {
    /// A client of the server at `base`, sending `token` (see `access::cli_token`).
    pub fn new(base: &str, token: Option<&str>) -> anyhow::Result<Client> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(300))
            .build()
            .context("building HTTP client")?;
        Ok(Client {
            base: base.trim_end_matches('/').to_string(),
            http,
            token: crate::access::cli_token(token),
        })
    }

    async fn send(&self, req: reqwest::RequestBuilder, what: &str) -> anyhow::Result<Value> {
        let req = match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        };
        let resp = req.send().await.with_context(|| {
            format!(
                "cannot reach the Evident server at {} — is `evident serve` running?",
                self.base
            )
        })?;
        let status = resp.status();
        let body: Value = resp
            .json()
            .await
            .with_context(|| format!("{what}: unreadable answer"))?;
        if status.as_u16() == 401 && self.token.is_none() {
            bail!(
                "{what}: the server wants a token — pass --token or set EVIDENT_TOKEN \
                 (a local server writes one to ./evident-data/local-token)"
            );
        }
        if !status.is_success() {
            bail!(
                "{what}: {} {} — {}",
                status.as_u16(),
                body["code"].as_str().unwrap_or("error"),
                body["message"].as_str().unwrap_or("")
            );
        }
        Ok(body)
    }

    /// POSTs a request body (one of the API's body types, `evident_api::bodies`).
    pub async fn post(&self, path: &str, body: &impl serde::Serialize) -> anyhow::Result<Value> {
        self.send(
            self.http.post(format!("{}{path}", self.base)).json(body),
            path,
        )
        .await
    }

    pub async fn post_with_priority(
        &self,
        path: &str,
        body: &impl serde::Serialize,
        priority: u8,
    ) -> anyhow::Result<Value> {
        let req = self
            .http
            .post(format!("{}{path}", self.base))
            .header("X-Evident-Priority", priority.to_string())
            .json(body);
        self.send(req, path).await
    }

    /// PUTs a request body (one of the API's body types).
    pub async fn put(&self, path: &str, body: &impl serde::Serialize) -> anyhow::Result<Value> {
        self.send(
            self.http.put(format!("{}{path}", self.base)).json(body),
            path,
        )
        .await
    }

    pub async fn delete(&self, path: &str, query: &[(&str, &str)]) -> anyhow::Result<Value> {
        self.send(
            self.http
                .delete(format!("{}{path}", self.base))
                .query(query),
            path,
        )
        .await
    }

    pub async fn get(&self, path: &str, query: &[(&str, &str)]) -> anyhow::Result<Value> {
        self.send(
            self.http.get(format!("{}{path}", self.base)).query(query),
            path,
        )
        .await
    }
}

/// `text`, or what stdin holds when it is `-`.
pub fn text_or_stdin(text: String) -> anyhow::Result<String> {
    if text == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).context("reading stdin")?;
        Ok(s)
    } else {
        Ok(text)
    }
}
