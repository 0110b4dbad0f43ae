//! Restores that finish under load. Two other environments (`s3_server`
//! processes on the same bucket) write ledgers to one tenant (about 20 writes/s in total)
//! while a third environment (this process's server) restores a checkpoint three times, each
//! restore overlapping acknowledged writes of both. Every
//! restore must answer 200 within the write deadline; right after each, the tenant holds the
//! checkpoint's rows plus only writes that had not been acknowledged before the restore
//! began; at the end no acknowledged write after the last restore is lost, and none is there
//! twice. Before the fix each lost race re-ran the whole-database replace, and these restores
//! answered 503 "lost 12 races" after about 8 s.

use super::checkpoint_limits::admin;
use super::checkpoints::{Peer, SECRET};
use e2e::s3::{open_store, Moto};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Writer loops per other environment, and the pause each keeps between its writes: 2 x 4
/// loops at most one write per 200 ms each aim at 40 writes/s (about 20-25 measured on two
/// idle cores; the rate is printed, and the test requires that every restore overlapped
/// acknowledged writes of both other environments, not a rate).
const LOOPS_PER_PEER: usize = 4;
const PACE: Duration = Duration::from_millis(200);
const RESTORES: usize = 3;

/// One ledger POST as its writer saw it.
#[derive(Debug, Clone)]
struct Write {
    name: String,
    began: Instant,
    ended: Instant,
    status: u16,
    message: String,
}

/// Waits (at most 60 s) until each of the `loops` writer loops (names `w{p}-{l}-{n}`) has
/// at least `n` writes acknowledged that began at `since` or later.
async fn acknowledged_from_every_loop(
    writes: &Mutex<Vec<Write>>,
    loops: usize,
    n: usize,
    since: Instant,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut per_loop: BTreeMap<String, usize> = BTreeMap::new();
        for w in writes.lock().unwrap().iter() {
            if w.status == 201 && w.began >= since {
                let writer = w.name.rsplit_once('-').map_or("", |(l, _)| l);
                *per_loop.entry(writer.to_string()).or_default() += 1;
            }
        }
        let ready = per_loop.values().filter(|c| **c >= n).count();
        if ready >= loops {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "after 60 s, {ready} of {loops} writer loops had {n} writes acknowledged: {per_loop:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn post_ledger(client: &reqwest::Client, base: &str, key: &str, name: &str) -> Write {
    let began = Instant::now();
    let r = client
        .post(format!("{base}/revenue/3/ledgers"))
        .header("X-Api-Key", key)
        .json(&json!({"name": name, "billing_account_category_ids": [1]}))
        .send()
        .await;
    let (status, message) = match r {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.text().await.unwrap_or_default())
        }
        Err(e) => (0, e.to_string()),
    };
    Write {
        name: name.to_string(),
        began,
        ended: Instant::now(),
        status,
        message,
    }
}

