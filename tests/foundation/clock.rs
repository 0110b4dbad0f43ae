//! The test clock over HTTP: a frozen clock stamps tenant data (a Surface A payment without
//! `occurredOn`), advancing runs the time-driven transitions in order (an agreement service
//! ending, one renewing, an unpaid invoice passing its due date moving its account to
//! COLLECTION, another paid automatically, a bill cycle's run), a running clock advanced runs ahead of real time, and every bad input is a
//! clear 400 (the clock only moves forward through an advance); a reset returns the clock to
//! real time and removes the fault rules.

use e2e::legacy::{attr, Legacy};
use e2e::{TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};

async fn admin_json(s: &TestServer, method: Method, path: &str, body: Option<Value>) -> Value {
    let r = s.admin_call(method.clone(), path, body.as_ref()).await;
    let status = r.status();
    let v: Value = r.json().await.expect("json");
    assert_eq!(status, 200, "{method} {path}: {v}");
    v
}

/// PUT a Surface B agreement service change.
async fn put_service(s: &TestServer, t: &TestTenant, id: i64, body: Value) {
    let r = s
        .client
        .put(s.url(&format!("/billing/2/agreement-services/{id}")))
        .header("X-Api-Key", &t.api_key)
        .json(&body)
        .send()
        .await
        .expect("put");
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
}

async fn service(s: &TestServer, t: &TestTenant, id: i64) -> Value {
    let r = s
        .get_with_key(&format!("/billing/2/agreement-services/{id}"), &t.api_key)
        .await;
    assert_eq!(r.status(), 200);
    r.json().await.expect("json")
}

#[tokio::test]
async fn a_frozen_clock_stamps_data_and_advancing_runs_the_transitions_in_order() {
    let a = Legacy::start("demo").await;
    let (s, t) = (&a.s, &a.t);
    let clock = format!("/sandbox/v1/tenants/{}/clock", t.id);
    let v = admin_json(s, Method::GET, &clock, None).await;
    assert_eq!(v["mode"], "real");

    let v = admin_json(
        s,
        Method::PUT,
        &clock,
        Some(json!({"frozen_at": "2026-11-20T12:00:00Z"})),
    )
    .await;
    assert_eq!(
        (v["mode"].as_str(), v["now"].as_str()),
        (Some("frozen"), Some("2026-11-20T06:00:00-06:00")),
        "{v}"
    );

    // Tenant data reads the clock: a payment without occurredOn is stamped with it.
    let paid = a
        .post(
            "payments",
            r#"<payment amount="5"><billingAccount eid="3"/><cashPayment/></payment>"#,
        )
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    let pid = attr(paid.el(), "eid").to_string();
    let p = a.get(&format!("payments/{pid}")).await;
    assert_eq!(attr(p.el(), "occurredOn"), "2026-11-20T06:00:00-06:00");

    // Service 2 ends on 2026-11-22, service 1 renews on 2026-11-25 (agreement of 12 months);
    // invoices 2 and 4 (accounts 1 and 2) are due on 2026-11-30, unpaid.
    put_service(
        s,
        t,
        2,
        json!({"end_date": "2026-11-22", "end_action": "END"}),
    )
    .await;
    put_service(
        s,
        t,
        1,
        json!({"end_date": "2026-11-25", "end_action": "RENEW"}),
    )
    .await;
    let v = admin_json(
        s,
        Method::POST,
        &format!("{clock}/advance"),
        Some(json!({"to": "2026-12-01"})),
    )
    .await;
    assert_eq!(v["now"], "2026-12-01T00:00:00-06:00", "{v}");
    assert_eq!(v["advanced_from"], "2026-11-20T06:00:00-06:00");
    let ran: Vec<(String, i64)> = v["transitions"]
        .as_array()
        .expect("transitions")
        .iter()
        .map(|x| {
            (
                x["kind"].as_str().unwrap().to_string(),
                x["id"].as_i64().unwrap(),
            )
        })
        .collect();
    // Account 1 pays automatically: its invoice is paid on its due date; account 2's goes
    // past due. The 1st is bill cycle 1's day (docs/billing-lifecycle.md).
    let expected = [
        ("agreement_service.ended", 2),
        ("agreement_service.renewed", 1),
        ("invoice.autopaid", 2),
        ("invoice.past_due", 4),
        ("bill_cycle.run", 1),
    ]
    .map(|(k, id)| (k.to_string(), id));
    assert_eq!(ran, expected, "{v}");
    assert_eq!(v["transitions"][0]["at"], "2026-11-22T00:00:00-06:00");

    // (An agreement service shows no status; the list filters on it.)
    let deactivated =
        e2e::billing::filtered(s, t, "/agreement-services", "status EQ 'DEACTIVATED'").await;
    assert!(deactivated.ids().contains(&2), "{:?}", deactivated.ids());
    let active = e2e::billing::filtered(s, t, "/agreement-services", "status EQ 'ACTIVE'").await;
    assert!(active.ids().contains(&1) && !active.ids().contains(&2));
    let renewed = service(s, t, 1).await;
    assert_eq!(
        renewed["end_date"], "2027-11-25T00:00:00-06:00",
        "{renewed}"
    );
    assert_eq!(renewed["renewed"], true);
    for (account, status) in [("1", "ACTIVE"), ("2", "COLLECTION")] {
        let acc = a.get(&format!("billingAccounts/{account}")).await;
        assert_eq!(attr(acc.el(), "status"), status, "account {account}");
    }
    // Invoices keep their status (the platform has no overdue status).
    let inv = a.get("invoices/4").await;
    assert_eq!(attr(inv.el(), "status"), "OPEN");
    let inv = a.get("invoices/2").await;
    assert_eq!(attr(inv.el(), "status"), "CLOSED");

    // Nothing runs twice: advancing again finds nothing due before service 1's new end.
    let v = admin_json(
        s,
        Method::POST,
        &format!("{clock}/advance"),
        Some(json!({"seconds": 86_400})),
    )
    .await;
    assert_eq!(v["transitions"], json!([]));
    assert_eq!(v["now"], "2026-12-02T00:00:00-06:00");

    // Back to real time.
    let v = admin_json(s, Method::PUT, &clock, Some(json!({"mode": "real"}))).await;
    assert_eq!(v["mode"], "real");
}

