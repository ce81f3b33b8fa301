//! The credential scan of requests, in the one middleware every request passes
//! ([`guard`](super::guard)), before any handler runs or anything is written:
//!
//! - requests the audit log records (writes and admin actions, [`Access::audited`]): every
//!   path parameter (percent-decoded, before any handler lower-cases or normalises it), every
//!   query pair, and every string of the body — JSON values and keys at any depth and each
//!   `"key": "value"` pair as written, console form fields, or the raw text;
//! - `POST /mcp`: every argument of a call to a tool that writes (not annotated read-only),
//!   refused with the JSON-RPC error the tool itself would answer;
//! - every scoped request, reads included: the scope's ids (a read may record a gap under
//!   them);
//! - the audit record itself ([`redact_audit`]): whatever a refused request carried is stored
//!   redacted.
//!
//! A credential is refused with `422 credential_detected` naming the field, never the secret.
//! File contents and diffs that `evident git push` sends are not refused: the indexer redacts
//! their credential lines, as it does for a repository it reads ([`REDACTED_FIELDS`]).
//! The handlers' own checks (`evident_kb::credentials`) stay: workers and pollers reach the
//! knowledge base without this middleware.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use evident_core::Scope;
use evident_core::secrets::{find_secrets, redact_secrets};
use evident_kb::credentials::Scan;
use evident_store::access::AuditEvent;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// Body fields (`[]` for any array index) that a route's indexer redacts line by line
/// instead of refusing the request: whole files and diffs, where one credential line must
/// not cost the file.
pub const REDACTED_FIELDS: &[(&str, &str)] = &[
    ("/api/v1/ingest/git-structure", "files[].content"),
    ("/api/v1/ingest/git-commits", "commits[].diff"),
];

/// The whole request of an audited route: path parameters, query and body (buffered up to
/// `max_body_bytes` and put back for the handler).
pub async fn screen(
    req: Request,
    matched: &str,
    max_body_bytes: usize,
) -> Result<Request, ApiError> {
    scan_path(matched, req.uri().path())?;
    scan_query(req.uri().query())?;
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, max_body_bytes)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "request body is larger than server.max_body_bytes",
            )
        })?;
    scan_body(
        &super::policy::documented_path(matched),
        content_type.as_deref(),
        &bytes,
    )?;
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// The path parameters of `path` (as requested) per the `matched` route template,
/// percent-decoded: each must hold no credential. The field is the parameter's name.
pub fn scan_path(matched: &str, path: &str) -> Result<(), ApiError> {
    let mut scan = Scan::default();
    let template = super::policy::documented_path(matched);
    for (t, raw) in template.split('/').zip(path.split('/')) {
        let Some(name) = t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) else {
            continue;
        };
        scan.text(name, &percent_decode(raw))?;
    }
    Ok(())
}

/// Every `key=value` pair of the query: the key, and the pair as written (so
/// `password=…` is an assignment). The field is the key.
pub fn scan_query(query: Option<&str>) -> Result<(), ApiError> {
    let Some(q) = query.filter(|q| !q.is_empty()) else {
        return Ok(());
    };
    scan_pairs(&form_pairs(q))
}

/// Every string of a body: JSON (values and keys at any depth, and each pair as written),
/// a form, or any other text as a whole. `route` is the documented path, for
/// [`REDACTED_FIELDS`].
pub fn scan_body(route: &str, content_type: Option<&str>, bytes: &[u8]) -> Result<(), ApiError> {
    if bytes.is_empty() {
        return Ok(());
    }
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        let skip: Vec<&str> = REDACTED_FIELDS
            .iter()
            .filter(|(r, _)| *r == route)
            .map(|(_, f)| *f)
            .collect();
        return scan_json(&value, &skip);
    }
    let text = String::from_utf8_lossy(bytes);
    let form = content_type
        .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"))
        .then(|| form_pairs(&text))
        .filter(|pairs| !pairs.is_empty());
    match form {
        Some(pairs) => scan_pairs(&pairs),
        None => Scan::default().text("body", &text).map_err(ApiError::from),
    }
}

