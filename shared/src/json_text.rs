//! The text of a JSON string token, as the request paths read it: the JSON rules checked
//! before parsing (`web::extract`) and the fields of a posted usage event
//! (`domain::usage::post::parse`) both read member names and string values this way.
//!
//! Invariant: a JSON string without a backslash is exactly its text between the quotes
//! (JSON forbids raw control characters in strings, and the parser has already refused
//! them or will), so such a string is borrowed; one with an escape is decoded by serde_json.

use std::borrow::Cow;

/// The text of `token`, a JSON string with its quotes: borrowed when it holds no escape,
/// decoded otherwise; `None` when `token` is not a complete, valid JSON string.
pub fn string_text(token: &str) -> Option<Cow<'_, str>> {
    let inner = token.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(token).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_strings_are_borrowed_and_escaped_ones_decoded() {
        assert!(matches!(
            string_text(r#""srv-compute-0001""#),
            Some(Cow::Borrowed("srv-compute-0001"))
        ));
        for (token, decoded) in [
            (r#""a\"b""#, "a\"b"),
            (r#""\u00e9t\u00e9""#, "été"),
            (r#""tab\there""#, "tab\there"),
            (r#""back\\slash""#, "back\\slash"),
            (r#""""#, ""),
        ] {
            assert_eq!(string_text(token).as_deref(), Some(decoded), "{token}");
        }
        for not_a_string in [
            "12",
            "null",
            "true",
            "[\"a\"]",
            "{\"a\": \"b\"}",
            "\"",
            "\"a\\\"",
        ] {
            assert_eq!(string_text(not_a_string), None, "{not_a_string}");
        }
    }
}
