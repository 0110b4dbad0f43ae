//! Overload: the per-process concurrency limit sheds a request past it at once (503 with
//! Retry-After, in the error shape of the path's surface) instead of queueing it, one
//! credential holds at most half of it (others are still served while it floods), and
//! requests are let in again when one finishes; the request timeout cuts off a request that
//! takes too long (here: one whose body never arrives) with the same answer.

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
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config::new(dir.path(), Some(ADMIN_KEY.to_string()));
    tune(&mut config);
    let state = AppState::new(config).expect("state");
    let base = e2e::listen(state).await;
    let addr = base.trim_start_matches("http://").to_string();
    (base, addr, dir)
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

/// GET `path` until `done` holds for the status (at most 5 s); answers the last response.
async fn poll(
    client: &reqwest::Client,
    url: &str,
    done: impl Fn(u16) -> bool,
) -> reqwest::Response {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = client.get(url).send().await.expect("request");
        if done(r.status().as_u16()) || Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn requests_past_the_concurrency_limit_are_shed_with_retry_after() {
    let (base, addr, _dir) = serve(|c| {
        c.max_concurrent_requests = 4;
        c.request_timeout_ms = 0;
    })
    .await;
    let client = reqwest::Client::new();
    let tenant = {
        let r = client
            .post(format!("{base}/sandbox/v1/tenants"))
            .header("X-Admin-Key", ADMIN_KEY)
            .json(&serde_json::json!({"name": "flood", "seed": "empty"}))
            .send()
            .await
            .expect("create tenant");
        assert_eq!(r.status(), 201);
        let v: serde_json::Value = r.json().await.expect("json");
        let raw = format!(
            "{}:{}",
            v["basic"]["username"].as_str().expect("user"),
            v["basic"]["password"].as_str().expect("password")
        );
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    };
    let json_path = format!("{base}/revenue/3/collectors");
    let admin_path = format!("{base}/sandbox/v1/tenants");
    let admin_get = || {
        client
            .get(&admin_path)
            .header("X-Admin-Key", ADMIN_KEY)
            .send()
    };

    // One credential (the admin key) floods: it gets half of the limit, 2 of 4...
    let first = stalled(&addr, Credential::Admin).await;
    let _second = stalled(&addr, Credential::Admin).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let r = loop {
        let r = admin_get().await.expect("request");
        if r.status() == 503 || Instant::now() > deadline {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    let (_, code, message) = e2e::error_body(r).await;
    assert_eq!(code, "SERVICE_UNAVAILABLE");
    assert!(message.contains("its share"), "{message}");
    // ...and everyone else is still served.
    let r = client.get(&json_path).send().await.expect("request");
    assert_eq!(
        r.status(),
        401,
        "another credential is served while one floods"
    );

    // A second credential takes the other half: now the process is full for everyone.
    let _third = stalled(&addr, Credential::Basic(&tenant)).await;
    let _fourth = stalled(&addr, Credential::Basic(&tenant)).await;
    let r = poll(&client, &json_path, |s| s == 503).await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    let (_, code, message) = e2e::error_body(r).await;
    assert_eq!(code, "SERVICE_UNAVAILABLE");
    assert!(message.contains("limit of 4"), "{message}");

    // Surface A sheds in its own shape, at once: an XML fault.
    let started = Instant::now();
    let r = client
        .get(format!("{base}/t/s/r/1.28/users/current"))
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
        body.contains("<fault") && body.contains("limit of 4"),
        "{body}"
    );

    // One stalled request goes away: requests are served again.
    drop(first);
    let r = poll(&client, &json_path, |s| s != 503).await;
    assert_eq!(r.status(), 401, "served again once a request finished");
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
