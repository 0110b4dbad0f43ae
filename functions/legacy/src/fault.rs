//! Surface A's error: an XML `fault` with an HTTP status, a failure reason (ALREADY_EXISTS,
//! VALIDATION_FAILURE or GENERAL) and a message.

use crate::xml_schema::{Kind, Part, Shape};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// The failure reasons a fault carries.
pub const FAILURE_REASONS: &[&str] = &["ALREADY_EXISTS", "VALIDATION_FAILURE", "GENERAL"];

/// `<fault><failureReason/><message/></fault>` (written by [`xml_fault`]).
pub static FAULT: Shape = Shape {
    element: "fault",
    attrs: &[],
    parts: &[
        Part::Text("failureReason", Kind::OneOf(FAILURE_REASONS)),
        Part::Text("message", Kind::Text),
    ],
};

/// A Surface A error answer.
#[derive(Debug)]
pub struct Fault {
    status: StatusCode,
    reason: &'static str,
    message: String,
}

impl Fault {
    /// A fault with an explicit status, reason and message.
    pub fn new(status: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        Fault {
            status,
            reason,
            message: message.into(),
        }
    }

    /// 401 with `WWW-Authenticate: Basic`.
    pub fn unauthorized() -> Self {
        Fault::new(
            StatusCode::UNAUTHORIZED,
            "GENERAL",
            shared::web::surface::LEGACY_AUTH_MESSAGE,
        )
    }

    /// 400 VALIDATION_FAILURE.
    pub fn validation(message: impl Into<String>) -> Self {
        Fault::new(StatusCode::BAD_REQUEST, "VALIDATION_FAILURE", message)
    }

    /// 404 GENERAL.
    pub fn not_found(message: impl Into<String>) -> Self {
        Fault::new(StatusCode::NOT_FOUND, "GENERAL", message)
    }

    /// The fault of a failed command: like [`From<shared::Error>`], except that a conflict
    /// is a refused state change (409 GENERAL), not a duplicate.
    pub fn command(e: shared::Error) -> Self {
        match e {
            shared::Error::Conflict(m) => Fault::new(StatusCode::CONFLICT, "GENERAL", m),
            other => other.into(),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl From<shared::Error> for Fault {
    fn from(e: shared::Error) -> Self {
        let api = shared::web::ApiError::from(e);
        let reason = match api.status {
            StatusCode::BAD_REQUEST => "VALIDATION_FAILURE",
            StatusCode::CONFLICT => "ALREADY_EXISTS",
            _ => "GENERAL",
        };
        Fault {
            status: api.status,
            reason,
            message: api.message,
        }
    }
}

impl IntoResponse for Fault {
    fn into_response(self) -> Response {
        // One renderer of Surface A's fault (also what the pipeline answers on A's paths);
        // a 401 carries `WWW-Authenticate: Basic` there.
        shared::web::Surface::Legacy.error(self.status, Some(self.reason), self.message)
    }
}

/// Surface A's error body: an XML `fault` with `failureReason` and `message`.
pub use shared::web::surface::xml_fault;
