//! Foundation: auth matrix per surface, tenant isolation, admin API (create, list, tokens,
//! reset, delete, bad input), and concurrency of the tenant store; `overload`: the request
//! timeout and the concurrency limit; `clock`, `faults`, `journal`: the sandbox powers (test
//! clock, fault injection, request journal); `undo`: undoing clock advances; `idempotency`:
//! the Idempotency-Key header; `policy`: the tenant's billing policy.

mod admin_idempotency;
mod bounds;
mod clock;
mod fair;
mod faults;
mod fixtures;
mod fixtures_apply;
mod fixtures_bound;
mod fixtures_export;
mod fixtures_roundtrip;
mod fixtures_sets;
mod hostile;
mod idempotency;
mod ids;
mod journal;
mod overload;
mod policy;
mod quoted;
mod tenant_cap;
mod undo;
mod year_edges;

use base64::Engine;
use e2e::{error_body, status_code, TestServer, ADMIN_KEY};
use reqwest::Method;
use serde_json::{json, Value};
use std::sync::Arc;

const B_PATH: &str = "/billing/2/adjustment-categories/5";
const C_PATH: &str = "/revenue/3/collectors";
const A_PATH: &str = "/t/s/r/1.28/users/current";

#[tokio::test]
async fn surface_b_auth_matrix() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let other = s.create_tenant("other", "empty").await;

    // valid key
    let r = s.get_with_key(B_PATH, &t.api_key).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["name"], "Goodwill Credit");
    assert_eq!(v["id"], "5");

    // bearer: valid
    let token = s.token(&t, 60).await;
    let r = s.get_with_bearer(B_PATH, &token).await;
    assert_eq!(r.status(), 200);
    // bearer: tampered payload, signature of another tenant, alg none, expired
    let parts: Vec<&str> = token.split('.').collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut claims: Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    claims["exp"] = json!(claims["exp"].as_i64().unwrap() + 3600);
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64.encode(claims.to_string()),
        parts[2]
    );
    let none = format!(
        "{}.{}.",
        b64.encode(r#"{"alg":"none","typ":"JWT"}"#),
        parts[1]
    );
    let other_token = s.token(&other, 60).await;
    let op: Vec<&str> = other_token.split('.').collect();
    let cross = format!("{}.{}.{}", parts[0], parts[1], op[2]);
    let mut expired_claims = claims.clone();
    expired_claims["exp"] = json!(1);
    let expired = format!(
        "{}.{}.{}",
        parts[0],
        b64.encode(expired_claims.to_string()),
        parts[2]
    );
    // (case, credential header, status; the code goes with the status). Another tenant's
    // credential opens only that tenant (empty: no such category).
    let key = |v: &str| Some(("X-Api-Key", v.to_string()));
    let bearer = |v: &str| Some(("Authorization", format!("Bearer {v}")));
    let wrong_secret = format!("sbx_{}", "0".repeat(49));
    let cases = [
        ("missing", None, 401),
        ("malformed key", key("garbage"), 401),
        ("wrong secret", key(&wrong_secret), 401),
        (
            "basic",
            Some(("Authorization", "Basic Zm9vOmJhcg==".into())),
            401,
        ),
        ("other tenant's key", key(&other.api_key), 404),
        ("tampered", bearer(&tampered), 401),
        ("alg none", bearer(&none), 401),
        ("cross-tenant signature", bearer(&cross), 401),
        ("expired", bearer(&expired), 401),
        ("not a jwt", bearer("abc"), 401),
    ];
    for (label, header, status) in cases {
        let mut req = s.client.get(s.url(B_PATH));
        if let Some((name, value)) = header {
            req = req.header(name, value);
        }
        let (got, code, message) = error_body(req.send().await.unwrap()).await;
        assert_eq!(
            (got, code),
            (status, status_code(status)),
            "{label}: {message}"
        );
    }
}

