//! The S3-backed store against a real S3 server (moto, single-threaded): cold loads, many
//! writers on one tenant (threads, in-process "environments" and OS processes), writers
//! killed at every step of a write, and S3 refusing requests.

use e2e::s3::{
    open_store, reason_names, server, try_insert_reason, wait_for_compaction, Gate, Moto, AWS_ENV,
};
use e2e::ADMIN_KEY;
use serde_json::{json, Value};
use shared::store::{sqlite, S3Config, Store};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every row of every user table of a tenant, as text, in a stable order.
fn dump(store: &Store, tenant: &str) -> Vec<String> {
    let db = store.tenant_db(tenant).expect("tenant db");
    db.read_blocking(|conn| {
        let mut out = Vec::new();
        for table in sqlite::user_tables(conn)? {
            let mut stmt =
                conn.prepare(&format!("SELECT rowid, * FROM \"{table}\" ORDER BY rowid"))?;
            let n = stmt.column_count();
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let values = (0..n)
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                out.push(format!("{table}: {}", values.join("|")));
            }
        }
        Ok(out)
    })
    .expect("dump")
}

async fn create_tenant(base: &str, name: &str, seed: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .json(&json!({"name": name, "seed": seed}))
        .send()
        .await
        .expect("request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cold_load_equals_what_was_written() {
    let moto = Moto::start();
    let config = moto.bucket("cold-load");
    let s = server(&config).await;
    let (base, state) = (&s.base, &s.state);
    let r = create_tenant(base, "acme", "demo").await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.expect("json");
    let id = created["id"].as_str().expect("id").to_string();
    let key = created["api_key"].as_str().expect("key").to_string();

    let written = tokio::task::spawn_blocking({
        let store = state.store.clone();
        let id = id.clone();
        move || {
            try_insert_reason(&store, &id, "after seeding").expect("write");
            dump(&store, &id)
        }
    })
    .await
    .expect("join");
    assert!(
        written.len() > 50,
        "the demo seed wrote {} rows",
        written.len()
    );

    let cfg = config.clone();
    let (loaded, found) = tokio::task::spawn_blocking(move || {
        let (cold, _d) = open_store(&cfg);
        let found = cold.registry().find_by_api_key(&key).expect("lookup");
        (dump(&cold, &id), found)
    })
    .await
    .expect("join");
    assert_eq!(
        loaded, written,
        "a cold store loads exactly what was written"
    );
    assert_eq!(
        found.map(|t| t.name),
        Some("acme".to_string()),
        "credentials live in S3"
    );
    let log = moto.keys("cold-load", "sandbox/tenants/");
    assert!(
        log.iter()
            .any(|k| k.ends_with("/log/00000000000000000002.json")),
        "{log:?}"
    );
}

#[test]
fn compaction_makes_a_snapshot_and_cold_starts_use_it() {
    let moto = Moto::start();
    let mut config = moto.bucket("compaction");
    config.compact_every = 4;
    let (a, _da) = open_store(&config);
    let (tenant, _) = a.registry().create_tenant("snap", "UTC").expect("register");
    for i in 0..10 {
        try_insert_reason(&a, &tenant.id, &format!("r{i:02}")).expect("write");
    }
    let snapshots = |moto: &Moto| {
        moto.keys(
            "compaction",
            &format!("sandbox/tenants/{}/snapshots/", tenant.id),
        )
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while snapshots(&moto).is_empty() {
        assert!(Instant::now() < deadline, "no snapshot was made");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (b, _db) = open_store(&config);
    assert_eq!(dump(&b, &tenant.id), dump(&a, &tenant.id));
    // Writes from the cold store are seen by the first one's next read, and vice versa.
    try_insert_reason(&b, &tenant.id, "from b").expect("write");
    try_insert_reason(&a, &tenant.id, "from a").expect("write");
    assert_eq!(reason_names(&a, &tenant.id), reason_names(&b, &tenant.id));
    assert_eq!(reason_names(&a, &tenant.id).len(), 12);
    // Older snapshots are deleted once a newer one is up; the log is kept.
    for store in [&a, &b] {
        wait_for_compaction(store, &tenant.id, Duration::from_secs(30));
    }
    assert!(snapshots(&moto).len() <= 2, "{:?}", snapshots(&moto));
    let log = moto.keys("compaction", &format!("sandbox/tenants/{}/log/", tenant.id));
    assert_eq!(log.len(), 12);
}

/// Starts `s3_writer` processes; answers their children.
fn writer(config: &S3Config, dir: &Path, tenant: &str, name: &str, count: u32) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_s3_writer"));
    cmd.arg(dir)
        .args([tenant, name, &count.to_string()])
        .env("SANDBOX_S3_BUCKET", &config.bucket)
        .env("SANDBOX_S3_PREFIX", &config.prefix)
        .env(
            "SANDBOX_S3_ENDPOINT",
            config.endpoint.as_deref().unwrap_or_default(),
        )
        .env("RUST_LOG", "warn")
        .envs(AWS_ENV)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

fn lines_with(output: &str, prefix: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|s| s.split(' ').next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn processes_writing_one_tenant_keep_exactly_the_acknowledged_writes() {
    let moto = Moto::start();
    let config = moto.bucket("race");
    let (setup, _d) = open_store(&config);
    let (tenant, _) = setup
        .registry()
        .create_tenant("race", "UTC")
        .expect("register");
    try_insert_reason(&setup, &tenant.id, "base").expect("write");

    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().expect("dir")).collect();
    let children: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            writer(&config, d.path(), &tenant.id, &format!("w{i}"), 10)
                .spawn()
                .expect("spawn writer")
        })
        .collect();
    let mut acked = Vec::new();
    let mut refused = Vec::new();
    let mut reruns = 0;
    for child in children {
        let out = child.wait_with_output().expect("writer output");
        assert!(out.status.success(), "a writer failed");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        acked.extend(lines_with(&text, "ack "));
        refused.extend(lines_with(&text, "err "));
        reruns += text
            .split("runs=")
            .skip(1)
            .filter_map(|s| s.split_whitespace().next()?.parse::<u32>().ok())
            .map(|n| n - 1)
            .sum::<u32>();
    }
    assert_eq!(acked.len() + refused.len(), 40, "every write answered once");
    assert!(
        acked.len() >= 20,
        "most writes got through: {} of 40",
        acked.len()
    );

    let (cold, _c) = open_store(&config);
    let stored = reason_names(&cold, &tenant.id);
    let mut expected: Vec<String> = acked.clone();
    expected.push("base".into());
    expected.sort();
    assert_eq!(
        stored, expected,
        "exactly the acknowledged writes, each once"
    );
    let unique: BTreeSet<_> = stored.iter().collect();
    assert_eq!(unique.len(), stored.len(), "no write applied twice");
    assert_eq!(
        reason_names(&setup, &tenant.id),
        expected,
        "a warm store catches up on read"
    );
    let log = moto.keys("race", &format!("sandbox/tenants/{}/log/", tenant.id));
    assert_eq!(
        log.len(),
        acked.len() + 1,
        "one log entry per acknowledged write"
    );
    eprintln!(
        "4 processes x 10 writes: {} acknowledged, {} refused, {reruns} closure re-runs after lost races",
        acked.len(),
        refused.len()
    );
}

/// Four environments (processes) write one tenant as fast as they can for 10 s, every S3
/// request held 20 ms by the proxy (a distant S3): a lost race is retried, with a jittered
/// pause, until the write's deadline, so no write is refused, and every acknowledged write
/// is stored exactly once. Before, a write that lost 12 races in a row answered 503.
#[test]
fn four_environments_writing_at_once_refuse_nothing_and_store_each_write_once() {
    let moto = Moto::start();
    let direct = moto.bucket("contention");
    let gate = Gate::start(&moto);
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    let (setup, _d) = open_store(&direct);
    let (tenant, _) = setup
        .registry()
        .create_tenant("contention", "UTC")
        .expect("register");
    gate.latency(Some(Duration::from_millis(20)));
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().expect("dir")).collect();
    let children: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            writer(&gated, d.path(), &tenant.id, &format!("w{i}"), 100_000)
                .env("S3_WRITER_SECONDS", "10")
                .spawn()
                .expect("spawn writer")
        })
        .collect();
    let mut acked = Vec::new();
    let mut refused = Vec::new();
    let mut per_writer = Vec::new();
    for child in children {
        let out = child.wait_with_output().expect("writer output");
        assert!(out.status.success(), "a writer failed");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let mine = lines_with(&text, "ack ");
        per_writer.push(mine.len());
        acked.extend(mine);
        refused.extend(
            text.lines()
                .filter(|l| l.starts_with("err "))
                .map(String::from),
        );
    }
    gate.latency(None);
    eprintln!(
        "4 environments x 10 s at 20 ms per S3 request: {} acknowledged {per_writer:?}, {} refused",
        acked.len(),
        refused.len()
    );
    assert!(refused.is_empty(), "refused under contention: {refused:?}");
    assert!(
        per_writer.iter().all(|&n| n > 0),
        "an environment got no write through: {per_writer:?}"
    );
    let (cold, _c) = open_store(&direct);
    let stored = reason_names(&cold, &tenant.id);
    acked.sort();
    assert_eq!(stored, acked, "exactly the acknowledged writes, each once");
    let log = moto.keys("contention", &format!("sandbox/tenants/{}/log/", tenant.id));
    assert_eq!(
        log.len(),
        acked.len(),
        "one log entry per acknowledged write"
    );
}

