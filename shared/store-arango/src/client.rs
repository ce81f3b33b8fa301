//! A small typed client for the parts of ArangoDB's HTTP API Evident uses: AQL cursors
//! (following `hasMore` batches), collection, index, named-graph and database management,
//! and the server version. Connection pooling is reqwest's.
//!
//! Every path is database-scoped (`/_db/{database}/_api/...`) except database management,
//! which goes through `_system` (as does the version while the database does not exist yet).

use std::time::Duration;

use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::config::ArangoConfig;
use crate::error::{ERR_CURSOR_NOT_FOUND, ERR_DATABASE_NOT_FOUND, Error};

/// User name and password, kept in memory only; `Debug` never shows them.
struct Credentials {
    user: String,
    password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(<redacted>)")
    }
}

#[derive(Debug)]
pub(crate) struct Client {
    http: reqwest::Client,
    /// `http://host:port` without a trailing `/`.
    base: String,
    database: String,
    /// `{base}/_db/{database}`.
    db_url: String,
    auth: Option<Credentials>,
    timeout_secs: u64,
}

/// Percent-encodes a path segment (database names may use extended characters).
fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The id of the server-side cursor a cursor answer names, if any.
fn cursor_id(page: &Value) -> Option<String> {
    match &page["id"] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// At most `n` chars of `s`, for error messages.
fn snippet(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).collect();
    if s.chars().nth(n).is_some() {
        out.push('…');
    }
    out
}

impl Client {
    pub fn new(cfg: &ArangoConfig) -> Result<Client, Error> {
        cfg.validate()?;
        let auth = cfg
            .credentials()?
            .map(|(user, password)| Credentials { user, password });
        let mut builder = reqwest::Client::builder()
            .timeout(Duration::from_secs(cfg.timeout_secs))
            .connect_timeout(Duration::from_secs(cfg.timeout_secs.min(10)));
        if let Some(n) = cfg.pool_size {
            builder = builder.pool_max_idle_per_host(n);
        }
        let http = builder
            .build()
            .map_err(|e| Error::Config(format!("building the HTTP client: {e}")))?;
        let base = cfg.url.trim().trim_end_matches('/').to_string();
        let db_url = format!("{base}/_db/{}", path_segment(&cfg.database));
        Ok(Client {
            http,
            base,
            database: cfg.database.clone(),
            db_url,
            auth,
            timeout_secs: cfg.timeout_secs,
        })
    }

    pub fn database(&self) -> &str {
        &self.database
    }

    fn transport(&self, what: &str, e: reqwest::Error) -> Error {
        if e.is_timeout() {
            Error::Timeout {
                what: what.to_string(),
                secs: self.timeout_secs,
            }
        } else {
            Error::Transport {
                what: what.to_string(),
                detail: e.without_url().to_string(),
            }
        }
    }