#[tokio::test]
async fn a_running_clock_advanced_runs_ahead_of_real_time() {
    let s = TestServer::start().await;
    let t = s.create_tenant("ahead", "empty").await;
    let clock = format!("/sandbox/v1/tenants/{}/clock", t.id);
    // To the millisecond, as the clock renders (a warm tenant answers within one).
    let before = chrono::DurationRound::duration_trunc(
        chrono::Utc::now(),
        chrono::Duration::milliseconds(1),
    )
    .unwrap();
    let v = admin_json(
        &s,
        Method::POST,
        &format!("{clock}/advance"),
        Some(json!({"seconds": 3 * 86_400})),
    )
    .await;
    assert_eq!(v["mode"], "offset", "{v}");
    assert_eq!(v["offset_seconds"], json!(3.0 * 86_400.0));
    let now = chrono::DateTime::parse_from_rfc3339(v["now"].as_str().unwrap()).unwrap();
    let ahead = now.with_timezone(&chrono::Utc) - before;
    assert!(
        ahead >= chrono::Duration::days(3)
            && ahead < chrono::Duration::days(3) + chrono::Duration::minutes(1),
        "{ahead}"
    );
    // Freezing without an instant freezes at the clock's reading.
    let v = admin_json(&s, Method::PUT, &clock, Some(json!({"mode": "frozen"}))).await;
    assert_eq!(v["mode"], "frozen");
    let frozen = chrono::DateTime::parse_from_rfc3339(v["frozen_at"].as_str().unwrap()).unwrap();
    assert!(frozen.with_timezone(&chrono::Utc) - before >= chrono::Duration::days(3));
}

#[tokio::test]
async fn bad_clock_input_is_a_clear_400() {
    let s = TestServer::start().await;
    let t = s.create_tenant("strict", "empty").await;
    let clock = format!("/sandbox/v1/tenants/{}/clock", t.id);
    let advance = format!("{clock}/advance");
    admin_json(
        &s,
        Method::PUT,
        &clock,
        Some(json!({"frozen_at": "2030-06-01T00:00:00Z"})),
    )
    .await;
    s.assert_admin_refused(&[
        (
            Method::POST,
            &advance,
            Some(json!({"seconds": 0})),
            400,
            "seconds",
        ),
        (
            Method::POST,
            &advance,
            Some(json!({"seconds": -5})),
            400,
            "forward",
        ),
        (
            Method::POST,
            &advance,
            Some(json!({"seconds": 400_000_000})),
            400,
            "seconds",
        ),
        (
            Method::POST,
            &advance,
            Some(json!({"to": "2030-05-01"})),
            400,
            "forward",
        ),
        (
            Method::POST,
            &advance,
            Some(json!({"to": "2030-06-01T00:00:00Z"})),
            400,
            "forward",
        ),
        (
            Method::POST,
            &advance,
            Some(json!({"to": "soon"})),
            400,
            "to",
        ),
        (Method::POST, &advance, Some(json!({})), 400, "exactly one"),
        (
            Method::POST,
            &advance,
            Some(json!({"seconds": 1, "to": "2031-01-01"})),
            400,
            "exactly one",
        ),
        (
            Method::POST,
            &advance,
            Some(json!({"days": 1})),
            400,
            "unknown field",
        ),
        (
            Method::POST,
            &advance,
            Some(json!({"to": "2045-01-01"})),
            400,
            "ten years",
        ),
        (
            Method::PUT,
            &clock,
            Some(json!({"frozen_at": "1990-01-01"})),
            400,
            "2000",
        ),
        (
            Method::PUT,
            &clock,
            Some(json!({"frozen_at": "2100-01-01T00:00:00Z"})),
            400,
            "2100",
        ),
        (
            Method::PUT,
            &clock,
            Some(json!({"mode": "sideways"})),
            400,
            "mode",
        ),
        (
            Method::PUT,
            &clock,
            Some(json!({"mode": "real", "frozen_at": "2030-01-01"})),
            400,
            "frozen_at",
        ),
        (Method::PUT, &clock, Some(json!({})), 400, "frozen_at"),
        (
            Method::GET,
            "/sandbox/v1/tenants/t_missing/clock",
            None,
            404,
            "",
        ),
        (
            Method::POST,
            "/sandbox/v1/tenants/t_missing/clock/advance",
            Some(json!({"seconds": 1})),
            404,
            "",
        ),
    ])
    .await;
    // Refusals changed nothing.
    let v = admin_json(&s, Method::GET, &clock, None).await;
    assert_eq!(v["frozen_at"], "2030-05-31T19:00:00-05:00", "{v}");
    let r = s.client.get(s.url(&clock)).send().await.unwrap();
    assert_eq!(r.status(), 401, "the admin key is required");
}

