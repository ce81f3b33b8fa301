//! Resources a citation opens: `evident://node/{key}` (a node with its edges) and
//! `evident://chunk/{id}` (a passage with its locator and citation). The scope may follow as
//! a query (`?clientId=…&projectId=…&groupId=…`); a single-client token may omit it. Reads
//! are checked like every read: `read` role, scope inside the grant.

use evident_core::Scope;
use evident_core::access::{Intent, Role};
use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, ResourceContents, ResourceTemplate};
use serde_json::json;

use super::access::{Caller, kb_error, mcp_error};
use super::params::ScopeArgs;
use super::render::{self, Passage};
use crate::AppState;
use crate::error::ApiError;

const NODE: &str = "evident://node/";
const CHUNK: &str = "evident://chunk/";

pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("evident://node/{key}", "node")
            .with_title("Knowledge graph node")
            .with_description(
                "A node with its edges and the ids of its evidence chunks. Optional query: \
                 ?clientId=&projectId=&groupId=.",
            )
            .with_mime_type("application/json"),
        ResourceTemplate::new("evident://chunk/{id}", "chunk")
            .with_title("Cited passage")
            .with_description(
                "A passage of source text with its locator and citation (untrusted data). \
                 Every search result names its chunk URI.",
            )
            .with_mime_type("text/plain"),
    ]
}

/// `evident://chunk/{id}` with the reader's scope, so the citation opens as it was found.
pub fn chunk_uri(id: &str, reader: &Scope) -> String {
    format!("{CHUNK}{}{}", encode(id), query(reader))
}

fn query(s: &Scope) -> String {
    let pairs: Vec<String> = [
        ("clientId", &s.client_id),
        ("projectId", &s.project_id),
        ("groupId", &s.group_id),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", encode(v))))
    .collect();
    if pairs.is_empty() {
        String::new()
    } else {
        format!("?{}", pairs.join("&"))
    }
}

/// Percent-encodes all but unreserved characters and `:` (keys keep their namespace).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(s: &str) -> Result<String, ApiError> {
    let bad = || ApiError::bad_request("invalid_uri", "malformed percent-encoding in the URI");
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(bad)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

/// The path part after `prefix` and the scope of the query.
fn split(rest: &str) -> Result<(String, ScopeArgs), ApiError> {
    let (path, q) = rest.split_once('?').unwrap_or((rest, ""));
    let mut scope = ScopeArgs::default();
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = Some(decode(v)?);
        match k {
            "clientId" => scope.client_id = v,
            "projectId" => scope.project_id = v,
            "groupId" => scope.group_id = v,
            other => {
                return Err(ApiError::bad_request(
                    "invalid_uri",
                    format!("unknown query parameter `{other}` (clientId, projectId, groupId)"),
                ));
            }
        }
    }
    Ok((decode(path)?, scope))
}

pub async fn read(
    state: &AppState,
    caller: &Caller,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    if let Some(rest) = uri.strip_prefix(NODE) {
        let (key, args) = split(rest).map_err(mcp_error)?;
        let scope = caller
            .scope(&args, Role::Read, Intent::Read)
            .map_err(mcp_error)?;
        let vis = evident_core::Visibility::of(scope);
        let view = state.kb.node(&vis, &key).await.map_err(kb_error)?;
        let text = serde_json::to_string_pretty(&view).unwrap_or_default();
        return Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("application/json"),
        ]));
    }
    if let Some(rest) = uri.strip_prefix(CHUNK) {
        let (id, args) = split(rest).map_err(mcp_error)?;
        let scope = caller
            .scope(&args, Role::Read, Intent::Read)
            .map_err(mcp_error)?;
        evident_core::validate::identifier("id", &id)
            .map_err(|e| kb_error(evident_kb::KbError::from(e)))?;
        let vis = evident_core::Visibility::of(scope.clone());
        let chunk = state
            .kb
            .stores()
            .chunks
            .get(&vis, std::slice::from_ref(&id))
            .await
            .map_err(|e| kb_error(e.into()))?
            .into_iter()
            .next()
            .ok_or_else(|| {
                kb_error(evident_kb::KbError::NotFound {
                    what: format!("chunk `{id}`"),
                })
            })?;
        let passage = Passage::of_chunk(chunk, &scope);
        let text = format!(
            "{}\n\n{}",
            render::UNTRUSTED_NOTE,
            render::wrap(1, &passage, None)
        );
        let meta = json!(passage);
        return Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("text/plain"),
            ResourceContents::text(meta.to_string(), format!("{uri}#json"))
                .with_mime_type("application/json"),
        ]));
    }
    Err(ErrorData::resource_not_found(
        format!(
            "not_found: `{uri}` is not an Evident resource (evident://node/{{key}}, evident://chunk/{{id}})"
        ),
        Some(json!({ "code": "not_found", "status": 404 })),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip() {
        let scope = Scope {
            client_id: Some("acme co".into()),
            project_id: Some("p1".into()),
            group_id: None,
        };
        let uri = chunk_uri("c/1 x", &scope);
        assert_eq!(
            uri,
            "evident://chunk/c%2F1%20x?clientId=acme%20co&projectId=p1"
        );
        let (id, args) = split(uri.strip_prefix(CHUNK).expect("prefix")).expect("parse");
        assert_eq!(id, "c/1 x");
        assert_eq!(args.client_id.as_deref(), Some("acme co"));
        assert_eq!(args.project_id.as_deref(), Some("p1"));
        assert!(split("x?token=1").is_err());
        assert!(decode("%zz").is_err());
    }
}
