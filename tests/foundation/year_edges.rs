//! The first and last instants of the date range (years 0001..9999, docs/limits.md) render as
//! four-digit RFC 3339 on every surface, whatever the tenant's zone: `9999-12-31T23:00Z` seen
//! from a zone east of UTC falls in year 10000 and `0001-01-01T00:00Z` seen from a zone west
//! of UTC in year 0000, so such an instant renders in UTC (`Z`) instead of as `+10000-...` or
//! `0000-...`; the rendered text is accepted back as input.

use e2e::{TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};

/// Invoice `number`, of `occurred_on`, on Surface A; answers the `occurredOn` it renders.
async fn legacy_invoice(s: &TestServer, t: &TestTenant, number: &str, occurred_on: &str) -> String {
    let body = format!(
        r#"<invoice invoiceNum="{number}" amount="1" occurredOn="{occurred_on}"><billingAccount eid="3"/></invoice>"#
    );
    let r = s
        .client
        .post(s.url("/t/s/r/1.28/invoices"))
        .header("Authorization", t.basic_header())
        .header("Content-Type", "application/xml")
        .body(body)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 201, "{occurred_on}");
    let created = r.text().await.expect("body");
    let eid = attr(&created, "eid");
    let r = s
        .get_with_basic(&format!("/t/s/r/1.28/invoices/{eid}"), t)
        .await;
    assert_eq!(r.status(), 200, "{occurred_on}");
    attr(&r.text().await.expect("body"), "occurredOn")
}

/// The first `name="..."` attribute of an XML text.
fn attr(text: &str, name: &str) -> String {
    let key = format!("{name}=\"");
    let from = text.find(&key).expect(text) + key.len();
    let to = text[from..].find('"').expect(text) + from;
    text[from..to].to_string()
}

/// Sends `method path` to a JSON surface with the tenant's key; answers status and JSON.
async fn json_call(
    s: &TestServer,
    t: &TestTenant,
    method: Method,
    path: &str,
    body: Value,
) -> (u16, Value) {
    let r = s
        .client
        .request(method, s.url(path))
        .header("X-Api-Key", &t.api_key)
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.expect("json"))
}

#[tokio::test]
async fn the_last_instants_render_with_four_digit_years_east_of_utc() {
    let s = TestServer::start().await;
    let t = s
        .create_tenant_in("east", "demo", "Pacific/Kiritimati")
        .await;
    // Surface A: an XML date attribute.
    let late = "9999-12-31T23:00:00Z";
    assert_eq!(legacy_invoice(&s, &t, "E-1", late).await, late);
    // ...and the text it rendered is accepted back.
    assert_eq!(legacy_invoice(&s, &t, "E-2", late).await, late);
    // Surface B: a bill batch's dates.
    let body = json!({"bill_batch_type": "adhoc", "name": "late", "invoice_date": "2026-05-31T12:00:00Z",
                      "invoice_due_date": late});
    let (status, batch) = json_call(&s, &t, Method::POST, "/billing/2/bill-batches", body).await;
    assert_eq!(status, 200, "{batch}");
    assert_eq!(batch["invoice_due_date"], late, "{batch}");
    assert_eq!(batch["invoice_date"], "2026-06-01T02:00:00+14:00");
    let filter = format!("/billing/2/bill-batches?filter=invoice_due_date%20eq%20'{late}'");
    let (status, found) = json_call(&s, &t, Method::GET, &filter, Value::Null).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found[0]["id"], batch["id"], "{found}");
    // Surface C: a ledger run to the last day ("no end") ends at the last stored instant.
    let run = json!({"gl_run_mode_id": 1, "ledger_id": 1, "run_to_date": "9999-12-31"});
    let (status, run) = json_call(&s, &t, Method::POST, "/revenue/3/glruns", run).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["run_to_date"], "9999-12-31T23:59:59.999Z", "{run}");
}

#[tokio::test]
async fn the_first_instants_render_with_four_digit_years_west_of_utc() {
    let s = TestServer::start().await;
    let t = s.create_tenant("west", "demo").await;
    let early = "0001-01-01T00:00:00Z";
    assert_eq!(legacy_invoice(&s, &t, "W-1", early).await, early);
    let body = json!({"bill_batch_type": "adhoc", "name": "early", "invoice_date": early});
    let (status, batch) = json_call(&s, &t, Method::POST, "/billing/2/bill-batches", body).await;
    assert_eq!(status, 200, "{batch}");
    assert_eq!(batch["invoice_date"], early, "{batch}");
}
