//! What the journal never keeps: the values of secret headers, of secret query parameters
//! and of secret JSON members, by name, wherever they are.
//!
//! One name rule for headers, query parameters and JSON members ([`is_secret_name`]): names
//! are compared folded ([`fold`]: lowercase, `_` and `-` removed), so `api_key`, `apiKey`,
//! `API-KEY` and `apikey` are one name, and a name that ends with a secret's is a secret's
//! too (`X-Auth-Token`, `X-Amz-Security-Token`, `userPassword`, `x_client_secret`); JSON member names are compared once
//! unescaped (`"pass\u0077ord"` is `password`), query parameter names once percent-decoded.
//! A body that does not parse as JSON (cut at [`super::BODY_LIMIT`], malformed, or not JSON
//! at all) but names a secret anywhere is replaced whole by [`UNPARSED`]: the journal cannot
//! tell where its value is, so it keeps none of it.
//!
//! Cost: most bodies name no secret, and cost a copy and a few byte scans
//! ([`may_name_secret`]); only the others are parsed.

use crate::names::percent_decode;

/// Headers whose values are never kept.
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "x-admin-key",
    "cookie",
    "set-cookie",
];
/// Names (query parameters, JSON members) whose values are never kept, as written in the
/// platform's and common APIs; compared [`fold`]ed, so each stands for its spellings
/// (`apiKey`, `API-KEY`, `Client_Secret`...).
pub const SECRET_FIELDS: &[&str] = &[
    "access_token",
    "refresh_token",
    "id_token",
    "session_token",
    "token",
    "api_key",
    "password",
    "passwd",
    "secret",
    "client_secret",
    "private_key",
    "authorization",
];
/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";
/// What replaces a body that names a secret but does not parse as JSON.
pub const UNPARSED: &str = "[redacted: unparsed body naming a secret]";

