//! Fixture documents in S3 mode (moto): a dry run writes no log entry; an apply is one log
//! entry; a checkpoint taken after it and restored after an update brings the applied data
//! back (the export says so); a fork
//! of that checkpoint holds the same data and rates usage on the document's SRIDs; a cold
//! environment on the same bucket (a restarted process: empty data directory) reads both
//! tenants as they were left.

use e2e::billing::{post_ok, USAGE_BULK};
use e2e::s3::{server, Moto};
use e2e::{TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};

/// `method /sandbox/v1{path}` with the admin key: status and JSON body.
async fn admin(s: &TestServer, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let r = s
        .admin_call(method, &format!("/sandbox/v1{path}"), body.as_ref())
        .await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn export(s: &TestServer, id: &str) -> Value {
    let (status, doc) = admin(s, Method::GET, &format!("/tenants/{id}/fixtures"), None).await;
    assert_eq!(status, 200, "{doc}");
    doc
}

/// The docs example's service rates a COUNT event on its second SRID.
async fn rates(s: &TestServer, api_key: &str) {
    let t = TestTenant {
        id: String::new(),
        name: String::new(),
        api_key: api_key.to_string(),
        username: String::new(),
        password: String::new(),
    };
    let body = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        {"start_time": "2026-11-05", "service_resource_identifier": "acme-msg-2",
         "usage_uom": "COUNT", "usage_amount": 1000}]});
    let v = post_ok(s, &t, USAGE_BULK, &body).await;
    assert_eq!(v["rated_events"][0]["total_charge"], json!(2), "{v}");
}

#[tokio::test]
async fn applied_documents_survive_checkpoints_forks_and_a_cold_start() {
    let moto = Moto::start();
    let config = moto.bucket("fixtures");
    let s = server(&config).await;
    let (status, t) = admin(
        &s,
        Method::POST,
        "/tenants",
        Some(json!({"name": "fx", "seed": "empty", "time_zone": "UTC",
                    "clock": {"frozen_at": "2026-11-06T12:00:00Z"}})),
    )
    .await;
    assert_eq!(status, 201, "{t}");
    let id = t["id"].as_str().unwrap().to_string();
    let log = |id: &str| {
        moto.keys("fixtures", &format!("sandbox/tenants/{id}/log/"))
            .len()
    };

    // A dry run writes no log entry (and nothing else: the tenant stays empty).
    let before = log(&id);
    let doc = e2e::fixtures_docs_example();
    let (status, body) = admin(
        &s,
        Method::POST,
        &format!("/tenants/{id}/fixtures?dry_run=true"),
        Some(doc.clone()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["created"]["services"], 1, "{body}");
    assert_eq!(log(&id), before, "a dry run logs nothing");
    assert_eq!(export(&s, &id).await, json!({}));

    // One apply, one log entry.
    let (status, body) = admin(
        &s,
        Method::POST,
        &format!("/tenants/{id}/fixtures"),
        Some(doc),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(log(&id), before + 1);
    let applied = export(&s, &id).await;
    assert_eq!(
        applied["services"][0]["resources"].as_array().map(Vec::len),
        Some(2)
    );

    let (status, cp) = admin(
        &s,
        Method::POST,
        &format!("/tenants/{id}/checkpoints"),
        Some(json!({"name": "applied"})),
    )
    .await;
    assert_eq!(status, 201, "{cp}");
    // An update after the checkpoint, then the restore: the applied data is back.
    let update = json!({"products": [{"id": 1, "name": "Changed"}], "reasons": [{"name": "new"}]});
    let (status, body) = admin(
        &s,
        Method::POST,
        &format!("/tenants/{id}/fixtures"),
        Some(update),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(export(&s, &id).await["products"][0]["name"], "Changed");
    let (status, body) = admin(
        &s,
        Method::POST,
        &format!("/tenants/{id}/restore"),
        Some(json!({"checkpoint": "applied"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(export(&s, &id).await, applied);

    // A fork of the checkpoint: the same document, usage rated on its SRIDs.
    let (status, fork) = admin(
        &s,
        Method::POST,
        "/tenants",
        Some(json!({"name": "fx-fork", "from": {"tenant": id, "checkpoint": "applied"}})),
    )
    .await;
    assert_eq!(status, 201, "{fork}");
    let fork_id = fork["id"].as_str().unwrap().to_string();
    assert_eq!(export(&s, &fork_id).await, applied);
    rates(&s, fork["api_key"].as_str().unwrap()).await;
    let forked = export(&s, &fork_id).await;
    assert_ne!(
        forked, applied,
        "the fork's usage moved its account's pending charges"
    );

    // A cold environment on the same bucket reads both from S3.
    let cold = server(&config).await;
    assert_eq!(export(&cold, &id).await, applied);
    assert_eq!(
        export(&cold, &fork_id).await["services"],
        applied["services"]
    );
    rates(&cold, fork["api_key"].as_str().unwrap()).await;
}
