//! The request pipeline under a hostile client, each attack with another tenant
//! reading beside it, which must keep being served (200s, at its usual speed):
//!
//! 1. made-up admin keys on a tenant path, each with a body that trickles: refused with 401
//!    before the body is read, so they hold no place;
//! 2. one tenant stalling requests under its API key and its Basic credential in several
//!    spellings: all count as one tenant, which has at most its 8 bodies arriving at once
//!    (and no place to work while they arrive);
//! 3. 1,100 connections that send nothing or half a request head: each is closed within the
//!    head deadline, and the cap on connections holds the server's descriptors;
//! 4. 50 fault rules of 512 characters built to make a backtracking matcher explode, against
//!    a path of 8 KiB (and a journal read with such a glob): answered at once.

use super::overload::serve;
use base64::Engine;
use e2e::ADMIN_KEY;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A tenant created through the admin API: (id, API key, Basic username, password).
pub(crate) async fn tenant(
    client: &reqwest::Client,
    base: &str,
    name: &str,
) -> (String, String, String, String) {
    let r = client
        .post(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .json(&json!({"name": name, "seed": "demo"}))
        .send()
        .await
        .expect("create tenant");
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.expect("json");
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).expect(p).to_string();
    (
        s("/id"),
        s("/api_key"),
        s("/basic/username"),
        s("/basic/password"),
    )
}

/// Sends a request head announcing a body of `length` bytes and its first byte; the rest
/// never comes (the caller keeps the stream open).
pub(crate) async fn slow_body(
    addr: &str,
    method_path: &str,
    headers: &[String],
    length: usize,
) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let mut head = format!("{method_path} HTTP/1.1\r\nHost: {addr}\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {length}\r\n\r\n{{"));
    stream.write_all(head.as_bytes()).await.expect("write");
    stream
}

/// What the server answered on `stream` within `within` (the status line's code), or `None`
/// when it answered nothing in that time.
pub(crate) async fn answered(stream: &mut TcpStream, within: Duration) -> Option<u16> {
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(within, stream.read(&mut buf))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&buf[..n]).to_string();
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// The victim's count of reads so far, for an attack to wait on.
type Reads = tokio::sync::watch::Receiver<usize>;

/// Waits (at most 30 s) until the victim has read `n` more times.
async fn more_reads(reads: &mut Reads, n: usize) {
    let target = *reads.borrow() + n;
    tokio::time::timeout(Duration::from_secs(30), reads.wait_for(|c| *c >= target))
        .await
        .unwrap_or_else(|_| panic!("the victim did not read {n} more times within 30 s"))
        .expect("victim running");
}

