//! The `Idempotency-Key` header on the admin API's writes: a retried clock
//! advance, clock setting, fault rule, fixtures apply, reset, restore or checkpoint creation
//! is replayed and
//! applied once (its key kept by the tenant's database, in the write's own transaction; a
//! restore's inserted by the restore itself); a retried tenant
//! creation, fork or deletion gets its first answer (the key kept by the registry, the
//! creation's credentials sealed there, never in clear); the same key with another body is a
//! 422, concurrent retries a 409, both in the admin `{code, message}` shape.

use e2e::{TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};

/// `method path` with the admin key, `body` and `key`: status, whether replayed, JSON body
/// (`null` when empty).
async fn admin(
    s: &TestServer,
    method: Method,
    path: &str,
    body: Option<&Value>,
    key: Option<&str>,
) -> (u16, bool, Value) {
    let mut req = s.admin(method, path);
    if let Some(body) = body {
        req = req.json(body);
    }
    if let Some(key) = key {
        req = req.header("Idempotency-Key", key);
    }
    let r = req.send().await.expect("admin request");
    let status = r.status().as_u16();
    let replayed = r
        .headers()
        .get("idempotent-replayed")
        .is_some_and(|v| v == "true");
    let text = r.text().await.expect("body");
    let v = serde_json::from_str(&text).unwrap_or(Value::Null);
    (status, replayed, v)
}

