//! Overload: a tenant's request past its share of the concurrency limit is shed at once (503
//! with Retry-After, in the error shape of the path's surface) instead of queued, whichever
//! credential it uses, while other tenants, the admin key and requests without credentials
//! are still served, and it is let in again when one finishes; bodies arrive under their own
//! budget (per tenant, and bytes in all) and hold no place to work; the request timeout cuts
//! off a request that takes too long (here: one whose body never arrives) with the same
//! answer. The fair shares against many tenants at once: `fair.rs`.

use base64::Engine;
use e2e::ADMIN_KEY;
use shared::config::Config;
use shared::web::AppState;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server with the overload settings `tune` applies; answers its base URL, address and the
/// data directory (kept alive by the caller).
pub(crate) async fn serve(tune: impl FnOnce(&mut Config)) -> (String, String, tempfile::TempDir) {
    let (base, addr, _, dir) = serve_state(tune).await;
    (base, addr, dir)
}

/// [`serve`], also answering the server's state (for its admission load, `AppState::load`).
pub(crate) async fn serve_state(
    tune: impl FnOnce(&mut Config),
) -> (String, String, AppState, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config::new(dir.path(), Some(ADMIN_KEY.to_string()));
    tune(&mut config);
    let state = AppState::new(config).expect("state");
    let base = e2e::listen(state.clone()).await;
    let addr = base.trim_start_matches("http://").to_string();
    (base, addr, state, dir)
}

