//! Fault injection over HTTP: a rule answers matching requests of its tenant in the error
//! shape of each surface (XML fault on A, `{code, message}` on B and C) with the rule named
//! in `X-Sandbox-Fault`, `times` counts down, a latency-only rule delays and then serves,
//! probability draws are reproducible from the seed, admin requests are never faulted, other
//! tenants are untouched, and every bound is a clear 400.

use e2e::{error_body, TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const B_PATH: &str = "/billing/2/adjustment-categories/5";
const C_PATH: &str = "/revenue/3/collectors";
const A_PATH: &str = "/t/s/r/1.28/users/current";

/// Creates the fault rule `rule` on tenant `t` (201 asserted); answers its id.
pub(crate) async fn add_rule(s: &TestServer, t: &TestTenant, rule: Value) -> String {
    let r = s
        .admin_call(
            Method::POST,
            &format!("/sandbox/v1/tenants/{}/faults", t.id),
            Some(&rule),
        )
        .await;
    let status = r.status();
    let v: Value = r.json().await.expect("json");
    assert_eq!(status, 201, "{v}");
    v["id"].as_str().expect("id").to_string()
}

fn fault_of(r: &reqwest::Response) -> Option<String> {
    r.headers()
        .get("x-sandbox-fault")
        .map(|v| v.to_str().unwrap().to_string())
}

#[tokio::test]
async fn rules_answer_in_each_surface_shape_count_down_and_delay() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let other = s.create_tenant("other", "demo").await;
    let faults = format!("/sandbox/v1/tenants/{}/faults", t.id);

    // Surface B: twice 503, then served again.
    let b_rule = add_rule(
        &s,
        &t,
        json!({"method": "get", "path": "/billing/2/adjustment-categories/*", "status": 503, "times": 2}),
    )
    .await;
    assert!(b_rule.starts_with("flt_"), "{b_rule}");
    for _ in 0..2 {
        let r = s.get_with_key(B_PATH, &t.api_key).await;
        assert_eq!(fault_of(&r).as_deref(), Some(b_rule.as_str()));
        let (status, code, message) = error_body(r).await;
        assert_eq!((status, code.as_str()), (503, "SERVICE_UNAVAILABLE"));
        assert!(message.contains(&b_rule), "{message}");
    }
    let r = s.get_with_key(B_PATH, &t.api_key).await;
    assert_eq!((r.status().as_u16(), fault_of(&r)), (200, None));
    let rules: Value = s
        .admin_call(Method::GET, &faults, None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (rules[0]["times"].as_i64(), rules[0]["remaining"].as_i64()),
        (Some(2), Some(0))
    );
    // A POST to the same path is not matched by a GET rule (and the rule is spent anyway).

    // Surface A: an XML fault.
    let a_rule = add_rule(
        &s,
        &t,
        json!({"path": "/t/s/r/1.28/users/*", "status": 500}),
    )
    .await;
    let r = s.get_with_basic(A_PATH, &t).await;
    assert_eq!(r.status(), 500);
    assert_eq!(fault_of(&r).as_deref(), Some(a_rule.as_str()));
    assert_eq!(r.headers()["content-type"], "application/xml");
    let body = r.text().await.unwrap();
    assert!(body.contains("<fault") && body.contains(&a_rule), "{body}");

    // Surface C: {code, message}; another tenant is untouched.
    let c_rule = add_rule(
        &s,
        &t,
        json!({"method": "*", "path": "/revenue/3/*", "status": 429}),
    )
    .await;
    let r = s.get_with_key(C_PATH, &t.api_key).await;
    assert_eq!(fault_of(&r).as_deref(), Some(c_rule.as_str()));
    let (status, code, _) = error_body(r).await;
    assert_eq!((status, code.as_str()), (429, "TOO_MANY_REQUESTS"));
    assert_eq!(s.get_with_key(C_PATH, &other.api_key).await.status(), 200);

    // Admin requests are never faulted, even by a rule for every path.
    add_rule(&s, &t, json!({"path": "*", "status": 500})).await;
    let r = s.admin_call(Method::GET, &faults, None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap().as_array().unwrap().len(),
        4
    );

    // Delete everything, then a latency-only rule delays and serves.
    let r = s
        .admin_call(Method::DELETE, &format!("{faults}/{c_rule}"), None)
        .await;
    assert_eq!(r.status(), 204);
    let r = s.admin_call(Method::DELETE, &faults, None).await;
    assert_eq!(r.status(), 204);
    let rules: Value = s
        .admin_call(Method::GET, &faults, None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(rules, json!([]));
    let slow = add_rule(&s, &t, json!({"path": C_PATH, "latency_ms": 300})).await;
    let started = Instant::now();
    let r = s.get_with_key(C_PATH, &t.api_key).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(r.status(), 200);
    assert_eq!(fault_of(&r).as_deref(), Some(slow.as_str()));
    let got: Value = s
        .admin_call(Method::GET, &format!("{faults}/{slow}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (got["latency_ms"].as_u64(), got["status"].is_null()),
        (Some(300), true)
    );
}

#[tokio::test]
async fn probability_draws_are_reproducible_from_the_seed() {
    let s = TestServer::start().await;
    let t = s.create_tenant("dice", "demo").await;
    let rule = json!({"path": B_PATH, "status": 500, "probability": 0.5, "seed": 42});
    let expected: Vec<bool> = (0..40)
        .map(|n| shared::sandbox::faults::draw(42, n) < 0.5)
        .collect();
    assert!(expected.contains(&true) && expected.contains(&false));
    for run in 0..2 {
        let id = add_rule(&s, &t, rule.clone()).await;
        let mut hits = Vec::new();
        for _ in 0..40 {
            let r = s.get_with_key(B_PATH, &t.api_key).await;
            hits.push(r.status() == 500);
        }
        assert_eq!(hits, expected, "run {run}");
        let path = format!("/sandbox/v1/tenants/{}/faults/{id}", t.id);
        assert_eq!(
            s.admin_call(Method::DELETE, &path, None).await.status(),
            204
        );
    }
}

#[tokio::test]
async fn bad_rules_are_refused_with_a_clear_400() {
    let s = TestServer::start().await;
    let t = s.create_tenant("strict", "empty").await;
    let faults = format!("/sandbox/v1/tenants/{}/faults", t.id);
    let long = format!("/{}", "x".repeat(512));
    let rule = |extra: Value| {
        let mut base = json!({"path": "/billing/2/*", "status": 500});
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        Some(base)
    };
    s.assert_admin_refused(&[
        (
            Method::POST,
            &faults,
            rule(json!({"status": 399})),
            400,
            "status",
        ),
        (
            Method::POST,
            &faults,
            rule(json!({"status": 600})),
            400,
            "status",
        ),
        (
            Method::POST,
            &faults,
            rule(json!({"latency_ms": 20_001})),
            400,
            "latency_ms",
        ),
        (
            Method::POST,
            &faults,
            rule(json!({"probability": 1.5})),
            400,
            "probability",
        ),
        (
            Method::POST,
            &faults,
            rule(json!({"probability": -0.1})),
            400,
            "probability",
        ),
        (
            Method::POST,
            &faults,
            rule(json!({"times": 0})),
            400,
            "times",
        ),
        (
            Method::POST,
            &faults,
            rule(json!({"seed": 9_007_199_254_740_992u64})),
            400,
            "seed",
        ),
        (
            Method::POST,
            &faults,
            rule(json!({"method": "FETCH"})),
            400,
            "method",
        ),
        (
            Method::POST,
            &faults,
            rule(json!({"path": "billing"})),
            400,
            "path",
        ),
        (
            Method::POST,
            &faults,
            rule(json!({"path": long})),
            400,
            "path",
        ),
        (
            Method::POST,
            &faults,
            rule(json!({"colour": "red"})),
            400,
            "unknown field",
        ),
        (
            Method::POST,
            &faults,
            Some(json!({"path": "/x"})),
            400,
            "status",
        ),
        (
            Method::POST,
            &faults,
            Some(json!({"status": 500})),
            400,
            "path",
        ),
        (Method::GET, &format!("{faults}/flt_missing"), None, 404, ""),
        (
            Method::DELETE,
            &format!("{faults}/flt_missing"),
            None,
            404,
            "",
        ),
        (
            Method::GET,
            "/sandbox/v1/tenants/t_missing/faults",
            None,
            404,
            "",
        ),
    ])
    .await;
    for _ in 0..shared::sandbox::faults::MAX_RULES {
        add_rule(&s, &t, json!({"path": "/never", "status": 500})).await;
    }
    s.assert_admin_refused(&[(Method::POST, &faults, rule(json!({})), 400, "at most")])
        .await;
}
