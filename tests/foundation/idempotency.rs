//! The `Idempotency-Key` header over HTTP: a retried write is replayed
//! on each surface (same status and body, `Idempotent-Replayed: true`) and stored once; the
//! same key with another body is a 422 in the surface's shape; a retry while the first is in
//! flight is a 409; a key expires after 24 h of the tenant clock; a refused request stores
//! nothing; a malformed key is a 400. The S3 "outcome unknown" case is in tests/store.

use crate::faults::add_rule;
use e2e::{TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

/// Sends `method path` as tenant `t` of the path's surface (A: Basic and XML; B, C: the API
/// key and JSON) with `key` as its Idempotency-Key.
async fn send(
    s: &TestServer,
    t: &TestTenant,
    method: Method,
    path: &str,
    body: &str,
    key: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut req = s.client.request(method, s.url(path)).body(body.to_string());
    req = if path.starts_with("/t/s/r/") {
        req.header("Authorization", t.basic_header())
            .header("Content-Type", "application/xml")
    } else {
        req.header("X-Api-Key", &t.api_key)
            .header("Content-Type", "application/json")
    };
    if let Some(key) = key {
        req = req.header("Idempotency-Key", key);
    }
    let r = req.send().await.expect("request");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.text().await.expect("body"))
}

fn replayed(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get("idempotent-replayed")
        .is_some_and(|v| v == "true")
}

/// Rows of `table` whose `column` is `value`, read from the tenant's database.
async fn count(s: &TestServer, t: &TestTenant, table: &str, column: &str, value: &str) -> i64 {
    let db = s.state.store.tenant_db(&t.id).expect("tenant db");
    let sql = format!("SELECT count(*) FROM {table} WHERE {column} = ?1");
    let value = value.to_string();
    db.read(move |c| Ok(c.query_row(&sql, [&value], |r| r.get(0))?))
        .await
        .expect("count")
}

const LEDGERS: &str = "/revenue/3/ledgers";

fn ledger(name: &str) -> String {
    json!({"name": name, "billing_account_category_ids": [1]}).to_string()
}

