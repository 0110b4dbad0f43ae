//! Surface A helpers: a client bound to one tenant that speaks XML, and readers for answers
//! and faults (a fault is checked for its XML shape whenever it is read). Every XML answer
//! read here is validated against the XSD the server serves (`crate::xsd`).

use crate::{TestServer, TestTenant};
use legacy::xml::Element;
use reqwest::Method;

/// The Surface A root.
pub const ROOT: &str = "/t/s/r/1.28";

/// A Surface A client for one tenant.
pub struct Legacy {
    pub s: TestServer,
    pub t: TestTenant,
}

/// An answer: status, content type and the parsed root element (None when not XML).
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: String,
    pub root: Option<Element>,
}

impl Answer {
    /// The root element; panics with the body when there is none.
    pub fn el(&self) -> &Element {
        self.root
            .as_ref()
            .unwrap_or_else(|| panic!("no XML root in: {}", self.body))
    }

    /// The fault's failure reason and message.
    pub fn fault(&self) -> (String, String) {
        // The fault carries text children, which request bodies never do, so it is read as text.
        assert!(
            self.body.contains("<fault xmlns="),
            "not a fault: {}",
            self.body
        );
        assert_eq!(self.content_type, "application/xml");
        let text = |name: &str| {
            let start = format!("<{name}>");
            let end = format!("</{name}>");
            let from = self.body.find(&start).map(|i| i + start.len()).unwrap_or(0);
            let to = self.body.find(&end).unwrap_or(from);
            self.body[from..to].to_string()
        };
        (text("failureReason"), text("message"))
    }
}

impl Legacy {
    /// A server with one tenant seeded with `seed`.
    pub async fn start(seed: &str) -> Legacy {
        let s = TestServer::start().await;
        let t = s.create_tenant("legacy", seed).await;
        Legacy { s, t }
    }

    /// Sends `method ROOT/path` with an optional XML body.
    pub async fn call(&self, method: Method, path: &str, body: Option<&str>) -> Answer {
        let mut req = self
            .s
            .client
            .request(method, self.s.url(&format!("{ROOT}/{path}")))
            .header("Authorization", self.t.basic_header())
            .header("Accept", "application/xml");
        if let Some(body) = body {
            req = req
                .header("Content-Type", "application/xml")
                .body(body.to_string());
        }
        read(req.send().await.expect("request")).await
    }

    /// GET ROOT/path.
    pub async fn get(&self, path: &str) -> Answer {
        self.call(Method::GET, path, None).await
    }

    /// POST ROOT/path with an XML body.
    pub async fn post(&self, path: &str, body: &str) -> Answer {
        self.call(Method::POST, path, Some(body)).await
    }

    /// PUT ROOT/path with an XML body.
    pub async fn put(&self, path: &str, body: &str) -> Answer {
        self.call(Method::PUT, path, Some(body)).await
    }

    /// Sends every case and checks its status and its XML fault (reason and message); a
    /// failure names the case.
    pub async fn assert_faults(&self, cases: &[Fault<'_>]) {
        for (method, path, body, status, reason, needle) in cases {
            let r = self.call(method.clone(), path, *body).await;
            let case = format!("{method} {path} {}", body.unwrap_or(""));
            assert_eq!(r.status, *status, "{case}: {}", r.body);
            let (got_reason, message) = r.fault();
            if !reason.is_empty() {
                assert_eq!(got_reason, *reason, "{case}: {message}");
            }
            assert!(message.contains(needle), "{case}: {message}");
        }
    }
}

/// One request of a table that Surface A must refuse with a fault: method, path under
/// `ROOT`, optional XML body, status, failure reason ("" for any) and a piece of text the
/// message must contain ("" for any message).
pub type Fault<'a> = (Method, &'a str, Option<&'a str>, u16, &'a str, &'a str);

/// Reads an answer, parsing XML bodies with the domain namespace; an XML answer of Surface A
/// must be valid against the server's XSD (a failure names the request and the errors).
pub async fn read(r: reqwest::Response) -> Answer {
    let url = r.url().clone();
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = r.text().await.expect("body");
    if content_type == "application/xml"
        && url.path().starts_with(ROOT)
        && !url.path().ends_with(crate::xsd::XSD_PATH)
    {
        let origin = url.origin().ascii_serialization();
        if let Err(errors) = crate::xsd::validate(&origin, &body).await {
            panic!(
                "{} {status}: the answer is not valid against the XSD: {errors}\n{body}",
                url.path()
            );
        }
    }
    let root = legacy::xml::parse(body.as_bytes(), legacy::DEFAULT_XML_NAMESPACE).ok();
    Answer {
        status,
        content_type,
        body,
        root,
    }
}

/// An attribute of an element; panics when absent.
pub fn attr<'a>(e: &'a Element, name: &str) -> &'a str {
    e.attrs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("<{}> has no attribute {name}: {e:?}", e.name))
}

/// An attribute of an element, when present.
pub fn opt_attr<'a>(e: &'a Element, name: &str) -> Option<&'a str> {
    e.attrs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The first child named `name`; panics when absent.
pub fn child<'a>(e: &'a Element, name: &str) -> &'a Element {
    e.children
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("<{}> has no <{name}>: {e:?}", e.name))
}

/// An exact decimal attribute.
pub fn dec(e: &Element, name: &str) -> rust_decimal::Decimal {
    attr(e, name).parse().expect("decimal attribute")
}
