//! Fair shares: 2, 4 and 8 tenants attack at once, each with connections whose
//! bodies trickle (one byte every 0.5 s of a 100,000-byte bulk) and with requests a fault
//! rule of its own stalls for 3 s once admitted; meanwhile another tenant's reads, the admin
//! API, a served document and the console page must keep answering 200, none queued behind the
//! attack. The attack is bounded: 12 trickling connections and 30 stalled requests at a time
//! per attacker, on loopback, while the victims read 8 rounds.
//!
//! "Not queued behind the attack" is read against the attack itself, not a wall-clock speed
//! (a loaded machine is slow for everyone, which is a benchmark's business): a victim read
//! that waited for an attacker's permit takes at least an admitted attacker's 3 s stall, so the
//! median victim read must stay under half of it.

use super::hostile::{slow_body, tenant};
use super::overload::serve;
use e2e::ADMIN_KEY;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

/// Trickling bodies per attacker.
const TRICKLING: usize = 12;
/// Stalled requests per attacker at a time.
const STALLED: usize = 30;
/// How long each stalled request is delayed once admitted.
const STALL_MS: u64 = 3_000;
/// A median victim read this slow waited behind the attack (half an admitted stall).
const QUEUED_BEHIND_THE_ATTACK: Duration = Duration::from_millis(STALL_MS / 2);
/// Rounds of reads each victim makes (one read of each of the four, in turn).
const ROUNDS: usize = 8;

/// One attacker: trickling bodies and stalled reads until `stop` flips.
async fn attack(base: String, addr: String, key: String, stop: watch::Receiver<bool>) {
    let mut bodies = Vec::new();
    for _ in 0..TRICKLING {
        bodies.push(
            slow_body(
                &addr,
                "POST /billing/2/usage-events/bulk",
                &[
                    format!("X-Api-Key: {key}"),
                    "Content-Type: application/json".to_string(),
                ],
                100_000,
            )
            .await,
        );
    }
    let trickle = {
        let stop = stop.clone();
        tokio::spawn(async move {
            // Pacing a trickling body: one byte each 0.5 s on every connection.
            while !*stop.borrow() {
                for stream in &mut bodies {
                    let _ = stream.write_all(b" ").await;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };
    let client = reqwest::Client::new();
    let mut stalled = Vec::new();
    for _ in 0..STALLED {
        let (client, url, key, stop) = (
            client.clone(),
            format!("{base}/billing/2/adjustment-categories"),
            key.clone(),
            stop.clone(),
        );
        stalled.push(tokio::spawn(async move {
            while !*stop.borrow() {
                let r = client.get(&url).header("X-Api-Key", &key).send().await;
                if r.is_ok_and(|r| r.status() == 503) {
                    // Pacing a shed request's retry (a tenant flooding the CPU with requests
                    // is another attack: a rate limit's, not a share's).
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }));
    }
    for s in stalled {
        let _ = s.await;
    }
    let _ = trickle.await;
}

/// What a victim reads: a label, the URL and its credential header.
type Read = (&'static str, String, Option<(&'static str, String)>);

/// Reads every one of `reads` in turn, [`ROUNDS`] times; answers per read its statuses and
/// latencies.
async fn victims(reads: Vec<Read>) -> Vec<(Vec<u16>, Vec<Duration>)> {
    let client = reqwest::Client::new();
    let mut seen = vec![(Vec::new(), Vec::new()); reads.len()];
    for _ in 0..ROUNDS {
        for (i, (_, url, header)) in reads.iter().enumerate() {
            let mut request = client.get(url);
            if let Some((name, value)) = header {
                request = request.header(*name, value);
            }
            let started = Instant::now();
            let status = match request.send().await {
                Ok(r) => {
                    let status = r.status().as_u16();
                    let _ = r.bytes().await;
                    status
                }
                Err(_) => 0,
            };
            seen[i].1.push(started.elapsed());
            seen[i].0.push(status);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    seen
}

async fn attacked_by(tenants: usize) {
    let (base, addr, _dir) = serve(|_| {}).await;
    let client = reqwest::Client::new();
    let (_, victim_key, _, _) = tenant(&client, &base, "victim").await;
    let mut keys = Vec::new();
    for i in 0..tenants {
        let (id, key, _, _) = tenant(&client, &base, &format!("attacker-{i}")).await;
        let r = client
            .post(format!("{base}/sandbox/v1/tenants/{id}/faults"))
            .header("X-Admin-Key", ADMIN_KEY)
            .json(&json!({"method": "GET", "path": "/billing/2/adjustment-categories", "latency_ms": STALL_MS}))
            .send()
            .await
            .expect("fault rule");
        assert_eq!(r.status(), 201);
        keys.push(key);
    }
    let (stop, stopped) = watch::channel(false);
    let mut attackers = Vec::new();
    for key in &keys {
        attackers.push(tokio::spawn(attack(
            base.clone(),
            addr.clone(),
            key.clone(),
            stopped.clone(),
        )));
    }
    // The attack is in place once every attacker is shed: its share is full. (The probe reads
    // a path its stall rule does not match, so it answers at once.)
    let deadline = Instant::now() + Duration::from_secs(10);
    for key in &keys {
        loop {
            let r = client
                .get(format!("{base}/billing/2/adjustment-categories/5"))
                .header("X-Api-Key", key)
                .send()
                .await
                .expect("probe");
            if r.status() == 503 {
                break;
            }
            assert!(Instant::now() < deadline, "an attacker was never shed");
        }
    }
    let reads: Vec<Read> = vec![
        (
            "victim tenant",
            format!("{base}/billing/2/adjustment-categories/5"),
            Some(("X-Api-Key", victim_key.clone())),
        ),
        (
            "admin API",
            format!("{base}/sandbox/v1/tenants"),
            Some(("X-Admin-Key", ADMIN_KEY.to_string())),
        ),
        (
            "openapi.json",
            format!("{base}/billing/2/openapi.json"),
            None,
        ),
        ("console", format!("{base}/sandbox/console"), None),
    ];
    let labels: Vec<&str> = reads.iter().map(|r| r.0).collect();
    let seen = victims(reads).await;
    stop.send(true).expect("attackers running");
    for a in attackers {
        a.await.expect("attacker");
    }
    let mut failures = Vec::new();
    for (label, (statuses, mut took)) in labels.iter().zip(seen) {
        took.sort();
        let median = took.get(took.len() / 2).copied().unwrap_or_default();
        let max = took.last().copied().unwrap_or_default();
        let refused: Vec<u16> = statuses.iter().copied().filter(|s| *s != 200).collect();
        eprintln!(
            "{tenants} attacking tenants; {label}: {} reads, {} not 200 {:?}, median {median:?}, max {max:?}",
            statuses.len(),
            refused.len(),
            &refused[..refused.len().min(5)],
        );
        if statuses.len() != ROUNDS || !refused.is_empty() || median >= QUEUED_BEHIND_THE_ATTACK {
            failures.push(*label);
        }
    }
    assert!(
        failures.is_empty(),
        "not served beside {tenants} attackers: {failures:?}"
    );
}

#[tokio::test]
async fn two_attacking_tenants_leave_the_rest_served() {
    attacked_by(2).await;
}

#[tokio::test]
async fn four_attacking_tenants_leave_the_rest_served() {
    attacked_by(4).await;
}

#[tokio::test]
async fn eight_attacking_tenants_leave_the_rest_served() {
    attacked_by(8).await;
}
