//! The S3-mode stale read seen once in a test run: after a fixtures apply, a rated
//! usage post succeeded but Surface A's `pendingChargesTotal` of the account stayed 0 until
//! a checkpoint was made. Tried here in rounds, on one environment and across two on one
//! bucket: apply (A), post (B, then A), read the account through Surface A on both, no
//! checkpoint in between; every read must show the charge at once, and a cold third
//! environment reads the same afterwards.

use e2e::billing::{post_ok, USAGE_BULK};
use e2e::legacy::{attr, read, ROOT};
use e2e::s3::{server, Moto};
use e2e::{TestServer, TestTenant};
use serde_json::{json, Value};

/// The account's `pendingChargesTotal` as `s` serves it on Surface A.
async fn pending(s: &TestServer, t: &TestTenant) -> rust_decimal::Decimal {
    let r = s
        .get_with_basic(&format!("{ROOT}/billingAccounts/1"), t)
        .await;
    let answer = read(r).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    attr(answer.el(), "pendingChargesTotal")
        .parse()
        .expect("a decimal")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_post_after_a_fixtures_apply_is_read_at_once_on_every_environment() {
    let moto = Moto::start();
    let config = moto.bucket("stale");
    let a = server(&config).await;
    let b = server(&config).await;
    let mut tenants = Vec::new();
    for round in 0..6 {
        let name = format!("stale{round}");
        let r = a
            .admin_call(
                reqwest::Method::POST,
                "/sandbox/v1/tenants",
                Some(&json!({"name": name, "seed": "empty", "time_zone": "UTC",
                             "clock": {"frozen_at": "2026-11-06T12:00:00Z"}})),
            )
            .await;
        assert_eq!(r.status(), 201);
        let v: Value = r.json().await.unwrap();
        let t = TestTenant {
            id: v["id"].as_str().unwrap().into(),
            name: name.clone(),
            api_key: v["api_key"].as_str().unwrap().into(),
            username: v["basic"]["username"].as_str().unwrap().into(),
            password: v["basic"]["password"].as_str().unwrap().into(),
        };
        let path = format!("/sandbox/v1/tenants/{}/fixtures", t.id);
        let doc = e2e::fixtures_docs_example();
        let r = a.admin_call(reqwest::Method::POST, &path, Some(&doc)).await;
        assert_eq!(r.status(), 200);
        // Read once before the post on both (each environment then holds a copy).
        if round % 2 == 0 {
            assert_eq!(pending(&a, &t).await, rust_decimal::Decimal::ZERO);
            assert_eq!(pending(&b, &t).await, rust_decimal::Decimal::ZERO);
        }
        let poster = if round % 3 == 0 { &a } else { &b };
        let body = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
            {"start_time": "2026-11-05", "service_resource_identifier": "acme-msg-2",
             "usage_uom": "COUNT", "usage_amount": 1000}]});
        let v = post_ok(poster, &t, USAGE_BULK, &body).await;
        assert_eq!(v["rated_events"][0]["total_charge"], json!(2), "{v}");
        let two = rust_decimal::Decimal::TWO;
        assert_eq!(pending(&a, &t).await, two, "round {round}, A");
        assert_eq!(pending(&b, &t).await, two, "round {round}, B");
        tenants.push(t);
    }
    // A cold environment (a restarted process) reads every tenant as it was left.
    let c = server(&config).await;
    for t in &tenants {
        assert_eq!(
            pending(&c, t).await,
            rust_decimal::Decimal::TWO,
            "{}",
            t.name
        );
    }
}