/// Token expiry reads real time, not the tenant's test clock (credentials are not tenant
/// data: docs/sandbox.md), so the clock cannot move it: the test waits for the instant the
/// token's own `exp` claim names (at most one second for a one-second token), not a guess.
#[tokio::test]
async fn expired_token_is_refused() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let token = s.token(&t, 1).await;
    let exp = shared::auth::jwt::peek_claims(&token).expect("claims").exp;
    let until_exp = exp * 1000 - chrono::Utc::now().timestamp_millis();
    assert!(
        until_exp <= 1000,
        "a one-second token expires within a second"
    );
    if until_exp > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(until_exp as u64)).await;
    }
    assert!(chrono::Utc::now().timestamp() >= exp);
    let r = s.get_with_bearer(B_PATH, &token).await;
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn surface_c_auth_matrix() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let other = s.create_tenant("other", "empty").await;
    let missing = s.client.get(s.url(C_PATH)).send().await.unwrap();
    let token = s.token(&t, 60).await;
    let bearer = s.get_with_bearer(C_PATH, &token).await;
    for r in [missing, s.get_with_key(C_PATH, "garbage").await, bearer] {
        let (status, _, message) = error_body(r).await;
        assert_eq!((status, message.as_str()), (401, "Authentication failed."));
    }
    // Each key sees its own tenant: the five platform collector operations every tenant
    // lists, plus the demo seed's catalogue of four.
    let r = s.get_with_key(C_PATH, &other.api_key).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-total-count"], "5");
    let r = s.get_with_key(C_PATH, &t.api_key).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-total-count"], "9");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v.as_array().unwrap().len(), 9);
}

#[tokio::test]
async fn surface_a_auth_matrix() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let other = s.create_tenant("other", "empty").await;
    let wrong = e2e::TestTenant {
        password: "wrong".into(),
        ..t.clone()
    };
    let unknown = e2e::TestTenant {
        username: "nobody".into(),
        ..t.clone()
    };
    for auth in [
        None,
        Some("Basic !!!".to_string()),
        Some(wrong.basic_header()),
        Some(unknown.basic_header()),
        Some(format!("X-Api-Key {}", t.api_key)),
    ] {
        let mut req = s.client.get(s.url(A_PATH));
        if let Some(a) = &auth {
            req = req.header("Authorization", a);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 401, "{auth:?}");
        assert!(r.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Basic"));
        assert_eq!(r.headers()["content-type"], "application/xml");
        let body = r.text().await.unwrap();
        assert!(
            body.contains("<fault") && body.contains("<failureReason>GENERAL</failureReason>"),
            "{body}"
        );
    }
    for (tenant, name) in [(&t, "acme"), (&other, "other")] {
        let r = s.get_with_basic(A_PATH, tenant).await;
        assert_eq!(r.status(), 200);
        let body = r.text().await.unwrap();
        assert!(body.contains(&format!("username=\"{name}\"")), "{body}");
        assert!(body.contains(&tenant.id));
    }
}

#[tokio::test]
async fn admin_lists_gets_resets_and_deletes() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let r = s.admin_call(Method::GET, "/sandbox/v1/tenants", None).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(
        !text.contains(&t.api_key) && !text.contains(&t.password),
        "no secrets in lists"
    );
    let list: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["name"], "acme");

    let tenant = format!("/sandbox/v1/tenants/{}", t.id);
    let r = s.admin_call(Method::GET, &tenant, None).await;
    assert_eq!(r.status(), 200);
    let one: Value = r.json().await.unwrap();
    assert_eq!(one["id"], t.id.as_str());
    assert!(one.get("api_key").is_none());

    // reset to empty: data gone, credentials kept; reset to demo: data back
    // (seed, X-Total-Count of the collectors: the five platform operations, plus the demo
    // catalogue's four; status of an adjustment category)
    let reset = format!("{tenant}/reset");
    for (seed, collectors, category) in [("empty", "5", 404), ("demo", "9", 200)] {
        let body = json!({ "seed": seed });
        let r = s.admin_call(Method::POST, &reset, Some(&body)).await;
        assert_eq!(r.status(), 200, "{seed}");
        let r = s.get_with_key(C_PATH, &t.api_key).await;
        assert_eq!(r.headers()["x-total-count"], collectors, "{seed}");
        let r = s.get_with_key(B_PATH, &t.api_key).await;
        assert_eq!(r.status(), category, "{seed}");
    }

    // delete: credentials and data gone
    let db_file = s
        .state
        .store
        .data_dir()
        .join("tenants")
        .join(format!("{}.db", t.id));
    assert!(db_file.exists());
    let r = s.admin_call(Method::DELETE, &tenant, None).await;
    assert_eq!(r.status(), 204);
    assert!(!db_file.exists());
    assert_eq!(s.get_with_key(C_PATH, &t.api_key).await.status(), 401);
    s.assert_admin_refused(&[
        (Method::GET, &tenant, None, 404, ""),
        (Method::DELETE, &tenant, None, 404, ""),
    ])
    .await;
    // the name is free again
    s.create_tenant("acme", "empty").await;
}

