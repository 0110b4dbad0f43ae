//! The WADL's grammar: the XSD served where `<grammars><include href>` points, without
//! credentials; every element a representation names is a global element of it; sample
//! bodies of every command request are valid against it and broken ones are not (so the
//! validation every XML answer goes through in `e2e::legacy::read` is not vacuous). And the
//! tenant's `users`, read as a collection, by eid and as `users/current`.

use crate::wadl::described;
use e2e::legacy::{attr, opt_attr, Legacy, ROOT};
use e2e::xsd::{validate, XSD_PATH};
use quick_xml::events::Event;
use quick_xml::reader::NsReader;
use std::collections::BTreeSet;

const XS: &[u8] = b"http://www.w3.org/2001/XMLSchema";

/// The schema's target namespace and its top-level element names, read with quick-xml.
fn globals(xsd: &str) -> (String, BTreeSet<String>) {
    let mut reader = NsReader::from_str(xsd);
    let mut depth = 0;
    let mut target = String::new();
    let mut names = BTreeSet::new();
    loop {
        let (ns, ev) = reader.read_resolved_event().expect("well-formed XSD");
        let in_xs = matches!(ns, quick_xml::name::ResolveResult::Bound(n) if n.as_ref() == XS);
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) if in_xs => {
                let get = |k: &str| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == k.as_bytes())
                        .map(|a| a.unescape_value().unwrap().into_owned())
                };
                match (depth, e.local_name().as_ref()) {
                    (0, b"schema") => target = get("targetNamespace").unwrap(),
                    (1, b"element") => {
                        names.insert(get("name").unwrap());
                    }
                    _ => {}
                }
                if matches!(ev, Event::Start(_)) {
                    depth += 1;
                }
            }
            Event::Start(_) => depth += 1,
            Event::End(_) => depth -= 1,
            Event::Eof => break,
            _ => {}
        }
    }
    (target, names)
}

#[tokio::test]
async fn the_wadl_includes_an_xsd_that_declares_every_element_it_names() {
    let a = Legacy::start("demo").await;
    let get = |path: String| {
        let url = a.s.url(&path);
        async move {
            let r = reqwest::get(url).await.unwrap();
            let status = r.status().as_u16();
            let ct = r.headers()["content-type"].to_str().unwrap().to_string();
            (status, ct, r.text().await.unwrap())
        }
    };
    let (status, _, wadl) = get(format!("{ROOT}?_wadl")).await;
    assert_eq!(status, 200);
    // JAX-RS's own address of the WADL serves the same document.
    let (status, ct, same) = get(format!("{ROOT}/application.wadl")).await;
    assert_eq!((status, ct.as_str()), (200, "application/vnd.sun.wadl+xml"));
    assert_eq!(same, wadl);
    assert!(wadl.contains("xmlns=\"http://wadl.dev.java.net/2009/02\""));

    let href = format!("{}/t/s/r/1.28/{XSD_PATH}", a.s.base);
    let grammars = &wadl[wadl.find("<grammars>").unwrap()..wadl.find("</grammars>").unwrap()];
    assert!(
        grammars.contains(&format!("<include href=\"{href}\"/>")),
        "{grammars}"
    );
    // No credentials needed, as for the WADL; bad ones are refused, as for the WADL.
    let r = reqwest::get(&href).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/xml");
    let xsd = r.text().await.unwrap();
    for path in [format!("{ROOT}?_wadl"), format!("{ROOT}/{XSD_PATH}")] {
        let bad =
            a.s.client
                .get(a.s.url(&path))
                .basic_auth("nobody", Some("wrong"))
                .send()
                .await
                .unwrap();
        assert_eq!(bad.status(), 401, "{path}");
    }

    let (target, declared) = globals(&xsd);
    assert!(wadl.contains(&format!("xmlns:dom=\"{target}\"")));
    assert_eq!(target, legacy::DEFAULT_XML_NAMESPACE);
    let named: BTreeSet<String> = described(&wadl)
        .elements
        .iter()
        .map(|e| e.strip_prefix("dom:").unwrap().to_string())
        .collect();
    let missing: Vec<&String> = named.difference(&declared).collect();
    assert!(missing.is_empty(), "the XSD does not declare {missing:?}");
    for element in [
        "billingAccount",
        "billingAccounts",
        "applyPayment",
        "applyPaymentResponse",
        "commandResponse",
        "createResponse",
        "fault",
        "products",
        "users",
    ] {
        assert!(named.contains(element), "{element}");
    }

    // Sample bodies of every request the WADL names (docs/legacy.md), valid; broken ones not.
    let ns = legacy::DEFAULT_XML_NAMESPACE;
    let doc = |body: &str| {
        let at = body.find([' ', '/', '>']).unwrap();
        format!("{} xmlns=\"{ns}\"{}", &body[..at], &body[at..])
    };
    let origin = a.s.base.clone();
    for body in [
        r#"<billingAccount accountNum="A-1" billType="EMAIL"><billingAccountCategory eid="2"/></billingAccount>"#,
        r#"<billingAccountCategory description="Retail" status="BA_CATEGORY_ACTIVE"/>"#,
        r#"<invoice invoiceNum="I-1" amount="10.50" occurredOn="2026-11-01T00:00:00-06:00"><billingAccount eid="1"/></invoice>"#,
        r#"<payment amount="100"><billingAccount eid="1"/><checkPayment/></payment>"#,
        r#"<applyPayment><payment amount="100"><checkPayment/></payment><invoices><invoice eid="3"/></invoices></applyPayment>"#,
        r#"<applyPayment><payment eid="4"/></applyPayment>"#,
        r#"<addAdjustment amount="5" adjustmentType="CREDIT"><invoice eid="1"/><reason eid="1"/></addAdjustment>"#,
        r#"<addNote note="called"/>"#,
        r#"<billOnDemand dueDate="2026-12-01T00:00:00Z"/>"#,
        r#"<moveToBillCycle><billCycle eid="2"/></moveToBillCycle>"#,
        "<suspend/>",
        "<resume/>",
        "<deactivate/>",
        "<cancel/>",
    ] {
        let body = doc(body);
        assert_eq!(validate(&origin, &body).await, Ok(()), "{body}");
    }
    for broken in [
        r#"<billingAccount billType="LETTER"/>"#,
        r#"<billingAccount colour="red"/>"#,
        r#"<billingAccounts pageNumber="1"/>"#,
        r#"<addNote/>"#,
        r#"<moveToBillCycle/>"#,
        r#"<payment amount="ten"/>"#,
        r#"<fault><failureReason>OOPS</failureReason><message/></fault>"#,
        r#"<unknownThing/>"#,
    ] {
        let body = doc(broken);
        assert!(validate(&origin, &body).await.is_err(), "{body}");
    }
}