#[test]
fn a_crash_before_or_after_the_put_leaves_a_consistent_history() {
    let moto = Moto::start();
    let config = moto.bucket("crash");
    let (setup, _d) = open_store(&config);
    let (tenant, _) = setup
        .registry()
        .create_tenant("crash", "UTC")
        .expect("register");
    let dir = tempfile::tempdir().expect("dir");

    // Killed after the closure ran but before the PUT: nothing anywhere, not even in the
    // cache the crashed process leaves behind.
    let out = writer(&config, dir.path(), &tenant.id, "before", 1)
        .env("SANDBOX_S3_CRASH_AT", "before-put")
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(lines_with(&String::from_utf8_lossy(&out.stdout), "ack ").is_empty());
    assert!(reason_names(&open_store(&config).0, &tenant.id).is_empty());

    // Killed after S3 accepted the entry but before the local commit and the answer: the
    // write is durable (S3 is the truth) and appears exactly once everywhere.
    let out = writer(&config, dir.path(), &tenant.id, "after", 1)
        .env("SANDBOX_S3_CRASH_AT", "after-put")
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert_eq!(
        reason_names(&open_store(&config).0, &tenant.id),
        vec!["after-0"]
    );

    // The same data dir restarts cleanly and its next write lands after the crashed one.
    let out = writer(&config, dir.path(), &tenant.id, "next", 2)
        .output()
        .expect("run");
    assert_eq!(
        lines_with(&String::from_utf8_lossy(&out.stdout), "ack ").len(),
        2
    );
    assert_eq!(
        reason_names(&open_store(&config).0, &tenant.id),
        vec!["after-0", "next-0", "next-1"]
    );
}