/// The tenant clock's reading, in UTC.
async fn clock_now(s: &TestServer, t: &TestTenant) -> String {
    let path = format!("/sandbox/v1/tenants/{}/clock", t.id);
    let (status, _, v) = admin(s, Method::GET, &path, None, None).await;
    assert_eq!(status, 200, "{v}");
    let now = v["now"].as_str().expect("now");
    let now = chrono::DateTime::parse_from_rfc3339(now).expect("RFC 3339");
    now.with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

async fn fault_count(s: &TestServer, t: &TestTenant) -> usize {
    let path = format!("/sandbox/v1/tenants/{}/faults", t.id);
    let (status, _, v) = admin(s, Method::GET, &path, None, None).await;
    assert_eq!(status, 200, "{v}");
    v.as_array().expect("rules").len()
}

/// The 422 of a key used with another request, in the admin shape.
fn assert_mismatch(answer: &(u16, bool, Value), key: &str) {
    let (status, _, v) = answer;
    assert_eq!(*status, 422, "{v}");
    assert_eq!(v["code"], "UNPROCESSABLE_ENTITY", "{v}");
    assert!(
        v["message"].as_str().is_some_and(|m| m.contains(key)),
        "{v}"
    );
}

#[tokio::test]
async fn admin_writes_of_one_tenant_are_replayed_and_applied_once() {
    let s = TestServer::start().await;
    let t = s.create_tenant("adminidem", "empty").await;
    let base = format!("/sandbox/v1/tenants/{}", t.id);

    // The clock: frozen, then advanced by an hour, the advance retried: one hour only.
    let clock = format!("{base}/clock");
    let frozen = json!({"frozen_at": "2026-03-01T00:00:00Z"});
    let first = admin(&s, Method::PUT, &clock, Some(&frozen), Some("freeze")).await;
    assert_eq!((first.0, first.1), (200, false), "{}", first.2);
    let again = admin(&s, Method::PUT, &clock, Some(&frozen), Some("freeze")).await;
    assert_eq!((again.0, again.1, &again.2), (200, true, &first.2));

    let advance = format!("{clock}/advance");
    let hour = json!({"seconds": 3600});
    let first = admin(&s, Method::POST, &advance, Some(&hour), Some("adv-1")).await;
    assert_eq!((first.0, first.1), (200, false), "{}", first.2);
    let again = admin(&s, Method::POST, &advance, Some(&hour), Some("adv-1")).await;
    assert_eq!((again.0, again.1, &again.2), (200, true, &first.2));
    assert_eq!(clock_now(&s, &t).await, "2026-03-01T01:00:00Z");
    // The same key with another body: 422, nothing applied.
    let other = admin(
        &s,
        Method::POST,
        &advance,
        Some(&json!({"seconds": 60})),
        Some("adv-1"),
    )
    .await;
    assert_mismatch(&other, "adv-1");
    assert_eq!(clock_now(&s, &t).await, "2026-03-01T01:00:00Z");
    // Without a key an advance is applied each time.
    for _ in 0..2 {
        assert_eq!(
            admin(&s, Method::POST, &advance, Some(&hour), None).await.0,
            200
        );
    }
    assert_eq!(clock_now(&s, &t).await, "2026-03-01T03:00:00Z");

    // A fault rule: created once, its id replayed.
    let faults = format!("{base}/faults");
    let rule = json!({"path": "/revenue/3/never/*", "status": 503});
    let first = admin(&s, Method::POST, &faults, Some(&rule), Some("rule-1")).await;
    assert_eq!(first.0, 201, "{}", first.2);
    let again = admin(&s, Method::POST, &faults, Some(&rule), Some("rule-1")).await;
    assert_eq!((again.0, again.1, &again.2), (201, true, &first.2));
    assert_eq!(fault_count(&s, &t).await, 1);

    // A fixtures apply, replayed.
    let fixtures = format!("{base}/fixtures");
    let doc = e2e::fixtures_docs_example();
    let first = admin(&s, Method::POST, &fixtures, Some(&doc), Some("fx-1")).await;
    assert_eq!(first.0, 200, "{}", first.2);
    let again = admin(&s, Method::POST, &fixtures, Some(&doc), Some("fx-1")).await;
    assert_eq!((again.0, again.1, &again.2), (200, true, &first.2));

    // A reset, retried after a fault rule was made: replayed, so the rule is still there (a
    // second reset would have removed it).
    let reset = format!("{base}/reset");
    let empty = json!({"seed": "empty"});
    let first = admin(&s, Method::POST, &reset, Some(&empty), Some("reset-1")).await;
    assert_eq!(first.0, 200, "{}", first.2);
    assert_eq!(fault_count(&s, &t).await, 0);
    assert_eq!(
        admin(&s, Method::POST, &faults, Some(&rule), None).await.0,
        201
    );
    let again = admin(&s, Method::POST, &reset, Some(&empty), Some("reset-1")).await;
    assert_eq!((again.0, again.1, &again.2), (200, true, &first.2));
    assert_eq!(fault_count(&s, &t).await, 1);

    // A malformed key is a 400 in the admin shape.
    let bad = admin(&s, Method::POST, &advance, Some(&hour), Some("a b")).await;
    assert_eq!(
        (bad.0, &bad.2["code"]),
        (400, &json!("BAD_REQUEST")),
        "{}",
        bad.2
    );
}

/// A restore retried with its key is replayed, so a write made after the first restore
/// survives the retry (a second restore would remove it); without a key each restore runs.
#[tokio::test]
async fn a_retried_restore_is_replayed_and_keeps_later_writes() {
    let s = TestServer::start().await;
    let t = s.create_tenant("restoreidem", "empty").await;
    let base = format!("/sandbox/v1/tenants/{}", t.id);
    let checkpoint = json!({"name": "base"});
    let made = admin(
        &s,
        Method::POST,
        &format!("{base}/checkpoints"),
        Some(&checkpoint),
        None,
    )
    .await;
    assert_eq!(made.0, 201, "{}", made.2);
    let other = json!({"name": "other"});
    let made = admin(
        &s,
        Method::POST,
        &format!("{base}/checkpoints"),
        Some(&other),
        None,
    )
    .await;
    assert_eq!(made.0, 201, "{}", made.2);

    let restore = format!("{base}/restore");
    let body = json!({"checkpoint": "base"});
    let first = admin(&s, Method::POST, &restore, Some(&body), Some("r-1")).await;
    assert_eq!((first.0, first.1), (200, false), "{}", first.2);
    let faults = format!("{base}/faults");
    let rule = json!({"path": "/revenue/3/never/*", "status": 503});
    assert_eq!(
        admin(&s, Method::POST, &faults, Some(&rule), None).await.0,
        201
    );
    let again = admin(&s, Method::POST, &restore, Some(&body), Some("r-1")).await;
    assert_eq!((again.0, again.1, &again.2), (200, true, &first.2));
    assert_eq!(fault_count(&s, &t).await, 1, "the retry restored again");
    // The same key for another checkpoint: 422, nothing restored.
    let elsewhere = json!({"checkpoint": "other"});
    let refused = admin(&s, Method::POST, &restore, Some(&elsewhere), Some("r-1")).await;
    assert_mismatch(&refused, "r-1");
    assert_eq!(fault_count(&s, &t).await, 1);
    // Without a key, a restore runs each time: the rule made since is gone.
    assert_eq!(
        admin(&s, Method::POST, &restore, Some(&body), None).await.0,
        200
    );
    assert_eq!(fault_count(&s, &t).await, 0);
}

/// A checkpoint creation retried with its key gets its first answer (not 409 "name taken");
/// the same key for another name is a 422 and makes nothing.
#[tokio::test]
async fn a_retried_checkpoint_creation_gets_its_first_answer() {
    let s = TestServer::start().await;
    let t = s.create_tenant("checkpointidem", "empty").await;
    let checkpoints = format!("/sandbox/v1/tenants/{}/checkpoints", t.id);
    let body = json!({"name": "base"});
    let first = admin(&s, Method::POST, &checkpoints, Some(&body), Some("cp-1")).await;
    assert_eq!((first.0, first.1), (201, false), "{}", first.2);
    let again = admin(&s, Method::POST, &checkpoints, Some(&body), Some("cp-1")).await;
    assert_eq!((again.0, again.1, &again.2), (201, true, &first.2));
    let other = json!({"name": "other"});
    let refused = admin(&s, Method::POST, &checkpoints, Some(&other), Some("cp-1")).await;
    assert_mismatch(&refused, "cp-1");
    // Without a key the name is taken: 409.
    let taken = admin(&s, Method::POST, &checkpoints, Some(&body), None).await;
    assert_eq!(taken.0, 409, "{}", taken.2);
    let (status, _, list) = admin(&s, Method::GET, &checkpoints, None, None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
}

#[tokio::test]
async fn concurrent_retries_of_an_admin_write_apply_it_once() {
    let s = TestServer::start().await;
    let t = s.create_tenant("adminrace", "empty").await;
    let clock = format!("/sandbox/v1/tenants/{}/clock", t.id);
    let frozen = json!({"frozen_at": "2026-03-01T00:00:00Z"});
    assert_eq!(
        admin(&s, Method::PUT, &clock, Some(&frozen), None).await.0,
        200
    );
    let advance = format!("{clock}/advance");
    let day = json!({"seconds": 86_400});
    let answers = futures_join(&s, &advance, &day, 8).await;
    let applied = answers.iter().filter(|a| a.0 == 200 && !a.1).count();
    let replayed = answers.iter().filter(|a| a.0 == 200 && a.1).count();
    let in_flight = answers
        .iter()
        .filter(|a| a.0 == 409 && a.2["code"] == "CONFLICT")
        .count();
    assert_eq!(applied, 1, "{answers:?}");
    assert_eq!(applied + replayed + in_flight, answers.len(), "{answers:?}");
    assert_eq!(clock_now(&s, &t).await, "2026-03-02T00:00:00Z");
}

/// `n` advances with one key sent at once.
async fn futures_join(
    s: &TestServer,
    path: &str,
    body: &Value,
    n: usize,
) -> Vec<(u16, bool, Value)> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let req = s
            .admin(Method::POST, path)
            .json(body)
            .header("Idempotency-Key", "race");
        tasks.spawn(async move {
            let r = req.send().await.expect("advance");
            let status = r.status().as_u16();
            let replayed = r.headers().contains_key("idempotent-replayed");
            (
                status,
                replayed,
                r.json::<Value>().await.unwrap_or(Value::Null),
            )
        });
    }
    let mut answers = Vec::new();
    while let Some(answer) = tasks.join_next().await {
        answers.push(answer.expect("join"));
    }
    answers
}

