//! Test support of the XML layer, shared by this crate's unit tests (`xml_fuzz.rs`) and the
//! end-to-end tests of Surface A (`tests/legacy/text_rule.rs`, through the `test-support`
//! feature): one generator of hostile text and one well-formedness check, so both test the
//! writer and the server against the same idea of "any text" and "a document".
//!
//! Compiled only for tests (`cfg(test)` or the `test-support` feature, which the Lambda
//! builds never enable: the Makefile builds the functions with `-p`, so the tests' features
//! are not unified into them).

use proptest::prelude::*;
use std::ops::Range;

/// Text as a hostile client or an old stored row may hold it: `len` characters of any kind,
/// with the ones XML 1.0 cannot carry (C0 controls, U+FFFE, U+FFFF) and the ones it must
/// escape (`&`, `<`, both quotes, `]` of `]]>`) made likely.
pub fn hostile_text(len: Range<usize>) -> impl Strategy<Value = String> {
    let special = prop_oneof![
        (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('?')),
        Just('\u{FFFE}'),
        Just('\u{FFFF}'),
        Just('&'),
        Just('<'),
        Just('"'),
        Just('\''),
        Just(']'),
    ];
    proptest::collection::vec(prop_oneof![any::<char>(), special], len)
        .prop_map(|cs| cs.into_iter().collect())
}

/// Whether `body` is a well-formed XML document: quick-xml's reader (which checks no
/// characters itself) reads it through, and every character is one XML 1.0 carries. The
/// error says what failed.
pub fn xml_document(body: &str) -> Result<(), String> {
    let mut reader = quick_xml::Reader::from_str(body);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("quick-xml: {e}")),
        }
    }
    match shared::domain::first_non_xml_char(body) {
        Some(c) => Err(format!(
            "U+{:04X} is not an XML 1.0 character",
            u32::from(c)
        )),
        None => Ok(()),
    }
}

/// [`xml_document`], and Surface A's own reader parses it with `namespace` (an answer, not a
/// fault: faults carry text content, which request bodies never do).
pub fn well_formed(body: &str, namespace: &str) -> Result<(), String> {
    xml_document(body)?;
    super::parse(body.as_bytes(), namespace)
        .map(|_| ())
        .map_err(|e| format!("Surface A's reader: {e}"))
}
