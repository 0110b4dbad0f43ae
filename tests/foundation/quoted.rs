//! Error messages quote a client's value by a bounded prefix (`shared::error::quoted`: 100
//! characters, `…` and the full length), never whole: a 1,000,000-character value in a body
//! answers a 400 whose message stays short, on the admin API and the surfaces.

use e2e::{error_body, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

/// The value every case sends: one million characters.
fn huge() -> String {
    "x".repeat(1_000_000)
}

/// Checks a `{code, message}` 400 whose message quotes the huge value by its prefix only.
async fn assert_short(case: &str, r: reqwest::Response) {
    let (status, code, message) = error_body(r).await;
    assert_eq!((status, code.as_str()), (400, "BAD_REQUEST"), "{case}");
    assert!(
        message.len() < 1000,
        "{case}: a message of {} bytes",
        message.len()
    );
    assert!(
        // (lower case: the fault method is quoted as read, upper-cased)
        message
            .to_lowercase()
            .contains(&format!("'{}…' (1000000 characters)", "x".repeat(100))),
        "{case}: {message}"
    );
}

#[tokio::test]
async fn a_megabyte_value_yields_a_short_message() {
    let s = TestServer::start().await;
    let t = s.create_tenant("quoted", "demo").await;
    let admin: [(&str, String, Value); 3] = [
        (
            "tenant time_zone",
            "/sandbox/v1/tenants".into(),
            json!({"name": "tz", "time_zone": huge()}),
        ),
        (
            "tenant seed",
            "/sandbox/v1/tenants".into(),
            json!({"name": "sd", "seed": huge()}),
        ),
        (
            "fault method",
            format!("/sandbox/v1/tenants/{}/faults", t.id),
            json!({"method": huge(), "path": "/*", "status": 500}),
        ),
    ];
    for (case, path, body) in admin {
        assert_short(case, s.admin_call(Method::POST, &path, Some(&body)).await).await;
    }
    let surfaces: [(&str, &str, Value); 3] = [
        (
            "collector operation name",
            "/revenue/3/collector-runs",
            json!({"type": "MANUAL", "collector_operations": [huge()],
                   "data_fetch_from_date": "2026-01-01", "data_fetch_to_date": "2026-02-01"}),
        ),
        (
            "ledger run_to_date",
            "/revenue/3/glruns",
            json!({"gl_run_mode_id": 1, "ledger_id": 1, "run_to_date": huge()}),
        ),
        (
            "bill batch invoice_date",
            "/billing/2/bill-batches",
            json!({"bill_batch_type": "adhoc", "name": "q", "invoice_date": huge()}),
        ),
    ];
    for (case, path, body) in surfaces {
        let r = s
            .client
            .post(s.url(path))
            .header("X-Api-Key", &t.api_key)
            .json(&body)
            .send()
            .await
            .expect("request");
        assert_short(case, r).await;
    }
}
