//! Benchmarks of the S3-backed store against moto (see docs/storage.md#benchmarks):
//! - bytes uploaded and time per small write, for a 1 MB and a 100 MB tenant (the ratio
//!   should be close to 1: a write ships only its own change), with local mode as the baseline;
//! - cold load time (newest snapshot + later log entries) against snapshot size;
//! - process start to first answered request of `sandbox serve`, local and S3 mode
//!   (binary from `SANDBOX_BIN`, default `target/release/sandbox`, skipped when absent).
//!
//! Run: `cargo bench -p e2e --bench s3_store` (add `-- 1` to skip the 100 MB tenant).

use e2e::s3::{fill_reasons, free_port, Moto, AWS_ENV, FILL_ROWS_PER_WRITE, FILL_ROW_BYTES};
use shared::store::{S3Config, Store};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SMALL_WRITES: usize = 50;

struct Measured {
    size_mb: usize,
    write_ms: f64,
    local_write_ms: f64,
    bytes_per_write: f64,
    snapshot_bytes: u64,
    cold_load_ms: f64,
}

/// Median milliseconds of `SMALL_WRITES` one-row writes (the median, because the machine's
/// load adds outliers that say nothing about the store).
fn small_writes(store: &Store, tenant: &str) -> f64 {
    let db = store.tenant_db(tenant).expect("db");
    let mut times: Vec<f64> = (0..SMALL_WRITES)
        .map(|i| {
            let t = Instant::now();
            db.write_blocking(|tx| {
                tx.execute(
                    "INSERT INTO reasons (name) VALUES (?1)",
                    [format!("small write {i}")],
                )?;
                Ok(())
            })
            .expect("write");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn measure(moto: &Moto, bucket: &str, size_mb: usize) -> Measured {
    let fill_writes = (size_mb * 1_000_000 / FILL_ROW_BYTES).div_ceil(FILL_ROWS_PER_WRITE);
    let mut config = S3Config::new(bucket, &format!("mb{size_mb}"), Some(moto.endpoint.clone()));
    // The last fill write makes a snapshot; the small writes then only add log entries.
    config.compact_every = fill_writes as u64 + 1;
    let dir = tempfile::tempdir().expect("dir");
    let store = Store::open_with(dir.path(), Some(config.clone())).expect("store");
    let (tenant, _) = store
        .registry()
        .create_tenant(&format!("bench{size_mb}"), "UTC")
        .expect("tenant");
    // One empty-ish write first so that the fill's last write lands on the snapshot boundary.
    store
        .tenant_db(&tenant.id)
        .expect("db")
        .write_blocking(|tx| {
            tx.execute("INSERT INTO reasons (name) VALUES ('start')", [])?;
            Ok(())
        })
        .expect("first write");
    fill_reasons(&store, &tenant.id, size_mb);
    let snapshots = format!("{}tenants/{}/snapshots/", config.prefix, tenant.id);
    let deadline = Instant::now() + Duration::from_secs(600);
    while moto.objects(bucket, &snapshots).is_empty() {
        assert!(Instant::now() < deadline, "no snapshot");
        std::thread::sleep(Duration::from_millis(200));
    }
    let snapshot_bytes = moto.objects(bucket, &snapshots)[0].1;

    drop(store);

    // A new environment: cold load (the snapshot is at the newest version), then small writes
    // with compaction off, so that no 100 MB upload competes with them for the test server.
    let cold_dir = tempfile::tempdir().expect("dir");
    let mut warm = config.clone();
    warm.compact_every = u64::MAX;
    let cold = Store::open_with(cold_dir.path(), Some(warm)).expect("store");
    let t = Instant::now();
    cold.tenant_db(&tenant.id).expect("cold load");
    let cold_load_ms = t.elapsed().as_secs_f64() * 1000.0;

    let log = format!("{}tenants/{}/log/", config.prefix, tenant.id);
    let before: Vec<String> = moto.keys(bucket, &log);
    let write_ms = small_writes(&cold, &tenant.id);
    let new_entries: Vec<u64> = moto
        .objects(bucket, &log)
        .into_iter()
        .filter(|(k, _)| !before.contains(k))
        .map(|(_, s)| s)
        .collect();
    assert_eq!(new_entries.len(), SMALL_WRITES);
    let bytes_per_write = new_entries.iter().sum::<u64>() as f64 / SMALL_WRITES as f64;

    // Baseline: the same tenant file, opened in local mode, same small writes.
    let local_dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir_all(local_dir.path().join("tenants")).expect("dir");
    // The S3 store's private cache (`s3-cache/<uuid>/`, removed when the store is dropped):
    // the database and its WAL are copied while the store is still open, and SQLite replays
    // the WAL when the local store opens the copy.
    let cache_root = cold_dir.path().join("s3-cache");
    let cache_dir = std::fs::read_dir(&cache_root)
        .expect("s3-cache")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.is_dir())
        .expect("the store's cache directory");
    let db_name = format!("{}.db", tenant.id);
    for suffix in ["", "-wal"] {
        let from = cache_dir.join("tenants").join(format!("{db_name}{suffix}"));
        if from.exists() {
            std::fs::copy(
                &from,
                local_dir
                    .path()
                    .join("tenants")
                    .join(format!("{db_name}{suffix}")),
            )
            .expect("copy cache");
        }
    }
    drop(cold);
    let local = Store::open_with(local_dir.path(), None).expect("local store");
    let local_write_ms = small_writes(&local, &tenant.id);

    Measured {
        size_mb,
        write_ms,
        local_write_ms,
        bytes_per_write,
        snapshot_bytes,
        cold_load_ms,
    }
}

/// Milliseconds from spawning `sandbox serve` to its first 200 on the admin API.
fn start_to_first_answer(bin: &Path, data_dir: &Path, s3: Option<&S3Config>) -> f64 {
    let port = free_port();
    let mut cmd = Command::new(bin);
    cmd.args([
        "serve",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--admin-key",
        "bench-admin",
    ])
    .arg("--data-dir")
    .arg(data_dir)
    .env("RUST_LOG", "warn")
    .env_remove("SANDBOX_S3_BUCKET")
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    if let Some(c) = s3 {
        cmd.env("SANDBOX_S3_BUCKET", &c.bucket)
            .env("SANDBOX_S3_PREFIX", &c.prefix)
            .env(
                "SANDBOX_S3_ENDPOINT",
                c.endpoint.as_deref().unwrap_or_default(),
            )
            .envs(AWS_ENV);
    }
    let t = Instant::now();
    let mut child = cmd.spawn().expect("spawn sandbox");
    let answered = loop {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            use std::io::{Read, Write};
            let _ = write!(
                s,
                "GET /sandbox/v1/tenants HTTP/1.1\r\nHost: x\r\nX-Admin-Key: bench-admin\r\nConnection: close\r\n\r\n"
            );
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            if out.starts_with("HTTP/1.1 200") {
                break t.elapsed();
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "sandbox never answered"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    let _ = child.kill();
    let _ = child.wait();
    answered.as_secs_f64() * 1000.0
}

fn main() {
    let only_small = std::env::args().any(|a| a == "1");
    let moto = Moto::start();
    let bucket = moto.bucket("bench");
    let sizes: &[usize] = if only_small { &[1] } else { &[1, 100] };
    let results: Vec<Measured> = sizes
        .iter()
        .map(|&mb| measure(&moto, &bucket.bucket, mb))
        .collect();

    println!("\n| tenant | bytes uploaded per write | median ms per write (S3) | median ms per write (local baseline) | snapshot bytes | cold load ms |");
    println!("|---|---|---|---|---|---|");
    for m in &results {
        println!(
            "| {} MB | {:.0} | {:.1} | {:.2} | {} | {:.0} |",
            m.size_mb,
            m.bytes_per_write,
            m.write_ms,
            m.local_write_ms,
            m.snapshot_bytes,
            m.cold_load_ms
        );
    }
    if let [small, big] = results.as_slice() {
        println!(
            "\nratio 100 MB / 1 MB: bytes per write {:.2}, time per write {:.2}",
            big.bytes_per_write / small.bytes_per_write,
            big.write_ms / small.write_ms
        );
    }

    let bin = std::env::var_os("SANDBOX_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../target/release/sandbox"
            ))
        });
    if bin.exists() {
        let local_dir = tempfile::tempdir().expect("dir");
        start_to_first_answer(&bin, local_dir.path(), None); // first start seeds the demo tenant
        let local = start_to_first_answer(&bin, local_dir.path(), None);
        let s3_dir = tempfile::tempdir().expect("dir");
        let s3 = S3Config::new(&bucket.bucket, "serve", Some(moto.endpoint.clone()));
        start_to_first_answer(&bin, s3_dir.path(), Some(&s3));
        let s3_ms = start_to_first_answer(&bin, s3_dir.path(), Some(&s3));
        println!(
            "\nprocess start to first answered request ({}): local {local:.0} ms, S3 (registry cold-loaded from moto) {s3_ms:.0} ms",
            bin.display()
        );
    } else {
        println!(
            "\n(no {}: start-up time not measured; set SANDBOX_BIN)",
            bin.display()
        );
    }
}
