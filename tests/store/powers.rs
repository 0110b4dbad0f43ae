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

/// A server over an S3 store whose journal uploads after `flush_ms`: its URL, its state (to
/// see its journal's uploads) and its data directory.
async fn serve(config: &S3Config, flush_ms: u64) -> (String, AppState, tempfile::TempDir) {
    serve_with(config, flush_ms, |_| {}).await
}

/// [`serve`], with the settings `tune` changes.
async fn serve_with(
    config: &S3Config,
    flush_ms: u64,
    tune: impl FnOnce(&mut Config),
) -> (String, AppState, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, cfg) = (dir.path().to_path_buf(), config.clone());
    let store = tokio::task::spawn_blocking(move || Store::open_with(&path, Some(cfg)))
        .await
        .expect("join")
        .expect("open S3 store");
    let mut settings = Config::new(dir.path(), Some(ADMIN_KEY.to_string()));
    settings.journal.flush_every = std::time::Duration::from_millis(flush_ms);
    tune(&mut settings);
    let state = AppState::from_parts(store, settings);
    let base = e2e::listen(state.clone()).await;
    (base, state, dir)
}

/// Waits (at most 30 s) until every journal upload the servers of `states` scheduled has run
/// (see `Journal::uploads_settled`): what a test then reads in the bucket stays so.
pub(crate) async fn uploads_settled(states: &[&AppState]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !states.iter().all(|s| s.powers.journal.uploads_settled()) {
        assert!(
            std::time::Instant::now() < deadline,
            "journal uploads still scheduled or running after 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
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
    let (a, state_a, _da) = serve(&config, 100).await;
    let (b, state_b, _db) = serve(&config, 100).await;
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
    // after the first entry it had not uploaded), here in two batches: the fault's, uploaded
    // before B's next request, and that request's.
    uploads_settled(&[&state_b]).await;
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
    // An upload of either environment in flight during the deletion has landed (and been
    // deleted again) or found the tenant gone.
    uploads_settled(&[&state_a, &state_b]).await;
    let left = moto.keys("powers", &format!("sandbox/tenants/{id}/"));
    let log = format!("sandbox/tenants/{id}/log/");
    assert!(
        !left.is_empty() && left.iter().all(|k| k.starts_with(&log)),
        "{left:?}"
    );
}

/// Before the journal bounds: 3,000 refused requests with 60 KB bodies left 182 MB of journal
/// batches in S3 and one read answered 3,000 entries. Here 400 of them against a 1 MiB
/// bound (the rule is the same at the default 16 MiB): the batches kept in S3 stay within
/// the bound plus the newest batch, a read through another environment (which holds none
/// of them in memory) answers at most the bound, a percent-encoded tenant id leaves no
/// object under its spelling, and nothing of the journal outlives the tenant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_in_s3_holds_its_bounds_and_nothing_outlives_the_tenant() {
    let moto = Moto::start();
    let config = moto.bucket("bounds");
    // Bodies of 60 KB (under the journal's 64 KiB body limit, so kept whole): 100 of them
    // are 6 MB, six times the bound.
    let bound = 1024 * 1024;
    let tuned = |flush_ms| serve_with(&config, flush_ms, |c| c.journal.max_bytes = bound);
    let (a, state_a, _da) = tuned(20).await;
    let (status, created) = admin(
        &a,
        Method::POST,
        "/sandbox/v1/tenants",
        Some(json!({"name": "bounds", "seed": "empty"})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let key = created["api_key"].as_str().unwrap().to_string();
    let client = reqwest::Client::new();
    let body = format!(r#"{{"mode": "x", "pad": "{}"}}"#, "x".repeat(60 * 1024));
    for _ in 0..100 {
        let r = client
            .post(format!("{a}/billing/2/usage-events/bulk"))
            .header("X-Api-Key", &key)
            .header("Content-Type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
    }
    let encoded: String = id.bytes().map(|b| format!("%{b:02X}")).collect();
    let (status, _) = admin(
        &a,
        Method::GET,
        &format!("/sandbox/v1/tenants/{encoded}/clock"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    // The last uploads and their pruning have run.
    uploads_settled(&[&state_a]).await;
    let journal = format!("sandbox/tenants/{id}/journal/");
    let objects = moto.objects("bounds", &journal);
    assert!(!objects.is_empty(), "A uploaded its batches");
    let stored: u64 = objects.iter().map(|(_, size)| size).sum();
    let newest = objects.iter().map(|(_, size)| *size).max().unwrap_or(0);
    println!(
        "100 requests of 60 KB: {} journal objects, {stored} bytes in S3 (bound {bound})",
        objects.len()
    );
    assert!(
        stored <= bound as u64 + newest,
        "{stored} bytes in {} objects",
        objects.len()
    );
    let everything = moto.keys("bounds", "sandbox/tenants/");
    assert!(
        everything.iter().all(|k| !k.contains('%')),
        "an object under an encoded spelling: {everything:?}"
    );

    // A read through another environment: only S3's batches, at most the bound.
    let (b, state_b, _db) = tuned(1000).await;
    let (status, entries) = admin(
        &b,
        Method::GET,
        &format!("/sandbox/v1/tenants/{id}/requests?page_size=100"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let entries = entries.as_array().unwrap();
    assert!(!entries.is_empty());
    assert!(
        entries
            .iter()
            .any(|e| e["path"] == format!("/sandbox/v1/tenants/{encoded}/clock")),
        "the encoded call is in the tenant's own journal"
    );
    let r = client
        .get(format!("{b}/sandbox/v1/tenants/{id}/requests?page_size=1"))
        .header("X-Admin-Key", ADMIN_KEY)
        .send()
        .await
        .unwrap();
    let total: usize = r.headers()["x-total-count"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        total * 60 * 1024 <= bound && total > 5,
        "{total} entries read"
    );

    // B holds a pending entry (uploaded after 1 s); the tenant is deleted through A before
    // that: B's uploader finds the tombstone in the tenant's log and uploads nothing, and
    // A's batches go with the tenant. Once B's upload has run (and any of A's), no journal
    // object outlives the tenant.
    let r = client
        .get(format!("{b}{B_PATH}"))
        .header("X-Api-Key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let (status, _) = admin(
        &a,
        Method::DELETE,
        &format!("/sandbox/v1/tenants/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 204);
    uploads_settled(&[&state_a, &state_b]).await;
    let left = moto.keys("bounds", &format!("sandbox/tenants/{id}/"));
    let log = format!("sandbox/tenants/{id}/log/");
    assert!(left.iter().all(|k| k.starts_with(&log)), "{left:?}");
}

/// A batch upload must not land after the tenant's deletion: an
/// environment journals an admin call about a tenant whose database it never opened (a
/// checkpoint listing reads the bucket only), and the tenant is deleted through another
/// environment before that entry's upload. The uploader cannot ask the tenant's log, so it
/// asks the registry; nothing of the journal outlives the tenant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_batch_of_a_tenant_never_opened_here_does_not_outlive_its_deletion() {
    let moto = Moto::start();
    let config = moto.bucket("fenced");
    let (a, state_a, _da) = serve(&config, 20).await;
    let (b, state_b, _db) = serve(&config, 1500).await;
    let (status, created) = admin(
        &a,
        Method::POST,
        "/sandbox/v1/tenants",
        Some(json!({"name": "fenced", "seed": "empty"})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let tenant = format!("/sandbox/v1/tenants/{id}");
    for _ in 0..3 {
        let (status, v) = admin(&b, Method::GET, &format!("{tenant}/checkpoints"), None).await;
        assert_eq!(status, 200, "{v}");
    }
    let (status, _) = admin(&a, Method::DELETE, &tenant, None).await;
    assert_eq!(status, 204);
    // B's flush interval passes: its upload runs after the deletion.
    uploads_settled(&[&state_a, &state_b]).await;
    let left = moto.keys("fenced", &format!("sandbox/tenants/{id}/"));
    let log = format!("sandbox/tenants/{id}/log/");
    assert!(
        left.iter().all(|k| k.starts_with(&log)),
        "left behind: {left:?}"
    );
}

/// POSTs a ledger named `name` (no name at all with `None`: a body the handler refuses
/// with 400 before any write) to Surface C at `base`.
async fn post_ledger(base: &str, key: &str, name: Option<&str>) -> reqwest::Response {
    let mut body = json!({"billing_account_category_ids": [1]});
    if let Some(name) = name {
        body["name"] = json!(name);
    }
    reqwest::Client::new()
        .post(format!("{base}/revenue/3/ledgers"))
        .header("X-Api-Key", key)
        .json(&body)
        .send()
        .await
        .expect("request")
}

/// A write request in S3 mode sends no GET for the fault rules: it is served on the premise
/// that none takes it, found on the local copy, and its write checks that premise inside its
/// own transaction (docs/storage.md, "A write request is one PUT"). So an environment whose
/// copy predates a rule set in another environment still applies the rule: a status rule
/// answers the write and nothing is applied; a latency rule delays it and the write is
/// applied once; a request that writes nothing (a body refused with 400) is answered by the
/// rule all the same, read on a current copy after its handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_set_elsewhere_takes_a_write_whose_copy_predates_it() {
    let moto = Moto::start();
    let config = moto.bucket("premise");
    let (a, _state_a, _da) = serve(&config, 100).await;
    let (b, _state_b, _db) = serve(&config, 100).await;
    let (status, created) = admin(
        &a,
        Method::POST,
        "/sandbox/v1/tenants",
        Some(json!({"name": "premise", "seed": "demo"})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let key = created["api_key"].as_str().unwrap().to_string();
    let faults = format!("/sandbox/v1/tenants/{id}/faults");
    let rule_of = |body: Value| {
        let (a, faults) = (a.clone(), faults.clone());
        async move {
            let (status, rule) = admin(&a, Method::POST, &faults, Some(body)).await;
            assert_eq!(status, 201, "{rule}");
            rule["id"].as_str().unwrap().to_string()
        }
    };
    let delete = |rule: String| {
        let (a, faults) = (a.clone(), faults.clone());
        async move {
            let (status, _) = admin(&a, Method::DELETE, &format!("{faults}/{rule}"), None).await;
            assert_eq!(status, 204);
        }
    };
    let fault_of = |r: &reqwest::Response| {
        r.headers()
            .get("x-sandbox-fault")
            .map(|v| v.to_str().unwrap().to_string())
    };

    // B opens the tenant and writes: its copy is current and holds no rule.
    assert_eq!(post_ledger(&b, &key, Some("first")).await.status(), 201);

    // A status rule set through A, which B's copy does not hold: B's write finds it in its
    // transaction, applies nothing, and the rule answers.
    let rule =
        rule_of(json!({"method": "POST", "path": "/revenue/3/ledgers", "status": 503})).await;
    let r = post_ledger(&b, &key, Some("faulted")).await;
    assert_eq!(
        (r.status().as_u16(), fault_of(&r)),
        (503, Some(rule.clone()))
    );
    delete(rule).await;
    // B's copy now holds the rule just deleted: its next write reads the rules on a current
    // copy first, as every request did before.
    assert_eq!(post_ledger(&b, &key, Some("second")).await.status(), 201);

    // A rule that only delays: B's write finds it, waits, and is served again from the start
    // on the rules read anew; applied once.
    let rule =
        rule_of(json!({"method": "POST", "path": "/revenue/3/ledgers", "latency_ms": 400})).await;
    let began = std::time::Instant::now();
    let r = post_ledger(&b, &key, Some("delayed")).await;
    assert_eq!(
        (r.status().as_u16(), fault_of(&r)),
        (201, Some(rule.clone()))
    );
    assert!(began.elapsed() >= std::time::Duration::from_millis(400));
    delete(rule).await;
    assert_eq!(post_ledger(&b, &key, Some("third")).await.status(), 201);

    // A request that writes nothing: the rule, read on a current copy after the handler,
    // answers it instead of the handler's 400.
    let rule =
        rule_of(json!({"method": "POST", "path": "/revenue/3/ledgers", "status": 502})).await;
    let r = post_ledger(&b, &key, None).await;
    assert_eq!((r.status().as_u16(), fault_of(&r)), (502, Some(rule)));

    let (store, _dir) = e2e::s3::open_store(&config);
    let ours: Vec<String> = super::restore_load::ledger_names(&store, &id)
        .into_iter()
        .filter(|n| ["first", "faulted", "second", "delayed", "third"].contains(&n.as_str()))
        .collect();
    assert_eq!(ours, ["first", "second", "delayed", "third"]);
}
