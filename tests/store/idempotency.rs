//! Idempotency keys over HTTP in S3 mode: a write whose log PUTs S3 holds past the write
//! deadline answers 503 "outcome unknown" naming the `Idempotency-Key` header; once the held
//! PUTs are through, retries with the same key never apply the write a second time. And the
//! admin API's keyed writes (a tenant's creation and deletion, kept by the registry; a clock
//! advance, kept by the tenant's database) answered by one environment and retried on
//! another get their first answer there.

use e2e::s3::{Gate, Moto};
use e2e::ADMIN_KEY;
use serde_json::{json, Value};
use shared::config::Config;
use shared::store::{S3Config, Store};
use shared::web::AppState;
use std::time::Duration;

/// A sandbox server over the S3 store `config`; answers its base URL and state.
async fn serve(config: &S3Config) -> (String, AppState, tempfile::TempDir) {
    serve_signing(config, None).await
}

/// [`serve`] with `token_secret` configured (deployed environments share one:
/// `SANDBOX_TOKEN_SECRET`), else a secret of its own data directory.
async fn serve_signing(
    config: &S3Config,
    token_secret: Option<&str>,
) -> (String, AppState, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, cfg) = (dir.path().to_path_buf(), config.clone());
    let store = tokio::task::spawn_blocking(move || Store::open_with(&path, Some(cfg)))
        .await
        .expect("join")
        .expect("open S3 store");
    let mut settings = Config::new(dir.path(), Some(ADMIN_KEY.to_string()));
    settings.token_secret = token_secret.map(str::to_string);
    let state = AppState::from_parts(store, settings);
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

/// `direct` reached through the fault proxy `gate`, with a 300 ms attempt timeout and a 4 s
/// write deadline: a log PUT the gate holds 6 s outlives the write's deadline.
fn gated(direct: &S3Config, gate: &Gate) -> S3Config {
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    gated.attempt_timeout = Duration::from_millis(300);
    gated.write_deadline = Duration::from_secs(4);
    gated
}