#[tokio::test]
async fn users_are_a_collection_of_the_credentials_user() {
    let a = Legacy::start("demo").await;
    let page = a.get("users").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let p = page.el();
    assert_eq!(p.name, "users");
    for (key, value) in [
        ("pageNumber", "1"),
        ("pageSize", "50"),
        ("totalElements", "1"),
        ("elementCount", "1"),
        ("totalPages", "1"),
    ] {
        assert_eq!(attr(p, key), value, "{key}");
    }
    let user = &p.children[0];
    let current = a.get("users/current").await;
    let by_eid = a.get(&format!("users/{}", attr(user, "eid"))).await;
    for one in [&current, &by_eid] {
        assert_eq!(one.el().attrs, user.attrs, "{}", one.body);
    }
    assert_eq!(attr(user, "eid"), "1");
    assert_eq!(attr(user, "tenantId"), a.t.id);
    let name = attr(user, "username").to_string();
    let named = a.get(&format!("users?username={name}")).await;
    assert_eq!(opt_attr(named.el(), "totalElements"), Some("1"));
    let other = a.get("users?username=somebody-else").await;
    assert_eq!(opt_attr(other.el(), "totalElements"), Some("0"));
    assert!(other.el().children.is_empty());
    let second = a.get("users?pageNumber=2&pageSize=1").await;
    assert_eq!(
        (
            attr(second.el(), "elementCount"),
            attr(second.el(), "totalPages")
        ),
        ("0", "1")
    );
    a.assert_faults(&[
        (
            reqwest::Method::GET,
            "users/2",
            None,
            404,
            "GENERAL",
            "user 2",
        ),
        (
            reqwest::Method::GET,
            "users?pageSize=0",
            None,
            400,
            "VALIDATION_FAILURE",
            "",
        ),
        (
            reqwest::Method::POST,
            "users",
            Some("<user/>"),
            405,
            "GENERAL",
            "",
        ),
    ])
    .await;
}