#[test]
fn a_writer_killed_mid_stream_loses_no_acknowledged_write() {
    let moto = Moto::start();
    let config = moto.bucket("kill");
    let (setup, _d) = open_store(&config);
    let (tenant, _) = setup
        .registry()
        .create_tenant("kill", "UTC")
        .expect("register");
    let dir = tempfile::tempdir().expect("dir");
    let mut child = writer(&config, dir.path(), &tenant.id, "k", 500)
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut acked = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("line");
        acked.extend(lines_with(&line, "ack "));
        if acked.len() == 8 {
            child.kill().expect("kill");
            break;
        }
    }
    let _ = child.wait();
    let stored = reason_names(&open_store(&config).0, &tenant.id);
    let in_flight = format!("k-{}", acked.len());
    for name in &acked {
        assert!(stored.contains(name), "acknowledged {name} was lost");
    }
    assert!(
        stored.iter().all(|n| acked.contains(n) || *n == in_flight),
        "only acknowledged writes or the one in flight: {stored:?}"
    );
    let unique: BTreeSet<_> = stored.iter().collect();
    assert_eq!(unique.len(), stored.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_refusing_requests_answers_503_and_applies_nothing() {
    let moto = Moto::start();
    let direct = moto.bucket("refuse");
    let gate = Gate::start(&moto);
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    let s = server(&gated).await;
    let (base, state) = (&s.base, &s.state);
    let r = create_tenant(base, "steady", "empty").await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.expect("json");
    let id = created["id"].as_str().expect("id").to_string();
    let key = created["api_key"].as_str().expect("key").to_string();
    let before = {
        let (store, id) = (state.store.clone(), id.clone());
        tokio::task::spawn_blocking(move || dump(&store, &id))
            .await
            .expect("join")
    };

    gate.refuse(true);
    let client = reqwest::Client::new();
    let r = create_tenant(base, "refused", "demo").await;
    assert_eq!(r.status(), 503);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["code"], "SERVICE_UNAVAILABLE");
    let r = client
        .post(format!("{base}/sandbox/v1/tenants/{id}/reset"))
        .header("X-Admin-Key", ADMIN_KEY)
        .json(&json!({"seed": "demo"}))
        .send()
        .await
        .expect("reset");
    assert_eq!(r.status(), 503, "a write S3 refuses is not acknowledged");
    let r = client
        .get(format!("{base}/revenue/3/collectors"))
        .header("X-Api-Key", &key)
        .send()
        .await
        .expect("read");
    assert_eq!(
        r.status(),
        503,
        "a read that cannot check for newer writes is refused"
    );
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["code"], "SERVICE_UNAVAILABLE");
    // Surface A answers in its own shape: an XML fault.
    let basic = {
        use base64::Engine;
        let pair = format!(
            "{}:{}",
            created["basic"]["username"].as_str().expect("username"),
            created["basic"]["password"].as_str().expect("password")
        );
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    };
    let r = client
        .get(format!("{base}/t/s/r/1.28/users/current"))
        .header("Authorization", basic)
        .send()
        .await
        .expect("legacy read");
    assert_eq!(r.status(), 503);
    let xml = r.text().await.expect("body");
    assert!(
        xml.contains("<fault") && xml.contains("<failureReason>GENERAL</failureReason>"),
        "{xml}"
    );
    let after_refusal = {
        let (store, id) = (state.store.clone(), id.clone());
        tokio::task::spawn_blocking(move || {
            store.tenant_db(&id).expect("db").read_blocking(|c| {
                Ok(c.query_row("SELECT count(*) FROM collectors", [], |r| {
                    r.get::<_, i64>(0)
                })?)
            })
        })
        .await
        .expect("join")
    };
    assert!(after_refusal.is_err(), "reads fail while S3 refuses");

    gate.refuse(false);
    let r = client
        .get(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .send()
        .await
        .expect("list");
    let tenants: Value = r.json().await.expect("json");
    let names: Vec<_> = tenants
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        vec!["steady"],
        "the refused creation left nothing behind"
    );
    let (warm, cold) = {
        let (store, id, cfg) = (state.store.clone(), id.clone(), direct.clone());
        tokio::task::spawn_blocking(move || (dump(&store, &id), dump(&open_store(&cfg).0, &id)))
            .await
            .expect("join")
    };
    assert_eq!(warm, before, "the local cache was rolled back");
    assert_eq!(cold, before, "S3 holds nothing of the refused writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn environments_on_one_bucket_share_tenants_and_agree_on_names() {
    let moto = Moto::start();
    let config = moto.bucket("environments");
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(server(&config).await);
    }
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    // The same name at all three at once: exactly one wins.
    let same = futures_join(bases.iter().map(|b| {
        let b = b.clone();
        async move { create_tenant(&b, "dup", "empty").await }
    }))
    .await;
    let statuses: Vec<u16> = same.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        2,
        "{statuses:?}"
    );
    // Distinct names at once: all win, and every environment lists all of them.
    let distinct = futures_join(bases.iter().enumerate().map(|(i, b)| {
        let b = b.clone();
        async move { create_tenant(&b, &format!("t{i}"), "empty").await }
    }))
    .await;
    assert!(distinct.iter().all(|r| r.status() == 201));
    for base in &bases {
        let r = reqwest::Client::new()
            .get(format!("{base}/sandbox/v1/tenants"))
            .header("X-Admin-Key", ADMIN_KEY)
            .send()
            .await
            .expect("list");
        let v: Value = r.json().await.expect("json");
        let mut names: Vec<String> = v
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        assert_eq!(names, vec!["dup", "t0", "t1", "t2"]);
    }
}

