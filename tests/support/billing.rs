//! Surface B helpers (`/billing/2`, JSON): requests sent with one tenant's API key, answers
//! read whole (status, headers, JSON body), and list walking across pages.

use crate::{check_refusal, Refusal, TestServer, TestTenant};
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
        crate::error_fields(&self.body)
    }
}

/// Surface B's usage posting (under [`B`]).
pub const USAGE_BULK: &str = "/usage-events/bulk";
/// Surface B's usage simulation (under [`B`]).
pub const USAGE_SIMULATE: &str = "/usage-events/simulate/bulk";

/// Query parameters of a table row.
pub type Query<'a> = &'a [(&'a str, &'a str)];

/// A server with one tenant seeded with the demo data.
pub async fn setup() -> (TestServer, TestTenant) {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    (s, t)
}

/// GET `B{path}` with `query`.
pub async fn get(s: &TestServer, t: &TestTenant, path: &str, query: Query<'_>) -> Answer {
    send(s.client.get(s.url(&format!("{B}{path}"))).query(query), t).await
}

/// GET `B{path}?filter=...`.
pub async fn filtered(s: &TestServer, t: &TestTenant, path: &str, filter: &str) -> Answer {
    get(s, t, path, &[("filter", filter)]).await
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

/// Sends `method B{path}` with an optional JSON body.
pub async fn call(
    s: &TestServer,
    t: &TestTenant,
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> Answer {
    let mut builder = s.client.request(method, s.url(&format!("{B}{path}")));
    if let Some(body) = body {
        builder = builder.json(body);
    }
    send(builder, t).await
}

/// POSTs `body` to `B{path}` with the tenant's API key, asserts 200 and answers the body.
pub async fn post_ok(s: &TestServer, t: &TestTenant, path: &str, body: &Value) -> Value {
    let a = call(s, t, reqwest::Method::POST, path, Some(body)).await;
    assert_eq!(a.status, 200, "POST {B}{path}: {}", a.body);
    a.body
}

/// POSTs raw JSON text to `B{path}` with the tenant's API key, the answer left unread: for
/// bodies `json!` cannot write (numbers beyond f64, nesting past serde_json's limit) and
/// answers whose exact digits are checked in the text.
pub async fn post_raw(
    s: &TestServer,
    t: &TestTenant,
    path: &str,
    body: String,
) -> reqwest::Response {
    s.client
        .post(s.url(&format!("{B}{path}")))
        .header("X-Api-Key", &t.api_key)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .expect("request")
}

/// GET `B{path}` with one extra request header (`Prefer`, `If-None-Match`, ...).
pub async fn get_with(s: &TestServer, t: &TestTenant, path: &str, header: (&str, &str)) -> Answer {
    send(
        s.client
            .get(s.url(&format!("{B}{path}")))
            .header(header.0, header.1),
        t,
    )
    .await
}

/// Sends every refusal of `cases` (paths under `B`) and checks its status, its `{code, message}` shape, the
/// code that goes with the status (`404` -> `NOT_FOUND`) and its message; a failure names
/// the case.
pub async fn assert_refused(s: &TestServer, t: &TestTenant, cases: &[Refusal<'_>]) {
    for (method, path, body, status, needle) in cases {
        let a = call(s, t, method.clone(), path, body.as_ref()).await;
        let case = format!("{method} {path} {}", body.clone().unwrap_or_default());
        let (code, message) = a.error();
        check_refusal(&case, (a.status, &code, &message), *status, needle);
    }
}

/// Adds `count` accounts (ids `first_id`..) on bill cycle 1 to the tenant of `api_key`, each
/// with a Cloud Compute service (recurring price) started mid-October 2026 whose resource is
/// `<prefix>-<id>`, half of them paying automatically: a tenant whose bill runs take time.
/// Written through the domain's create functions in one transaction outside any request
/// (no surface creates services).
pub async fn add_billed_accounts(
    s: &TestServer,
    api_key: &str,
    first_id: i64,
    count: i64,
    prefix: &str,
) {
    add_billed_accounts_in(s, api_key, first_id, count, prefix, None).await;
}

/// [`add_billed_accounts`], the accounts in billing account category `category` (a ledger
/// posts the charge info of its categories' accounts only).
pub async fn add_billed_accounts_in(
    s: &TestServer,
    api_key: &str,
    first_id: i64,
    count: i64,
    prefix: &str,
    category: Option<i64>,
) {
    let credential = shared::web::Credential::ApiKey(api_key.to_string());
    let Some(shared::web::Identity::Tenant(tenant)) =
        s.state.identify(&credential).await.expect("identify")
    else {
        panic!("the key opens no tenant");
    };
    let (tz, prefix) = (tenant.tz, prefix.to_string());
    tenant
        .db
        .write(move |tx| {
            for n in 0..count {
                let id = first_id + n;
                let account = serde_json::from_value(serde_json::json!({
                    "id": id, "account_num": format!("{}-{id}", prefix.to_uppercase()),
                    "name": format!("{prefix} {id}"), "bill_cycle_id": 1,
                    "automatic_recurring_payment": n % 2 == 0, "start_date": "2026-10-01",
                    "billing_account_category_id": category,
                }))
                .expect("account");
                shared::domain::accounts::create_account(tx, &account, tz)?;
                let service = serde_json::from_value(serde_json::json!({
                    "id": id, "billing_account_id": id, "product_id": 1, "agreement_id": 1,
                    "start_date": "2026-10-15",
                    "resources": [{"identifier": format!("{prefix}-{id}")}],
                }))
                .expect("service");
                shared::domain::agreements::create_service(tx, &service, tz)?;
            }
            Ok(())
        })
        .await
        .expect("accounts");
}

/// Posts one usage event (2 hours, on 2026-11-21) to each of the resources
/// [`add_billed_accounts`] made (`<prefix>-<id>` for `count` ids from `first_id`), 50 per
/// bulk call over Surface B, asserting that none erred.
pub async fn post_one_event_each(
    s: &TestServer,
    api_key: &str,
    first_id: i64,
    count: i64,
    prefix: &str,
) {
    for chunk in (0..count).collect::<Vec<_>>().chunks(50) {
        let events: Vec<Value> = chunk
            .iter()
            .map(|n| {
                serde_json::json!({"service_resource_identifier": format!("{prefix}-{}", first_id + n),
                       "usage_uom": "HOUR", "usage_amount": 2,
                       "start_time": "2026-11-21T10:00:00Z"})
            })
            .collect();
        let r = s
            .client
            .post(s.url("/billing/2/usage-events/bulk"))
            .header("X-Api-Key", api_key)
            .json(&serde_json::json!({"mode": "FAIL_ON_EXISTING", "usage_events": events}))
            .send()
            .await
            .expect("post");
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["erred_events"], serde_json::json!([]), "{v}");
    }
}
