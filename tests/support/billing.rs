//! Surface B helpers (`/billing/2`, JSON): requests sent with one tenant's API key, answers
//! read whole (status, headers, JSON body), and list walking across pages.

use crate::{TestServer, TestTenant};
use reqwest::header::HeaderMap;
use serde_json::Value;

/// The Surface B root.
pub const B: &str = "/billing/2";

/// A Surface B answer: status, headers and the JSON body (Null when empty).
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: HeaderMap,
    /// The JSON body; Null for an empty body.
    pub body: Value,
}

impl Answer {
    /// A header as text, when present and ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `X-Total-Count`; panics when absent.
    pub fn total(&self) -> i64 {
        self.header("x-total-count")
            .expect("x-total-count")
            .parse()
            .expect("int")
    }

    /// The body as a list; panics when it is not an array.
    pub fn items(&self) -> &Vec<Value> {
        self.body.as_array().expect("array body")
    }

    /// The numeric ids of a list body (Surface B renders ids as strings).
    pub fn ids(&self) -> Vec<i64> {
        self.items()
            .iter()
            .map(|v| {
                v["id"]
                    .as_str()
                    .expect("string id")
                    .parse()
                    .expect("numeric id")
            })
            .collect()
    }

    /// The `{code, message}` error of this answer, its shape checked: (code, message).
    pub fn error(&self) -> (String, String) {
        let code = self.body["code"]
            .as_str()
            .unwrap_or_else(|| panic!("code is a string: {}", self.body))
            .to_string();
        let message = self.body["message"]
            .as_str()
            .unwrap_or_else(|| panic!("message is a string: {}", self.body))
            .to_string();
        assert_eq!(
            self.body.as_object().map(|o| o.len()),
            Some(2),
            "only code and message: {}",
            self.body
        );
        (code, message)
    }
}

/// A server with one tenant seeded with the demo data.
pub async fn setup() -> (TestServer, TestTenant) {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    (s, t)
}

/// GET `B{path}` with `query`.
pub async fn get(s: &TestServer, t: &TestTenant, path: &str, query: &[(&str, &str)]) -> Answer {
    send(s.client.get(s.url(&format!("{B}{path}"))).query(query), t).await
}

/// Sends `builder` with the tenant's API key and reads the whole answer.
pub async fn send(builder: reqwest::RequestBuilder, t: &TestTenant) -> Answer {
    let r = builder
        .header("X-Api-Key", &t.api_key)
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.expect("body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).expect("json")
    };
    Answer {
        status,
        headers,
        body,
    }
}

/// Every id of a list, walking all pages of `size`.
pub async fn all_ids(
    s: &TestServer,
    t: &TestTenant,
    path: &str,
    query: &[(&str, &str)],
    size: usize,
) -> Vec<i64> {
    let mut ids = Vec::new();
    let size_text = size.to_string();
    for page in 1.. {
        let page_text = page.to_string();
        let mut q = query.to_vec();
        q.push(("page_size", &size_text));
        q.push(("page_number", &page_text));
        let a = get(s, t, path, &q).await;
        assert_eq!(a.status, 200, "{path} {q:?}: {}", a.body);
        let got = a.ids();
        ids.extend(&got);
        if got.len() < size {
            break;
        }
    }
    ids
}