/// Reads `url` with `key` every 20 ms until `stop` flips, counting its reads in `reads`;
/// answers the statuses and the median latency.
async fn victim(
    url: String,
    key: String,
    stop: tokio::sync::watch::Receiver<bool>,
    reads: tokio::sync::watch::Sender<usize>,
) -> (Vec<u16>, Duration) {
    let client = reqwest::Client::new();
    let (mut statuses, mut took) = (Vec::new(), Vec::new());
    while !*stop.borrow() {
        let started = Instant::now();
        let status = match client.get(&url).header("X-Api-Key", &key).send().await {
            Ok(r) => r.status().as_u16(),
            Err(_) => 0,
        };
        took.push(started.elapsed());
        statuses.push(status);
        reads.send_replace(statuses.len());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    took.sort();
    let median = took.get(took.len() / 2).copied().unwrap_or_default();
    (statuses, median)
}

/// Runs `attack` (given the victim's read count) while a victim tenant reads; asserts the
/// victim was served: every read 200 with a median under 500 ms (a debug build on a loaded
/// 2-core machine answers in a few ms).
async fn beside_a_victim<F: std::future::Future<Output = ()>>(
    base: &str,
    victim_key: &str,
    attack: impl FnOnce(Reads) -> F,
) {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let (count, reads) = tokio::sync::watch::channel(0);
    let reader = tokio::spawn(victim(
        format!("{base}/billing/2/adjustment-categories/5"),
        victim_key.to_string(),
        stopped,
        count,
    ));
    attack(reads).await;
    stop.send(true).expect("victim running");
    let (statuses, median) = reader.await.expect("victim");
    assert!(
        statuses.len() >= 5,
        "the victim read {} times",
        statuses.len()
    );
    let refused = statuses.iter().filter(|s| **s != 200).count();
    assert_eq!(refused, 0, "the victim was refused: {statuses:?}");
    assert!(median < Duration::from_millis(500), "median {median:?}");
    eprintln!(
        "  victim beside it: {} reads, all 200, median {median:?}",
        statuses.len()
    );
}

#[tokio::test]
async fn made_up_admin_keys_with_slow_bodies_are_refused_before_their_bodies() {
    let (base, addr, _dir) = serve(|_| {}).await;
    let client = reqwest::Client::new();
    let (_, victim_key, _, _) = tenant(&client, &base, "victim").await;
    beside_a_victim(&base, &victim_key, |mut reads| async move {
        let mut attackers = Vec::new();
        for i in 0..80 {
            let stream = slow_body(
                &addr,
                "POST /sandbox/v1/tenants/t_nonexistent/faults",
                &[
                    format!("X-Admin-Key: made-up-{i}"),
                    "Content-Type: application/json".to_string(),
                ],
                100_000,
            )
            .await;
            attackers.push(stream);
        }
        // Each is answered 401 at once, without waiting for its body.
        let started = Instant::now();
        for stream in &mut attackers {
            assert_eq!(answered(stream, Duration::from_secs(5)).await, Some(401));
        }
        eprintln!(
            "80 made-up admin keys with trickling bodies: all 401 within {:?}",
            started.elapsed()
        );
        // The victim reads on beside the 80 connections still open.
        more_reads(&mut reads, 5).await;
        drop(attackers);
    })
    .await;
}

#[tokio::test]
async fn one_tenant_holds_one_share_whatever_credential_or_spelling_it_uses() {
    let (base, addr, _dir) = serve(|c| c.max_concurrent_requests = 64).await;
    let client = reqwest::Client::new();
    let (_, victim_key, _, _) = tenant(&client, &base, "victim").await;
    let (_, key, user, pass) = tenant(&client, &base, "greedy").await;
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    let spellings = [
        format!("Authorization: Basic {encoded}"),
        format!("Authorization: basic {encoded}"),
        format!("Authorization: BASIC   {encoded}  "),
    ];
    beside_a_victim(&base, &victim_key, |_| async {
        let mut held = Vec::new();
        for i in 0..60 {
            let stream = if i % 2 == 0 {
                slow_body(
                    &addr,
                    "POST /billing/2/usage-events/bulk",
                    &[
                        format!("X-Api-Key: {key}"),
                        "Content-Type: application/json".to_string(),
                    ],
                    1000,
                )
                .await
            } else {
                slow_body(
                    &addr,
                    "POST /t/s/r/1.28/billingAccounts",
                    &[
                        spellings[i % 3].clone(),
                        "Content-Type: application/xml".to_string(),
                    ],
                    1000,
                )
                .await
            };
            held.push(stream);
        }
        // The tenant's body budget (8) wait for their bodies; the other 52 are shed at once.
        let mut shed = 0;
        for stream in &mut held {
            if answered(stream, Duration::from_millis(300)).await == Some(503) {
                shed += 1;
            }
        }
        assert_eq!(
            shed,
            60 - 8,
            "one tenant has 8 bodies arriving, whatever it sends"
        );
    })
    .await;
}

#[tokio::test]
async fn idle_and_half_sent_connections_are_closed_within_the_head_deadline() {
    let (base, addr, _dir) = serve(|c| {
        c.header_timeout_ms = 1_000;
        c.max_connections = 256;
    })
    .await;
    let client = reqwest::Client::new();
    let (_, victim_key, _, _) = tenant(&client, &base, "victim").await;
    beside_a_victim(&base, &victim_key, |_| async {
        let started = Instant::now();
        let mut attackers = Vec::new();
        for i in 0..1_100 {
            let mut stream = TcpStream::connect(&addr).await.expect("connect");
            if i % 2 == 1 {
                let half = format!("GET /billing/2/agreements HTTP/1.1\r\nHost: {addr}\r\nX-Api");
                stream.write_all(half.as_bytes()).await.expect("write");
            }
            attackers.push(stream);
        }
        // Every one is closed by the server: the first 256 within the deadline, the rest as
        // places free up (each waits in the backlog, then at most the deadline).
        let mut buf = [0u8; 256];
        for stream in &mut attackers {
            let closed = tokio::time::timeout(Duration::from_secs(20), async {
                loop {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
            })
            .await;
            assert!(closed.is_ok(), "a connection was still open after 20 s");
        }
        let took = started.elapsed();
        eprintln!("1,100 silent or half-sent connections all closed after {took:?}");
        // 1,100 connections / 256 places x 1 s, with room for a loaded machine.
        assert!(took < Duration::from_secs(15), "all closed after {took:?}");
    })
    .await;
    // A new client is served at once afterwards.
    let r = client
        .get(format!("{base}/billing/2/adjustment-categories/5"))
        .header("X-Api-Key", &victim_key)
        .send()
        .await
        .expect("served");
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn pathological_globs_against_a_long_path_answer_at_once() {
    let (base, _addr, _dir) = serve(|_| {}).await;
    let client = reqwest::Client::new();
    let (_, victim_key, _, _) = tenant(&client, &base, "victim").await;
    let (id, key, _, _) = tenant(&client, &base, "globs").await;
    // `*a*a...*a*b`: a backtracking matcher retries every star against every position; and
    // a glob whose head and tail fit the path, so that the whole path is scanned.
    let glob = format!("{}b", "*a".repeat(255));
    assert_eq!(glob.len(), 511);
    let scanned = format!("/billing/2/*{}a", "?a*d".repeat(124));
    for i in 0..50 {
        let glob = if i % 2 == 0 { &glob } else { &scanned };
        let r = client
            .post(format!("{base}/sandbox/v1/tenants/{id}/faults"))
            .header("X-Admin-Key", ADMIN_KEY)
            .json(&json!({"path": glob, "status": 503}))
            .send()
            .await
            .expect("rule");
        assert_eq!(r.status(), 201);
    }
    let long = format!("/billing/2/{}", "a".repeat(8 * 1024 - 11));
    assert_eq!(long.len(), 8 * 1024);
    beside_a_victim(&base, &victim_key, |_| async {
        let attack = Instant::now();
        let mut slowest = Duration::ZERO;
        while attack.elapsed() < Duration::from_millis(500) {
            let started = Instant::now();
            let r = client
                .get(format!("{base}{long}"))
                .header("X-Api-Key", &key)
                .send()
                .await
                .expect("request");
            assert_eq!(r.status(), 404, "no rule matches (no b), no route either");
            let took = started.elapsed();
            assert!(took < Duration::from_secs(1), "answered after {took:?}");
            slowest = slowest.max(took);
        }
        // The journal's path filter uses the same matcher.
        let started = Instant::now();
        let r = client
            .get(format!("{base}/sandbox/v1/tenants/{id}/requests"))
            .query(&[("path", glob.as_str())])
            .header("X-Admin-Key", ADMIN_KEY)
            .send()
            .await
            .expect("journal");
        assert_eq!(r.status(), 200);
        assert!(started.elapsed() < Duration::from_secs(1));
        eprintln!(
            "50 rules of 509-511 characters against an 8 KiB path: slowest answer {slowest:?}; journal read with such a glob {:?}",
            started.elapsed()
        );
    })
    .await;
    // One byte longer is refused before anything is matched.
    let r = client
        .get(format!("{base}{long}a"))
        .header("X-Api-Key", &key)
        .send()
        .await
        .expect("request");
    let (status, code, _) = e2e::error_body(r).await;
    assert_eq!((status, code.as_str()), (414, "URI_TOO_LONG"));
}
