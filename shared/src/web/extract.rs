//! Extractors every surface shares and the bounds they enforce: the identified tenant (which
//! the pipeline found, see `super::pipeline`), Surface B's authenticated tenant, the JSON
//! body (depth-bounded, errors in the `{code, message}` shape) and the query-parameter map
//! (count and length bounded). Surface A's XML extractors live in its crate, over the same
//! bounds.

use super::error::ApiError;
use super::state::{Identity, Tenant};
use super::surface::{header_str, Surface};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{request::Parts, StatusCode};
use serde::de::DeserializeOwned;

/// The tenant the pipeline identified for this request, if any.
pub fn identified_tenant(parts: &Parts) -> Option<Tenant> {
    match parts.extensions.get::<Identity>() {
        Some(Identity::Tenant(t)) => Some(t.clone()),
        _ => None,
    }
}

/// Whether the pipeline identified this request by the configured admin key.
pub fn identified_admin(parts: &Parts) -> bool {
    matches!(parts.extensions.get::<Identity>(), Some(Identity::Admin))
}

/// The tenant of a Surface B request (`X-Api-Key` or `Authorization: Bearer <JWT>`), as the
/// pipeline identified it.
pub struct BillingAuth(pub Tenant);

impl<S: Send + Sync> FromRequestParts<S> for BillingAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        identified_tenant(parts).map(BillingAuth).ok_or_else(|| {
            let (code, message) = Surface::Billing.unauthorized_parts();
            ApiError::new(StatusCode::UNAUTHORIZED, code, message)
        })
    }
}

/// A JSON request body whose rejections are `{code, message}` errors: 415 for a content type
/// that is not JSON, 413 past the body limit, 400 for malformed JSON or wrong field types
/// (the message names the field and the position).
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if let Some(ct) = header_str(req.headers(), "content-type") {
            let mime = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if mime != "application/json" && !mime.ends_with("+json") {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "UNSUPPORTED_MEDIA_TYPE",
                    format!("expected Content-Type application/json, found {ct}"),
                ));
            }
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            let status = e.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(status, "PAYLOAD_TOO_LARGE", "request body is too large")
            } else {
                ApiError::bad_request(format!("could not read the request body: {e}"))
            }
        })?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// Deepest nesting of arrays and objects a JSON request body may have: far beyond any body
/// the surfaces read, and checked before parsing, so that members the sandbox ignores or
/// keeps raw (a usage event is echoed back when erred) cannot carry 500,000 levels.
pub const MAX_JSON_DEPTH: usize = 64;

/// Whether `bytes` nest arrays and objects deeper than `max` (brackets inside strings do not
/// count); one pass, no recursion.
fn nests_deeper_than(bytes: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Parses a JSON document into `T`, with a 400 that says what and where on failure; a body
/// nested deeper than [`MAX_JSON_DEPTH`] is refused first.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("a JSON request body is required"));
    }
    if nests_deeper_than(bytes, MAX_JSON_DEPTH) {
        return Err(ApiError::bad_request(format!(
            "invalid JSON body: arrays and objects nest deeper than {MAX_JSON_DEPTH} levels"
        )));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}

/// Most parameters in one query string (repeated names count), on every surface: a list
/// call uses a dozen at most.
pub const MAX_QUERY_PARAMS: usize = 64;
/// Longest query parameter name, in characters (the identifier bound).
pub const MAX_QUERY_NAME_CHARS: usize = crate::domain::MAX_IDENTIFIER_CHARS;
/// Longest query parameter value once decoded, in characters: the longest filter
/// ([`crate::query::MAX_FILTER_CHARS`]), so no value a list accepts is cut off by it.
pub const MAX_QUERY_VALUE_CHARS: usize = crate::query::MAX_FILTER_CHARS;

/// Decodes a query string into a map (the last value wins for repeated names), within
/// [`MAX_QUERY_PARAMS`], [`MAX_QUERY_NAME_CHARS`] and [`MAX_QUERY_VALUE_CHARS`]; the error
/// says what is wrong, for each surface to answer in its own shape (400). Every surface's
/// query extractor reads through it.
pub fn parse_query(
    query: &str,
) -> std::result::Result<std::collections::HashMap<String, String>, String> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query).map_err(|e| format!("malformed query string: {e}"))?;
    if pairs.len() > MAX_QUERY_PARAMS {
        return Err(format!(
            "the query string has {} parameters, at most {MAX_QUERY_PARAMS} are accepted",
            pairs.len()
        ));
    }
    for (name, value) in &pairs {
        let shown: String = name.chars().take(64).collect();
        if name.chars().count() > MAX_QUERY_NAME_CHARS {
            return Err(format!(
                "query parameter '{shown}...': a name has at most {MAX_QUERY_NAME_CHARS} characters"
            ));
        }
        let found = value.chars().count();
        if found > MAX_QUERY_VALUE_CHARS {
            return Err(format!(
                "{shown}: at most {MAX_QUERY_VALUE_CHARS} characters, found {found}"
            ));
        }
    }
    Ok(pairs.into_iter().collect())
}

/// Query parameters as a map (the last value wins for repeated names), read by
/// [`parse_query`]: malformed encoding or a bound crossed is a 400 in the `{code, message}`
/// shape.
pub struct Params(pub std::collections::HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parse_query(parts.uri.query().unwrap_or(""))
            .map(Params)
            .map_err(ApiError::bad_request)
    }
}