#[tokio::test]
async fn a_retried_write_is_replayed_once_on_each_surface() {
    let s = TestServer::start().await;
    let t = s.create_tenant("idem", "demo").await;

    // Surface B: a bulk usage post, replayed (the event pair rule would answer it erred).
    let events = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        {"service_resource_identifier": "srv-compute-0001", "usage_uom": "HOUR", "usage_amount": 3,
         "start_time": "2026-02-01", "reference_id": "idem-b", "sequence_id": "1"}]})
    .to_string();
    let bulk = "/billing/2/usage-events/bulk";
    let first = send(&s, &t, Method::POST, bulk, &events, Some("b-1")).await;
    assert!(first.0 < 300, "{}", first.2);
    assert!(!replayed(&first.1));
    let v: Value = serde_json::from_str(&first.2).unwrap();
    assert_eq!(v["rated_events"].as_array().map(Vec::len), Some(1), "{v}");
    let again = send(&s, &t, Method::POST, bulk, &events, Some("b-1")).await;
    assert_eq!((again.0, &again.2), (first.0, &first.2));
    assert!(replayed(&again.1));
    assert_eq!(
        again.1.get("content-type"),
        first.1.get("content-type"),
        "the content type is replayed"
    );
    assert_eq!(
        count(&s, &t, "usage_events", "reference_id", "idem-b").await,
        1
    );
    // Without the key the pair rule answers for itself: the event is erred, nothing stored.
    let plain = send(&s, &t, Method::POST, bulk, &events, None).await;
    let v: Value = serde_json::from_str(&plain.2).unwrap();
    assert_eq!(v["erred_events"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(
        count(&s, &t, "usage_events", "reference_id", "idem-b").await,
        1
    );

    // Surface C: a ledger, its Location and id replayed.
    let body = ledger("Idem C");
    let first = send(&s, &t, Method::POST, LEDGERS, &body, Some("c-1")).await;
    assert_eq!(first.0, 201, "{}", first.2);
    let again = send(&s, &t, Method::POST, LEDGERS, &body, Some("c-1")).await;
    assert_eq!((again.0, &again.2), (201, &first.2));
    assert!(replayed(&again.1));
    assert_eq!(again.1.get("location"), first.1.get("location"));
    assert_eq!(count(&s, &t, "ledgers", "name", "Idem C").await, 1);

    // Surface A: a billing account, whose plain retry would be 409 ALREADY_EXISTS.
    let path = "/t/s/r/1.28/billingAccounts";
    let xml = r#"<billingAccount accountNum="IDEM-A"/>"#;
    let first = send(&s, &t, Method::POST, path, xml, Some("a-1")).await;
    assert_eq!(first.0, 201, "{}", first.2);
    let again = send(&s, &t, Method::POST, path, xml, Some("a-1")).await;
    assert_eq!((again.0, &again.2), (201, &first.2));
    assert!(replayed(&again.1));
    let plain = send(&s, &t, Method::POST, path, xml, None).await;
    assert_eq!(plain.0, 409, "{}", plain.2);
    assert_eq!(
        count(&s, &t, "billing_accounts", "account_num", "IDEM-A").await,
        1
    );
}

#[tokio::test]
async fn the_same_key_with_another_request_is_refused_in_the_surface_shape() {
    let s = TestServer::start().await;
    let t = s.create_tenant("idem", "demo").await;
    let first = send(&s, &t, Method::POST, LEDGERS, &ledger("One"), Some("k")).await;
    assert_eq!(first.0, 201, "{}", first.2);
    let other = send(&s, &t, Method::POST, LEDGERS, &ledger("Two"), Some("k")).await;
    let v: Value = serde_json::from_str(&other.2).unwrap();
    assert_eq!(
        (other.0, v["code"].as_str()),
        (422, Some("UNPROCESSABLE_ENTITY"))
    );
    assert!(v["message"].as_str().unwrap().contains("'k'"), "{v}");
    assert_eq!(count(&s, &t, "ledgers", "name", "Two").await, 0);
    // Another tenant's key space is its own.
    let u = s.create_tenant("other", "demo").await;
    let theirs = send(&s, &u, Method::POST, LEDGERS, &ledger("Two"), Some("k")).await;
    assert_eq!(theirs.0, 201, "{}", theirs.2);

    // Surface A: the XML fault.
    let path = "/t/s/r/1.28/billingAccounts";
    let a = send(
        &s,
        &t,
        Method::POST,
        path,
        r#"<billingAccount accountNum="K-1"/>"#,
        Some("ka"),
    )
    .await;
    assert_eq!(a.0, 201, "{}", a.2);
    let b = send(
        &s,
        &t,
        Method::POST,
        path,
        r#"<billingAccount accountNum="K-2"/>"#,
        Some("ka"),
    )
    .await;
    assert_eq!(b.0, 422, "{}", b.2);
    assert!(
        b.2.contains("<fault xmlns=") && b.2.contains("&apos;ka&apos;"),
        "{}",
        b.2
    );

    // A refused request stores nothing: the same key then serves a valid request.
    let bad = send(&s, &t, Method::POST, LEDGERS, "{\"name\": 5}", Some("r")).await;
    assert_eq!(bad.0, 400, "{}", bad.2);
    let good = send(&s, &t, Method::POST, LEDGERS, &ledger("Three"), Some("r")).await;
    assert_eq!(good.0, 201, "{}", good.2);
    assert!(!replayed(&good.1));

    // Malformed keys: 400 naming the header.
    for key in ["", &"x".repeat(256), "a b"] {
        let r = send(&s, &t, Method::POST, LEDGERS, &ledger("Bad"), Some(key)).await;
        let v: Value = serde_json::from_str(&r.2).unwrap();
        assert_eq!(r.0, 400, "{key:?}: {v}");
        assert!(
            v["message"].as_str().unwrap().contains("Idempotency-Key"),
            "{v}"
        );
    }
    assert_eq!(count(&s, &t, "ledgers", "name", "Bad").await, 0);
    let longest = "x".repeat(255);
    let r = send(
        &s,
        &t,
        Method::POST,
        LEDGERS,
        &ledger("Long"),
        Some(&longest),
    )
    .await;
    assert_eq!(r.0, 201, "{}", r.2);
}

#[tokio::test]
async fn a_retry_while_the_first_is_in_flight_is_409_then_replayed() {
    let s = TestServer::start().await;
    let t = s.create_tenant("idem", "demo").await;
    // The latency rule holds the first request after the key is claimed, before its handler
    // (`idempotency::serve` claims the key, then runs `powers::apply`, which counts the rule's
    // hit, then sleeps its latency). It fires once, so its `remaining` reaching 0 is the signal
    // that the first request holds the key: the order is observed, not assumed. The latency
    // only bounds the time the test has to send one request after that (3 s for a few
    // milliseconds of work), and a slower machine fails loudly below rather than passing.
    let rule = add_rule(
        &s,
        &t,
        json!({"method": "post", "path": LEDGERS, "latency_ms": 3000, "times": 1}),
    )
    .await;
    let body = ledger("Slow");
    let first = {
        let (s2, t2, body) = (s.client.clone(), t.clone(), body.clone());
        let url = s.url(LEDGERS);
        tokio::spawn(async move {
            let r = s2
                .post(url)
                .header("X-Api-Key", &t2.api_key)
                .header("Idempotency-Key", "slow")
                .header("Content-Type", "application/json")
                .body(body)
                .send()
                .await
                .expect("first");
            (r.status().as_u16(), r.text().await.expect("body"))
        })
    };
    e2e::wait_rule_spent(&s.client, &s.base, &t.id, &rule).await;
    let during = send(&s, &t, Method::POST, LEDGERS, &body, Some("slow")).await;
    let (status, code, message) = error_body_of(&during);
    assert_eq!(
        (status, code.as_str()),
        (409, "CONFLICT"),
        "{message} (first request answered already: {})",
        first.is_finished()
    );
    assert!(message.contains("in progress"), "{message}");
    let (first_status, first_body) = first.await.expect("join");
    assert_eq!(first_status, 201, "{first_body}");
    let after = send(&s, &t, Method::POST, LEDGERS, &body, Some("slow")).await;
    assert_eq!((after.0, &after.2), (201, &first_body));
    assert!(replayed(&after.1));
    assert_eq!(count(&s, &t, "ledgers", "name", "Slow").await, 1);
}

fn error_body_of(answer: &(u16, reqwest::header::HeaderMap, String)) -> (u16, String, String) {
    let v: Value = serde_json::from_str(&answer.2).expect("JSON error");
    let (code, message) = e2e::error_fields(&v);
    (answer.0, code, message)
}

#[tokio::test]
async fn a_key_expires_after_24_hours_of_the_tenant_clock() {
    let s = TestServer::start().await;
    let t = s.create_tenant("idem", "demo").await;
    s.freeze_clock(&t).await;
    let body = ledger("Daily");
    let first = send(&s, &t, Method::POST, LEDGERS, &body, Some("day")).await;
    assert_eq!(first.0, 201, "{}", first.2);
    s.advance_clock(&t, 24 * 3600 - 60).await;
    let kept = send(&s, &t, Method::POST, LEDGERS, &body, Some("day")).await;
    assert!(replayed(&kept.1), "still kept within 24 h");
    assert_eq!(kept.2, first.2);
    s.advance_clock(&t, 120).await;
    // Expired: the request runs anew, and the domain's own rule answers it (names are unique).
    let anew = send(&s, &t, Method::POST, LEDGERS, &body, Some("day")).await;
    assert!(!replayed(&anew.1), "expired: the request runs anew");
    assert_eq!(anew.0, 409, "{}", anew.2);
    assert!(anew.2.contains("already exists"), "{}", anew.2);
    assert_eq!(count(&s, &t, "ledgers", "name", "Daily").await, 1);
    // The refusal stored nothing, and the expired row is gone for every reader.
    let other = send(
        &s,
        &t,
        Method::POST,
        LEDGERS,
        &ledger("Daily 2"),
        Some("day"),
    )
    .await;
    assert_eq!(other.0, 201, "{}", other.2);
    // Stored in the tenant's namespace (its id, a space, the header's key).
    let stored = format!("{} day", t.id);
    assert_eq!(count(&s, &t, "idempotency_keys", "key", &stored).await, 1);
}

/// `method path` (a JSON body) with `key`, as tenant `t` (`admin`: with the admin key), from
/// a client that gives up after `timeout`: `None` when it did.
async fn keyed_call(
    s: &TestServer,
    auth: (&str, &str),
    method: Method,
    path: &str,
    body: &Value,
    key: &str,
    timeout: Option<Duration>,
) -> Option<(u16, bool, String)> {
    let mut req = s
        .client
        .request(method, s.url(path))
        .header(auth.0, auth.1)
        .header("Idempotency-Key", key)
        .json(body);
    if let Some(timeout) = timeout {
        req = req.timeout(timeout);
    }
    match req.send().await {
        Ok(r) => {
            let (status, replayed) = (r.status().as_u16(), replayed(r.headers()));
            Some((status, replayed, r.text().await.unwrap_or_default()))
        }
        Err(e) if e.is_timeout() => None,
        Err(e) => panic!("{path}: {e}"),
    }
}

/// Retries a keyed call until it is no longer "in progress" (within 60 s): its answer. Any
/// other 409 ("applied, but its answer was not recorded") is answered at once.
async fn settled(
    s: &TestServer,
    auth: (&str, &str),
    path: &str,
    body: &Value,
    key: &str,
) -> (u16, bool, String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let answer = keyed_call(s, auth, Method::POST, path, body, key, None)
            .await
            .expect("no client timeout");
        if !(answer.0 == 409 && answer.2.contains("in progress")) {
            return answer;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path} still in progress: {}",
            answer.2
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A keyed write whose client gave up (a timeout at 0.25 s) still
/// records its answer, and a retry with the key gets it. The keyed clock advance is the slow
/// write (four months of bill runs for 1,000 accounts, seconds); the keyed bill batch is sent
/// once the advance's client has given up and the advance holds the tenant's writer (its
/// write transaction seen open), so it queues behind the advance. The flake hunt's disk phase
/// failed it once when it was sent on the client's timeout alone: beside two loops syncing
/// 300 MB files, the advance's undo image (synced as it is written) outlasted the 250 ms: the
/// batch took the writer first and answered in time, or (beside four loops, 4 runs in 6) its
/// first request was never applied and its retry ran as a first request.
/// Before: both were applied after their clients had gone, their answers never recorded, and
/// every retry was 409 "applied, but its answer was not recorded" for 24 hours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_write_whose_client_timed_out_answers_its_retry() {
    let s = TestServer::start().await;
    let t = s.create_tenant("gone", "demo").await;
    let clock = format!("/sandbox/v1/tenants/{}/clock", t.id);
    let r = s
        .admin_call(
            Method::PUT,
            &clock,
            Some(&json!({"frozen_at": "2026-11-20T12:00:00Z"})),
        )
        .await;
    assert_eq!(r.status(), 200);
    e2e::billing::add_billed_accounts(&s, &t.api_key, 10_000, 1_000, "gone").await;
    let admin = ("X-Admin-Key", e2e::ADMIN_KEY);
    let tenant = ("X-Api-Key", t.api_key.as_str());
    let quarter = Some(Duration::from_millis(250));

    let advance = format!("{clock}/advance");
    let to = json!({"to": "2027-03-02T00:00:00Z"});
    let gave_up = keyed_call(&s, admin, Method::POST, &advance, &to, "adv", quarter).await;
    assert!(
        gave_up.is_none(),
        "the advance answered in time: {gave_up:?}"
    );
    let file = s.state.store.tenant_path(&t.id);
    tokio::task::spawn_blocking(move || {
        // Its client has gone, so nothing tells when it ends: a write never seen fails after
        // the 60 s (the advance takes seconds).
        e2e::wait_until_writing(&file, Duration::from_secs(60), "the advance", || false)
    })
    .await
    .expect("join");
    let batches = "/billing/2/bill-batches";
    let batch =
        json!({"bill_batch_type": "adhoc", "name": "gone", "invoice_date": "2026-12-01T12:00:00Z"});
    let gave_up = keyed_call(&s, tenant, Method::POST, batches, &batch, "bb", quarter).await;
    assert!(gave_up.is_none(), "the batch answered in time: {gave_up:?}");

    let (status, again, body) = settled(&s, admin, &advance, &to, "adv").await;
    let shown = &body[..body.len().min(300)];
    assert_eq!((status, again), (200, true), "the advance's retry: {shown}");
    let v: Value = serde_json::from_str(&body).expect("json");
    let now = chrono::DateTime::parse_from_rfc3339(v["now"].as_str().expect("now")).expect("time");
    assert_eq!(
        now.with_timezone(&chrono::Utc).to_rfc3339(),
        "2027-03-02T00:00:00+00:00"
    );
    let (status, again, body) = settled(&s, tenant, batches, &batch, "bb").await;
    assert_eq!((status, again), (200, true), "the batch's retry: {body}");
    assert_eq!(count(&s, &t, "bill_batches", "name", "gone").await, 1);
    // Replayed again, the same answer.
    let (status, again, body2) = settled(&s, tenant, batches, &batch, "bb").await;
    assert_eq!((status, again, body2), (200, true, body));
}