/// Runs futures concurrently and collects their outputs in order.
async fn futures_join<F: std::future::Future<Output = reqwest::Response> + Send + 'static>(
    futures: impl Iterator<Item = F>,
) -> Vec<reqwest::Response> {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("join"));
    }
    out
}

#[test]
fn tenant_files_go_beside_the_database_in_either_mode() {
    let moto = Moto::start();
    let config = moto.bucket("files");
    let (store, _d) = open_store(&config);
    store
        .put_tenant_file("t_1", "analytics/svs/batch-1.json", b"[1,2,3]")
        .expect("put");
    assert_eq!(
        moto.objects("files", "sandbox/tenants/t_1/analytics/"),
        vec![(
            "sandbox/tenants/t_1/analytics/svs/batch-1.json".to_string(),
            7
        )]
    );
    assert!(store.put_tenant_file("t_1", "log/1.json", b"x").is_err());
    assert!(store.put_tenant_file("t_1", "../escape", b"x").is_err());

    let dir = tempfile::tempdir().expect("dir");
    let local = Store::open_with(dir.path(), None).expect("local store");
    local
        .put_tenant_file("t_1", "analytics/a.json", b"{}")
        .expect("put");
    let written = std::fs::read(dir.path().join("tenants/t_1/analytics/a.json")).expect("file");
    assert_eq!(written, b"{}");
}

#[test]
fn a_put_whose_answer_was_lost_is_recognized_and_not_applied_twice() {
    let moto = Moto::start();
    let direct = moto.bucket("lost-answer");
    let gate = Gate::start(&moto);
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    let (store, _d) = open_store(&gated);
    let (tenant, _) = store
        .registry()
        .create_tenant("lost", "UTC")
        .expect("register");

    gate.lose_next_log_put_answer();
    try_insert_reason(&store, &tenant.id, "once").expect("write");
    assert!(gate.lost_an_answer(), "the PUT's answer was dropped");

    assert_eq!(
        reason_names(&open_store(&direct).0, &tenant.id),
        vec!["once"]
    );
    let log = moto.keys(
        "lost-answer",
        &format!("sandbox/tenants/{}/log/", tenant.id),
    );
    assert_eq!(
        log.len(),
        1,
        "the SDK's retry met our own entry and was taken as success"
    );
}