/// A request whose body never completes: it stays in its handler (reading the body, after
/// authenticating) until the connection is dropped or the server gives up. `credential` is
/// the admin key, or a Surface A `Authorization` value.
async fn stalled(addr: &str, credential: Credential<'_>) -> TcpStream {
    let (path, header, content_type) = match credential {
        Credential::Admin => (
            "/sandbox/v1/tenants".to_string(),
            format!("X-Admin-Key: {ADMIN_KEY}"),
            "application/json",
        ),
        Credential::Basic(value) => (
            "/t/s/r/1.28/billingAccounts".to_string(),
            format!("Authorization: {value}"),
            "application/xml",
        ),
    };
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{header}\r\n\
         Content-Type: {content_type}\r\nContent-Length: 100\r\n\r\n{{\"name\":"
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream
}

/// Who a stalled request authenticates as.
#[derive(Clone, Copy)]
enum Credential<'a> {
    Admin,
    Basic(&'a str),
}

/// A tenant created through the admin API: its API key and its Basic `Authorization` value.
async fn tenant(client: &reqwest::Client, base: &str, name: &str) -> (String, String, String) {
    let r = client
        .post(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .json(&serde_json::json!({"name": name, "seed": "empty"}))
        .send()
        .await
        .expect("create tenant");
    assert_eq!(r.status(), 201);
    let v: serde_json::Value = r.json().await.expect("json");
    let s = |p: &str| v.pointer(p).and_then(|v| v.as_str()).expect(p).to_string();
    let raw = format!("{}:{}", s("/basic/username"), s("/basic/password"));
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    );
    (s("/id"), s("/api_key"), basic)
}

#[tokio::test]
async fn requests_past_a_tenants_share_are_shed_with_retry_after() {
    // 17 places: 4 for the admin key, 2 for requests without credentials, 11 for tenants,
    // 1 of them kept for tenants not pressing, of the other 10 one busy tenant holds at most
    // 10 / 2 = 5.
    let (base, _addr, _dir) = serve(|c| {
        c.max_concurrent_requests = 17;
        c.request_timeout_ms = 0;
    })
    .await;
    let client = reqwest::Client::new();
    let (id, key, basic) = tenant(&client, &base, "flood").await;
    let (_, other, _) = tenant(&client, &base, "other").await;
    let stall = "/billing/2/adjustment-categories";
    let r = client
        .post(format!("{base}/sandbox/v1/tenants/{id}/faults"))
        .header("X-Admin-Key", ADMIN_KEY)
        .json(&serde_json::json!({"method": "GET", "path": stall, "latency_ms": 5000, "times": 5}))
        .send()
        .await
        .expect("fault rule");
    assert_eq!(r.status(), 201);
    let rule: serde_json::Value = r.json().await.expect("rule");
    let json_path = format!("{base}/revenue/3/collectors");
    let read = |key: &str| client.get(&json_path).header("X-Api-Key", key).send();

    // The tenant stalls 5 requests (held 5 s each once admitted): its share is full...
    let stalled: Vec<_> = (0..5)
        .map(|_| {
            let request = client
                .get(format!("{base}{stall}"))
                .header("X-Api-Key", &key)
                .send();
            tokio::spawn(request)
        })
        .collect();
    // The rule's latency is applied once a request holds its place, so the rule spent (its
    // `remaining` at 0, read through the admin key's own pool) means all five hold theirs. A
    // read sent before that could take one of the five places itself and let a stalled
    // request be shed instead.
    let rule = rule["id"].as_str().expect("rule id");
    e2e::wait_rule_spent(&client, &base, &id, rule).await;
    let r = read(&key).await.expect("request");
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    let (_, code, message) = e2e::error_body(r).await;
    assert_eq!(code, "SERVICE_UNAVAILABLE");
    assert!(message.contains("its share"), "{message}");
    // ...under its Basic credential too, shed at once in Surface A's shape: an XML fault.
    let started = Instant::now();
    let r = client
        .get(format!("{base}/t/s/r/1.28/users/current"))
        .header("Authorization", &basic)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "shed at once, not queued"
    );
    let body = r.text().await.expect("body");
    assert!(
        body.contains("<fault") && body.contains("its share"),
        "{body}"
    );

    // Everyone else is still served: another tenant, the admin key, no credentials.
    assert_eq!(read(&other).await.expect("request").status(), 200);
    let r = client
        .get(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
    let r = client.get(&json_path).send().await.expect("request");
    assert_eq!(r.status(), 401);

    // Once the stalled requests are answered, the tenant is served again.
    for s in stalled {
        assert_eq!(s.await.expect("task").expect("stalled").status(), 200);
    }
    assert_eq!(read(&key).await.expect("request").status(), 200);
}

#[tokio::test]
async fn bodies_past_their_budget_are_shed_at_once_and_hold_no_place_to_work() {
    // 2 places to work for tenants, 3 bodies arriving per tenant, 571 bytes of bodies in
    // all: 500 shared, 71 kept for quiet tenants (less than a body here: none fits there).
    let (base, addr, state, _dir) = serve_state(|c| {
        c.max_concurrent_requests = 4;
        c.max_bodies_per_tenant = 3;
        c.max_body_buffer_bytes = 571;
        c.request_timeout_ms = 0;
    })
    .await;
    let client = reqwest::Client::new();
    let (_, key, basic) = tenant(&client, &base, "slow").await;
    let (_, _, other) = tenant(&client, &base, "other").await;

    // Three bodies that never arrive (100 bytes announced each)...
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(stalled(&addr, Credential::Basic(&basic)).await);
    }
    // ...hold no place to work: the tenant's reads are served, more of them than places.
    for _ in 0..4 {
        let r = client
            .get(format!("{base}/revenue/3/collectors"))
            .header("X-Api-Key", &key)
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 200);
    }
    // A fourth body is shed at once, 503 with Retry-After in the surface's shape.
    let mut fourth = stalled(&addr, Credential::Basic(&basic)).await;
    let answer = read_answer(&mut fourth).await;
    assert!(answer.starts_with("http/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1"), "{answer}");
    assert!(answer.contains("limit of 3"), "{answer}");

    // Another tenant's bodies arrive beside them, within the bytes of all bodies: 300 held,
    // 200 more fit, the next 100 would pass 500 (each taken before the next is sent: the
    // server serves connections concurrently).
    let (fifth, _) = open_body(&addr, &state, &other).await.expect("fifth body");
    let (mut sixth, _) = open_body(&addr, &state, &other).await.expect("sixth body");
    let mut seventh = stalled(&addr, Credential::Basic(&other)).await;
    let answer = read_answer(&mut seventh).await;
    assert!(answer.starts_with("http/1.1 503"), "{answer}");
    assert!(answer.contains("limit of 500"), "{answer}");
    // A body that arrives in full is served.
    drop((fifth, held));
    sixth.write_all(&[b' '; 91]).await.expect("write");
    sixth.write_all(b"}").await.expect("write");
    let answer = read_answer(&mut sixth).await;
    assert!(!answer.starts_with("http/1.1 503"), "{answer}");
}