#[tokio::test]
async fn a_retried_tenant_creation_fork_or_deletion_gets_its_first_answer() {
    let s = TestServer::start().await;
    let tenants = "/sandbox/v1/tenants";
    let body = json!({"name": "keyed", "seed": "empty"});
    let first = admin(&s, Method::POST, tenants, Some(&body), Some("create-1")).await;
    assert_eq!((first.0, first.1), (201, false), "{}", first.2);
    // The retry: the same tenant and the same credentials, not 409 "name taken".
    let again = admin(&s, Method::POST, tenants, Some(&body), Some("create-1")).await;
    assert_eq!((again.0, again.1, &again.2), (201, true, &first.2));
    let api_key = first.2["api_key"].as_str().expect("api_key").to_string();
    let r = s.get_with_key("/revenue/3/collectors", &api_key).await;
    assert_eq!(r.status(), 200, "the replayed credentials open the tenant");
    // Without the key, the name is taken; with the key and another name, 422.
    assert_eq!(
        admin(&s, Method::POST, tenants, Some(&body), None).await.0,
        409
    );
    let other = json!({"name": "keyed-2", "seed": "empty"});
    assert_mismatch(
        &admin(&s, Method::POST, tenants, Some(&other), Some("create-1")).await,
        "create-1",
    );
    let (_, _, list) = admin(&s, Method::GET, tenants, None, None).await;
    let named = |v: &Value, name: &str| {
        v.as_array()
            .expect("tenants")
            .iter()
            .filter(|t| t["name"] == name)
            .count()
    };
    assert_eq!(
        (named(&list, "keyed"), named(&list, "keyed-2")),
        (1, 0),
        "{list}"
    );

    // The registry keeps no clear credential: the answer it replays is sealed.
    let registry = std::fs::read_dir(s.state.store.data_dir())
        .expect("data dir")
        .flatten()
        .map(|e| e.path())
        .collect::<Vec<_>>();
    for path in walk(registry) {
        let bytes = std::fs::read(&path).unwrap_or_default();
        assert!(
            !bytes
                .windows(api_key.len())
                .any(|w| w == api_key.as_bytes()),
            "{} holds the clear API key",
            path.display()
        );
    }

    // A fork, retried: one fork.
    let id = first.2["id"].as_str().expect("id").to_string();
    let cp = format!("{tenants}/{id}/checkpoints");
    assert_eq!(
        admin(&s, Method::POST, &cp, Some(&json!({"name": "cp"})), None)
            .await
            .0,
        201
    );
    let fork = json!({"name": "keyed-fork", "from": {"tenant": id, "checkpoint": "cp"}});
    let first_fork = admin(&s, Method::POST, tenants, Some(&fork), Some("fork-1")).await;
    assert_eq!(first_fork.0, 201, "{}", first_fork.2);
    let again = admin(&s, Method::POST, tenants, Some(&fork), Some("fork-1")).await;
    assert_eq!((again.0, again.1, &again.2), (201, true, &first_fork.2));

    // A deletion, retried: 204 again (without the key, 404).
    let one = format!("{tenants}/{id}");
    let first = admin(&s, Method::DELETE, &one, None, Some("delete-1")).await;
    assert_eq!((first.0, first.1), (204, false), "{}", first.2);
    let again = admin(&s, Method::DELETE, &one, None, Some("delete-1")).await;
    assert_eq!((again.0, again.1), (204, true));
    assert_eq!(admin(&s, Method::DELETE, &one, None, None).await.0, 404);
    // The creation's key outlives the tenant: its retry still answers the first creation.
    let late = admin(&s, Method::POST, tenants, Some(&body), Some("create-1")).await;
    assert_eq!((late.0, late.1), (201, true));
}

