//! The error body of Surfaces B, C and the admin API: `{code, message}` with an HTTP status,
//! and the one mapping of the domain's [`Error`] to it (Surface A maps the same statuses to
//! its XML fault through [`super::Surface::error`]).

use crate::Error;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// The message of a write whose outcome storage could not confirm (503).
pub const OUTCOME_UNKNOWN_MESSAGE: &str = "The service is temporarily unavailable and could not confirm whether the request was applied: it may or may not have been. Retry with the same Idempotency-Key to learn the outcome (a request sent without one: check before retrying).";

/// The error body of Surfaces B, C and the admin API: `{code, message}` with an HTTP status.
/// (`deny_unknown_fields` is for its schema: an answer holds these two members only.)
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Error, description = "Every error body: {code, message}.")]
pub struct ApiError {
    /// The HTTP status (not serialized).
    #[serde(skip)]
    pub status: StatusCode,
    /// Stable upper-case code, e.g. BAD_REQUEST.
    pub code: String,
    /// What went wrong, in words.
    pub message: String,
}

impl ApiError {
    /// An error with an explicit status, code and message.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: code.to_string(),
            message: message.into(),
        }
    }
    /// 400 BAD_REQUEST.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BAD_REQUEST", message)
    }
    /// 404 NOT_FOUND.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }
    /// 401 UNAUTHORIZED.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message)
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        match e {
            Error::BadRequest(m) => ApiError::bad_request(m),
            Error::NotFound(m) => ApiError::not_found(m),
            Error::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "CONFLICT", m),
            Error::PreconditionFailed(m) => {
                ApiError::new(StatusCode::PRECONDITION_FAILED, "PRECONDITION_FAILED", m)
            }
            Error::Unavailable(m) => {
                tracing::warn!(error = %m, "storage unavailable");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "SERVICE_UNAVAILABLE",
                    "The service is temporarily unavailable; nothing was applied. Retry later.",
                )
            }
            Error::OutcomeUnknown(m) => {
                tracing::warn!(error = %m, "storage did not confirm a write");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "SERVICE_UNAVAILABLE",
                    OUTCOME_UNKNOWN_MESSAGE,
                )
            }
            Error::NewerSchema(m) => {
                tracing::warn!(error = %m, "data from a newer schema version");
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "SERVICE_UNAVAILABLE", m)
            }
            Error::Internal(m) => {
                tracing::error!(error = %m, "internal error");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL_ERROR",
                    "An unexpected error occurred.",
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status;
        (status, axum::Json(self)).into_response()
    }
}
