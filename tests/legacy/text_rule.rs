//! The text rule of every surface: what XML 1.0 cannot carry (C0
//! controls other than tab, newline and carriage return, U+FFFE, U+FFFF, lone surrogates) is
//! refused on Surface A (raw or as a character reference) and on Surface B (a 400 naming
//! the field, an erred usage event), so every Surface A answer is a well-formed document;
//! text stored before the rule is answered with U+FFFD in its place. Duplicate JSON members
//! are a 400 at every depth (finding 6).

use e2e::billing::{post_raw, USAGE_BULK};
use e2e::legacy::{attr, Legacy};
use legacy::xml::testing;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::{json, Value};

/// Whether `body` is a well-formed document that Surface A's own reader parses.
fn well_formed(body: &str) -> Result<(), String> {
    testing::well_formed(body, legacy::DEFAULT_XML_NAMESPACE)
}

/// `text` as an XML attribute value: escaped, every character outside printable ASCII as a
/// character reference (so the request carries exactly what the client meant).
fn xml_attr(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '"' => "&quot;".to_string(),
            ' '..='~' => c.to_string(),
            _ => format!("&#x{:X};", c as u32),
        })
        .collect()
}

fn usage_event(reference_id: &str) -> Value {
    json!({
        "service_resource_identifier": "srv-compute-0001",
        "usage_uom": "HOUR",
        "usage_amount": 1,
        "start_time": "2026-11-01",
        "reference_id": reference_id,
        "sequence_id": "1",
    })
}

#[tokio::test]
async fn surface_a_refuses_character_references_xml_cannot_carry() {
    let a = Legacy::start("demo").await;
    for reference in ["&#1;", "&#x1B;", "&#xFFFE;", "&#xFFFF;"] {
        let r = a
            .post(
                "billingAccounts/1/addNote",
                &format!(r#"<addNote note="before{reference}after"/>"#),
            )
            .await;
        assert_eq!(r.status, 400, "{reference}: {}", r.body);
        let (reason, message) = r.fault();
        assert_eq!(reason, "VALIDATION_FAILURE", "{reference}");
        assert!(
            message.contains("attribute note on &lt;addNote&gt;") && message.contains("XML 1.0"),
            "{reference}: {message}"
        );
    }
    // Tab, newline and carriage return are text: accepted and answered as written.
    let r = a
        .post(
            "billingAccounts/1/addNote",
            r#"<addNote note="a&#9;b&#xA;c&#13;d"/>"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let page = a.get("billingAccounts/1/notes").await;
    assert_eq!(page.status, 200);
    assert_eq!(page.el().children.len(), 1, "{}", page.body);
    assert_eq!(attr(&page.el().children[0], "note"), "a\tb\nc\rd");
}

#[tokio::test]
async fn surface_b_refuses_text_xml_cannot_carry_naming_the_field() {
    let a = Legacy::start("demo").await;
    let (s, t) = (&a.s, &a.t);
    // A usage event: erred INVALID_FIELD naming the field, nothing stored.
    let events: Vec<Value> = ["a\u{1}b", "\u{1b}[31m", "x\u{FFFE}", "nul\u{0}"]
        .iter()
        .map(|r| usage_event(r))
        .collect();
    let body = json!({"mode": "FAIL_ON_EXISTING", "usage_events": events});
    let r = post_raw(s, t, USAGE_BULK, body.to_string()).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let erred = v["erred_events"].as_array().unwrap();
    assert_eq!(erred.len(), 4, "{v:#}");
    for e in erred {
        assert_eq!(e["code"], "INVALID_FIELD", "{e}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.starts_with("reference_id (referenceId) must not contain the character U+"),
            "{message}"
        );
    }
    // The same in a service resource identifier.
    let mut event = usage_event("r-1");
    event["service_resource_identifier"] = json!("srv\u{7}");
    let body = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [event]});
    let v: Value = post_raw(s, t, USAGE_BULK, body.to_string())
        .await
        .json()
        .await
        .unwrap();
    let message = v["erred_events"][0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("service_resource_identifier (serviceResourceIdentifier) must not contain the character U+0007"),
        "{v}"
    );
    // A lone surrogate escape is not text at all: the body is refused, naming the member.
    let raw = r#"{"mode":"FAIL_ON_EXISTING","usage_events":[{"service_resource_identifier":"srv-compute-0001","usage_uom":"HOUR","usage_amount":1,"start_time":"2026-11-01","reference_id":"x\ud800"}]}"#;
    let (status, code, message) =
        e2e::error_body(post_raw(s, t, USAGE_BULK, raw.into()).await).await;
    assert_eq!((status, code.as_str()), (400, "BAD_REQUEST"), "{message}");
    assert!(
        message.contains("member 'reference_id'") && message.contains("surrogate"),
        "{message}"
    );
    // Any other text field of Surface B: a 400 naming it.
    let r = s
        .client
        .post(s.url("/billing/2/bill-batches"))
        .header("X-Api-Key", &t.api_key)
        .json(
            &json!({"bill_batch_type": "adhoc", "name": "bell\u{7}", "invoice_date": "2026-12-01"}),
        )
        .send()
        .await
        .unwrap();
    let (status, _, message) = e2e::error_body(r).await;
    assert_eq!(status, 400, "{message}");
    assert!(
        message.contains("name must not contain the character U+0007"),
        "{message}"
    );
    let listed = a.get("usageEvents").await;
    if let Err(e) = well_formed(&listed.body) {
        panic!("{e}: {}", listed.body);
    }
    assert_eq!(attr(listed.el(), "totalElements"), "0", "{}", listed.body);
}