    /// One request; a 2xx answer's JSON body (`Null` when empty), else [`Error::Server`].
    async fn call(
        &self,
        method: Method,
        url: &str,
        what: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Result<Value, Error> {
        let mut req = self.http.request(method, url);
        if !query.is_empty() {
            req = req.query(query);
        }
        if let Some(c) = &self.auth {
            req = req.basic_auth(&c.user, Some(&c.password));
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(|e| self.transport(what, e))?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(|e| self.transport(what, e))?;
        let parsed: Option<Value> = if bytes.is_empty() {
            Some(Value::Null)
        } else {
            serde_json::from_slice(&bytes).ok()
        };
        if (200..300).contains(&status) {
            return parsed.ok_or_else(|| {
                Error::Protocol(format!(
                    "{what}: HTTP {status} with a body that is not JSON: {}",
                    snippet(&String::from_utf8_lossy(&bytes), 120)
                ))
            });
        }
        let (num, message) = match &parsed {
            Some(v) if v.get("errorNum").is_some() || v.get("errorMessage").is_some() => (
                v["errorNum"].as_i64().unwrap_or(0),
                v["errorMessage"].as_str().unwrap_or("").to_string(),
            ),
            _ => (0, snippet(&String::from_utf8_lossy(&bytes), 200)),
        };
        Err(Error::Server {
            what: what.to_string(),
            status,
            num,
            message,
        })
    }

    /// Runs an AQL query and returns every result row, following `hasMore` batches. When
    /// paging fails part-way, the server-side cursor is deleted (best effort) rather than
    /// left to its TTL.
    pub async fn cursor(&self, query: &str, bind_vars: Value) -> Result<Vec<Value>, Error> {
        let url = format!("{}/_api/cursor", self.db_url);
        let body = json!({ "query": query, "bindVars": bind_vars });
        let mut page = self
            .call(Method::POST, &url, "query", &[], Some(&body))
            .await?;
        let mut rows = Vec::new();
        // The server-side cursor, once the server has named one.
        let mut open: Option<String> = None;
        let failure = loop {
            if let Some(id) = cursor_id(&page) {
                open = Some(id);
            }
            match page.get_mut("result").map(Value::take) {
                Some(Value::Array(batch)) => rows.extend(batch),
                Some(Value::Null) | None => {}
                Some(other) => {
                    break Error::Protocol(format!(
                        "cursor result is not an array: {}",
                        snippet(&other.to_string(), 80)
                    ));
                }
            }
            if !page["hasMore"].as_bool().unwrap_or(false) {
                return Ok(rows);
            }
            let Some(id) = &open else {
                break Error::Protocol("cursor has more results but no id".to_string());
            };
            let next = format!("{}/_api/cursor/{}", self.db_url, path_segment(id));
            match self
                .call(Method::POST, &next, "next cursor batch", &[], None)
                .await
            {
                Ok(p) => page = p,
                Err(e) => break e,
            }
        };
        if let Some(id) = &open {
            self.discard_cursor(id, &failure).await;
        }
        Err(failure)
    }

    /// `DELETE /_api/cursor/{id}` after paging failed with `cause`, ignoring the outcome. Not
    /// sent when the cursor is already gone (1600) or the server did not answer at all (the
    /// cursor then expires by its TTL; waiting for another timeout would only delay the
    /// error).
    async fn discard_cursor(&self, id: &str, cause: &Error) {
        let answered = matches!(cause, Error::Server { .. } | Error::Protocol(_));
        if !answered || cause.error_num() == Some(ERR_CURSOR_NOT_FOUND) {
            return;
        }
        let url = format!("{}/_api/cursor/{}", self.db_url, path_segment(id));
        if let Err(e) = self
            .call(Method::DELETE, &url, "delete cursor", &[], None)
            .await
        {
            tracing::debug!(cursor = id, error = %e, "could not delete a failed cursor");
        }
    }

    /// [`Client::cursor`], each row decoded as `T`.
    pub async fn cursor_as<T: DeserializeOwned>(
        &self,
        query: &str,
        bind_vars: Value,
    ) -> Result<Vec<T>, Error> {
        self.cursor(query, bind_vars)
            .await?
            .into_iter()
            .map(|row| serde_json::from_value(row).map_err(|e| Error::Data(e.to_string())))
            .collect()
    }

    /// Creates a document (`edge == false`) or edge collection, with `number_of_shards`
    /// when given (a cluster setting; single servers ignore it); an existing one is fine.
    pub async fn create_collection(
        &self,
        name: &str,
        edge: bool,
        number_of_shards: Option<u32>,
    ) -> Result<(), Error> {
        let url = format!("{}/_api/collection", self.db_url);
        let mut body = json!({ "name": name, "type": if edge { 3 } else { 2 } });
        if let Some(n) = number_of_shards {
            body["numberOfShards"] = json!(n);
        }
        self.create(&url, "create collection", &body).await
    }

    /// POSTs `body` to create something (`what`: a collection, graph, database); one that
    /// exists already (a duplicate) is fine.
    async fn create(&self, url: &str, what: &str, body: &Value) -> Result<(), Error> {
        match self.call(Method::POST, url, what, &[], Some(body)).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_duplicate() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Creates a persistent index unless an equal one exists (ArangoDB answers 200 then).
    pub async fn ensure_index(
        &self,
        collection: &str,
        fields: &[&str],
        unique: bool,
    ) -> Result<(), Error> {
        let url = format!("{}/_api/index", self.db_url);
        let body = json!({
            "type": "persistent",
            "fields": fields,
            "unique": unique,
            "sparse": false,
        });
        self.call(
            Method::POST,
            &url,
            "create index",
            &[("collection", collection)],
            Some(&body),
        )
        .await
        .map(|_| ())
    }

    /// Creates the named graph `name` with one edge definition; an existing one is fine.
    pub async fn create_graph(&self, name: &str, edges: &str, nodes: &str) -> Result<(), Error> {
        let url = format!("{}/_api/gharial", self.db_url);
        let body = json!({
            "name": name,
            "edgeDefinitions": [{ "collection": edges, "from": [nodes], "to": [nodes] }],
        });
        self.create(&url, "create graph", &body).await
    }

    /// The server's version string, `None` when the server does not disclose it (with
    /// `--server.harden`, non-admin users get no version details).
    ///
    /// Asked through the configured database (`GET /_db/{database}/_api/version`), which any
    /// user with access to that database may do; the prefix-less `/_api/version` would need
    /// access to `_system`. While the database does not exist yet (404, 1228: it is created at
    /// connect) `_system` is asked instead; a user without access there (401 / 403) gets
    /// `None`, so the database check that follows reports what is really wrong.
    pub async fn version(&self) -> Result<Option<String>, Error> {
        let url = format!("{}/_api/version", self.db_url);
        let answer = match self.call(Method::GET, &url, "version", &[], None).await {
            Ok(v) => v,
            Err(e) if e.status() == Some(404) && e.error_num() == Some(ERR_DATABASE_NOT_FOUND) => {
                let url = format!("{}/_db/_system/_api/version", self.base);
                match self.call(Method::GET, &url, "version", &[], None).await {
                    Ok(v) => v,
                    Err(e) if matches!(e.status(), Some(401 | 403)) => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        Ok(answer
            .get("version")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string))
    }

    /// Whether the configured database exists (and the user may use it).
    pub async fn database_exists(&self) -> Result<bool, Error> {
        let url = format!("{}/_api/database/current", self.db_url);
        match self
            .call(Method::GET, &url, "database info", &[], None)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.error_num() == Some(ERR_DATABASE_NOT_FOUND) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Creates the configured database (through `_system`); an existing one is fine.
    pub async fn create_database(&self) -> Result<(), Error> {
        let url = format!("{}/_db/_system/_api/database", self.base);
        let body = json!({ "name": self.database });
        self.create(&url, "create database", &body).await
    }

    /// Drops the configured database; `false` when it did not exist.
    pub async fn drop_database(&self) -> Result<bool, Error> {
        let url = format!(
            "{}/_db/_system/_api/database/{}",
            self.base,
            path_segment(&self.database)
        );
        match self
            .call(Method::DELETE, &url, "drop database", &[], None)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.error_num() == Some(ERR_DATABASE_NOT_FOUND) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_are_encoded_in_paths() {
        assert_eq!(path_segment("evident"), "evident");
        assert_eq!(path_segment("a b/ž"), "a%20b%2F%C5%BE");
    }

    #[test]
    fn credentials_never_show_in_debug() {
        let c = Credentials {
            user: "admin".into(),
            password: "hunter2".into(),
        };
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2") && !shown.contains("admin"));
    }
}
