//! The tenant's billing policy through the admin API (`GET`/`PUT
//! /sandbox/v1/tenants/{id}/policy`) and the fixture document's `policy` member: a new tenant
//! reads the defaults (today's behaviour), a partial PUT changes only what it names, a value
//! outside its set is a 400 naming the member and the allowed values that changes nothing,
//! a checkpoint and restore carry it and a reset clears it, and a policy set by a document
//! exports and loads back.

use super::fixtures_export::{create_from, export};
use e2e::{TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};

/// `method .../policy` with `body`: status and JSON answer.
async fn policy(
    s: &TestServer,
    t: &TestTenant,
    method: Method,
    body: Option<&Value>,
) -> (u16, Value) {
    let path = format!("/sandbox/v1/tenants/{}/policy", t.id);
    let r = s.admin_call(method, &path, body).await;
    let status = r.status().as_u16();
    (status, r.json().await.expect("json"))
}

fn defaults() -> Value {
    json!({
        "recurring_timing": "ARREARS",
        "proration": "BY_DAY",
        "payment_term_days": 30,
        "usage_tiers": "PER_EVENT",
        "default_agreement_months": 12,
        "runs": "AT_ONCE",
        "autopay_retry_days": []
    })
}

#[tokio::test]
async fn a_partial_put_changes_what_it_names_and_get_reads_it_back() {
    let s = TestServer::start().await;
    let t = s.create_tenant("policy-rt", "empty").await;
    let (status, v) = policy(&s, &t, Method::GET, None).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v, defaults());

    let change = json!({"proration": "NONE", "payment_term_days": 15,
                        "autopay_retry_days": [1, 3, 7]});
    let (status, v) = policy(&s, &t, Method::PUT, Some(&change)).await;
    assert_eq!(status, 200, "{v}");
    let mut want = defaults();
    want["proration"] = json!("NONE");
    want["payment_term_days"] = json!(15);
    want["autopay_retry_days"] = json!([1, 3, 7]);
    assert_eq!(v, want);
    let more = json!({"default_agreement_months": 6});
    let (status, v) = policy(&s, &t, Method::PUT, Some(&more)).await;
    assert_eq!(status, 200, "{v}");
    want["default_agreement_months"] = json!(6);
    assert_eq!(v, want);
    // Every platform value is billed by (docs/billing-lifecycle.md): in advance, cumulative
    // tiers and runs with the clock taken, and set back.
    let all =
        json!({"recurring_timing": "ADVANCE", "usage_tiers": "CUMULATIVE", "runs": "WITH_CLOCK"});
    let (status, v) = policy(&s, &t, Method::PUT, Some(&all)).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (&v["recurring_timing"], &v["usage_tiers"], &v["runs"]),
        (
            &json!("ADVANCE"),
            &json!("CUMULATIVE"),
            &json!("WITH_CLOCK")
        )
    );
    let back =
        json!({"recurring_timing": "ARREARS", "usage_tiers": "PER_EVENT", "runs": "AT_ONCE"});
    assert_eq!(policy(&s, &t, Method::PUT, Some(&back)).await.0, 200);
    let (_, read) = policy(&s, &t, Method::GET, None).await;
    assert_eq!(read, want);

    // A checkpoint keeps it and a restore brings it back.
    let base = format!("/sandbox/v1/tenants/{}", t.id);
    let r = s
        .admin_call(
            Method::POST,
            &format!("{base}/checkpoints"),
            Some(&json!({"name": "with-policy"})),
        )
        .await;
    assert_eq!(r.status(), 201);
    let other = json!({"usage_tiers": "PER_EVENT", "payment_term_days": 0});
    assert_eq!(policy(&s, &t, Method::PUT, Some(&other)).await.0, 200);
    let r = s
        .admin_call(
            Method::POST,
            &format!("{base}/restore"),
            Some(&json!({"checkpoint": "with-policy"})),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(policy(&s, &t, Method::GET, None).await.1, want);

    // A reset clears it with the rest of the tenant's data.
    let r = s
        .admin_call(
            Method::POST,
            &format!("/sandbox/v1/tenants/{}/reset", t.id),
            Some(&json!({"seed": "empty"})),
        )
        .await;
    assert_eq!(r.status(), 200);
    let (_, read) = policy(&s, &t, Method::GET, None).await;
    assert_eq!(read, defaults());

    let (status, _) = policy(
        &s,
        &TestTenant {
            id: "t_nobody".into(),
            ..t.clone()
        },
        Method::GET,
        None,
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_value_outside_its_set_is_a_400_naming_it_and_changes_nothing() {
    let s = TestServer::start().await;
    let t = s.create_tenant("policy-bad", "empty").await;
    let first = json!({"payment_term_days": 45});
    assert_eq!(policy(&s, &t, Method::PUT, Some(&first)).await.0, 200);
    for (body, message) in [
        (
            // A good member beside a bad one: neither is written.
            json!({"payment_term_days": 10, "recurring_timing": "advance"}),
            "recurring_timing: 'advance' is not one of ARREARS, ADVANCE",
        ),
        (
            json!({"proration": "HOURLY"}),
            "proration: 'HOURLY' is not one of BY_DAY, NONE",
        ),
        (
            json!({"usage_tiers": "TIERED"}),
            "usage_tiers: 'TIERED' is not one of PER_EVENT, CUMULATIVE",
        ),
        (
            json!({"runs": "LATER"}),
            "runs: 'LATER' is not one of AT_ONCE, WITH_CLOCK",
        ),
        (
            json!({"payment_term_days": 366}),
            "payment_term_days: 366 is not one of 0 to 365",
        ),
        (
            json!({"default_agreement_months": 0}),
            "default_agreement_months: 0 is not one of 1 to 120",
        ),
        (
            json!({"autopay_retry_days": [2, 1]}),
            "autopay_retry_days[1]: 1 is not after 2",
        ),
        (
            json!({"autopay_retry_days": [0]}),
            "autopay_retry_days[0]: 0 is not one of 1 to 365",
        ),
        (json!({"net_days": 10}), "unknown field"),
        (json!({"payment_term_days": "15"}), "invalid type"),
    ] {
        let (status, v) = policy(&s, &t, Method::PUT, Some(&body)).await;
        assert_eq!(status, 400, "{body}: {v}");
        assert_eq!(v["code"], "BAD_REQUEST", "{body}: {v}");
        let got = v["message"].as_str().unwrap_or_default();
        assert!(got.contains(message), "{body}: {got}");
    }
    let (_, read) = policy(&s, &t, Method::GET, None).await;
    let mut want = defaults();
    want["payment_term_days"] = json!(45);
    assert_eq!(read, want);
}

#[tokio::test]
async fn a_documents_policy_is_applied_exported_and_loads_back() {
    let s = TestServer::start().await;
    let doc = json!({
        "policy": {"proration": "NONE", "default_agreement_months": 1},
        "products": [{"id": 1, "name": "Compute"}]
    });
    let a = create_from(&s, "policy-doc", "UTC", &doc).await;
    let (_, read) = policy(&s, &a, Method::GET, None).await;
    assert_eq!(read["proration"], "NONE");
    assert_eq!(read["default_agreement_months"], 1);
    assert_eq!(read["payment_term_days"], 30);
    // The export holds what differs from the default, and loads back as the same tenant.
    let exported = export(&s, &a).await;
    assert_eq!(
        exported["policy"],
        json!({"proration": "NONE", "default_agreement_months": 1})
    );
    let b = create_from(&s, "policy-copy", "UTC", &exported).await;
    assert_eq!(export(&s, &b).await, exported);
    assert_eq!(policy(&s, &b, Method::GET, None).await.1, read);
    // A tenant at the defaults exports no policy.
    let plain = s.create_tenant("policy-plain", "empty").await;
    assert!(export(&s, &plain).await.get("policy").is_none());

    // Applied to an existing tenant: counted as updated; a dry run changes nothing.
    let path = format!("/sandbox/v1/tenants/{}/fixtures", plain.id);
    let change = json!({"policy": {"payment_term_days": 15}});
    let r = s
        .admin_call(Method::POST, &format!("{path}?dry_run=true"), Some(&change))
        .await;
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["updated"], json!({"policy": 1}), "{v}");
    assert_eq!(policy(&s, &plain, Method::GET, None).await.1, defaults());
    let r = s.admin_call(Method::POST, &path, Some(&change)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        policy(&s, &plain, Method::GET, None).await.1["payment_term_days"],
        15
    );
    // A value outside its set: the document's JSON path and the allowed values; nothing.
    let bad = json!({"policy": {"usage_tiers": "per_event"}, "products": [{"name": "X"}]});
    let r = s.admin_call(Method::POST, &path, Some(&bad)).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.expect("json");
    assert_eq!(
        v["message"],
        "policy.usage_tiers: 'per_event' is not one of PER_EVENT, CUMULATIVE"
    );
    assert!(export(&s, &plain).await.get("products").is_none());
}
