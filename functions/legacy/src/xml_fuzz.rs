//! Property and cost tests of the XML layer: random bytes and mutated Surface A bodies never
//! panic (the parser answers Ok or a 400-style refusal), and the parse cost stays linear in
//! the body size on the shapes a hostile client can send up to the 1 MiB body limit.
//!
//! Timing is measured as a ratio between a body of about n bytes and one of about 4n, each
//! the fastest of a few parses, the pair up to three times (`tests::within_linear`), so a
//! loaded machine slows both sides and cannot fail the test; the bound (10x) is far from the
//! 16x a quadratic cost would show.

use super::*;
use proptest::prelude::*;
use std::time::Duration;

const NS: &str = "http://billing-sandbox.dev/xml/domain/1.28";

/// Real request bodies of Surface A (as the API tests in tests/legacy send them).
const BODIES: [&str; 3] = [
    r#"<?xml version="1.0"?><billingAccount xmlns="http://billing-sandbox.dev/xml/domain/1.28" accountNum="XML-1" name="Made over XML" billType="PAPER" automaticRecurringPayment="false" currencyType="EUR" startDate="2026-01-01"><billingAccountCategory eid="2"/></billingAccount>"#,
    r#"<invoice invoiceNum="XML-INV-1" amount="19.99" occurredOn="2026-11-20" dueDate="2026-12-20" description="Made over XML &amp; &#65;"><billingAccount eid="3"/></invoice>"#,
    r#"<payment amount="25.50" reference="XML-PAY" description="by XML"><billingAccount eid="3"/><checkPayment/></payment>"#,
];

/// Fragments a hostile client would splice into a body.
const FRAGMENTS: [&str; 16] = [
    "<",
    ">",
    "&",
    "\"",
    "'",
    " xmlns:a=\"urn:x\"",
    " xmlns=\"urn:other\"",
    " a:x=\"1\"",
    "&amp;",
    "&#x110000;",
    "&lol;",
    "<![CDATA[x]]>",
    "<!DOCTYPE a [<!ENTITY lol \"lol\">]>",
    "<?pi x?>",
    "<!--",
    "</billingAccount>",
];

