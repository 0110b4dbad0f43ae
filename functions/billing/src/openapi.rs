//! `GET /billing/2/openapi.json`: Surface B's OpenAPI 3.1 document (usage events included),
//! served without credentials. The document is docs/openapi/billing.json, written by
//! docs/openapi/generate.py and embedded at build time, so what is served is what is shipped;
//! the e2e test `openapi` keeps it in step with the routes.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The document, as shipped in the repository.
pub const DOCUMENT: &str = include_str!("../../../docs/openapi/billing.json");

/// Answers the document as `application/json`.
pub async fn document() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT).into_response()
}