/// Every file under `paths`.
fn walk(mut paths: Vec<std::path::PathBuf>) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    while let Some(path) = paths.pop() {
        match std::fs::read_dir(&path) {
            Ok(entries) => paths.extend(entries.flatten().map(|e| e.path())),
            Err(_) => files.push(path),
        }
    }
    files
}

/// A Surface B bill batch with `key`, as the tenant of `api_key`: status, whether replayed,
/// JSON body.
async fn keyed_batch(s: &TestServer, api_key: &str, key: &str) -> (u16, bool, Value) {
    let r = s
        .client
        .post(s.url("/billing/2/bill-batches"))
        .header("X-Api-Key", api_key)
        .header("Idempotency-Key", key)
        .json(&json!({"bill_batch_type": "adhoc", "name": "keyed", "invoice_date": "2026-12-01T12:00:00Z"}))
        .send()
        .await
        .expect("batch");
    let status = r.status().as_u16();
    let replayed = r
        .headers()
        .get("idempotent-replayed")
        .is_some_and(|v| v == "true");
    (status, replayed, r.json().await.unwrap_or(Value::Null))
}

/// A fork starts with no Idempotency-Keys. The source's key, made before
/// the checkpoint the fork copies, is unknown in the fork: the same request with it runs
/// there (a new batch of the fork), and is then the fork's own key; the source still
/// replays its own. Before: the fork held the source's row, whose fingerprint names the
/// source, and answered 422.
#[tokio::test]
async fn a_fork_starts_with_no_idempotency_keys() {
    let s = TestServer::start().await;
    let t = s.create_tenant("source", "demo").await;
    let first = keyed_batch(&s, &t.api_key, "k").await;
    assert_eq!((first.0, first.1), (200, false), "{}", first.2);
    let path = format!("/sandbox/v1/tenants/{}/checkpoints", t.id);
    let made = admin(&s, Method::POST, &path, Some(&json!({"name": "cp"})), None).await;
    assert_eq!(made.0, 201, "{}", made.2);
    let fork = json!({"name": "forked", "from": {"tenant": t.id, "checkpoint": "cp"}});
    let forked = admin(&s, Method::POST, "/sandbox/v1/tenants", Some(&fork), None).await;
    assert_eq!(forked.0, 201, "{}", forked.2);
    let fork_key = forked.2["api_key"].as_str().expect("api key").to_string();

    let there = keyed_batch(&s, &fork_key, "k").await;
    assert_eq!((there.0, there.1), (200, false), "{}", there.2);
    assert_ne!(there.2["id"], first.2["id"], "a new batch of the fork");
    let again = keyed_batch(&s, &fork_key, "k").await;
    assert_eq!((again.0, again.1, &again.2), (200, true, &there.2));
    let home = keyed_batch(&s, &t.api_key, "k").await;
    assert_eq!((home.0, home.1, &home.2), (200, true, &first.2));
}