/// `name` lowercased, without `_` and `-`: the form names are compared in.
fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `name` (a header's, or a query parameter's or JSON member's once decoded or
/// unescaped) is a secret's: folded, it is or ends with one of [`SECRET_FIELDS`] folded, or
/// it is one of [`SECRET_HEADERS`].
pub fn is_secret_name(name: &str) -> bool {
    let folded = fold(name);
    SECRET_FIELDS.iter().any(|s| folded.ends_with(&fold(s)))
        || SECRET_HEADERS.iter().any(|h| fold(h) == folded)
}

/// The headers of a request as the journal keeps them (secrets redacted).
pub fn headers(map: &http::HeaderMap) -> Vec<(String, String)> {
    map.iter()
        .map(|(name, value)| {
            let name = name.as_str().to_string();
            let value = if is_secret_name(&name) {
                REDACTED.to_string()
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            (name, value)
        })
        .collect()
}

/// A query string as the journal keeps it: each parameter whose decoded name is a secret's
/// keeps its name as written and the value [`REDACTED`]; the others are kept as written.
pub fn query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| {
            let name = pair.split('=').next().unwrap_or("");
            if is_secret_name(&String::from_utf8_lossy(&percent_decode(name, true))) {
                format!("{name}={REDACTED}")
            } else {
                pair.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// A body as the journal keeps it: the first [`super::BODY_LIMIT`] bytes as text, secrets
/// redacted; answers whether it was cut.
pub fn body(bytes: &[u8]) -> (String, bool) {
    let cut = &bytes[..bytes.len().min(super::BODY_LIMIT)];
    body_text(cut, bytes.len() > super::BODY_LIMIT)
}

/// [`body`] of the first bytes of a body, `truncated` when it was longer.
pub(super) fn body_text(bytes: &[u8], truncated: bool) -> (String, bool) {
    let text = String::from_utf8_lossy(bytes).into_owned();
    if !may_name_secret(&text) {
        return (text, truncated);
    }
    if !truncated {
        if let Ok(mut json) = serde_json::from_slice::<serde_json::Value>(bytes) {
            return if redact(&mut json) {
                (json.to_string(), false)
            } else {
                (text, false)
            };
        }
    }
    // Cut, malformed or not JSON: a secret's value cannot be found member by member.
    if names_secret(&text) {
        return (UNPARSED.to_string(), truncated);
    }
    (text, truncated)
}

/// Replaces secret members anywhere in `v`; answers whether it replaced any.
fn redact(v: &mut serde_json::Value) -> bool {
    match v {
        serde_json::Value::Object(map) => {
            let mut any = false;
            for (k, val) in map.iter_mut() {
                if is_secret_name(k) {
                    *val = serde_json::Value::String(REDACTED.into());
                    any = true;
                } else {
                    any |= redact(val);
                }
            }
            any
        }
        serde_json::Value::Array(items) => items.iter_mut().fold(false, |a, i| redact(i) | a),
        _ => false,
    }
}

/// Fragments every secret name holds in some spelling, lowercase: a body holding none of
/// them (and no `\u` escape, which could spell one) names no secret. A false positive only
/// costs a parse.
const FRAGMENTS: &[&str] = &["token", "key", "passw", "secret", "authorization"];

/// Whether `text` may name a secret (then it is parsed to find out where).
fn may_name_secret(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("\\u") || FRAGMENTS.iter().any(|f| lower.contains(f))
}

/// Whether `text` (not parsed) names a secret: one of [`SECRET_FIELDS`] in any case, with
/// `_`, `-` or nothing between its words.
fn names_secret(text: &str) -> bool {
    let folded = fold(text);
    SECRET_FIELDS.iter().any(|s| folded.contains(&fold(s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_field_has_a_fragment_scanned_for() {
        for name in SECRET_FIELDS {
            assert!(
                may_name_secret(&format!("{{\"{}\": 1}}", name.to_uppercase())),
                "{name}"
            );
        }
        assert!(!may_name_secret(r#"{"name": "api", "amount": 1}"#));
    }

    #[test]
    fn json_members_are_redacted_by_name_unescaped_and_folded() {
        let (text, cut) = body(
            br#"{"access_token":"abc","nested":[{"Password":"p1"}],"pass\u0077ord":"p2","apiKey":"k","Authorization":"Bearer x","n":1}"#,
        );
        assert!(!cut);
        for secret in ["abc", "p1", "p2", "\"k\"", "Bearer"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(
            text.contains(REDACTED) && text.contains("\"n\":1"),
            "{text}"
        );
        // Names that merely contain a fragment are kept.
        let plain = r#"{"tokens_used":1,"keyboard":"k"}"#;
        assert_eq!(body(plain.as_bytes()), (plain.to_string(), false));
    }

    #[test]
    fn unparsed_bodies_naming_a_secret_are_redacted_whole() {
        for text in [
            r#"{"password": "hunter2""#,
            "password=hunter2&user=a",
            "<login apiKey=\"k\"/>",
        ] {
            assert_eq!(
                body(text.as_bytes()),
                (UNPARSED.to_string(), false),
                "{text}"
            );
        }
        let long = format!(
            "{{\"secret\": \"s\", \"pad\": \"{}\"}}",
            "x".repeat(super::super::BODY_LIMIT)
        );
        assert_eq!(body(long.as_bytes()), (UNPARSED.to_string(), true));
        assert_eq!(
            body(b"not json, nothing hidden"),
            ("not json, nothing hidden".into(), false)
        );
    }

    #[test]
    fn query_parameters_are_redacted_by_decoded_name() {
        assert_eq!(
            query("a=1&api_key=k&Token=t&access%5Ftoken=j&APIKEY=x&password&n=2"),
            "a=1&api_key=[redacted]&Token=[redacted]&access%5Ftoken=[redacted]&APIKEY=[redacted]&password=[redacted]&n=2"
        );
        assert_eq!(query("tokens=3&monkey=1"), "tokens=3&monkey=1");
    }

    #[test]
    fn secret_headers_are_redacted() {
        let mut map = http::HeaderMap::new();
        map.insert("x-api-key", http::HeaderValue::from_static("sbx_secret"));
        map.insert("accept", http::HeaderValue::from_static("text/xml"));
        for name in [
            "x-auth-token",
            "x-amz-security-token",
            "api-key",
            "x-user-password",
        ] {
            map.insert(name, http::HeaderValue::from_static("s3cr3t"));
        }
        let kept = headers(&map);
        assert!(kept.contains(&("x-api-key".into(), REDACTED.into())));
        for name in [
            "x-auth-token",
            "x-amz-security-token",
            "api-key",
            "x-user-password",
        ] {
            assert!(kept.contains(&(name.into(), REDACTED.into())), "{name}");
        }
        assert!(kept.contains(&("accept".into(), "text/xml".into())));
    }
}
