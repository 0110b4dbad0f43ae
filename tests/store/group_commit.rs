//! Group commit in S3 mode (docs/storage.md, "Group commit"): concurrent writes of one
//! server to one tenant share one log entry and one PUT, each still its own transaction.
//! Against moto behind the latency proxy (`e2e::s3::Gate`, 20 ms per S3 request, so that
//! writes arrive while a group's PUT is in flight): concurrent ledger POSTs, some refused
//! (a name in use), take fewer log entries than writes, and a refused write refuses only
//! itself; and a server in its own OS process killed with SIGKILL while sixteen clients
//! write loses no acknowledged write and applies none twice.

use super::checkpoints::Peer;
use super::lifecycle::create;
use super::restore_load::ledger_names;
use e2e::s3::{open_store, Gate, Moto};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const LATENCY: Duration = Duration::from_millis(20);

/// POSTs ledger `name`: the status (0 when no answer came: the connection failed).
async fn post_ledger(client: &reqwest::Client, base: &str, key: &str, name: &str) -> u16 {
    let r = client
        .post(format!("{base}/revenue/3/ledgers"))
        .header("X-Api-Key", key)
        .json(&json!({"name": name, "billing_account_category_ids": [1]}))
        .send()
        .await;
    match r {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    }
}

/// The ledger names of tenant `id`, sorted, as a new environment started from the bucket
/// reads them.
fn stored_ledgers(s3: &shared::store::S3Config, id: &str) -> Vec<String> {
    let mut names = ledger_names(&open_store(s3).0, id);
    names.sort();
    names
}

/// Creates tenant `name` (demo seed) through the admin API at `base`: (id, api key).
async fn create_tenant(base: &str, name: &str) -> (String, String) {
    let v = create(base, name).await;
    let field = |f: &str| v[f].as_str().expect(f).to_string();
    (field("id"), field("api_key"))
}