/// The ledger names of tenant `id`, read through `store` (brought up to date first).
pub(crate) fn ledger_names(store: &shared::store::Store, id: &str) -> Vec<String> {
    let db = store.tenant_db(id).expect("tenant");
    db.read_blocking(|c| {
        let mut stmt = c.prepare("SELECT name FROM ledgers ORDER BY id")?;
        let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(names.collect::<Result<Vec<_>, _>>()?)
    })
    .expect("read ledgers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restores_finish_while_two_other_environments_write_twenty_times_a_second() {
    let moto = Moto::start();
    let s3 = moto.bucket("restoreload");
    let (a_base, _a, _a_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let peers = [Peer::start(&s3), Peer::start(&s3)];
    let (status, tenant) = admin(
        &a_base,
        reqwest::Method::POST,
        "/tenants",
        json!({"name": "loaded", "seed": "demo"}),
    )
    .await;
    assert_eq!(status, 201, "{tenant}");
    let id = tenant["id"].as_str().expect("id").to_string();
    let api_key = tenant["api_key"].as_str().expect("key").to_string();
    let client = reqwest::Client::new();
    for i in 0..3 {
        let w = post_ledger(&client, &a_base, &api_key, &format!("pre-{i}")).await;
        assert_eq!(w.status, 201, "{}", w.message);
    }
    let (status, cp) = admin(
        &a_base,
        reqwest::Method::POST,
        &format!("/tenants/{id}/checkpoints"),
        json!({"name": "base"}),
    )
    .await;
    assert_eq!(status, 201, "{cp}");
    let (reader, _r_dir) = open_store(&s3);
    let reader = Arc::new(reader);
    let checkpointed: BTreeSet<String> = {
        let (r, id) = (reader.clone(), id.clone());
        tokio::task::spawn_blocking(move || ledger_names(&r, &id))
            .await
            .expect("join")
            .into_iter()
            .collect()
    };
    assert!(checkpointed.contains("pre-2"), "{checkpointed:?}");

    // The other environments' writers.
    let load_began = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let writes: Arc<Mutex<Vec<Write>>> = Arc::default();
    let mut loops = Vec::new();
    for (p, peer) in peers.iter().enumerate() {
        for l in 0..LOOPS_PER_PEER {
            let (stop, writes, base, key) = (
                stop.clone(),
                writes.clone(),
                peer.base.clone(),
                api_key.clone(),
            );
            loops.push(tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let w = post_ledger(&client, &base, &key, &format!("w{p}-{l}-{n}")).await;
                    let pause = PACE.saturating_sub(w.ended - w.began);
                    writes.lock().unwrap().push(w);
                    n += 1;
                    tokio::time::sleep(pause).await;
                }
            }));
        }
    }
    // The restores start once the load is on: every writer loop has had writes acknowledged.
    let loop_count = peers.len() * LOOPS_PER_PEER;
    acknowledged_from_every_loop(&writes, loop_count, 3, load_began).await;

    let deadline = s3.write_deadline;
    let mut windows = Vec::new();
    for round in 0..RESTORES {
        let began = Instant::now();
        let (status, body) = admin(
            &a_base,
            reqwest::Method::POST,
            &format!("/tenants/{id}/restore"),
            json!({"checkpoint": "base"}),
        )
        .await;
        let ended = Instant::now();
        let took = ended - began;
        eprintln!("restore {round}: {status} in {took:?}");
        assert_eq!(status, 200, "restore {round} after {took:?}: {body}");
        assert!(took < deadline, "restore {round} took {took:?}");
        // Right after it: the checkpoint's rows, plus writes that were not acknowledged
        // before the restore began.
        let names = {
            let (r, id) = (reader.clone(), id.clone());
            tokio::task::spawn_blocking(move || ledger_names(&r, &id))
                .await
                .expect("join")
        };
        let seen = writes.lock().unwrap().clone();
        let acked_before: BTreeSet<&str> = seen
            .iter()
            .filter(|w| w.status == 201 && w.ended < began)
            .map(|w| w.name.as_str())
            .collect();
        for name in &checkpointed {
            assert!(names.contains(name), "restore {round}: {name} missing");
        }
        for name in &names {
            assert!(
                !acked_before.contains(name.as_str()),
                "restore {round}: {name}, acknowledged before the restore began, survived it"
            );
        }
        windows.push((began, ended));
        // Writes go on between the restores (and after the last one, which the end checks):
        // every loop has one acknowledged that began after this restore answered. The pause
        // keeps the restores' spacing (and so the measured rate) as designed.
        tokio::time::sleep(Duration::from_millis(700)).await;
        acknowledged_from_every_loop(&writes, loop_count, 1, ended).await;
    }
    stop.store(true, Ordering::SeqCst);
    for l in loops {
        l.await.expect("writer loop");
    }
    let writes = writes.lock().unwrap().clone();
    let (first, last) = (windows[0].0, windows[RESTORES - 1]);
    let during = writes
        .iter()
        .filter(|w| w.status == 201 && w.ended >= first && w.ended <= last.1)
        .count();
    let rate = during as f64 / (last.1 - first).as_secs_f64();
    let refused: Vec<&Write> = writes.iter().filter(|w| w.status != 201).collect();
    eprintln!(
        "{} writes, {} acknowledged, {rate:.1} acknowledged writes/s during the restores; refused: {:?}",
        writes.len(),
        writes.len() - refused.len(),
        refused.iter().map(|w| (w.status, &w.message)).take(5).collect::<Vec<_>>()
    );
    // The restores raced real writes: each overlapped acknowledged writes of both other
    // environments. (A rate floor here failed on a loaded machine with every restore
    // answered 200: speed is the benchmarks' business, not this test's.)
    for (round, (began, ended)) in windows.iter().enumerate() {
        for p in 0..peers.len() {
            let raced = writes.iter().any(|w| {
                w.status == 201
                    && w.name.starts_with(&format!("w{p}-"))
                    && w.began <= *ended
                    && w.ended >= *began
            });
            assert!(
                raced,
                "restore {round} overlapped no acknowledged write of environment {p}"
            );
        }
    }

    // At the end, in a cold environment: no name twice, nothing nobody wrote, every write
    // acknowledged after the last restore answered is there, none acknowledged before it
    // began.
    let (cold, _c_dir) = open_store(&s3);
    let names = {
        let id = id.clone();
        tokio::task::spawn_blocking(move || ledger_names(&cold, &id))
            .await
            .expect("join")
    };
    let mut copies: BTreeMap<&str, usize> = BTreeMap::new();
    for name in &names {
        *copies.entry(name.as_str()).or_default() += 1;
    }
    let by_name: BTreeMap<&str, &Write> = writes.iter().map(|w| (w.name.as_str(), w)).collect();
    for (name, n) in &copies {
        assert_eq!(*n, 1, "{name} is there {n} times");
        if checkpointed.contains(*name) {
            continue;
        }
        let w = by_name
            .get(name)
            .unwrap_or_else(|| panic!("{name} was never written"));
        assert!(
            w.ended >= last.0,
            "{name} was acknowledged before the last restore began"
        );
        // A 503 answer may only have been "outcome unknown", never "nothing applied".
        if w.status != 201 {
            assert!(w.message.contains("may or may not"), "{name}: {w:?}");
        }
    }
    for w in &writes {
        if w.status == 201 && w.began > last.1 {
            assert!(copies.contains_key(w.name.as_str()), "{} lost", w.name);
        }
        if w.status == 201 && w.ended < last.0 {
            assert!(!copies.contains_key(w.name.as_str()), "{} kept", w.name);
        }
    }
}
