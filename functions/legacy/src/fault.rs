//! Surface A's error: an XML `fault` with an HTTP status, a failure reason (ALREADY_EXISTS,
//! VALIDATION_FAILURE or GENERAL) and a message.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

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
            "Authentication required: send HTTP Basic credentials of a sandbox tenant.",
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
        let mut response = xml_fault(self.status, self.reason, &self.message);
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"billing-sandbox\""),
            );
        }
        response
    }
}

/// Surface A's error body: an XML `fault` with `failureReason` and `message`.
pub fn xml_fault(status: StatusCode, failure_reason: &str, message: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<fault xmlns=\"{ns}\"><failureReason>{reason}</failureReason><message>{msg}</message></fault>",
        ns = crate::xml_namespace(),
        reason = quick_xml::escape::escape(failure_reason),
        msg = quick_xml::escape::escape(message),
    );
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        )],
        body,
    )
        .into_response()
}

/// The answer to a Surface A path no route takes (unknown path, or a method it does not
/// take): a GENERAL fault with that status.
pub fn path_error(status: StatusCode, message: String) -> Response {
    xml_fault(status, "GENERAL", &message)
}
