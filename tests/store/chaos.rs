//! Chaos: six writer processes (`s3_writer`, one store each, like Lambda environments),
//! two on each of three tenants of one bucket, behind a fault proxy that at random holds PUTs
//! past the clients' timeouts and forwards them later, drops answers after S3 executed the
//! request, answers 500 and 503, and closes connections. Writers retry every 503 with the
//! same request, a second later. At the end every acknowledged write is in S3 exactly once
//! and no write twice.
//!
//! Why these numbers: a held PUT (1.5 s) outlives the SDK's whole call (1 s), and the retry
//! comes after it landed; with two writers per tenant the slot is often still free when it
//! lands. So a writer that answered "nothing was applied" without settling its slot (the
//! code before fencing) is caught storing writes twice (seen with seed 11: 87 rows for 84
//! acknowledged writes, one of them 3 times).
//!
//! Seeded (`CHAOS_SEED`, default 11; the n-th request the proxy sees gets the n-th draw,
//! which requests come n-th depends on timing) and bounded in time.

use e2e::s3::{open_store, reason_names, Chaos, Gate, Moto, AWS_ENV};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WRITERS: usize = 6;
const TENANTS: usize = 3;
const WRITES_EACH: u32 = 14;
const RETRIES: u32 = 25;
/// The whole run of the writers must end within this.
const BOUND: Duration = Duration::from_secs(150);

/// One write as a writer process reported it.
#[derive(Debug, Default)]
struct Answer {
    acked: bool,
    tries: u32,
    unavailable: u32,
    unknown: u32,
}

fn field(line: &str, key: &str) -> u32 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn writers_behind_a_faulty_s3_keep_every_acknowledged_write_exactly_once() {
    let seed: u64 = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11);
    let moto = Moto::start();
    let direct = moto.bucket("chaos");
    let (setup, _d) = open_store(&direct);
    let tenants: Vec<String> = (0..TENANTS)
        .map(|i| {
            let (t, _) = setup
                .registry()
                .create_tenant(&format!("chaos{i}"), "UTC")
                .expect("register");
            t.id
        })
        .collect();

    let gate = Gate::start(&moto);
    gate.chaos(Some(Chaos {
        seed,
        hold_put: 150,
        drop_answer: 40,
        error_500: 40,
        error_503: 40,
        reset: 40,
        hold: Duration::from_millis(1500),
    }));
    let dirs: Vec<_> = (0..WRITERS)
        .map(|_| tempfile::tempdir().expect("dir"))
        .collect();
    let started = Instant::now();
    let mut children: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            Command::new(env!("CARGO_BIN_EXE_s3_writer"))
                .arg(d.path())
                .args([
                    &tenants[i % TENANTS],
                    &format!("w{i}"),
                    &WRITES_EACH.to_string(),
                ])
                .env("SANDBOX_S3_BUCKET", &direct.bucket)
                .env("SANDBOX_S3_PREFIX", &direct.prefix)
                .env("SANDBOX_S3_ENDPOINT", &gate.endpoint)
                .env("SANDBOX_S3_ATTEMPT_TIMEOUT_MS", "400")
                .env("SANDBOX_S3_WRITE_DEADLINE_MS", "8000")
                .env("S3_WRITER_RETRIES", RETRIES.to_string())
                .env("S3_WRITER_RETRY_PAUSE_MS", "1000")
                .env("RUST_LOG", "error")
                .envs(AWS_ENV)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn writer")
        })
        .collect();
    // Bounded: a writer still running after BOUND is killed and the test fails.
    while children
        .iter_mut()
        .any(|c| c.try_wait().ok().flatten().is_none())
    {
        if started.elapsed() > BOUND {
            for c in &mut children {
                let _ = c.kill();
            }
            panic!("the writers did not finish within {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = started.elapsed();
    let mut answers: BTreeMap<String, Answer> = BTreeMap::new();
    for child in children {
        let out = child.wait_with_output().expect("writer output");
        assert!(out.status.success(), "a writer could not open the store");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut words = line.split_whitespace();
            let (Some(kind), Some(name)) = (words.next(), words.next()) else {
                continue;
            };
            answers.insert(
                name.to_string(),
                Answer {
                    acked: kind == "ack",
                    tries: field(line, "tries="),
                    unavailable: field(line, "unavailable="),
                    unknown: field(line, "unknown="),
                },
            );
        }
    }
    gate.chaos(None);
    gate.wait_for_held(Duration::from_secs(30));
    let faults = gate.counts();

    let (cold, _c) = open_store(&direct);
    let mut stored: Vec<String> = tenants
        .iter()
        .flat_map(|t| reason_names(&cold, t))
        .collect();
    stored.sort();
    let mut present: BTreeMap<&str, usize> = BTreeMap::new();
    for name in &stored {
        *present.entry(name.as_str()).or_default() += 1;
    }
    let total = WRITERS * WRITES_EACH as usize;
    assert_eq!(answers.len(), total, "every write answered once");
    let acked: Vec<&String> = answers
        .iter()
        .filter(|(_, a)| a.acked)
        .map(|(n, _)| n)
        .collect();
    let unavailable: u32 = answers.values().map(|a| a.unavailable).sum();
    let unknown: u32 = answers.values().map(|a| a.unknown).sum();
    let retried = answers.values().filter(|a| a.tries > 1).count();
    let log: Vec<String> = moto
        .keys("chaos", "sandbox/tenants/")
        .into_iter()
        .filter(|k| k.contains("/log/"))
        .collect();
    eprintln!(
        "chaos seed {seed}: {WRITERS} processes on {TENANTS} tenants x {WRITES_EACH} writes in {took:.1?}: {} acknowledged, \
         {} refused; 503s: {unavailable} 'nothing applied' + {unknown} 'outcome unknown'; {retried} writes retried; \
         {} rows present ({} distinct); {} log entries ({} fences); proxy: {faults:?}",
        acked.len(),
        total - acked.len(),
        stored.len(),
        present.len(),
        log.len(),
        log.len().saturating_sub(stored.len()),
    );

    for name in &acked {
        assert!(
            present.contains_key(name.as_str()),
            "acknowledged {name} is missing"
        );
    }
    for (name, copies) in &present {
        let answer = answers.get(*name);
        assert!(answer.is_some(), "{name} was never written");
        // A write answered "outcome unknown" and then retried may honestly be there twice;
        // every other write exactly once.
        let allowed = 1 + answer.map_or(0, |a| a.unknown as usize);
        assert!(
            *copies <= allowed,
            "{name} is present {copies} times; answers: {answer:?}"
        );
        if answer.is_some_and(|a| a.unknown == 0) {
            assert_eq!(*copies, 1, "{name}");
        }
    }
    assert!(
        faults.held + faults.dropped_answers + faults.errors + faults.resets > 0,
        "the proxy played no fault: {faults:?}"
    );
    assert!(
        acked.len() * 2 >= total,
        "most writes got through: {} of {total}",
        acked.len()
    );
    let mut warm: Vec<String> = tenants
        .iter()
        .flat_map(|t| reason_names(&setup, t))
        .collect();
    warm.sort();
    assert_eq!(warm, stored, "a warm store agrees");
}
