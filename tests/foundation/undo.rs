//! Undoing clock advances over HTTP on the local server: each advance keeps an automatic
//! checkpoint of the tenant just before it, and `POST .../clock/undo` restores the newest:
//! data (the whole fixture export) and clock of the moment before that advance, writes made
//! after it gone with it, ids never given out again; one advance at a time, the last three;
//! beyond them, or with none, a 409 in the admin shape that changes nothing. A keyed undo
//! retried is replayed, not run again. Automatic checkpoints are not listed among the
//! tenant's checkpoints; a checkpoint restore brings back the undo list of its moment, and a
//! fork cannot undo with its source's automatic checkpoints. (S3 mode: tests/store/undo.rs.)

use e2e::{TestServer, TestTenant, ADMIN_KEY};
use reqwest::Method;
use serde_json::{json, Value};

/// A Surface B resource the demo fills with 2 rows and a POST adds to.
const RELATIONS: &str = "/billing/2/agreement-services/3/true-up-charge-type-relations";

async fn call(s: &TestServer, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let r = s.admin_call(method, path, body.as_ref()).await;
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn ok(s: &TestServer, method: Method, path: &str, body: Option<Value>) -> Value {
    let (status, v) = call(s, method.clone(), path, body).await;
    assert_eq!(status, 200, "{method} {path}: {v}");
    v
}

/// Adds a relation of charge type `kind` (one per type); answers its id.
async fn add_relation(s: &TestServer, t: &TestTenant, kind: &str) -> i64 {
    let r = s
        .client
        .post(s.url(RELATIONS))
        .header("X-Api-Key", &t.api_key)
        .json(&json!({ "true_up_charge_type": kind }))
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.expect("json");
    v["id"].as_str().and_then(|id| id.parse().ok()).expect("id")
}

/// The ids of the relations.
async fn relations(s: &TestServer, t: &TestTenant) -> Vec<i64> {
    let v: Value = s
        .get_with_key(RELATIONS, &t.api_key)
        .await
        .json()
        .await
        .expect("json");
    v.as_array()
        .expect("a list")
        .iter()
        .filter_map(|r| r["id"].as_str()?.parse().ok())
        .collect()
}

/// The tenant's data as a fixture document (every record of every kind).
async fn export(s: &TestServer, t: &TestTenant) -> Value {
    ok(
        s,
        Method::GET,
        &format!("/sandbox/v1/tenants/{}/fixtures", t.id),
        None,
    )
    .await
}

async fn advance(s: &TestServer, t: &TestTenant, body: Value) -> Value {
    let path = format!("/sandbox/v1/tenants/{}/clock/advance", t.id);
    ok(s, Method::POST, &path, Some(body)).await
}

async fn undo(s: &TestServer, t: &TestTenant) -> (u16, Value) {
    let path = format!("/sandbox/v1/tenants/{}/clock/undo", t.id);
    call(s, Method::POST, &path, None).await
}

async fn now(s: &TestServer, t: &TestTenant) -> String {
    let path = format!("/sandbox/v1/tenants/{}/clock", t.id);
    let v = ok(s, Method::GET, &path, None).await;
    v["now"].as_str().expect("now").to_string()
}

/// A frozen demo tenant at 2026-11-20 06:00 Chicago time (the clock test's moment: invoices
/// fall due on the 30th, bill cycle 1 runs on the 1st).
async fn frozen_demo(s: &TestServer, name: &str) -> TestTenant {
    let t = s.create_tenant(name, "demo").await;
    let path = format!("/sandbox/v1/tenants/{}/clock", t.id);
    let body = json!({"frozen_at": "2026-11-20T12:00:00Z"});
    ok(s, Method::PUT, &path, Some(body)).await;
    t
}

fn kinds(advanced: &Value) -> Vec<&str> {
    advanced["transitions"]
        .as_array()
        .expect("transitions")
        .iter()
        .filter_map(|x| x["kind"].as_str())
        .collect()
}

#[tokio::test]
async fn undo_steps_back_one_advance_at_a_time_with_data_clock_and_unique_ids() {
    let s = TestServer::start().await;
    let t = frozen_demo(&s, "undo").await;

    // Nothing to undo yet: 409 in the admin shape.
    let (status, v) = undo(&s, &t).await;
    assert_eq!((status, v["code"].as_str()), (409, Some("CONFLICT")), "{v}");
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("no clock advance to undo")),
        "{v}"
    );

    advance(&s, &t, json!({"to": "2026-11-23"})).await;
    let r1 = add_relation(&s, &t, "UNDO_1").await;
    let (after_first, clock_first) = (export(&s, &t).await, now(&s, &t).await);
    assert_eq!(clock_first, "2026-11-23T00:00:00-06:00");

    let second = advance(&s, &t, json!({"to": "2026-12-02"})).await;
    assert!(kinds(&second).contains(&"bill_cycle.run"), "{second}");
    let r2 = add_relation(&s, &t, "UNDO_2").await;
    let after_second = export(&s, &t).await;
    assert_ne!(after_second, after_first, "the second advance billed");

    advance(&s, &t, json!({"seconds": 86_400})).await;
    // A write after the third advance goes with it.
    let r3 = add_relation(&s, &t, "UNDO_3").await;

    let (status, v) = undo(&s, &t).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["now"], "2026-12-02T00:00:00-06:00", "{v}");
    assert_eq!(v["mode"], "frozen");
    assert_eq!(v["undone"]["advanced_from"], "2026-12-02T00:00:00-06:00");
    assert_eq!(v["undone"]["advanced_to"], "2026-12-03T00:00:00-06:00");
    assert_eq!(v["undo_left"], 2, "{v}");
    assert_eq!(export(&s, &t).await, after_second);
    assert!(!relations(&s, &t).await.contains(&r3));

    // Advance twice, undo once: the data and the clock of after the first advance.
    let (status, v) = undo(&s, &t).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["now"], clock_first.as_str(), "{v}");
    assert_eq!(v["undo_left"], 1, "{v}");
    assert_eq!(now(&s, &t).await, clock_first);
    assert_eq!(
        export(&s, &t).await,
        after_first,
        "the data of after the first advance"
    );
    let ids = relations(&s, &t).await;
    assert!(ids.contains(&r1) && !ids.contains(&r2), "{ids:?}");
    // Ids undone are never given out again.
    let r4 = add_relation(&s, &t, "UNDO_4").await;
    assert!(
        r4 > r3,
        "id {r4} after the undo; {r3} was given out before it"
    );

    // A keyed undo retried is replayed, not run again.
    let path = format!("/sandbox/v1/tenants/{}/clock/undo", t.id);
    let keyed = || {
        s.client
            .post(s.url(&path))
            .header("X-Admin-Key", ADMIN_KEY)
            .header("Idempotency-Key", "undo-1")
    };
    let r = keyed().send().await.expect("undo");
    assert_eq!(r.status(), 200);
    let once: Value = r.json().await.expect("json");
    assert_eq!(once["now"], "2026-11-20T06:00:00-06:00", "{once}");
    assert_eq!(once["undo_left"], 0);
    let r = keyed().send().await.expect("undo again");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()
            .get("Idempotent-Replayed")
            .and_then(|h| h.to_str().ok()),
        Some("true")
    );
    assert_eq!(r.json::<Value>().await.expect("json"), once);
    assert!(!relations(&s, &t).await.contains(&r1));

    let (status, v) = undo(&s, &t).await;
    assert_eq!((status, v["code"].as_str()), (409, Some("CONFLICT")), "{v}");
    assert_eq!(now(&s, &t).await, "2026-11-20T06:00:00-06:00");
}