/// A JSON document's strings (see [`scan_body`]); fields named by their path from the top
/// (`content`, `metadata.db.password`, `files[0].path`); `skip`: shapes not scanned.
pub fn scan_json(value: &Value, skip: &[&str]) -> Result<(), ApiError> {
    let mut walk = Walk {
        scan: Scan::default(),
        skip,
    };
    match value {
        Value::Object(map) => walk.map("", "", map),
        other => walk.value("body", "body", other),
    }
    .map_err(ApiError::from)
}

/// The ids of a request's scope.
pub fn scan_scope(scope: &Scope) -> Result<(), ApiError> {
    let mut scan = Scan::default();
    for (field, id) in [
        ("clientId", &scope.client_id),
        ("projectId", &scope.project_id),
        ("groupId", &scope.group_id),
    ] {
        if let Some(id) = id {
            scan.text(field, id)?;
        }
    }
    Ok(())
}

/// The scope fields of an object (a read tool's arguments).
pub fn scan_scope_fields(args: &Map<String, Value>) -> Result<(), ApiError> {
    let mut scan = Scan::default();
    for field in ["clientId", "projectId", "groupId"] {
        if let Some(Value::String(id)) = args.get(field) {
            scan.text(field, id)?;
        }
    }
    Ok(())
}

/// Every string of an audit record with its credentials redacted: a request refused for a
/// credential (or refused before its scan, for its role or rate) is recorded without it.
/// The path is checked decoded (`%41KIA…` is `AKIA…`).
pub fn redact_audit(event: &mut AuditEvent) {
    let decoded = percent_decode(&event.target);
    let found = find_secrets(&decoded);
    if !found.is_empty() {
        event.target = redact_secrets(&decoded, &found);
    }
    for s in [
        &mut event.token_name,
        &mut event.method,
        &mut event.route,
        &mut event.outcome,
    ] {
        *s = redact(s);
    }
    for id in [
        &mut event.client_id,
        &mut event.project_id,
        &mut event.group_id,
    ]
    .into_iter()
    .flatten()
    {
        *id = redact(id);
    }
}

fn redact(s: &str) -> String {
    let found = find_secrets(s);
    if found.is_empty() {
        s.to_string()
    } else {
        redact_secrets(s, &found)
    }
}

struct Walk<'a> {
    scan: Scan,
    skip: &'a [&'a str],
}

impl Walk<'_> {
    /// `field`: the name in messages (`files[0].path`); `shape`: the same with `[]` for
    /// indices, matched against `skip`.
    fn value(&mut self, field: &str, shape: &str, v: &Value) -> evident_kb::Result<()> {
        if self.skip.contains(&shape) {
            return Ok(());
        }
        match v {
            Value::String(s) => self.scan.text(field, s),
            Value::Array(items) => items.iter().enumerate().try_for_each(|(i, v)| {
                self.value(&format!("{field}[{i}]"), &format!("{shape}[]"), v)
            }),
            Value::Object(map) => self.map(field, shape, map),
            Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
        }
    }

    fn map(
        &mut self,
        field: &str,
        shape: &str,
        map: &Map<String, Value>,
    ) -> evident_kb::Result<()> {
        for (k, v) in map {
            let join = |base: &str| {
                if base.is_empty() {
                    k.clone()
                } else {
                    format!("{base}.{k}")
                }
            };
            let (field, shape) = (join(field), join(shape));
            if self.skip.contains(&shape.as_str()) {
                continue;
            }
            self.scan.text(&field, k)?;
            if let Value::String(s) = v {
                self.scan.pair(&field, k, s)?;
            }
            self.value(&field, &shape, v)?;
        }
        Ok(())
    }
}

fn scan_pairs(pairs: &[(String, String)]) -> Result<(), ApiError> {
    let mut scan = Scan::default();
    for (k, v) in pairs {
        scan.text(k, k)?;
        scan.text(k, v)?;
        scan.text(k, &format!("{k}={v}"))?;
    }
    Ok(())
}

/// `a=1&b=x%20y` → pairs, decoded (`+` is a space in forms and queries).
fn form_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                percent_decode(&k.replace('+', " ")),
                percent_decode(&v.replace('+', " ")),
            )
        })
        .collect()
}

/// `%XX` escapes decoded (invalid ones kept as they are; invalid UTF-8 replaced), as the
/// router decodes path parameters before handlers see them.
pub fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests;