/// Creates a tenant named `name` with the demo data through the admin API at `base`:
/// its creation answer (id, API key, Basic credentials).
async fn create_demo_tenant(base: &str, name: &str) -> Value {
    let r = reqwest::Client::new()
        .post(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .json(&json!({"name": name, "seed": "demo"}))
        .send()
        .await
        .expect("create tenant");
    assert_eq!(r.status(), 201);
    r.json().await.unwrap()
}

/// A created tenant's id and API key.
fn id_and_key(tenant: &Value) -> (String, String) {
    (
        tenant["id"].as_str().unwrap().to_string(),
        tenant["api_key"].as_str().unwrap().to_string(),
    )
}

/// Retries [`post_ledger`] on `base` with `key` every 0.5 s, for at most `within`, until an
/// answer other than 409 or 503: that answer, and the ones before it (status, message).
async fn retry_ledger_until_answered(
    base: &str,
    api_key: &str,
    key: &str,
    within: Duration,
) -> (u16, Value, Vec<(u16, String)>) {
    let deadline = std::time::Instant::now() + within;
    let mut answers = Vec::new();
    loop {
        let (status, answer) = post_ledger(base, api_key, key).await;
        if !matches!(status, 409 | 503) || std::time::Instant::now() > deadline {
            return (status, answer, answers);
        }
        answers.push((status, answer["message"].as_str().unwrap_or("").to_string()));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// How many ledgers [`post_ledger`] made in tenant `id` of `state`'s store.
async fn held_ledgers(state: &AppState, id: &str) -> i64 {
    let db = state.store.tenant_db(id).expect("tenant");
    db.read(|c| {
        Ok(c.query_row(
            "SELECT count(*) FROM ledgers WHERE name = 'Held'",
            [],
            |r| r.get(0),
        )?)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_outcome_was_unknown_is_applied_once_across_retries_with_its_key() {
    let moto = Moto::start();
    let direct = moto.bucket("idempotent");
    let gate = Gate::start(&moto);
    let gated = gated(&direct, &gate);
    let (base, state, _dir) = serve(&gated).await;
    let tenant = create_demo_tenant(&base, "held").await;
    let (id, api_key) = id_and_key(&tenant);

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

    // The retry: the held PUT landed with the key's row and the write's result, so the first
    // answer is rendered from that result and recorded (201, the ledger); had it been fenced,
    // the retry would apply the write now. Either way the ledger is there once, and a second retry replays.
    let (status, retry) = post_ledger(&base, &api_key, "held-1").await;
    let (again_status, again) = post_ledger(&base, &api_key, "held-1").await;
    let count = held_ledgers(&state, &id).await;
    assert_eq!(
        count, 1,
        "first {first}, retry {status} {retry}, again {again}"
    );
    assert_eq!(status, 201, "{retry}");
    assert_eq!(retry["name"], "Held", "{retry}");
    assert_eq!((again_status, &again["id"]), (201, &retry["id"]));
    assert_eq!(again["replayed"], true);
    // Every log PUT was held alike and the data PUT went first, so it landed before any
    // fence: the retry was the first answer, rendered from the stored result, not a second run.
    assert_eq!(retry["replayed"], true, "{retry}");
    eprintln!(
        "outcome unknown, then retries with the key: {status} then {again_status}; gate {:?}",
        held.counts()
    );
}

/// `method path` with the admin key, `body` and Idempotency-Key `key` against `base`:
/// status, whether replayed, JSON body.
pub(crate) async fn admin_keyed(
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: &Value,
    key: &str,
) -> (u16, bool, Value) {
    let r = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .header("X-Admin-Key", ADMIN_KEY)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .expect("admin request");
    let replayed = r.headers().contains_key("idempotent-replayed");
    let status = r.status().as_u16();
    (status, replayed, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_writes_retried_on_another_environment_get_their_first_answer() {
    let moto = Moto::start();
    let bucket = moto.bucket("adminkeys");
    let secret = Some("a shared token secret, 32 characters or more");
    let (a, _state_a, _dir_a) = serve_signing(&bucket, secret).await;
    let (b, _state_b, _dir_b) = serve_signing(&bucket, secret).await;
    let post = reqwest::Method::POST;

    // A creation answered by A, retried on B: B replays A's answer (the registry's key row
    // and sealed answer came to B with the registry's log), with the same credentials.
    let body = json!({"name": "twice", "seed": "empty"});
    let first = admin_keyed(&a, post.clone(), "/sandbox/v1/tenants", &body, "c-1").await;
    assert_eq!((first.0, first.1), (201, false), "{}", first.2);
    let again = admin_keyed(&b, post.clone(), "/sandbox/v1/tenants", &body, "c-1").await;
    assert_eq!((again.0, again.1, &again.2), (201, true, &first.2));
    let other = json!({"name": "twice-2", "seed": "empty"});
    let refused = admin_keyed(&b, post.clone(), "/sandbox/v1/tenants", &other, "c-1").await;
    assert_eq!(refused.0, 422, "{}", refused.2);
    // An environment with another token secret cannot open the sealed answer: it says the
    // creation was applied and its answer cannot be read there (409), and creates nothing.
    let (c, _state_c, _dir_c) = serve(&bucket).await;
    let sealed = admin_keyed(&c, post.clone(), "/sandbox/v1/tenants", &body, "c-1").await;
    assert_eq!(
        (sealed.0, &sealed.2["code"]),
        (409, &json!("CONFLICT")),
        "{}",
        sealed.2
    );
    let message = sealed.2["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("'c-1'")
            && message.contains("was applied")
            && message.contains("cannot be read here")
            && message.contains("SANDBOX_TOKEN_SECRET"),
        "{message}"
    );
    let listed = reqwest::Client::new()
        .get(format!("{c}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .send()
        .await
        .expect("list");
    assert_eq!(listed.headers()["x-total-count"], "1", "no second tenant");

    // A clock advance answered by A, retried on B: applied once (the key's row rode in the
    // advance's own log entry).
    let id = first.2["id"].as_str().expect("id");
    let clock = format!("/sandbox/v1/tenants/{id}/clock");
    let frozen = json!({"frozen_at": "2026-03-01T00:00:00Z"});
    let put = reqwest::Method::PUT;
    assert_eq!(admin_keyed(&a, put, &clock, &frozen, "f-1").await.0, 200);
    let advance = format!("{clock}/advance");
    let hour = json!({"seconds": 3600});
    let first = admin_keyed(&a, post.clone(), &advance, &hour, "adv-1").await;
    assert_eq!(first.0, 200, "{}", first.2);
    let again = admin_keyed(&b, post.clone(), &advance, &hour, "adv-1").await;
    assert_eq!((again.0, again.1, &again.2), (200, true, &first.2));
    let r = reqwest::Client::new()
        .get(format!("{b}{clock}"))
        .header("X-Admin-Key", ADMIN_KEY)
        .send()
        .await
        .expect("clock");
    let v: Value = r.json().await.expect("json");
    let now = chrono::DateTime::parse_from_rfc3339(v["now"].as_str().expect("now")).expect("time");
    assert_eq!(
        now.with_timezone(&chrono::Utc).to_rfc3339(),
        "2026-03-01T01:00:00+00:00",
        "one hour advanced: {v}"
    );

    // A restore answered by A, retried on B after a write made since, and on C, started
    // afterwards from the snapshot S3 copied from the checkpoint: replayed on both, so the
    // write survives (the key's row rode in the restore's own log entry, and a cold start
    // adds it to the copied snapshot as the replay does).
    let checkpoints = format!("/sandbox/v1/tenants/{id}/checkpoints");
    let made = admin_keyed(
        &a,
        post.clone(),
        &checkpoints,
        &json!({"name": "cp"}),
        "cp-1",
    )
    .await;
    assert_eq!(made.0, 201, "{}", made.2);
    let restore = format!("/sandbox/v1/tenants/{id}/restore");
    let body = json!({"checkpoint": "cp"});
    let first = admin_keyed(&a, post.clone(), &restore, &body, "r-1").await;
    assert_eq!((first.0, first.1), (200, false), "{}", first.2);
    let faults = format!("/sandbox/v1/tenants/{id}/faults");
    let rule = json!({"path": "/revenue/3/never/*", "status": 503});
    assert_eq!(
        admin_keyed(&a, post.clone(), &faults, &rule, "rule-1")
            .await
            .0,
        201
    );
    let again = admin_keyed(&b, post.clone(), &restore, &body, "r-1").await;
    assert_eq!((again.0, again.1, &again.2), (200, true, &first.2));
    let (c2, _state_c2, _dir_c2) = serve_signing(&bucket, secret).await;
    let again = admin_keyed(&c2, post.clone(), &restore, &body, "r-1").await;
    assert_eq!((again.0, again.1, &again.2), (200, true, &first.2));
    let rules = reqwest::Client::new()
        .get(format!("{c2}{faults}"))
        .header("X-Admin-Key", ADMIN_KEY)
        .send()
        .await
        .expect("faults");
    let rules: Value = rules.json().await.expect("json");
    assert_eq!(
        rules.as_array().map(Vec::len),
        Some(1),
        "the retry restored again: {rules}"
    );

    // A deletion answered by A, retried on B: 204 replayed, not 404.
    let one = format!("/sandbox/v1/tenants/{id}");
    let delete = reqwest::Method::DELETE;
    let first = admin_keyed(&a, delete.clone(), &one, &Value::Null, "d-1").await;
    assert_eq!(first.0, 204, "{}", first.2);
    let again = admin_keyed(&b, delete, &one, &Value::Null, "d-1").await;
    assert_eq!((again.0, again.1), (204, true));
}

/// POST a Surface A billing account category with `key`, as `user:password`: status,
/// whether replayed, body.
async fn post_category(base: &str, basic: (&str, &str), key: &str) -> (u16, bool, String) {
    let r = reqwest::Client::new()
        .post(format!("{base}/t/s/r/1.28/billingAccountCategories"))
        .basic_auth(basic.0, Some(basic.1))
        .header("Content-Type", "application/xml")
        .header("Idempotency-Key", key)
        .body(r#"<billingAccountCategory description="Held A" status="BA_CATEGORY_ACTIVE"/>"#)
        .send()
        .await
        .expect("post");
    let replayed = r.headers().contains_key("idempotent-replayed");
    let status = r.status().as_u16();
    (status, replayed, r.text().await.unwrap_or_default())
}

/// A Surface A create whose log PUT S3 holds past the write deadline
/// answers 503 "outcome unknown"; its client retries with the key right away and keeps
/// retrying: once the outcome is settled (the held PUT landed, or the slot was fenced), a
/// retry gets the recorded answer (or a clean run), never a 409 forever, and the category is
/// there once. Before: every retry, same process, was 409 "in progress".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_after_an_outcome_unknown_get_the_answer_once_it_is_settled() {
    let moto = Moto::start();
    let direct = moto.bucket("settled");
    let gate = Gate::start(&moto);
    let gated = gated(&direct, &gate);
    let (base, state, _dir) = serve(&gated).await;
    let tenant = create_demo_tenant(&base, "settled").await;
    let id = tenant["id"].as_str().unwrap().to_string();
    let user = tenant["basic"]["username"]
        .as_str()
        .expect("user")
        .to_string();
    let password = tenant["basic"]["password"]
        .as_str()
        .expect("password")
        .to_string();
    let basic = (user.as_str(), password.as_str());

    gate.hold_log_puts(Some(Duration::from_secs(6)));
    let (status, _, first) = post_category(&base, basic, "cat-1").await;
    assert_eq!(status, 503, "{first}");
    assert!(first.contains("Idempotency-Key"), "{first}");
    // Retried at once and on, while the held PUTs are still held (the first ones), then
    // after: every answer is "in progress" or a 503 until the outcome is settled, then the
    // answer.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut answers = Vec::new();
    let (status, replayed, body) = loop {
        let answer = post_category(&base, basic, "cat-1").await;
        if answer.0 == 201 || std::time::Instant::now() > deadline {
            break answer;
        }
        assert!(
            answer.0 == 503 || (answer.0 == 409 && answer.2.contains("in progress")),
            "after {answers:?}: {answer:?}"
        );
        if answers.len() == 3 {
            // The hold ends, as a slow S3 recovers.
            gate.hold_log_puts(None);
        }
        answers.push((answer.0, answer.2.chars().take(80).collect::<String>()));
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(status, 201, "after {answers:?}: {body}");
    let db = state.store.tenant_db(&id).expect("tenant");
    let count: i64 = db
        .read(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM billing_account_categories WHERE description = 'Held A'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(count, 1, "after {answers:?}");
    let again = post_category(&base, basic, "cat-1").await;
    eprintln!("retries: {answers:?}, then {status} (replayed: {replayed})");
    assert_eq!((again.0, again.1, &again.2), (201, true, &body));
    // Once S3 is through, the answer is recorded with the key (a retry records it if its
    // first recording was held too) and replayed from there.
    gate.hold_log_puts(None);
    let held = tokio::task::spawn_blocking(move || {
        gate.wait_for_held(Duration::from_secs(30));
        gate
    })
    .await
    .expect("join");
    let last = post_category(&base, basic, "cat-1").await;
    assert_eq!((last.0, last.1, &last.2), (201, true, &body));
    // Stored in the tenant's namespace (its id, a space, the header's key).
    let stored = format!("{id} cat-1");
    let recorded: Option<u16> = db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT status FROM idempotency_keys WHERE key = ?1",
                [&stored],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(recorded, Some(201));
    eprintln!("gate {:?}", held.counts());
}

/// A keyed write whose log PUT S3 holds past the write deadline answers the honest 503 on
/// environment A; the client retries with the same key on environment B (another process on
/// the same bucket). Once the held PUT has landed, B finds the key's row with the write's
/// result (they rode in the same log entry) and renders the first answer from it, replayed:
/// never a 409 forever, never a second ledger. Before the result was stored, B answered 409
/// "applied, but its answer was not recorded" for as long as the key lived (24 hours), A's
/// result kept in A's memory waiting for a retry that went to B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_on_another_environment_after_an_outcome_unknown_gets_the_answer() {
    let moto = Moto::start();
    let direct = moto.bucket("elsewhere");
    let gate = Gate::start(&moto);
    let gated = gated(&direct, &gate);
    let (a, state, _dir_a) = serve(&gated).await;
    let (b, _state_b, _dir_b) = serve(&direct).await;
    let tenant = create_demo_tenant(&a, "elsewhere").await;
    let (id, api_key) = id_and_key(&tenant);

    gate.hold_log_puts(Some(Duration::from_secs(6)));
    let (status, first) = post_ledger(&a, &api_key, "moved-1").await;
    gate.hold_log_puts(None);
    assert_eq!(status, 503, "{first}");
    // The held PUTs go through: A's entry lands (a retry on B before that would find no row,
    // run anew and win or lose the slot cleanly: no answer to wait for).
    let _gate = tokio::task::spawn_blocking(move || {
        gate.wait_for_held(Duration::from_secs(30));
        gate
    })
    .await
    .expect("join");
    // The client goes to B and retries there until it has an answer other than 409/503.
    let (status, answer, answers) =
        retry_ledger_until_answered(&b, &api_key, "moved-1", Duration::from_secs(60)).await;
    let last: Vec<_> = answers.iter().rev().take(2).collect();
    assert_eq!(
        status,
        201,
        "{answer}; {} answers before, the last {last:?}",
        answers.len()
    );
    let count = held_ledgers(&state, &id).await;
    assert_eq!(count, 1);
    // A's first answer, rendered from the result its write stored, replayed.
    assert_eq!(
        (&answer["name"], &answer["replayed"]),
        (&json!("Held"), &json!(true))
    );
    // A retry on A replays the same answer.
    let (again, on_a) = post_ledger(&a, &api_key, "moved-1").await;
    assert_eq!(
        (again, &on_a["id"], &on_a["replayed"]),
        (201, &answer["id"], &json!(true))
    );
    eprintln!("B's answers before the first answer: {}", answers.len());
}

/// The same, with A a real process killed (SIGKILL) right after its 503 "outcome unknown",
/// before its held log PUT lands: nothing of A remains but what S3 holds. B's retries get
/// the first answer (201 replayed, the ledger A created), and the ledger exists once: the
/// key's row and the write's result rode in A's log entry, so the answer is rendered from
/// them on B. Before, the result lived in A's memory only, and B answered 409 "applied, but
/// its answer was not recorded" for as long as the key lived (24 hours).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_the_writing_process_died_gets_the_first_answer() {
    let moto = Moto::start();
    let direct = moto.bucket("orphaned");
    let gate = Gate::start(&moto);
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    let mut a = crate::checkpoints::Peer::start_with(
        &gated,
        &[
            ("SANDBOX_S3_ATTEMPT_TIMEOUT_MS", "300".to_string()),
            ("SANDBOX_S3_WRITE_DEADLINE_MS", "4000".to_string()),
        ],
    );
    let (b, state_b, _dir_b) = serve(&direct).await;
    let tenant = create_demo_tenant(&b, "orphaned").await;
    let (id, api_key) = id_and_key(&tenant);

    gate.hold_log_puts(Some(Duration::from_secs(6)));
    let (status, first) = post_ledger(&a.base, &api_key, "orphan-1").await;
    // A dies before its held PUT lands (S3 holds it for 6 s from its sending, A answered at
    // its 4 s deadline): A never sees the write land and never records anything.
    a.kill();
    gate.hold_log_puts(None);
    assert_eq!(status, 503, "{first}");
    assert!(
        first["message"]
            .as_str()
            .unwrap_or("")
            .contains("may or may not"),
        "{first}"
    );
    let gate = tokio::task::spawn_blocking(move || {
        gate.wait_for_held(Duration::from_secs(30));
        gate
    })
    .await
    .expect("join");
    // The client retries on B until it has an answer other than 409/503.
    let (status, answer, answers) =
        retry_ledger_until_answered(&b, &api_key, "orphan-1", Duration::from_secs(30)).await;
    let last: Vec<_> = answers.iter().rev().take(2).collect();
    assert_eq!(
        status,
        201,
        "{answer}; {} answers before, the last {last:?}",
        answers.len()
    );
    assert_eq!(
        (&answer["name"], &answer["replayed"]),
        (&json!("Held"), &json!(true)),
        "{answer}"
    );
    let count = held_ledgers(&state_b, &id).await;
    assert_eq!(count, 1, "one ledger, A's");
    // Recorded with the key: the next retry replays it.
    let (again, replayed) = post_ledger(&b, &api_key, "orphan-1").await;
    assert_eq!(
        (again, &replayed["id"], &replayed["replayed"]),
        (201, &answer["id"], &json!(true))
    );
    eprintln!(
        "B's answers before the first answer: {}; gate {:?}",
        answers.len(),
        gate.counts()
    );
}
