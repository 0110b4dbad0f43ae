//! The request journal over HTTP: every request to a tenant on every surface (and the admin
//! calls about it) is recorded with its status, query, bodies (first 64 KB) and the fault
//! rule that answered it, credentials and tokens redacted; reads filter by method, path,
//! status and time, newest first and paged; a clear empties it; retention is bounded; a
//! journal switched off records nothing; requests with bad credentials are no tenant's.

use e2e::{TestServer, ADMIN_KEY};
use reqwest::Method;
use serde_json::{json, Value};
use shared::config::Config;
use shared::web::AppState;

const B_PATH: &str = "/billing/2/adjustment-categories/5";

async fn requests(
    s: &TestServer,
    tenant: &str,
    query: &str,
) -> (reqwest::header::HeaderMap, Vec<Value>) {
    let r = s
        .admin_call(
            Method::GET,
            &format!("/sandbox/v1/tenants/{tenant}/requests{query}"),
            None,
        )
        .await;
    assert_eq!(r.status(), 200, "{query}");
    let headers = r.headers().clone();
    let v: Value = r.json().await.expect("json");
    (headers, v.as_array().expect("array").clone())
}

#[tokio::test]
async fn requests_are_recorded_redacted_filtered_and_paged() {
    let s = TestServer::start().await;
    // Created as given (the pinning helper's extra clock call would be journaled too).
    let t = s
        .create_tenant_with(json!({"name": "acme", "seed": "demo"}))
        .await;
    let token = s.token(&t, 60).await;
    let r = s.get_with_key(B_PATH, &t.api_key).await;
    assert_eq!(r.status(), 200);
    let r = s
        .get_with_bearer(&format!("{B_PATH}?trace=1"), &token)
        .await;
    assert_eq!(r.status(), 200);
    let big = format!(
        r#"{{"usage_events": [], "pad": "{}"}}"#,
        "x".repeat(70 * 1024)
    );
    let r = s
        .client
        .post(s.url("/billing/2/usage-events/bulk"))
        .header("X-Api-Key", &t.api_key)
        .header("Content-Type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = s.get_with_basic("/t/s/r/1.28/users/current", &t).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        s.get_with_key("/revenue/3/collectors", &t.api_key)
            .await
            .status(),
        200
    );
    let rule = json!({"path": "/revenue/3/collectors", "status": 502, "times": 1});
    let rule_id = super::faults::add_rule(&s, &t, rule).await;
    assert_eq!(
        s.get_with_key("/revenue/3/collectors", &t.api_key)
            .await
            .status(),
        502
    );
    // Bad credentials open no tenant: not journaled.
    assert_eq!(s.get_with_key(B_PATH, "sbx_wrong").await.status(), 401);

    let (headers, all) = requests(&s, &t.id, "").await;
    let summary: Vec<(String, String, u64)> = all
        .iter()
        .map(|e| {
            (
                e["surface"].as_str().unwrap().to_string(),
                e["method"].as_str().unwrap().to_string(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("C", "GET", 502),
        ("admin", "POST", 201),
        ("C", "GET", 200),
        ("A", "GET", 200),
        ("B", "POST", 400),
        ("B", "GET", 200),
        ("B", "GET", 200),
        ("admin", "POST", 201),
    ]
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c));
    assert_eq!(summary, expected, "newest first");
    assert_eq!(headers["x-total-count"], "8");
    assert_eq!(all[0]["fault"], rule_id.as_str());
    assert!(all[2]["fault"].is_null());
    let text = serde_json::to_string(&all).unwrap();
    for secret in [&t.api_key, &token, &t.password] {
        assert!(
            !text.contains(secret.as_str()),
            "a secret leaked into the journal"
        );
    }
    let by_key = &all[6];
    assert_eq!(by_key["path"], B_PATH);
    assert!(by_key["response_body"]
        .as_str()
        .unwrap()
        .contains("Goodwill Credit"));
    let key_header = by_key["request_headers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h[0] == "x-api-key")
        .expect("x-api-key kept by name");
    assert_eq!(key_header[1], "[redacted]");
    assert_eq!(all[5]["query"], "trace=1");
    let token_call = &all[7];
    assert!(token_call["path"].as_str().unwrap().ends_with("/tokens"));
    assert!(token_call["response_body"]
        .as_str()
        .unwrap()
        .contains("[redacted]"));
    let post = &all[4];
    assert_eq!(post["request_body_truncated"], true);
    assert_eq!(post["request_body"].as_str().unwrap().len(), 64 * 1024);
    assert!(all
        .iter()
        .all(|e| e["duration_ms"].as_f64().unwrap() >= 0.0));

    // Filters and paging.
    let count = |q: &'static str| {
        let s = &s;
        let id = t.id.clone();
        async move { requests(s, &id, q).await.1.len() }
    };
    assert_eq!(count("?method=post").await, 3);
    assert_eq!(count("?path=/billing/2/*").await, 3);
    assert_eq!(count("?status=4xx").await, 1);
    assert_eq!(count("?status=502").await, 1);
    assert_eq!(count("?method=GET&status=2xx").await, 4);
    assert_eq!(count("?from=2000-01-01&to=2999-01-01").await, 8);
    assert_eq!(count("?to=2000-01-01").await, 0);
    let (headers, page) = requests(&s, &t.id, "?page_size=3&page_number=3").await;
    assert_eq!(page.len(), 2);
    assert_eq!(page[1]["id"], all[7]["id"]);
    assert_eq!(
        (
            headers["x-total-count"].to_str().unwrap(),
            headers["x-total-pages"].to_str().unwrap()
        ),
        ("8", "3")
    );
    let path = format!("/sandbox/v1/tenants/{}/requests", t.id);
    for bad in [
        "status=abc",
        "status=6xx",
        "from=yesterday",
        "page_size=0",
        "page_size=101",
    ] {
        let r = s
            .admin_call(Method::GET, &format!("{path}?{bad}"), None)
            .await;
        assert_eq!(r.status(), 400, "{bad}");
    }

    // Clearing empties it; reading and clearing the journal is not journaled.
    assert_eq!(
        s.admin_call(Method::DELETE, &path, None).await.status(),
        204
    );
    assert_eq!(requests(&s, &t.id, "").await.1.len(), 0);
    assert_eq!(
        s.admin_call(Method::GET, "/sandbox/v1/tenants/t_missing/requests", None)
            .await
            .status(),
        404
    );
}

/// A server whose journal settings `tune` changes.
async fn serve(tune: impl FnOnce(&mut Config)) -> (TestServer, e2e::TestTenant) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config::new(dir.path(), Some(ADMIN_KEY.to_string()));
    tune(&mut config);
    let state = AppState::new(config).expect("state");
    let base = e2e::listen(state.clone()).await;
    let s = TestServer::from_parts(base, state, dir);
    // Created as given (the pinning helper's extra clock call would be journaled too).
    let t = s
        .create_tenant_with(json!({"name": "acme", "seed": "demo"}))
        .await;
    (s, t)
}

