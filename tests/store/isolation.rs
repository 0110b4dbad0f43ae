//! Isolation between tenants inside one process over the S3 store (moto behind a counting
//! proxy that can hold or fail chosen requests): one tenant's slow cold start does not stall
//! another tenant's requests, concurrent first requests share one open, and a failed open is
//! remembered for a while instead of being retried (snapshot downloaded again) per request.

use e2e::s3::Moto;
use e2e::s3_count::{Action, Counter};
use e2e::ADMIN_KEY;
use shared::config::Config;
use shared::store::{S3Config, Store};
use shared::web::AppState;
use std::time::{Duration, Instant};

/// A sandbox server over an S3 store on a loopback port, on its own runtime (two workers,
/// like a small Lambda or `sandbox serve` host) in its own thread, so that a server whose
/// workers are stuck cannot also stall the test's client and clock. Answers its base URL.
fn serve(config: &S3Config) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_path_buf();
    let cfg = config.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("server runtime");
        rt.block_on(async move {
            let store = Store::open_with(&path, Some(cfg)).expect("open S3 store");
            let state =
                AppState::from_parts(store, Config::new(&path, Some(ADMIN_KEY.to_string())));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let base = format!("http://{}", listener.local_addr().expect("addr"));
            let _ = tx.send(base);
            let _ = axum::serve(listener, sandbox::app(state)).await;
        });
    });
    (rx.recv().expect("server started"), dir)
}

