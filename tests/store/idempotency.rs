//! Issue 22, finding 1, over HTTP in S3 mode: a write whose log PUTs S3 holds past the write
//! deadline answers 503 "outcome unknown" naming the `Idempotency-Key` header; once the held
//! PUTs are through, retries with the same key never apply the write a second time.

use e2e::s3::{Gate, Moto};
use e2e::ADMIN_KEY;
use serde_json::{json, Value};
use shared::config::Config;
use shared::store::{S3Config, Store};
use shared::web::AppState;
use std::time::Duration;

/// A sandbox server over the S3 store `config`; answers its base URL and state.
async fn serve(config: &S3Config) -> (String, AppState, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, cfg) = (dir.path().to_path_buf(), config.clone());
    let store = tokio::task::spawn_blocking(move || Store::open_with(&path, Some(cfg)))
        .await
        .expect("join")
        .expect("open S3 store");
    let state = AppState::from_parts(store, Config::new(dir.path(), Some(ADMIN_KEY.to_string())));
    let base = e2e::listen(state.clone()).await;
    (base, state, dir)
}

/// POST /revenue/3/ledgers with `key`: status and body.
async fn post_ledger(base: &str, api_key: &str, key: &str) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}/revenue/3/ledgers"))
        .header("X-Api-Key", api_key)
        .header("Idempotency-Key", key)
        .json(&json!({"name": "Held", "billing_account_category_ids": [1]}))
        .send()
        .await
        .expect("post");
    let replayed = r.headers().contains_key("idempotent-replayed");
    let status = r.status().as_u16();
    let mut v: Value = r.json().await.expect("json");
    v["replayed"] = json!(replayed);
    (status, v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_outcome_was_unknown_is_applied_once_across_retries_with_its_key() {
    let moto = Moto::start();
    let direct = moto.bucket("idempotent");
    let gate = Gate::start(&moto);
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    gated.attempt_timeout = Duration::from_millis(300);
    gated.write_deadline = Duration::from_secs(4);
    let (base, state, _dir) = serve(&gated).await;
    let r = reqwest::Client::new()
        .post(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .json(&json!({"name": "held", "seed": "demo"}))
        .send()
        .await
        .expect("create tenant");
    assert_eq!(r.status(), 201);
    let tenant: Value = r.json().await.unwrap();
    let (id, api_key) = (
        tenant["id"].as_str().unwrap().to_string(),
        tenant["api_key"].as_str().unwrap().to_string(),
    );

    // Every log PUT, fences included, is held past the write deadline: the write cannot be
    // settled, and its answer says so, naming the header.
    gate.hold_log_puts(Some(Duration::from_secs(6)));
    let (status, first) = post_ledger(&base, &api_key, "held-1").await;
    gate.hold_log_puts(None);
    assert_eq!(status, 503, "{first}");
    let message = first["message"].as_str().unwrap();
    assert!(
        message.contains("may or may not") && message.contains("Idempotency-Key"),
        "{message}"
    );
    let held = tokio::task::spawn_blocking(move || {
        gate.wait_for_held(Duration::from_secs(30));
        gate
    })
    .await
    .expect("join");

    // The retry: the held PUT landed, and this process kept the write's result, so the first
    // answer is rendered and recorded (201, the ledger); had it been fenced, the retry would
    // apply the write now. Either way the ledger is there once, and a second retry replays.
    let (status, retry) = post_ledger(&base, &api_key, "held-1").await;
    let (again_status, again) = post_ledger(&base, &api_key, "held-1").await;
    let db = state.store.tenant_db(&id).expect("tenant");
    let count: i64 = db
        .read(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM ledgers WHERE name = 'Held'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(
        count, 1,
        "first {first}, retry {status} {retry}, again {again}"
    );
    assert_eq!(status, 201, "{retry}");
    assert_eq!(retry["name"], "Held", "{retry}");
    assert_eq!((again_status, &again["id"]), (201, &retry["id"]));
    assert_eq!(again["replayed"], true);
    // Every log PUT was held alike and the data PUT went first, so it landed before any
    // fence: the retry was the first answer, rendered from the kept result, not a second run.
    assert_eq!(retry["replayed"], true, "{retry}");
    eprintln!(
        "outcome unknown, then retries with the key: {status} then {again_status}; gate {:?}",
        held.counts()
    );
}
