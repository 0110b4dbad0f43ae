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
use std::borrow::Cow;
use std::collections::HashSet;

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
/// the surfaces read, and checked before parsing ([`check_json`]), so that members the sandbox ignores or
/// keeps raw (a usage event is echoed back when erred) cannot carry 500,000 levels.
pub const MAX_JSON_DEPTH: usize = 64;

/// An open array or object of the document [`check_json`] scans.
enum Frame<'a> {
    Array,
    Object {
        /// The member names read so far (unescaped; borrowed from the body when written
        /// without escapes, as nearly all are).
        names: HashSet<Cow<'a, str>>,
        /// Whether the next string is a member name (after `{` or `,`).
        expect_name: bool,
        /// The byte range of the last member name, quotes included, for messages.
        last: Option<(usize, usize)>,
    },
}

/// A JSON string (quotes included) as text ([`crate::json_text::string_text`]): unescaped
/// when it can be, else as written (the parser, after the rules, says what is wrong with it).
fn json_text(quoted: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(quoted)
        .ok()
        .and_then(crate::json_text::string_text)
    {
        Some(text) => text,
        None => {
            let inner = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or(&[]);
            String::from_utf8_lossy(inner)
        }
    }
}

/// A member name as messages show it: at most 64 characters.
fn shown(name: &str) -> String {
    let mut out: String = name.chars().take(64).collect();
    if out.len() < name.len() {
        out.push_str("...");
    }
    out
}

/// The four hex digits at `at`, if they are.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
    u32::from_str_radix(digits, 16).ok()
}

/// The rules on a JSON body's structure, in one pass without recursion, before it is
/// parsed: arrays and objects nest at most `max` levels (brackets inside strings do not
/// count), no object repeats a member name at any depth (names compared once unescaped:
/// `"a"` and `"\u0061"` are the same member), and no string holds a `\u` escape of a lone
/// UTF-16 surrogate (not text, so no surface can store it). The message names the member.
/// Only the rules are checked here: the syntax is the parser's, after this.
fn check_json(bytes: &[u8], max: usize) -> Result<(), String> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        if bytes.get(i + 1) == Some(&b'u') {
                            if let Some(unit) = hex4(bytes, i + 2) {
                                let paired = (0xD800..=0xDBFF).contains(&unit)
                                    && bytes.get(i + 6..i + 8) == Some(b"\\u")
                                    && hex4(bytes, i + 8)
                                        .is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
                                if paired {
                                    i += 12;
                                    continue;
                                }
                                if (0xD800..=0xDFFF).contains(&unit) {
                                    return Err(lone_surrogate(bytes, &stack, unit));
                                }
                            }
                        }
                        i += 1;
                    }
                    i += 1;
                }
                let end = i.min(bytes.len() - 1);
                if let Some(Frame::Object {
                    names,
                    expect_name,
                    last,
                }) = stack.last_mut()
                {
                    if *expect_name {
                        *expect_name = false;
                        *last = Some((start, end));
                        let name = json_text(&bytes[start..=end]);
                        if names.contains(&name) {
                            return Err(format!("duplicate member '{}'", shown(&name)));
                        }
                        names.insert(name);
                    }
                }
            }
            b'[' | b'{' => {
                stack.push(if bytes[i] == b'[' {
                    Frame::Array
                } else {
                    Frame::Object {
                        names: HashSet::new(),
                        expect_name: true,
                        last: None,
                    }
                });
                if stack.len() > max {
                    return Err(format!(
                        "arrays and objects nest deeper than {MAX_JSON_DEPTH} levels"
                    ));
                }
            }
            b']' | b'}' => {
                stack.pop();
            }
            b',' => {
                if let Some(Frame::Object { expect_name, .. }) = stack.last_mut() {
                    *expect_name = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The refusal of a lone surrogate escape, naming the innermost member it is in.
fn lone_surrogate(bytes: &[u8], stack: &[Frame<'_>], unit: u32) -> String {
    let member = stack.iter().rev().find_map(|f| match f {
        Frame::Object {
            last: Some((s, e)),
            expect_name: false,
            ..
        } => Some(json_text(&bytes[*s..=*e])),
        _ => None,
    });
    let place = match member {
        Some(name) => format!("member '{}'", shown(&name)),
        None => "a string".to_string(),
    };
    format!("{place} holds the escape \\u{unit:04x}, a lone UTF-16 surrogate, which is not text")
}

/// Parses a JSON document into `T`, with a 400 that says what and where on failure; the
/// rules of [`check_json`] (depth, duplicate members, lone surrogates) are checked first.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("a JSON request body is required"));
    }
    check_json(bytes, MAX_JSON_DEPTH)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
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

#[cfg(test)]
mod json_rules_tests {
    use super::*;

    #[test]
    fn duplicates_are_refused_at_every_depth() {
        for (body, name) in [
            (r#"{"a":1,"a":2}"#, "a"),
            (r#"{"a":1,"\u0061":2}"#, "a"),
            (r#"{"events":[{"x":"{\"y\":1}","y":1,"y":2}]}"#, "y"),
            (r#"[{"k":{"deep":[{"n":1,"n":1}]}}]"#, "n"),
        ] {
            let e = check_json(body.as_bytes(), 64).unwrap_err();
            assert_eq!(e, format!("duplicate member '{name}'"), "{body}");
        }
        for body in [
            r#"{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}"#,
            r#"{"a":"a","b":"\"a\":1,\"a\":2"}"#,
            r#"{"s":"\ud83d\ude00"}"#,
        ] {
            assert_eq!(check_json(body.as_bytes(), 64), Ok(()), "{body}");
        }
    }

    #[test]
    fn lone_surrogates_and_depth_are_refused() {
        let e = check_json(br#"{"events":[{"reference_id":"x\ud800"}]}"#, 64).unwrap_err();
        assert!(
            e.contains("member 'reference_id'") && e.contains("ud800"),
            "{e}"
        );
        let e = check_json(br#"["\uDC00\ud800"]"#, 64).unwrap_err();
        assert!(e.starts_with("a string"), "{e}");
        assert!(check_json("[".repeat(65).as_bytes(), 64).is_err());
        assert!(check_json("[".repeat(64).as_bytes(), 64).is_ok());
        // Unterminated or malformed documents are the parser's to refuse, never a panic.
        for body in [&b"\""[..], b"{\"a", b"{\"a\\u12", b"}}]]", b"\"\\"] {
            let _ = check_json(body, 64);
        }
    }
}
