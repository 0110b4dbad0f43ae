//! Extractors of Surface A requests, each rejecting with an XML [`Fault`]: HTTP Basic auth,
//! the XML body (415 unless `application/xml`, 413 past the body limit, 400 when the safe
//! reader refuses it; a body-less command from another origin 403, see
//! [`refuse_foreign_origin`]), query parameters and the `eid` path segment.

use crate::fault::Fault;
use crate::xml::{self, Element};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::{request::Parts, StatusCode};
use shared::web::{header_str, Tenant};
use std::collections::HashMap;

/// The tenant of a Surface A request (HTTP Basic), as the pipeline identified it.
pub struct BasicAuth(pub Tenant);

impl<S: Send + Sync> FromRequestParts<S> for BasicAuth {
    type Rejection = Fault;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        shared::web::identified_tenant(parts)
            .map(BasicAuth)
            .ok_or_else(Fault::unauthorized)
    }
}

/// A required XML request body, read by the safe reader.
pub struct XmlBody(pub Element);

/// An XML request body that may be absent (commands whose body is optional).
pub struct OptionalXmlBody(pub Option<Element>);

impl<S: Send + Sync> FromRequest<S> for OptionalXmlBody {
    type Rejection = Fault;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let content_type = header_str(req.headers(), "content-type").map(str::to_string);
        if let Some(ct) = &content_type {
            check_xml_media_type(ct)?;
        }
        let origin = header_str(req.headers(), "origin").map(str::to_string);
        let host = header_str(req.headers(), "host").map(str::to_string);
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                Fault::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "VALIDATION_FAILURE",
                    "the request body is too large",
                )
            } else {
                Fault::validation(format!("could not read the request body: {e}"))
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            if content_type.is_none() {
                refuse_foreign_origin(&origin, host.as_deref())?;
            }
            return Ok(OptionalXmlBody(None));
        }
        if content_type.is_none() {
            return Err(unsupported("none"));
        }
        Ok(OptionalXmlBody(Some(xml::parse(
            &bytes,
            crate::xml_namespace(),
        )?)))
    }
}

impl<S: Send + Sync> FromRequest<S> for XmlBody {
    type Rejection = Fault;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match OptionalXmlBody::from_request(req, state).await?.0 {
            Some(element) => Ok(XmlBody(element)),
            None => Err(Fault::validation("an XML request body is required")),
        }
    }
}

/// A command sent with no body and no content type changes state, and a browser sends such
/// a POST to any site without asking (a "simple" cross-origin request), with the Basic
/// credentials it holds for this one. So a body-less command must come from this origin
/// (no `Origin` header, as from curl or any non-browser client, or one naming this host) or
/// carry `Content-Type: application/xml` (which a browser sends cross-origin only after a
/// CORS preflight, which this server never grants). 403 otherwise, nothing applied.
fn refuse_foreign_origin(origin: &Option<String>, host: Option<&str>) -> Result<(), Fault> {
    let Some(origin) = origin else {
        return Ok(());
    };
    let origin_host = origin
        .split_once("://")
        .map(|(_, rest)| rest.trim_end_matches('/'));
    if origin_host.is_some() && origin_host == host {
        return Ok(());
    }
    Err(Fault::new(
        StatusCode::FORBIDDEN,
        "GENERAL",
        format!(
            "a command without a body from another origin ({}) is refused: send it with \
             Content-Type: application/xml (an empty body is fine), or from this origin",
            shared::error::quoted(origin)
        ),
    ))
}

fn check_xml_media_type(content_type: &str) -> Result<(), Fault> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime == "application/xml" {
        Ok(())
    } else {
        Err(unsupported(content_type))
    }
}

fn unsupported(found: &str) -> Fault {
    Fault::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "VALIDATION_FAILURE",
        format!("a request body must be sent with Content-Type application/xml, found {found}"),
    )
}

/// Query parameters (the last value wins for a repeated name), read by
/// `shared::web::parse_query`: malformed or past its bounds, a 400 `VALIDATION_FAILURE`.
pub struct Query(pub HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Query {
    type Rejection = Fault;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        shared::web::parse_query(parts.uri.query().unwrap_or(""))
            .map(Query)
            .map_err(Fault::validation)
    }
}

/// The `{eid}` path segment: a 64-bit entity id.
pub struct Eid(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for Eid {
    type Rejection = Fault;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| Fault::validation(format!("bad path: {e}")))?;
        raw.trim().parse().map(Eid).map_err(|_| {
            Fault::validation(format!(
                "eid {} is not a 64-bit integer",
                shared::error::quoted(&raw)
            ))
        })
    }
}