#[tokio::test]
async fn only_the_last_three_advances_are_kept_and_not_as_checkpoints() {
    let s = TestServer::start().await;
    let t = frozen_demo(&s, "undo-kept").await;
    for _ in 0..5 {
        advance(&s, &t, json!({"seconds": 3600})).await;
    }
    // The automatic checkpoints are files under the tenant's place: the last three.
    let dir = s
        .state
        .store
        .data_dir()
        .join("tenants")
        .join(&t.id)
        .join("undo");
    let images: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| Some(e.ok()?.file_name())).collect())
        .unwrap_or_default();
    assert_eq!(images.len(), 3, "{images:?}");
    let checkpoints = ok(
        &s,
        Method::GET,
        &format!("/sandbox/v1/tenants/{}/checkpoints", t.id),
        None,
    )
    .await;
    assert_eq!(
        checkpoints,
        json!([]),
        "automatic checkpoints are not listed"
    );

    for left in [2, 1, 0] {
        let (status, v) = undo(&s, &t).await;
        assert_eq!((status, v["undo_left"].as_i64()), (200, Some(left)), "{v}");
    }
    let (status, v) = undo(&s, &t).await;
    assert_eq!((status, v["code"].as_str()), (409, Some("CONFLICT")), "{v}");
    // Where the third undo left it: after the first two advances.
    assert_eq!(now(&s, &t).await, "2026-11-20T08:00:00-06:00");
}

#[tokio::test]
async fn a_restore_brings_back_its_moments_undo_list_and_a_fork_has_none_of_its_sources() {
    let s = TestServer::start().await;
    let t = frozen_demo(&s, "undo-restore").await;
    let base = format!("/sandbox/v1/tenants/{}", t.id);
    advance(&s, &t, json!({"seconds": 3600})).await;
    let (status, v) = call(
        &s,
        Method::POST,
        &format!("{base}/checkpoints"),
        Some(json!({"name": "after-one"})),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    advance(&s, &t, json!({"seconds": 3600})).await;
    let v = ok(
        &s,
        Method::POST,
        &format!("{base}/restore"),
        Some(json!({"checkpoint": "after-one"})),
    )
    .await;
    assert_eq!(v["checkpoint"]["name"], "after-one");
    // The checkpoint's moment had one advance to undo, whose automatic checkpoint is kept.
    let (status, v) = undo(&s, &t).await;
    assert_eq!(
        (status, v["now"].as_str()),
        (200, Some("2026-11-20T06:00:00-06:00")),
        "{v}"
    );

    // A fork starts with its source's list, but the source's automatic checkpoints are not
    // its own: nothing to undo.
    advance(&s, &t, json!({"seconds": 3600})).await;
    let (status, v) = call(
        &s,
        Method::POST,
        &format!("{base}/checkpoints"),
        Some(json!({"name": "for-fork"})),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let fork = s
        .create_tenant_with(
            json!({"name": "undo-fork", "from": {"tenant": t.id, "checkpoint": "for-fork"}}),
        )
        .await;
    let (status, v) = undo(&s, &fork).await;
    assert_eq!((status, v["code"].as_str()), (409, Some("CONFLICT")), "{v}");
    assert_eq!(now(&s, &fork).await, "2026-11-20T07:00:00-06:00");
}