#[tokio::test]
async fn duplicate_members_inside_a_usage_event_are_a_400() {
    let a = Legacy::start("demo").await;
    let raw = r#"{"mode":"FAIL_ON_EXISTING","usage_events":[{"service_resource_identifier":"srv-compute-0001","usage_uom":"HOUR","usage_amount":1,"usage_amount":1000,"start_time":"2026-11-01"}]}"#;
    let (status, code, message) =
        e2e::error_body(post_raw(&a.s, &a.t, USAGE_BULK, raw.into()).await).await;
    assert_eq!((status, code.as_str()), (400, "BAD_REQUEST"), "{message}");
    assert!(
        message.contains("duplicate member 'usage_amount'"),
        "{message}"
    );
    // Spelled with an escape, and at the top level: the same rule.
    for raw in [
        r#"{"mode":"FAIL_ON_EXISTING","usage_events":[{"usage_uom":"HOUR","usage_\u0075om":"DAY"}]}"#,
        r#"{"mode":"FAIL_ON_EXISTING","mode":"OVERWRITE","usage_events":[]}"#,
    ] {
        let (status, _, message) =
            e2e::error_body(post_raw(&a.s, &a.t, USAGE_BULK, raw.into()).await).await;
        assert_eq!(status, 400, "{message}");
        assert!(message.contains("duplicate member"), "{message}");
    }
    let listed = a.get("usageEvents").await;
    assert_eq!(attr(listed.el(), "totalElements"), "0", "{}", listed.body);
}

#[tokio::test]
async fn every_surface_a_answer_is_well_formed_whatever_was_sent() {
    // Random text stored through Surface A (notes) and Surface B (usage reference ids), and
    // text written straight into the database as if it predated the rule: every Surface A
    // answer that lists them parses, and accepted text reads back as sent.
    let a = Legacy::start("demo").await;
    let mut runner = TestRunner::deterministic();
    let (mut notes, mut references) = (Vec::new(), Vec::new());
    for i in 0..40 {
        let text = testing::hostile_text(1..24)
            .new_tree(&mut runner)
            .expect("a value")
            .current();
        let clean = shared::domain::first_non_xml_char(&text).is_none();
        let r = a
            .post(
                "billingAccounts/1/addNote",
                &format!(r#"<addNote note="{}"/>"#, xml_attr(&text)),
            )
            .await;
        assert_eq!(
            r.status,
            if clean { 200 } else { 400 },
            "{text:?}: {}",
            r.body
        );
        if clean {
            notes.push(text.clone());
        }
        let reference = format!("{i}-{text}");
        let body = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [usage_event(&reference)]});
        let v: Value = post_raw(&a.s, &a.t, USAGE_BULK, body.to_string())
            .await
            .json()
            .await
            .unwrap();
        let rated = v["rated_events"].as_array().unwrap().len();
        let clean = clean && reference.chars().count() <= 255;
        assert_eq!(rated, usize::from(clean), "{reference:?}: {v}");
        if clean {
            references.push(reference);
        }
    }
    // Text stored before the rule: answered with U+FFFD in place of what XML cannot carry.
    let db = a.s.state.store.tenant_db(&a.t.id).unwrap();
    db.write(|tx| {
        tx.execute(
            "INSERT INTO account_notes (billing_account_id, note, created_on, created_by) VALUES (1, ?1, '2026-01-01T00:00:00.000Z', ?2)",
            ["old\u{1}\u{1b}\u{FFFE}note", "legacy\u{0}"],
        )?;
        Ok(())
    })
    .await
    .unwrap();
    notes.push("old\u{FFFD}\u{FFFD}\u{FFFD}note".to_string());

    let page = a.get("billingAccounts/1/notes?pageSize=100").await;
    assert_eq!(page.status, 200);
    if let Err(e) = well_formed(&page.body) {
        panic!("{e}: {:?}", page.body);
    }
    let read: Vec<&str> = page.el().children.iter().map(|n| attr(n, "note")).collect();
    assert_eq!(read, notes.iter().map(String::as_str).collect::<Vec<_>>());
    let events = a.get("usageEvents?pageSize=100").await;
    assert_eq!(events.status, 200);
    if let Err(e) = well_formed(&events.body) {
        panic!("{e}: {:?}", events.body);
    }
    let mut read: Vec<&str> = events
        .el()
        .children
        .iter()
        .map(|e| attr(e, "referenceId"))
        .collect();
    read.sort_unstable();
    references.sort_unstable();
    assert_eq!(
        read,
        references.iter().map(String::as_str).collect::<Vec<_>>()
    );
    // Answers (faults included) quoting a decoded path or query value are documents too.
    for path in [
        "billingAccounts/%01",
        "billingAccounts?accountNum=%01%1B",
        "billingAccounts?status=%EF%BF%BE",
    ] {
        let r = a.get(path).await;
        if let Err(e) = testing::xml_document(&r.body) {
            panic!("{path}: {e}: {:?}", r.body);
        }
    }
    for path in ["notes?pageSize=100", "billingAccounts/1"] {
        let r = a.get(path).await;
        if let Err(e) = well_formed(&r.body) {
            panic!("{path}: {e}: {:?}", r.body);
        }
    }
}
