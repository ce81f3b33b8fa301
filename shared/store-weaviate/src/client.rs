//! A thin typed client for the parts of Weaviate's REST and GraphQL APIs Evident uses.
//!
//! Every request goes to `{url}/v1/…` with JSON bodies; answers are read as JSON (an empty
//! body is `null`, a non-JSON body a string). Status handling stays with the caller (a 404
//! means "missing" to some calls and an error to others); [`Reply::ok`] maps the rest.

use std::time::Duration;

use evident_store::{Result, StoreError};
use reqwest::Method;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::error;

/// An HTTP answer: status and JSON body.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub status: u16,
    pub body: Value,
}

impl Reply {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body of a 2xx answer, else the status mapped to an error.
    pub fn ok(self, what: &str) -> Result<Value> {
        if self.is_success() {
            Ok(self.body)
        } else {
            Err(error::status(what, self.status, &self.body))
        }
    }

    /// Weaviate's error text of this answer.
    pub fn message(&self) -> String {
        error::message_of(&self.body)
    }
}

pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    /// `url` is the server root (`http://host:8080`); the API key, when given, is sent as a
    /// bearer token marked sensitive (never printed by reqwest's debug output).
    pub fn new(url: &str, api_key: Option<&str>, timeout: Duration) -> Result<Client> {
        let mut headers = HeaderMap::new();
        if let Some(key) = api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                StoreError::invalid("the Weaviate API key holds characters a header cannot carry")
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| StoreError::invalid(format!("building the Weaviate HTTP client: {e}")))?;
        let base = url.trim().trim_end_matches('/').to_string();
        let base = base.strip_suffix("/v1").unwrap_or(&base).to_string();
        Ok(Client { http, base })
    }

    /// Sends one request to `path` (starting with `/v1/`).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Result<Reply> {
        let what = format!("{method} {path}");
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if !query.is_empty() {
            request = request.query(query);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .map_err(|e| error::transport(&what, e))?;
        let status = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| error::transport(&what, e))?;
        let body = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Ok(Reply { status, body })
    }

    /// Runs a GraphQL query and returns its `data`. Weaviate reports query failures as an
    /// `errors` list in an HTTP 200 answer: those become errors here (see [`error::reported`]).
    pub async fn graphql(&self, query: &str) -> Result<Value> {
        let body = json!({ "query": query });
        let reply = self
            .send(Method::POST, "/v1/graphql", &[], Some(&body))
            .await?;
        let mut answer = reply.ok("GraphQL query")?;
        if let Some(Value::Array(errors)) = answer.get("errors")
            && !errors.is_empty()
        {
            let messages: Vec<String> = errors
                .iter()
                .map(|e| {
                    e.get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| e.to_string(), str::to_string)
                })
                .collect();
            return Err(error::reported("GraphQL query failed", &messages));
        }
        match answer.get_mut("data").map(Value::take) {
            Some(data @ Value::Object(_)) => Ok(data),
            _ => Err(error::unexpected("GraphQL query", &answer)),
        }
    }
}
