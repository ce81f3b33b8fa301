//! Extractors that turn every malformed request into an [`ApiError`] with a stable code,
//! instead of axum's plain-text rejections.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use bytes::Bytes;
use evident_ai::Priority;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body: 415 `unsupported_media_type` unless sent as JSON, 413 `payload_too_large`, 400 `malformed_json` (syntax, invalid UTF-8, empty)
/// or 400 `invalid_body` (missing or unknown fields, wrong types).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        crate::auth::require_json(&req)?;
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    "request body is larger than server.max_body_bytes",
                )
            } else {
                ApiError::bad_request("unreadable_body", rejection.body_text())
            }
        })?;
        if bytes.is_empty() {
            return Err(ApiError::bad_request(
                "malformed_json",
                "request body is empty; send a JSON object",
            ));
        }
        if std::str::from_utf8(&bytes).is_err() {
            return Err(ApiError::bad_request(
                "malformed_json",
                "request body is not valid UTF-8",
            ));
        }
        serde_json::from_slice(&bytes).map(ApiJson).map_err(|e| {
            use serde_json::error::Category;
            match e.classify() {
                Category::Data => ApiError::bad_request("invalid_body", e.to_string()),
                Category::Syntax | Category::Eof | Category::Io => {
                    ApiError::bad_request("malformed_json", e.to_string())
                }
            }
        })
    }
}

/// Query parameters, with 400 `invalid_query` on anything malformed.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|r| ApiError::bad_request("invalid_query", r.body_text()))
    }
}

/// A path parameter, with 400 `invalid_path` on anything malformed.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|r| ApiError::bad_request("invalid_path", r.body_text()))
    }
}

/// `X-Evident-Priority` (or its synonym `X-Ollama-Priority`): 0..=9, default 4.
pub struct RequestPriority(pub Priority);

impl<S: Send + Sync> FromRequestParts<S> for RequestPriority {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let raw = parts
            .headers
            .get("x-evident-priority")
            .or_else(|| parts.headers.get("x-ollama-priority"));
        let Some(raw) = raw else {
            return Ok(RequestPriority(Priority::DEFAULT));
        };
        raw.to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u8>().ok())
            .and_then(Priority::new)
            .map(RequestPriority)
            .ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_priority",
                    "X-Evident-Priority must be an integer 0..=9",
                )
            })
    }
}