#[tokio::test]
async fn a_reset_returns_the_clock_to_real_time_and_removes_the_fault_rules() {
    let s = TestServer::start().await;
    let t = s.create_tenant("fresh", "demo").await;
    let tenant = format!("/sandbox/v1/tenants/{}", t.id);
    let frozen = json!({"frozen_at": "2031-01-01T00:00:00Z"});
    admin_json(&s, Method::PUT, &format!("{tenant}/clock"), Some(frozen)).await;
    let rule = json!({"path": "/billing/2/*", "status": 500});
    let r = s
        .admin_call(Method::POST, &format!("{tenant}/faults"), Some(&rule))
        .await;
    assert_eq!(r.status(), 201);
    let path = "/billing/2/adjustment-categories/5";
    assert_eq!(s.get_with_key(path, &t.api_key).await.status(), 500);
    admin_json(
        &s,
        Method::POST,
        &format!("{tenant}/reset"),
        Some(json!({"seed": "demo"})),
    )
    .await;
    let v = admin_json(&s, Method::GET, &format!("{tenant}/clock"), None).await;
    assert_eq!(v["mode"], "real");
    let rules = admin_json(&s, Method::GET, &format!("{tenant}/faults"), None).await;
    assert_eq!(rules, json!([]));
    assert_eq!(s.get_with_key(path, &t.api_key).await.status(), 200);
}

/// An account whose balance a run's invoice would take past 18 digits: the run
/// skips it (its run's detail and `error_msg` say so, it keeps its dates and balance), bills
/// the others, and the clock goes on, then and at the next run.
#[tokio::test]
async fn an_account_a_run_cannot_bill_is_skipped_and_the_clock_goes_on() {
    let a = Legacy::start("demo").await;
    let clock = format!("/sandbox/v1/tenants/{}/clock", a.t.id);
    let frozen = json!({"frozen_at": "2026-11-20T12:00:00Z"});
    admin_json(&a.s, Method::PUT, &clock, Some(frozen)).await;
    let balance = |r: &e2e::legacy::Answer| e2e::legacy::dec(r.el(), "balance");
    let before = a.get("billingAccounts/2").await;
    let near_max: rust_decimal::Decimal = "999999999999999999".parse().unwrap();
    let amount = near_max - balance(&before);
    let invoice = format!(
        r#"<invoice invoiceNum="HUGE-1" amount="{amount}" occurredOn="2026-11-20"><billingAccount eid="2"/></invoice>"#
    );
    let r = a.post("invoices", &invoice).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let full = a.get("billingAccounts/2").await;
    assert_eq!(balance(&full), near_max);
    let dates = |r: &e2e::legacy::Answer| {
        let at = |name| e2e::legacy::opt_attr(r.el(), name).map(str::to_string);
        (at("nextInvoiceDate"), at("billedThrough"))
    };

    let advance = format!("{clock}/advance");
    for to in ["2026-12-02", "2027-01-02"] {
        let r =
            a.s.admin_call(Method::POST, &advance, Some(&json!({ "to": to })))
                .await;
        let status = r.status();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, 200, "advance to {to}: {v}");
        let run = v["transitions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["kind"] == "bill_cycle.run" && t["id"] == 1)
            .unwrap_or_else(|| panic!("cycle 1 ran by {to}: {v}"));
        let detail = run["detail"].as_str().unwrap();
        assert!(
            detail.contains("skipped billing account 2: the balance of billing account 2"),
            "{detail}"
        );
        let after = a.get("billingAccounts/2").await;
        assert_eq!(balance(&after), near_max, "{to}");
        assert_eq!(dates(&after), dates(&full), "{to}");
    }
    // The runs record the skip in their error_msg (Surface B's bill batch run, the export).
    let r =
        a.s.admin_call(
            Method::GET,
            &format!("/sandbox/v1/tenants/{}/fixtures", a.t.id),
            None,
        )
        .await;
    let doc: Value = r.json().await.unwrap();
    let noted = doc["bill_batch_runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["error_msg"]
                .as_str()
                .is_some_and(|m| m.contains("skipped billing account 2"))
        })
        .count();
    assert_eq!(noted, 2, "{}", doc["bill_batch_runs"]);
}
