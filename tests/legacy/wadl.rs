//! The WADL: well-formed, served at both root spellings, and in step with the routes that
//! serve requests (every route is described, every described method is served).

use e2e::legacy::Legacy;
use quick_xml::events::Event;
use quick_xml::reader::NsReader;
use std::collections::{BTreeMap, BTreeSet};

const WADL_NS: &[u8] = b"http://wadl.dev.java.net/2009/02";

/// What a WADL document describes, read with a plain quick-xml reader (not the code under
/// test): each (method, path) with its query params (name -> default), the representation
/// elements, and the resources' base.
pub(crate) struct Described {
    pub methods: BTreeMap<(String, String), BTreeMap<String, Option<String>>>,
    pub elements: Vec<String>,
    pub base: String,
}

pub(crate) fn described(doc: &str) -> Described {
    let mut reader = NsReader::from_str(doc);
    let mut paths: Vec<String> = Vec::new();
    let mut out = Described {
        methods: BTreeMap::new(),
        elements: Vec::new(),
        base: String::new(),
    };
    let mut method: Option<(String, String)> = None;
    loop {
        let (ns, ev) = reader.read_resolved_event().expect("well-formed WADL");
        let empty = matches!(ev, Event::Empty(_));
        let in_wadl =
            matches!(ns, quick_xml::name::ResolveResult::Bound(n) if n.as_ref() == WADL_NS);
        match ev {
            Event::Start(e) | Event::Empty(e) if in_wadl => {
                let get = |k: &str| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == k.as_bytes())
                        .map(|a| a.unescape_value().unwrap().into_owned())
                };
                match e.local_name().as_ref() {
                    b"resources" => out.base = get("base").unwrap(),
                    b"resource" => paths.push(get("path").unwrap()),
                    b"method" => {
                        let key = (get("name").unwrap(), paths.last().unwrap().clone());
                        out.methods.entry(key.clone()).or_default();
                        method = Some(key);
                    }
                    b"param" if get("style").as_deref() == Some("query") => {
                        let key = method.clone().expect("a query param inside a method");
                        out.methods
                            .entry(key)
                            .or_default()
                            .insert(get("name").unwrap(), get("default"));
                    }
                    b"representation" => out.elements.push(get("element").unwrap()),
                    _ => {}
                }
                if empty && e.local_name().as_ref() == b"resource" {
                    paths.pop();
                }
            }
            Event::End(e) if in_wadl => match e.local_name().as_ref() {
                b"resource" => {
                    paths.pop();
                }
                b"method" => method = None,
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn wadl_matches_the_route_table_and_every_method_is_served() {
    let a = Legacy::start("demo").await;
    let mut docs = Vec::new();
    for root in ["/t/s/r/1.28?_wadl", "/t/s/r/1.28/?_wadl"] {
        let r = a.s.client.get(a.s.url(root)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{root}");
        assert_eq!(r.headers()["content-type"], "application/vnd.sun.wadl+xml");
        docs.push(r.text().await.unwrap());
    }
    assert_eq!(docs[0], docs[1]);
    let Described {
        methods,
        elements,
        base,
    } = described(&docs[0]);
    let methods: BTreeSet<(String, String)> = methods.into_keys().collect();
    assert_eq!(base, format!("{}/t/s/r/1.28/", a.s.base));
    let table: BTreeSet<(String, String)> = legacy::routes::table()
        .iter()
        .map(|r| (r.verb.as_str().to_string(), r.path.to_string()))
        .collect();
    assert_eq!(methods, table);
    assert!(methods.len() >= 30, "{}", methods.len());
    assert!(elements.iter().all(|e| e.starts_with("dom:")));
    assert!(docs[0].contains(&format!("xmlns:dom=\"{}\"", legacy::DEFAULT_XML_NAMESPACE)));
    for (entity, command) in [
        ("invoices", "applyPayment"),
        ("billingAccounts", "applyPayment"),
        ("billingAccounts", "suspend"),
        ("billingAccounts", "resume"),
        ("billingAccounts", "deactivate"),
        ("billingAccounts", "addAdjustment"),
        ("billingAccounts", "addNote"),
        ("billingAccounts", "billOnDemand"),
        ("billingAccounts", "moveToBillCycle"),
        ("invoices", "cancel"),
    ] {
        assert!(methods.contains(&("POST".to_string(), format!("{entity}/{{eid}}/{command}"))));
    }

    // Every described method is routed: it never meets the unknown-route or wrong-method
    // answer (an empty body draws a validation fault at most).
    for (method, path) in &methods {
        let path = path.replace("{eid}", "1");
        let r = a.call(method.parse().unwrap(), &path, None).await;
        assert_ne!(r.status, 405, "{method} {path}");
        assert!(
            !r.body.contains("no such resource"),
            "{method} {path}: {}",
            r.body
        );
        assert!(r.status < 500, "{method} {path}: {}", r.body);
    }
    let undescribed = a.call(reqwest::Method::DELETE, "invoices/1", None).await;
    assert_eq!(undescribed.status, 405);

    let bare = a.s.client.get(a.s.url("/t/s/r/1.28")).send().await.unwrap();
    assert_eq!(bare.status(), 404);
    assert!(bare.text().await.unwrap().contains("_wadl"));
}
