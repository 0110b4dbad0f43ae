//! The sandbox powers across environments on one bucket (two servers, each with its own
//! store and cache, as two Lambda environments): a clock set in one is read by the other, an
//! advance in the other runs the transitions both then serve, a fault rule created in one
//! answers in the other and its `times` is shared, and the request journal of one
//! environment is read through the other once uploaded; a clear hides every environment's
//! entries; deleting the tenant deletes its journal objects.

use e2e::s3::Moto;
use e2e::ADMIN_KEY;
use reqwest::Method;
use serde_json::{json, Value};
use shared::config::Config;
use shared::store::{S3Config, Store};
use shared::web::AppState;

const B_PATH: &str = "/billing/2/adjustment-categories/5";

/// A server over an S3 store whose journal uploads after `flush_ms`.
async fn serve(config: &S3Config, flush_ms: u64) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, cfg) = (dir.path().to_path_buf(), config.clone());
    let store = tokio::task::spawn_blocking(move || Store::open_with(&path, Some(cfg)))
        .await
        .expect("join")
        .expect("open S3 store");
    let mut settings = Config::new(dir.path(), Some(ADMIN_KEY.to_string()));
    settings.journal.flush_every = std::time::Duration::from_millis(flush_ms);
    let base = e2e::listen(AppState::from_parts(store, settings)).await;
    (base, dir)
}

async fn admin(base: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .header("X-Admin-Key", ADMIN_KEY);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let r = req.send().await.expect("admin request");
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn get_b(base: &str, key: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{base}{B_PATH}"))
        .header("X-Api-Key", key)
        .send()
        .await
        .expect("request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_faults_and_journal_reach_every_environment() {
    let moto = Moto::start();
    let config = moto.bucket("powers");
    let (a, _da) = serve(&config, 100).await;
    let (b, _db) = serve(&config, 100).await;
    let (status, created) = admin(
        &a,
        Method::POST,
        "/sandbox/v1/tenants",
        Some(json!({"name": "acme", "seed": "demo", "time_zone": "America/Chicago"})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let key = created["api_key"].as_str().unwrap().to_string();
    let tenant = format!("/sandbox/v1/tenants/{id}");

    // The clock: set in A, read and advanced in B, the transitions seen through A.
    let (status, _) = admin(
        &a,
        Method::PUT,
        &format!("{tenant}/clock"),
        Some(json!({"frozen_at": "2026-11-20T12:00:00Z"})),
    )
    .await;
    assert_eq!(status, 200);
    let (_, clock) = admin(&b, Method::GET, &format!("{tenant}/clock"), None).await;
    assert_eq!(
        (clock["mode"].as_str(), clock["now"].as_str()),
        (Some("frozen"), Some("2026-11-20T06:00:00-06:00")),
        "{clock}"
    );
    let (status, advanced) = admin(
        &b,
        Method::POST,
        &format!("{tenant}/clock/advance"),
        Some(json!({"to": "2026-12-01"})),
    )
    .await;
    assert_eq!(status, 200, "{advanced}");
    // Invoice 2 is paid automatically, invoice 4 goes past due, bill cycle 1 runs on the 1st.
    assert_eq!(
        advanced["transitions"].as_array().map(Vec::len),
        Some(3),
        "{advanced}"
    );
    let (_, clock) = admin(&a, Method::GET, &format!("{tenant}/clock"), None).await;
    assert_eq!(clock["now"], "2026-12-01T00:00:00-06:00");
    let basic = e2e::TestTenant {
        id: id.clone(),
        name: "acme".into(),
        api_key: key.clone(),
        username: created["basic"]["username"].as_str().unwrap().to_string(),
        password: created["basic"]["password"].as_str().unwrap().to_string(),
    }
    .basic_header();
    let account = reqwest::Client::new()
        .get(format!("{a}/t/s/r/1.28/billingAccounts/2"))
        .header("Authorization", basic)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(account.contains(r#"status="COLLECTION""#), "{account}");

    // A fault rule created in A answers in B; its one hit, taken in B, is spent in A too.
    let rule = json!({"path": B_PATH, "status": 503, "times": 1});
    let (status, created) = admin(&a, Method::POST, &format!("{tenant}/faults"), Some(rule)).await;
    assert_eq!(status, 201);
    let rule_id = created["id"].as_str().unwrap().to_string();
    let r = get_b(&b, &key).await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["x-sandbox-fault"], rule_id.as_str());
    let r = get_b(&a, &key).await;
    assert_eq!(r.status(), 200);
    let (_, rules) = admin(&a, Method::GET, &format!("{tenant}/faults"), None).await;
    assert_eq!(rules[0]["remaining"], 0);

    // The journal: B's requests are read through A once B uploaded them (a flush interval
    // after the first entry it had not uploaded).
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    assert_eq!(get_b(&b, &key).await.status(), 200);
    let mut seen = Vec::new();
    for _ in 0..50 {
        let (status, entries) = admin(
            &a,
            Method::GET,
            &format!("{tenant}/requests?path={B_PATH}"),
            None,
        )
        .await;
        assert_eq!(status, 200);
        seen = entries.as_array().unwrap().clone();
        if seen.len() >= 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let statuses: Vec<u64> = seen.iter().map(|e| e["status"].as_u64().unwrap()).collect();
    assert_eq!(
        statuses,
        [200, 200, 503],
        "newest first: B, A, then B's fault"
    );
    let environments: std::collections::BTreeSet<&str> = seen
        .iter()
        .map(|e| e["environment"].as_str().unwrap())
        .collect();
    assert_eq!(environments.len(), 2, "both environments' entries");
    assert_eq!(seen[2]["fault"], rule_id.as_str());

    // A clear through A hides B's entries too, even those B still holds in memory.
    let (status, _) = admin(&a, Method::DELETE, &format!("{tenant}/requests"), None).await;
    assert_eq!(status, 204);
    let (_, entries) = admin(
        &b,
        Method::GET,
        &format!("{tenant}/requests?path={B_PATH}"),
        None,
    )
    .await;
    assert_eq!(entries, json!([]));

    // Deleting the tenant deletes its journal objects with its other objects: a batch
    // uploaded by B and the clear marker go; only the log keys stay (as tombstones).
    assert_eq!(get_b(&b, &key).await.status(), 200);
    let journal = format!("sandbox/tenants/{id}/journal/");
    for _ in 0..50 {
        if !moto.keys("powers", &journal).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        !moto.keys("powers", &journal).is_empty(),
        "B uploaded a batch"
    );
    let (status, _) = admin(&a, Method::DELETE, &tenant, None).await;
    assert_eq!(status, 204);
    let left = moto.keys("powers", &format!("sandbox/tenants/{id}/"));
    let log = format!("sandbox/tenants/{id}/log/");
    assert!(
        !left.is_empty() && left.iter().all(|k| k.starts_with(&log)),
        "{left:?}"
    );
}