/// One edit of a body: what to do, where (an index taken modulo the length) and a byte.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, usize),
    Nest(usize, usize),
    Delete(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(at, x)| Mutation::Flip(at, x)),
        (any::<usize>(), 0..FRAGMENTS.len()).prop_map(|(at, f)| Mutation::Insert(at, f)),
        (any::<usize>(), 1..100usize).prop_map(|(at, d)| Mutation::Nest(at, d)),
        (any::<usize>(), 1..20usize).prop_map(|(at, n)| Mutation::Delete(at, n)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(body: &mut Vec<u8>, m: &Mutation) {
    let at = |i: usize, body: &Vec<u8>| i % (body.len() + 1);
    match *m {
        Mutation::Flip(i, x) => {
            if !body.is_empty() {
                let i = i % body.len();
                body[i] ^= x;
            }
        }
        Mutation::Insert(i, f) => {
            let i = at(i, body);
            body.splice(i..i, FRAGMENTS[f].bytes());
        }
        Mutation::Nest(i, depth) => {
            let i = at(i, body);
            let nest = "<billingAccount>".repeat(depth) + &"</billingAccount>".repeat(depth);
            body.splice(i..i, nest.into_bytes());
        }
        Mutation::Delete(i, n) => {
            let i = at(i, body);
            let end = (i + n).min(body.len());
            body.drain(i..end);
        }
        Mutation::Truncate(i) => {
            let i = at(i, body);
            body.truncate(i);
        }
    }
}

/// The parser answers, and a refusal is a bad request with a message.
fn answers_cleanly(body: &[u8]) {
    match parse(body, NS) {
        Ok(root) => assert!(!root.name.is_empty()),
        Err(e) => {
            assert!(matches!(e, Error::BadRequest(_)), "{e:?}");
            assert!(!e.to_string().is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..400)) {
        answers_cleanly(&body);
    }

    #[test]
    fn random_markup_never_panics(body in "[<>/=\"'&;#a-z: ?!\\[\\]-]{0,300}") {
        answers_cleanly(body.as_bytes());
    }

    #[test]
    fn mutated_bodies_never_panic(
        which in 0..BODIES.len(),
        edits in proptest::collection::vec(mutation(), 1..8),
    ) {
        let mut body = BODIES[which].as_bytes().to_vec();
        for edit in &edits {
            apply(&mut body, edit);
        }
        answers_cleanly(&body);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Whatever text is stored, every answer the writer makes is a well-formed document:
    /// quick-xml and this reader parse it back, every character is one XML 1.0 carries, and
    /// each value reads back as written with only the uncarriable characters replaced.
    #[test]
    fn the_writer_answers_well_formed_xml_for_any_stored_text(
        values in proptest::collection::vec(testing::hostile_text(0..40), 1..6),
    ) {
        let root = Node::new("notes").children(
            values.iter().map(|v| Node::new("note").attr("note", v).attr("createdBy", v)),
        );
        let doc = document(root, NS);
        if let Err(e) = testing::xml_document(&doc) {
            prop_assert!(false, "{e}: {doc:?}");
        }
        let read = parse(doc.as_bytes(), NS).map_err(|e| TestCaseError::fail(format!("{e}: {doc:?}")))?;
        for (child, written) in read.children.iter().zip(&values) {
            prop_assert_eq!(&child.attrs[0].1, &xml_safe(written).into_owned());
        }
    }
}

#[test]
fn unmutated_bodies_parse() {
    for body in BODIES {
        assert!(parse(body.as_bytes(), NS).is_ok(), "{body}");
    }
}

/// The fastest of five parses of `body`, in the thread's CPU time (`thread_cpu`).
fn fastest(body: &str) -> Duration {
    (0..5)
        .map(|_| {
            super::tests::thread_cpu(|| {
                let _ = std::hint::black_box(parse(body.as_bytes(), NS));
            })
        })
        .min()
        .unwrap_or_default()
}

/// A body of about `bytes` bytes: `head`, then `unit` repeated, then `tail`.
fn shaped(head: &str, unit: &str, tail: &str, bytes: usize) -> String {
    let count = bytes.saturating_sub(head.len() + tail.len()) / unit.len();
    let mut body = String::with_capacity(bytes);
    body.push_str(head);
    for _ in 0..count {
        body.push_str(unit);
    }
    body.push_str(tail);
    body
}

#[test]
fn every_shape_costs_linear_time_up_to_the_body_limit() {
    // Four times the body takes at most about four times as long; 10 leaves room for noise
    // (quadratic would be 16), with a floor for parses refused too early to time.
    let limit = shared::config::DEFAULT_MAX_BODY_BYTES;
    let open = r#"<billingAccount xmlns="http://billing-sandbox.dev/xml/domain/1.28""#;
    let shapes: [(&str, &str, &str, &str); 8] = [
        ("many attributes", open, r#" a="1""#, "/>"),
        (
            "many siblings",
            &format!("{open}>"),
            &format!("<c v=\"{}\"/>\n", "x".repeat(100)),
            "</billingAccount>",
        ),
        (
            "long text",
            &format!("{open}>"),
            "text ",
            "</billingAccount>",
        ),
        (
            "whitespace text",
            &format!("{open}>"),
            " \n",
            "</billingAccount>",
        ),
        (
            "entity references",
            &format!("{open} v=\""),
            "&amp;&lt;&gt;&quot;&apos;&#65;&#x42;",
            "\"/>",
        ),
        (
            "nesting",
            &format!("{open}>"),
            &(format!("<c v=\"{}\">", "y".repeat(60)).repeat(30) + &"</c>".repeat(30)),
            "</billingAccount>",
        ),
        (
            "long attribute value",
            &format!("{open} v=\""),
            "abcdefgh",
            "\"/>",
        ),
        (
            "comments",
            &format!("{open}>"),
            "<!-- c -->",
            "</billingAccount>",
        ),
    ];
    for (shape, head, unit, tail) in shapes {
        let large = shaped(head, unit, tail, limit);
        assert!(
            large.len() <= limit && large.len() > limit * 9 / 10,
            "{shape}"
        );
        let small = shaped(head, unit, tail, limit / 4);
        let outcome = parse(large.as_bytes(), NS)
            .map(|_| ())
            .map_err(|e| e.to_string());
        let linear = super::tests::within_linear(
            || fastest(&small),
            || fastest(&large),
            10,
            Duration::from_millis(30),
        );
        eprintln!("{shape}: 4n answers {outcome:?}, linear {linear:?}");
        assert!(linear.is_ok(), "{shape}: {linear:?}");
    }
}
