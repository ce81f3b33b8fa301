//! The one error shape of the API: HTTP status + `{"code": "...", "message": "..."}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use evident_kb::KbError;
use serde::Serialize;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Seconds for a `Retry-After` header (429, 503).
    pub retry_after: Option<u64>,
}

/// The error code of a response, kept in its extensions for the audit log and metrics.
#[derive(Debug, Clone, Copy)]
pub struct ErrorCode(pub &'static str);

#[derive(Serialize)]
struct Body<'a> {
    code: &'a str,
    message: &'a str,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = self.code, message = %self.message, "request failed");
        }
        let mut response = (
            self.status,
            Json(Body {
                code: self.code,
                message: &self.message,
            }),
        )
            .into_response();
        response.extensions_mut().insert(ErrorCode(self.code));
        if let Some(secs) = self.retry_after {
            crate::auth::retry_after(&mut response, secs);
        }
        response
    }
}

impl From<KbError> for ApiError {
    fn from(e: KbError) -> Self {
        let status =
            StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError {
            status,
            code: e.code(),
            message: e.to_string(),
            retry_after: None,
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