#[tokio::test]
async fn retention_is_bounded_and_a_journal_off_records_nothing() {
    let (s, t) = serve(|c| c.journal.max_entries = 5).await;
    for i in 0..12 {
        let r = s.get_with_key(&format!("{B_PATH}?n={i}"), &t.api_key).await;
        assert_eq!(r.status(), 200);
    }
    let (_, kept) = requests(&s, &t.id, "").await;
    let queries: Vec<&str> = kept.iter().map(|e| e["query"].as_str().unwrap()).collect();
    assert_eq!(queries, ["n=11", "n=10", "n=9", "n=8", "n=7"]);

    let (s, t) = serve(|c| c.journal.enabled = false).await;
    assert_eq!(s.get_with_key(B_PATH, &t.api_key).await.status(), 200);
    assert_eq!(requests(&s, &t.id, "").await.1.len(), 0);
}

/// The entry of the newest journaled request whose path is `path`.
async fn newest(s: &TestServer, tenant: &str, path: &str) -> Value {
    let (_, all) = requests(s, tenant, "").await;
    all.into_iter()
        .find(|e| e["path"] == path)
        .unwrap_or_else(|| panic!("no entry for {path}"))
}

#[tokio::test]
async fn secrets_are_redacted_wherever_they_are_spelled() {
    // Secrets the journal once kept: a key or token in the query string, a JSON member spelled with an
    // escape or in camelCase, and a malformed body naming a password were kept in clear.
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let secrets = [
        "k-SECRET-1",
        "eyJ-SECRET-2",
        "pw-SECRET-3",
        "ak-SECRET-4",
        "at-SECRET-5",
        "st-SECRET-6",
        "hk-SECRET-7",
    ];
    // Headers other clients send credentials in are redacted by the same name rule as query
    // parameters and members (they were kept in clear).
    let r = s
        .client
        .get(s.url(&format!(
            "{B_PATH}?api_key={}&Access%5FToken={}&n=1",
            secrets[0], secrets[1]
        )))
        .header("X-Api-Key", &t.api_key)
        .header("X-Auth-Token", secrets[4])
        .header("X-Amz-Security-Token", secrets[5])
        .header("Api-Key", secrets[6])
        .header("X-Trace", "kept")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let post = |body: String| {
        s.client
            .post(s.url("/billing/2/bill-batches"))
            .header("X-Api-Key", &t.api_key)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
    };
    let escaped = format!(
        r#"{{"pass\u0077ord":"{}","apiKey":"{}","Authorization":"Bearer {}","secret":"{}","name":"n"}}"#,
        secrets[2], secrets[3], secrets[1], secrets[0]
    );
    assert_eq!(post(escaped).await.unwrap().status(), 400);
    let malformed = format!(r#"{{"user": "a", "password": "{}""#, secrets[2]);
    assert_eq!(post(malformed).await.unwrap().status(), 400);

    let (_, all) = requests(&s, &t.id, "").await;
    let text = serde_json::to_string(&all).unwrap();
    for secret in secrets {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    let get = newest(&s, &t.id, B_PATH).await;
    assert_eq!(
        get["query"],
        "api_key=[redacted]&Access%5FToken=[redacted]&n=1"
    );
    let header = |name: &str| {
        get["request_headers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h[0] == name)
            .unwrap_or_else(|| panic!("{name} kept by name: {get}"))[1]
            .clone()
    };
    for name in ["x-auth-token", "x-amz-security-token", "api-key"] {
        assert_eq!(header(name), "[redacted]", "{name}");
    }
    assert_eq!(header("x-trace"), "kept");
    let posts: Vec<&Value> = all
        .iter()
        .filter(|e| e["path"] == "/billing/2/bill-batches")
        .collect();
    assert_eq!(
        posts[0]["request_body"],
        "[redacted: unparsed body naming a secret]"
    );
    let members: Value = serde_json::from_str(posts[1]["request_body"].as_str().unwrap()).unwrap();
    for name in ["password", "apiKey", "Authorization", "secret"] {
        assert_eq!(members[name], "[redacted]", "{name}: {members}");
    }
    assert_eq!(members["name"], "n");
}

#[tokio::test]
async fn reads_and_memory_hold_the_byte_bound() {
    // Before the journal bounds, 3,000 refused requests with 60 KB bodies made one read answer
    // 3,000 entries. Here 300 of them against a 2 MiB bound (the rule is the same at the
    // default 16 MiB): the read answers the newest within the bound, by bytes.
    let bound = 2 * 1024 * 1024;
    let (s, t) = serve(|c| c.journal.max_bytes = bound).await;
    let body = format!(r#"{{"mode": "x", "pad": "{}"}}"#, "x".repeat(60 * 1024));
    for _ in 0..300 {
        let r = s
            .client
            .post(s.url("/billing/2/usage-events/bulk"))
            .header("X-Api-Key", &t.api_key)
            .header("Content-Type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
    }
    let (headers, _) = requests(&s, &t.id, "?page_size=1").await;
    let total: usize = headers["x-total-count"].to_str().unwrap().parse().unwrap();
    let all = s
        .state
        .powers
        .journal
        .read(&t.id, &Default::default())
        .unwrap();
    let bytes: usize = all
        .iter()
        .map(|e| e.request_body.len() + e.response_body.len())
        .sum();
    println!("300 requests of 60 KB: {total} entries read, {bytes} body bytes (bound {bound})");
    assert_eq!(all.len(), total);
    assert!(
        bytes <= bound && (25..300).contains(&total),
        "{total} entries, {bytes} bytes"
    );
}

#[tokio::test]
async fn a_percent_encoded_tenant_id_is_journaled_under_the_tenant_and_deleted_with_it() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let encoded: String = t.id.bytes().map(|b| format!("%{b:02X}")).collect();
    let r = s
        .admin_call(
            Method::GET,
            &format!("/sandbox/v1/tenants/{encoded}/clock"),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let entry = newest(&s, &t.id, &format!("/sandbox/v1/tenants/{encoded}/clock")).await;
    assert_eq!(entry["surface"], "admin");
    let journal = &s.state.powers.journal;
    assert!(journal
        .read(&encoded, &Default::default())
        .unwrap()
        .is_empty());
    let r = s
        .admin_call(
            Method::DELETE,
            &format!("/sandbox/v1/tenants/{encoded}"),
            None,
        )
        .await;
    assert_eq!(r.status(), 204);
    assert!(journal.read(&t.id, &Default::default()).unwrap().is_empty());
    assert!(journal
        .read(&encoded, &Default::default())
        .unwrap()
        .is_empty());
}