/// How many log entries tenant `id` has in the bucket.
fn log_entries(moto: &Moto, bucket: &str, id: &str) -> usize {
    moto.keys(bucket, &format!("sandbox/tenants/{id}/log/"))
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_share_log_entries_and_a_refused_one_refuses_only_itself() {
    let moto = Moto::start();
    let direct = moto.bucket("group");
    let gate = Gate::start(&moto);
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    let server = e2e::s3::server(&gated).await;
    let (id, key) = create_tenant(&server.base, "grouped").await;
    let client = reqwest::Client::new();
    assert_eq!(post_ledger(&client, &server.base, &key, "taken").await, 201);
    let before = log_entries(&moto, "group", &id);

    // 16 writes at once: 12 new ledgers and 4 with the name just taken (409 each).
    gate.latency(Some(LATENCY));
    let posts = (0..16).map(|i| {
        let (client, base, key) = (client.clone(), server.base.clone(), key.clone());
        let name = if i % 4 == 3 {
            "taken".to_string()
        } else {
            format!("g-{i}")
        };
        tokio::spawn(async move { (name.clone(), post_ledger(&client, &base, &key, &name).await) })
    });
    let posts: Vec<_> = posts.collect();
    let mut answers = Vec::new();
    for p in posts {
        answers.push(p.await.expect("post"));
    }
    gate.latency(None);
    let entries = log_entries(&moto, "group", &id) - before;
    eprintln!("16 concurrent writes (12 new, 4 refused): {entries} log entries; {answers:?}");
    for (name, status) in &answers {
        let want = if name == "taken" { 409 } else { 201 };
        assert_eq!(*status, want, "{name}");
    }
    assert!(
        entries < 12,
        "12 applied writes that arrived together took {entries} log entries: none shared"
    );
    let mut want: Vec<String> = answers
        .iter()
        .filter(|(_, s)| *s == 201)
        .map(|(n, _)| n.clone())
        .collect();
    want.push("taken".into());
    want.sort();
    let stored: Vec<String> = stored_ledgers(&direct, &id)
        .into_iter()
        .filter(|n| n.starts_with("g-") || n == "taken")
        .collect();
    assert_eq!(
        stored, want,
        "each applied write once, the refused ones not at all"
    );
}

/// Sixteen clients write ledgers with unique names to a server in its own process (S3 mode,
/// 20 ms per S3 request) until it has acknowledged 120 of them, then the server is killed
/// with SIGKILL mid-stream, with writes in flight and groups being formed. A new server
/// process on the same bucket then serves the tenant: every acknowledged write is there once,
/// every stored name was sent (writes in flight at the kill may or may not be), no write was
/// answered 409 (its name taken: it would have been applied twice), and writes go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_killed_during_group_commits_loses_and_doubles_nothing() {
    const CLIENTS: usize = 16;
    const KILL_AFTER: usize = 120;
    let moto = Moto::start();
    let direct = moto.bucket("groupkill");
    let gate = Gate::start(&moto);
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    let peer = Peer::start(&gated);
    let (id, key) = create_tenant(&peer.base, "killed").await;
    let before = log_entries(&moto, "groupkill", &id);

    gate.latency(Some(LATENCY));
    let answers: Arc<Mutex<BTreeMap<String, u16>>> = Arc::default();
    let acked = Arc::new(tokio::sync::Notify::new());
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (base, key, answers, acked) = (
                peer.base.clone(),
                key.clone(),
                answers.clone(),
                acked.clone(),
            );
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                for n in 0.. {
                    let name = format!("c{c}-{n}");
                    let status = post_ledger(&client, &base, &key, &name).await;
                    answers.lock().unwrap().insert(name, status);
                    acked.notify_one();
                    if status == 0 {
                        // The server is gone.
                        return;
                    }
                }
            })
        })
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let ok = answers
            .lock()
            .unwrap()
            .values()
            .filter(|s| **s == 201)
            .count();
        if ok >= KILL_AFTER {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {ok} writes acknowledged in 120 s"
        );
        let _ = tokio::time::timeout(Duration::from_millis(100), acked.notified()).await;
    }
    // SIGKILL (Child::kill), with the clients' requests in flight.
    drop(peer);
    for c in clients {
        c.await.expect("client");
    }
    gate.latency(None);
    let answers = answers.lock().unwrap().clone();
    let entries = log_entries(&moto, "groupkill", &id) - before;

    let restarted = Peer::start(&gated);
    let client = reqwest::Client::new();
    assert_eq!(
        post_ledger(&client, &restarted.base, &key, "after-restart").await,
        201
    );
    let stored = stored_ledgers(&direct, &id);
    let ours: Vec<&String> = stored.iter().filter(|n| n.starts_with('c')).collect();
    let once: BTreeSet<&String> = ours.iter().copied().collect();
    let ok: Vec<&String> = answers
        .iter()
        .filter(|(_, s)| **s == 201)
        .map(|(n, _)| n)
        .collect();
    let in_flight = answers.values().filter(|s| **s == 0).count();
    eprintln!(
        "{} acknowledged in {entries} log entries, {in_flight} in flight at the kill, {} stored; other answers: {:?}",
        ok.len(),
        ours.len(),
        answers
            .iter()
            .filter(|(_, s)| **s != 201 && **s != 0)
            .collect::<Vec<_>>()
    );
    assert_eq!(once.len(), ours.len(), "a name stored twice");
    for name in &ok {
        assert!(once.contains(name), "acknowledged {name} was lost");
    }
    for name in &ours {
        assert!(answers.contains_key(*name), "{name} was never sent");
        assert!(
            matches!(answers[*name], 201 | 0 | 503),
            "{name} is stored but was answered {}",
            answers[*name]
        );
    }
    assert!(
        !answers.values().any(|s| *s == 409),
        "a write was refused as already applied"
    );
    assert!(
        entries < ok.len(),
        "{} acknowledged writes took {entries} log entries: none shared",
        ok.len()
    );
    assert!(stored.contains(&"after-restart".to_string()));
}