/// The admin API's keys in a tenant's database are apart from the
/// tenant's own. A tenant's request with a key the admin used on its clock runs (before:
/// 422, the tenant saw the admin's key), and the admin's retry still gets its own answer
/// (the tenant cannot squat it); the other way round alike.
#[tokio::test]
async fn admin_and_tenant_keys_live_apart() {
    let s = TestServer::start().await;
    let t = s.create_tenant("apart", "demo").await;
    let clock = format!("/sandbox/v1/tenants/{}/clock", t.id);
    let frozen = json!({"frozen_at": "2026-11-20T12:00:00Z"});
    let set = admin(&s, Method::PUT, &clock, Some(&frozen), Some("shared")).await;
    assert_eq!((set.0, set.1), (200, false), "{}", set.2);
    let mine = keyed_batch(&s, &t.api_key, "shared").await;
    assert_eq!((mine.0, mine.1), (200, false), "{}", mine.2);
    let again = admin(&s, Method::PUT, &clock, Some(&frozen), Some("shared")).await;
    assert_eq!((again.0, again.1, &again.2), (200, true, &set.2));
    let mine_again = keyed_batch(&s, &t.api_key, "shared").await;
    assert_eq!(
        (mine_again.0, mine_again.1, &mine_again.2),
        (200, true, &mine.2)
    );

    // A key the tenant used first does not hold the admin's request back.
    let used = keyed_batch(&s, &t.api_key, "first").await;
    assert_eq!((used.0, used.1), (200, false), "{}", used.2);
    let hour = json!({"seconds": 3600});
    let advance = format!("{clock}/advance");
    let adv = admin(&s, Method::POST, &advance, Some(&hour), Some("first")).await;
    assert_eq!((adv.0, adv.1), (200, false), "{}", adv.2);
}