/// Registers tenants straight on the bucket, writes one row to each and waits until each
/// has a snapshot (so that a cold start downloads one). Answers (id, api key) per name.
async fn tenants_with_snapshots(
    moto: &Moto,
    config: &S3Config,
    names: &[&str],
) -> Vec<(String, String)> {
    let cfg = config.clone();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let (made, _dir, store) = tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open_with(dir.path(), Some(cfg)).expect("store");
        let mut out = Vec::new();
        for name in names {
            let (t, creds) = store
                .registry()
                .create_tenant(&name, "UTC")
                .expect("create");
            let db = store.tenant_db(&t.id).expect("db");
            db.write_blocking(|tx| {
                tx.execute("INSERT INTO reasons (name) VALUES ('first')", [])?;
                Ok(())
            })
            .expect("write");
            out.push((t.id, creds.api_key));
        }
        // The directory outlives the background compactions that upload the snapshots.
        (out, dir, store)
    })
    .await
    .expect("join");
    for (id, _) in &made {
        let deadline = Instant::now() + Duration::from_secs(30);
        while moto
            .keys(&config.bucket, &format!("sandbox/tenants/{id}/snapshots/"))
            .is_empty()
        {
            assert!(Instant::now() < deadline, "no snapshot of {id}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // ... and until their compactions are over (older snapshots deleted): the bucket stays
    // as it is while the test runs.
    let ids: Vec<String> = made.iter().map(|(id, _)| id.clone()).collect();
    tokio::task::spawn_blocking(move || {
        for id in ids {
            e2e::s3::wait_for_compaction(&store, &id, Duration::from_secs(30));
        }
    })
    .await
    .expect("join");
    made
}

async fn read(base: &str, key: &str) -> reqwest::StatusCode {
    reqwest::Client::new()
        .get(format!("{base}/billing/2/bill-batches"))
        .header("X-Api-Key", key)
        .send()
        .await
        .expect("request")
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_start_held_by_s3_does_not_stall_another_tenant() {
    let moto = Moto::start();
    let mut config = moto.bucket("isolation");
    config.compact_every = 1;
    let made = tenants_with_snapshots(&moto, &config, &["slow", "quick"]).await;
    let (slow, quick) = (made[0].clone(), made[1].clone());

    let counter = Counter::start(&moto);
    let mut proxied = config.clone();
    proxied.endpoint = Some(counter.endpoint.clone());
    let (base, _dir) = serve(&proxied);
    assert_eq!(
        read(&base, &quick.1).await,
        200,
        "warm-up of the quick tenant"
    );

    let hold = Duration::from_secs(4);
    counter.rule(
        &format!("/tenants/{}/snapshots/", slow.0),
        Action::Hold(hold),
    );
    counter.take();
    // Two first requests for the slow tenant at once: they must share one open.
    let firsts: Vec<_> = (0..2)
        .map(|_| {
            let (base, key) = (base.clone(), slow.1.clone());
            tokio::spawn(async move {
                let started = Instant::now();
                let status = read(&base, &key).await;
                println!(
                    "first read of the held tenant: {} ms",
                    started.elapsed().as_millis()
                );
                status
            })
        })
        .collect();
    // The cold start has begun once its snapshot GET reached the proxy (which holds it).
    let snapshots = format!("/tenants/{}/snapshots/", slow.0);
    let waiting = counter.clone();
    tokio::task::spawn_blocking(move || waiting.wait_for(&snapshots, 1, Duration::from_secs(10)))
        .await
        .expect("join");
    let started = Instant::now();
    let status = read(&base, &quick.1).await;
    let quick_ms = started.elapsed().as_millis();
    println!(
        "second tenant's read while the first tenant's snapshot GET is held {} s: {quick_ms} ms",
        hold.as_secs()
    );
    assert_eq!(status, 200);
    assert!(
        quick_ms < 1500,
        "another tenant's read waited {quick_ms} ms for a cold start it has nothing to do with"
    );
    for first in firsts {
        assert_eq!(first.await.expect("join"), 200, "the slow tenant is served");
    }
    let snapshot_gets = counter
        .take()
        .into_iter()
        .filter(|s| {
            s.kind == "GET"
                && s.target
                    .contains(&format!("/tenants/{}/snapshots/", slow.0))
        })
        .count();
    assert_eq!(
        snapshot_gets, 1,
        "concurrent first requests for one tenant share one open"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_open_is_remembered_not_retried_per_request() {
    let moto = Moto::start();
    let mut config = moto.bucket("failed-open");
    config.compact_every = 1;
    let made = tenants_with_snapshots(&moto, &config, &["broken"]).await;
    let (id, key) = made[0].clone();

    let counter = Counter::start(&moto);
    let mut proxied = config.clone();
    proxied.endpoint = Some(counter.endpoint.clone());
    let (base, _dir) = serve(&proxied);
    counter.rule(&format!("/tenants/{id}/snapshots/"), Action::Fail);
    assert_eq!(read(&base, &key).await, 503, "S3 fails the cold start");
    counter.take();
    for _ in 0..3 {
        assert_eq!(read(&base, &key).await, 503, "the failure is remembered");
    }
    let retried: Vec<_> = counter
        .take()
        .into_iter()
        .filter(|s| s.target.contains(&format!("/tenants/{id}/")))
        .collect();
    assert!(
        retried.is_empty(),
        "a failed open is not retried on every request: {retried:?}"
    );
    // Once the pause is over, the next request opens the tenant again.
    counter.clear_rules();
    tokio::time::sleep(shared::store::OPEN_RETRY_AFTER).await;
    assert_eq!(read(&base, &key).await, 200, "served again after the pause");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_held_by_s3_do_not_occupy_the_workers() {
    let moto = Moto::start();
    let mut config = moto.bucket("workers");
    config.compact_every = 1;
    let made = tenants_with_snapshots(&moto, &config, &["known"]).await;
    let known = made[0].clone();

    let counter = Counter::start(&moto);
    let mut proxied = config.clone();
    proxied.endpoint = Some(counter.endpoint.clone());
    let (base, _dir) = serve(&proxied);
    assert_eq!(
        read(&base, &known.1).await,
        200,
        "warm-up of the known tenant"
    );

    // Requests with unknown keys each wait for a registry GET that S3 holds 4 s: more of them
    // than the server has async workers.
    counter.rule("/registry/log/", Action::Hold(Duration::from_secs(4)));
    counter.take();
    let unknown: Vec<_> = (0..4)
        .map(|i| {
            let base = base.clone();
            tokio::spawn(async move { read(&base, &format!("sbx_unknown_{i}")).await })
        })
        .collect();
    // The lookups are held once a registry GET reached the proxy; the others arrive with it and
    // either hold their own GET or wait behind it, off the async workers either way.
    let waiting = counter.clone();
    tokio::task::spawn_blocking(move || {
        waiting.wait_for("/registry/log/", 1, Duration::from_secs(10))
    })
    .await
    .expect("join");
    let started = Instant::now();
    let status = read(&base, &known.1).await;
    let known_ms = started.elapsed().as_millis();
    println!("known tenant's read while 4 lookups of unknown keys are held by S3: {known_ms} ms");
    assert_eq!(status, 200);
    assert!(
        known_ms < 1500,
        "a known tenant's read waited {known_ms} ms behind lookups held by S3"
    );
    for u in unknown {
        assert_eq!(u.await.expect("join"), 401);
    }
}
