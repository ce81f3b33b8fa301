//! Finding a request's scope (body or query) and filling in the client a single-client token
//! means when the request names none.

use axum::http::Uri;
use bytes::Bytes;
use evident_core::Scope;
use serde::Deserialize;

use crate::error::ApiError;

/// The scope fields every scoped request spells the same way; other fields are ignored here
/// (the handler's own extractor refuses unknown ones).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeFields {
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub group_id: Option<String>,
    #[serde(default)]
    pub global: Option<bool>,
}

impl ScopeFields {
    /// The one check of scope fields for every route: identifiers within the limits, a
    /// project or group only with a client, `global` only alone. `400 invalid_scope`.
    pub fn validate(&self) -> Result<(), ApiError> {
        for (field, v) in [
            ("clientId", &self.client_id),
            ("projectId", &self.project_id),
            ("groupId", &self.group_id),
        ] {
            if let Some(v) = v {
                evident_core::validate::identifier(field, v)
                    .map_err(|e| ApiError::bad_request("invalid_scope", e.to_string()))?;
            }
        }
        if self.scope().is_none() {
            return Err(ApiError::bad_request(
                "invalid_scope",
                if self.global == Some(true) {
                    "`global: true` takes no clientId, projectId or groupId"
                } else {
                    "projectId and groupId need a clientId"
                },
            ));
        }
        Ok(())
    }

    /// The scope the request addresses; `None` when it is malformed.
    pub fn scope(&self) -> Option<Scope> {
        if self.global == Some(true) {
            return (self.client_id.is_none()
                && self.project_id.is_none()
                && self.group_id.is_none())
            .then(Scope::global);
        }
        let scope = Scope {
            client_id: self.client_id.clone(),
            project_id: self.project_id.clone(),
            group_id: self.group_id.clone(),
        };
        scope.is_consistent().then_some(scope)
    }
}

/// A body's scope fields. A body that is not a JSON object is refused here, with the same
/// codes the handlers' extractor uses.
pub fn from_body(bytes: &Bytes) -> Result<ScopeFields, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::bad_request(
            "malformed_json",
            "request body is empty; send a JSON object",
        ));
    }
    serde_json::from_slice::<ScopeFields>(bytes).map_err(|e| {
        use serde_json::error::Category;
        match e.classify() {
            Category::Data => ApiError::bad_request("invalid_body", e.to_string()),
            _ => ApiError::bad_request("malformed_json", e.to_string()),
        }
    })
}

/// The body with `clientId` set (the body is a JSON object: [`from_body`] parsed it).
pub fn body_with_client(bytes: &Bytes, client: &str) -> Result<Bytes, ApiError> {
    let mut value: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request("malformed_json", e.to_string()))?;
    value.insert("clientId".into(), client.into());
    serde_json::to_vec(&value)
        .map(Bytes::from)
        .map_err(|e| ApiError::bad_request("invalid_body", e.to_string()))
}

/// A query string's scope fields.
pub fn from_query(uri: &Uri) -> Result<ScopeFields, ApiError> {
    match uri.query() {
        None | Some("") => Ok(ScopeFields::default()),
        Some(q) => axum::extract::Query::<ScopeFields>::try_from_uri(uri)
            .map(|q| q.0)
            .map_err(|e| ApiError::bad_request("invalid_query", format!("{q}: {e}"))),
    }
}

/// The URI with `clientId=client` appended to its query.
pub fn uri_with_client(uri: &Uri, client: &str) -> Result<Uri, ApiError> {
    let encoded = encode(client);
    let path = uri.path();
    let pq = match uri.query() {
        None | Some("") => format!("{path}?clientId={encoded}"),
        Some(q) => format!("{path}?{q}&clientId={encoded}"),
    };
    pq.parse().map_err(|_| {
        ApiError::bad_request("invalid_query", "the request URI cannot carry the client")
    })
}

fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_fields_are_found_and_the_client_is_filled_in() {
        let body = Bytes::from_static(br#"{"query":"x","projectId":"p1"}"#);
        let f = from_body(&body).expect("fields");
        assert_eq!(f.client_id, None);
        assert_eq!(f.scope(), None, "a project needs a client");
        let filled = body_with_client(&body, "c 1").expect("filled");
        let f = from_body(&filled).expect("fields");
        assert_eq!(f.scope(), Some(Scope::client("c 1").with_project("p1")));
        assert!(from_body(&Bytes::from_static(b"[1]")).is_err());
        assert!(from_body(&Bytes::from_static(b"{")).is_err());
        let global = from_body(&Bytes::from_static(br#"{"global":true}"#)).expect("global");
        assert_eq!(global.scope(), Some(Scope::global()));
    }

    #[test]
    fn query_fields_are_found_and_the_client_is_appended_encoded() {
        let uri: Uri = "/api/v1/sources?limit=3".parse().expect("uri");
        assert_eq!(from_query(&uri).expect("q").client_id, None);
        let filled = uri_with_client(&uri, "a&b=c").expect("filled");
        assert_eq!(filled.query(), Some("limit=3&clientId=a%26b%3Dc"));
        assert_eq!(
            from_query(&filled).expect("q").client_id.as_deref(),
            Some("a&b=c")
        );
    }
}
