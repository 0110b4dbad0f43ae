//! GET-modify-PUT on Surface A: every entity PUT (billingAccounts, billingAccountCategories,
//! invoices, payments) accepts the element its GET returns, written back whole: read-only
//! attributes and child references included. Sent back unchanged it changes nothing; with
//! one writable attribute changed only that attribute changes.

use e2e::legacy::{Answer, Legacy};
use legacy::xml::Element;

/// `value` escaped for a double-quoted XML attribute.
fn escape(value: &str) -> String {
    value
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `e` written as XML (the root with the domain namespace), as a client re-serializes what
/// it parsed.
fn write(e: &Element, root: bool) -> String {
    let mut out = format!("<{}", e.name);
    if root {
        out.push_str(&format!(" xmlns=\"{}\"", legacy::DEFAULT_XML_NAMESPACE));
    }
    for (k, v) in &e.attrs {
        out.push_str(&format!(" {k}=\"{}\"", escape(v)));
    }
    if e.children.is_empty() {
        out.push_str("/>");
    } else {
        out.push('>');
        for c in &e.children {
            out.push_str(&write(c, false));
        }
        out.push_str(&format!("</{}>", e.name));
    }
    out
}

/// `e` with its attributes in name order at every level (XML attribute order carries no
/// meaning, and an attribute a PUT adds is rendered in its own place).
fn sorted(e: &Element) -> Element {
    let mut attrs = e.attrs.clone();
    attrs.sort();
    Element {
        name: e.name.clone(),
        attrs,
        children: e.children.iter().map(sorted).collect(),
    }
}

/// GET `path`, asserting 200; answers the element.
async fn read(a: &Legacy, path: &str) -> Element {
    let r = a.get(path).await;
    assert_eq!(r.status, 200, "GET {path}: {}", r.body);
    r.el().clone()
}

/// PUT `e` to `path`, asserting 200.
async fn put(a: &Legacy, path: &str, e: &Element) -> Answer {
    let r = a.put(path, &write(e, true)).await;
    assert_eq!(r.status, 200, "PUT {path} {}: {}", write(e, true), r.body);
    r
}

/// Sets (or adds) attribute `name` of `e`.
fn set(e: &mut Element, name: &str, value: &str) {
    match e.attrs.iter_mut().find(|(k, _)| k == name) {
        Some(slot) => slot.1 = value.to_string(),
        None => e.attrs.push((name.to_string(), value.to_string())),
    }
}

/// The PUT endpoints of Surface A with, for each, writable attributes and a new value.
const CASES: &[(&str, &[(&str, &str)])] = &[
    (
        "billingAccounts/1",
        &[
            ("name", "Renamed account"),
            ("externalAccountNum", "EXT-RT-1"),
            ("billType", "PAPER_EMAIL"),
            ("automaticRecurringPayment", "false"),
            ("startDate", "2025-02-01T00:00:00-06:00"),
            ("taxExempt", "true"),
        ],
    ),
    (
        "billingAccountCategories/1",
        &[("name", "Renamed category"), ("description", "Changed")],
    ),
    (
        "invoices/1",
        &[
            ("description", "Changed invoice"),
            ("externalInvoiceNum", "EXT-INV-RT"),
        ],
    ),
    (
        "payments/1",
        &[("description", "Changed payment"), ("reference", "REF-RT")],
    ),
];

#[tokio::test]
async fn every_entity_put_takes_back_what_its_get_returns() {
    let a = Legacy::start("demo").await;
    for (path, changes) in CASES {
        let before = read(&a, path).await;
        let answer = put(&a, path, &before).await;
        assert_eq!(
            answer.el(),
            &before,
            "PUT {path} as read answers it unchanged"
        );
        assert_eq!(read(&a, path).await, before, "PUT {path} as read");
        for (name, value) in *changes {
            let before = read(&a, path).await;
            let mut body = before.clone();
            set(&mut body, name, value);
            assert_ne!(body, before, "{path}: the case must change {name}");
            put(&a, path, &body).await;
            let after = sorted(&read(&a, path).await);
            assert_eq!(after, sorted(&body), "{path}: only {name} changed");
        }
    }
}