/// Opens a 100-byte body as `basic` that never arrives, and waits until the server took it
/// (`Ok`: the stream, and whether its bytes are of the kept ones) or refused it (`Err`: the
/// status), reading the server's admission load, not a time.
async fn open_body(addr: &str, state: &AppState, basic: &str) -> Result<(TcpStream, bool), u16> {
    let before = state.load();
    let mut stream = stalled(addr, Credential::Basic(basic)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = state.load();
        if now.kept_body_bytes > before.kept_body_bytes {
            return Ok((stream, true));
        }
        if now.body_bytes > before.body_bytes {
            return Ok((stream, false));
        }
        if let Some(status) = super::hostile::answered(&mut stream, Duration::from_millis(10)).await
        {
            return Err(status);
        }
        assert!(
            Instant::now() < deadline,
            "a body neither taken nor refused"
        );
    }
}

/// Two tenants open bodies that never arrive until the body bytes refuse them; the first
/// wave's body that took kept bytes (nobody was refused yet) ends. The attackers, refused by
/// now (pressing), are refused the kept bytes, and a quiet tenant's body arrives in them
/// and is served. Before the kept eighth, the attackers held every byte and the quiet
/// tenant's body was refused (503), like theirs.
#[tokio::test]
async fn a_quiet_tenants_body_arrives_while_others_fill_the_body_bytes() {
    // 800 bytes of bodies: 700 shared, 100 kept; every body here announces 100.
    let (base, addr, state, _dir) = serve_state(|c| {
        c.max_concurrent_requests = 0;
        c.max_bodies_per_tenant = 8;
        c.max_body_buffer_bytes = 800;
        c.request_timeout_ms = 0;
    })
    .await;
    let client = reqwest::Client::new();
    let (_, _, a) = tenant(&client, &base, "a").await;
    let (_, _, b) = tenant(&client, &base, "b").await;
    let (_, _, quiet) = tenant(&client, &base, "quiet").await;
    let mut held = Vec::new();
    let mut kept = Vec::new();
    let mut refused = [false, false];
    while !refused.iter().all(|r| *r) {
        for (i, basic) in [&a, &b].into_iter().enumerate() {
            match open_body(&addr, &state, basic).await {
                Ok((stream, true)) => kept.push(stream),
                Ok((stream, false)) => held.push(stream),
                Err(status) => {
                    assert_eq!(status, 503);
                    refused[i] = true;
                }
            }
        }
    }
    // The first wave's kept body ends (its client goes).
    drop(kept);
    let deadline = Instant::now() + Duration::from_secs(10);
    while state.load().kept_body_bytes > 0 {
        assert!(
            Instant::now() < deadline,
            "the kept bytes were not given back"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Pressing attackers are refused the kept bytes...
    for basic in [&a, &b] {
        assert_eq!(open_body(&addr, &state, basic).await.err(), Some(503));
    }
    // ...and a quiet tenant's body arrives in them and is served.
    let Ok((mut body, true)) = open_body(&addr, &state, &quiet).await else {
        panic!("the quiet tenant's body was refused: {:?}", state.load());
    };
    body.write_all(&[b' '; 91]).await.expect("write");
    body.write_all(b"}").await.expect("write");
    let answer = read_answer(&mut body).await;
    assert!(!answer.starts_with("http/1.1 503"), "{answer}");
    assert!(answer.starts_with("http/1.1 "), "{answer}");
    assert_eq!(held.len(), 7, "the attackers held the shared 700 bytes");
}

/// The answer on `stream` (lower-cased), read until it closes, its JSON or XML ends, or 5 s.
async fn read_answer(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&chunk[..n]);
                    if answer.ends_with(b"}") || answer.ends_with(b">") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    String::from_utf8_lossy(&answer).to_lowercase()
}

#[tokio::test]
async fn a_request_past_the_timeout_is_cut_off_with_retry_after() {
    let (base, addr, _dir) = serve(|c| {
        c.request_timeout_ms = 300;
        c.max_concurrent_requests = 0;
    })
    .await;
    let started = Instant::now();
    let mut stream = stalled(&addr, Credential::Admin).await;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    // Read until the server has answered and closed, or 10 s.
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&chunk[..n]);
                    if answer.ends_with(b"}") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    let took = started.elapsed();
    let answer = String::from_utf8_lossy(&answer).to_lowercase();
    assert!(answer.starts_with("http/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1"), "{answer}");
    assert!(
        answer.contains("\"code\":\"service_unavailable\""),
        "{answer}"
    );
    assert!(answer.contains("within 300 ms"), "{answer}");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(5),
        "{took:?}"
    );

    // A request that finishes in time is untouched.
    let r = reqwest::Client::new()
        .get(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
}