#[tokio::test]
async fn admin_rejects_bad_input_clearly() {
    let s = TestServer::start().await;
    let path = "/sandbox/v1/tenants";
    // admin key missing or wrong
    let r = s.client.get(s.url(path)).send().await.unwrap();
    assert_eq!(error_body(r).await.0, 401);
    let r = s
        .client
        .get(s.url(path))
        .header("X-Admin-Key", "nope")
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(r).await.0, 401);

    let post = |body: String| {
        s.admin(Method::POST, path)
            .header("Content-Type", "application/json")
            .body(body)
    };
    let cases = [
        ("{not json", 400, "invalid JSON"),
        ("", 400, "required"),
        (r#"{"name": "x", "seed": "full"}"#, 400, "seed"),
        (r#"{"name": "has space"}"#, 400, "name"),
        (r#"{"name": ""}"#, 400, "name"),
        (r#"{"name": "x", "colour": "red"}"#, 400, "unknown field"),
        (r#"{"name": 5}"#, 400, "invalid type"),
        (
            r#"{"name": "x", "time_zone": "Mars/Olympus"}"#,
            400,
            "time_zone",
        ),
    ];
    for (body, status, needle) in cases {
        let (got, code, message) = error_body(post(body.to_string()).send().await.unwrap()).await;
        assert_eq!(got, status, "{body}: {message}");
        assert_eq!(code, "BAD_REQUEST");
        assert!(message.contains(needle), "{body}: {message}");
    }
    let huge = format!(r#"{{"name": "{}"}}"#, "x".repeat(2 * 1024 * 1024));
    let (status, code, _) = error_body(post(huge).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (413, "PAYLOAD_TOO_LARGE"));
    let r = s
        .admin(Method::POST, path)
        .header("Content-Type", "text/plain")
        .body(r#"{"name": "x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(r).await.0, 415);

    // duplicate name
    s.create_tenant("dup", "empty").await;
    let (status, code, _) =
        error_body(post(r#"{"name": "dup"}"#.into()).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (409, "CONFLICT"));

    // tokens: bad ttl, unknown tenant; reset with an unknown seed; an unknown route answers
    // in the surface's shape
    let t = s.create_tenant("tok", "empty").await;
    let tokens = format!("{path}/{}/tokens", t.id);
    let reset = format!("{path}/{}/reset", t.id);
    let ttl = |seconds: i64| Some(json!({ "ttl_seconds": seconds }));
    s.assert_admin_refused(&[
        (Method::POST, &tokens, ttl(0), 400, ""),
        (Method::POST, &tokens, ttl(-5), 400, ""),
        (Method::POST, &tokens, ttl(31 * 24 * 3600), 400, ""),
        (
            Method::POST,
            "/sandbox/v1/tenants/t_missing/tokens",
            None,
            404,
            "",
        ),
        (
            Method::POST,
            &reset,
            Some(json!({"seed": "bogus"})),
            400,
            "",
        ),
        (Method::GET, "/sandbox/v1/nothing", None, 404, ""),
    ])
    .await;
    // a token request without a body gets the default lifetime
    let r = s.admin_call(Method::POST, &tokens, None).await;
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["token_type"].as_str(), v["expires_in"].as_i64()),
        (Some("Bearer"), Some(3600))
    );
    let r = s
        .client
        .get(s.url("/t/s/r/1.28/nothing"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.text().await.unwrap().contains("<fault"));
    let _ = ADMIN_KEY;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_to_one_tenant_lose_nothing() {
    let s = TestServer::start().await;
    let t = s.create_tenant("busy", "empty").await;
    let db = s.state.store.tenant_db(&t.id).unwrap();
    let writers = 64;
    let per_writer = 10;
    let mut tasks = Vec::new();
    for w in 0..writers {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_writer {
                db.write(move |tx| {
                    tx.execute(
                        "INSERT INTO reasons (name) VALUES (?1)",
                        [format!("writer {w} write {i}")],
                    )?;
                    Ok(())
                })
                .await
                .unwrap();
            }
        }));
    }
    // readers run beside the writers and always see a consistent count
    let reader = {
        let db = db.clone();
        tokio::spawn(async move {
            let mut last = 0i64;
            for _ in 0..50 {
                let n: i64 = db
                    .read(|c| Ok(c.query_row("SELECT COUNT(*) FROM reasons", [], |r| r.get(0))?))
                    .await
                    .unwrap();
                assert!(n >= last, "counts never go back");
                last = n;
            }
        })
    };
    for task in tasks {
        task.await.unwrap();
    }
    reader.await.unwrap();
    let (count, distinct): (i64, i64) = db
        .read(|c| {
            Ok(c.query_row(
                "SELECT COUNT(*), COUNT(DISTINCT name) FROM reasons",
                [],
                |r| r.try_into(),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(
        (count, distinct),
        (writers * per_writer, writers * per_writer)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tenants_never_block_each_other() {
    let s = TestServer::start().await;
    let a = s.create_tenant("slow", "empty").await;
    let b = s.create_tenant("fast", "empty").await;
    let db_a = s.state.store.tenant_db(&a.id).unwrap();
    let db_b = s.state.store.tenant_db(&b.id).unwrap();
    // Tenant A's write holds its transaction open until tenant B's write has committed: if
    // B waited for A, this would deadlock and the timeout would fire.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let done_rx = Arc::new(std::sync::Mutex::new(done_rx));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Arc::new(std::sync::Mutex::new(Some(started_tx)));
    let slow = tokio::spawn(async move {
        db_a.write(move |tx| {
            tx.execute("INSERT INTO reasons (name) VALUES ('a')", [])?;
            if let Some(s) = started_tx.lock().unwrap().take() {
                let _ = s.send(());
            }
            let _ = done_rx
                .lock()
                .unwrap()
                .recv_timeout(std::time::Duration::from_secs(20));
            Ok(())
        })
        .await
    });
    started_rx.await.unwrap();
    let fast = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        db_b.write(|tx| Ok(tx.execute("INSERT INTO reasons (name) VALUES ('b')", [])?)),
    )
    .await;
    done_tx.send(()).unwrap();
    assert!(
        matches!(fast, Ok(Ok(1))),
        "tenant B finished while A held its write"
    );
    slow.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_failed_write_applies_nothing() {
    let s = TestServer::start().await;
    let t = s.create_tenant("atomic", "empty").await;
    let db = s.state.store.tenant_db(&t.id).unwrap();
    let r: shared::Result<()> = db
        .write(|tx| {
            tx.execute("INSERT INTO reasons (name) VALUES ('half')", [])?;
            Err(shared::Error::bad_request("second step fails"))
        })
        .await;
    assert!(r.is_err());
    let n: i64 = db
        .read(|c| Ok(c.query_row("SELECT COUNT(*) FROM reasons", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(n, 0);
}
