//! Benchmark of checkpoints, restores and forks (docs/storage.md, "Checkpoints"):
//! for a 10 MB tenant, the time and the bytes each operation moves, in local mode and against
//! moto, next to a cold load of the same tenant (a fork must not cost more than one).
//!
//! In S3 mode the store talks to moto through a byte-counting TCP proxy, so "bytes moved" is
//! what crossed the network between the process and S3, both ways (HTTP headers included).
//! In local mode it is the size of the files written or read.
//!
//! Run: `cargo bench -p e2e --bench checkpoints --profile dev` (add `-- <MB>` for another size).

use e2e::s3::{fill_reasons, free_port, try_insert_reason, Moto};
use shared::store::{S3Config, Store, TenantRecord};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Forks and cold loads measured in S3 mode (their medians are compared).
const REPEAT: usize = 7;

/// Bytes sent to S3 and received from it, through the proxy.
#[derive(Default)]
struct Traffic {
    up: AtomicU64,
    down: AtomicU64,
}

impl Traffic {
    fn total(&self) -> u64 {
        self.up.load(Ordering::SeqCst) + self.down.load(Ordering::SeqCst)
    }
}

/// Copies `from` into `to` until either side closes, counting the bytes.
fn pump(mut from: TcpStream, mut to: TcpStream, counter: Arc<Traffic>, up: bool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let c = if up { &counter.up } else { &counter.down };
        c.fetch_add(n as u64, Ordering::SeqCst);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
    let _ = from.shutdown(std::net::Shutdown::Both);
}

/// A TCP proxy in front of `upstream` that counts bytes; answers its endpoint.
fn counting_proxy(upstream: &str, traffic: Arc<Traffic>) -> String {
    let port = free_port();
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind");
    let upstream = upstream.trim_start_matches("http://").to_string();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let (c2, s2) = (
                client.try_clone().expect("clone"),
                server.try_clone().expect("clone"),
            );
            let (t1, t2) = (traffic.clone(), traffic.clone());
            std::thread::spawn(move || pump(client, server, t1, true));
            std::thread::spawn(move || pump(s2, c2, t2, false));
        }
    });
    format!("http://127.0.0.1:{port}")
}

fn rows(store: &Store, tenant: &str) -> i64 {
    store
        .tenant_db(tenant)
        .expect("db")
        .read_blocking(|c| Ok(c.query_row("SELECT count(*) FROM reasons", [], |r| r.get(0))?))
        .expect("count")
}

/// One measured operation: milliseconds and bytes moved.
struct Row {
    what: &'static str,
    ms: f64,
    bytes: u64,
}

fn timed(what: &'static str, bytes: impl Fn() -> u64, f: impl FnOnce()) -> Row {
    let before = bytes();
    let t = Instant::now();
    f();
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    Row {
        what,
        ms,
        bytes: bytes().saturating_sub(before),
    }
}

fn file_size(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn local(size_mb: usize) -> Vec<Row> {
    let dir = tempfile::tempdir().expect("dir");
    let store = Store::open_with(dir.path(), None).expect("store");
    let (t, _) = store
        .registry()
        .create_tenant("golden", "UTC")
        .expect("tenant");
    fill_reasons(&store, &t.id, size_mb);
    let db_file = store.tenant_path(&t.id);
    let expected = rows(&store, &t.id);
    let cp_dir = dir
        .path()
        .join("tenants")
        .join(&t.id)
        .join("checkpoints/files");
    let mut out = Vec::new();
    out.push(timed(
        "checkpoint",
        || dir_size(&cp_dir),
        || {
            store.create_checkpoint(&t.id, "cp").expect("checkpoint");
        },
    ));
    try_insert_reason(&store, &t.id, "after the checkpoint").expect("write");
    let size = dir_size(&cp_dir);
    let mut restore = timed(
        "restore",
        || 0,
        || {
            store.restore_checkpoint(&t.id, "cp").expect("restore");
        },
    );
    restore.bytes = size; // read once, rows written once into the tenant's file
    out.push(restore);
    assert_eq!(rows(&store, &t.id), expected);
    let mut fork = timed(
        "fork",
        || 0,
        || {
            store.fork_tenant(&t, "cp", "fork").expect("fork");
        },
    );
    fork.bytes = size;
    out.push(fork);
    drop(store);
    let cold = Store::open_with(dir.path(), None).expect("store");
    // Locally, opening reads pages lazily: a cold load is the open plus one full scan.
    let mut load = timed(
        "cold load (source)",
        || 0,
        || {
            let read: i64 = cold
                .tenant_db(&t.id)
                .expect("open")
                .read_blocking(|c| {
                    Ok(c.query_row("SELECT sum(length(name)) FROM reasons", [], |r| r.get(0))?)
                })
                .expect("scan");
            assert!(read > 0);
        },
    );
    load.bytes = file_size(&db_file);
    out.push(load);
    out
}

fn dir_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| file_size(&e.path())).sum())
        .unwrap_or(0)
}

fn s3(moto: &Moto, size_mb: usize) -> Vec<Row> {
    let traffic = Arc::new(Traffic::default());
    let endpoint = counting_proxy(&moto.endpoint, traffic.clone());
    let mut config: S3Config = moto.bucket("checkpoints");
    config.endpoint = Some(endpoint);
    // No compaction: the first checkpoint has to make the snapshot of its version itself
    // (the usual case), the second one at the same version copies it in S3.
    config.compact_every = u64::MAX;
    let bytes = || traffic.total();
    let open = || {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open_with(dir.path(), Some(config.clone())).expect("store");
        (store, dir)
    };
    let (a, _a_dir) = open();
    let (t, _) = a.registry().create_tenant("golden", "UTC").expect("tenant");
    fill_reasons(&a, &t.id, size_mb);
    let expected = rows(&a, &t.id);
    let (b, _b_dir) = open();
    assert_eq!(rows(&b, &t.id), expected, "B has the tenant open");

    let mut out = Vec::new();
    out.push(timed("checkpoint (no current snapshot)", bytes, || {
        a.create_checkpoint(&t.id, "cp").expect("checkpoint");
    }));
    out.push(timed("checkpoint (same version: S3 copy)", bytes, || {
        a.create_checkpoint(&t.id, "cp2").expect("checkpoint");
    }));
    try_insert_reason(&a, &t.id, "after the checkpoint").expect("write");
    assert_eq!(rows(&b, &t.id), expected + 1);
    out.push(timed("restore", bytes, || {
        a.restore_checkpoint(&t.id, "cp").expect("restore");
    }));
    out.push(timed(
        "next read in another environment (replay)",
        bytes,
        || {
            assert_eq!(rows(&b, &t.id), expected);
        },
    ));
    // For reading the numbers: what one server-side copy and one download of the checkpoint
    // file cost on their own (moto copies in Python, so a COPY costs it about what a GET does).
    let files = moto.keys(
        "checkpoints",
        &format!("sandbox/tenants/{}/checkpoints/files/", t.id),
    );
    let file = files[0]
        .strip_prefix("sandbox/")
        .expect("prefix")
        .to_string();
    let bucket = shared::store::s3::Bucket::connect(config.clone()).expect("client");
    out.push(timed("(one CopyObject of the file)", bytes, || {
        bucket.copy(&file, "scratch/copy.db").expect("copy");
    }));
    let scratch = tempfile::tempdir().expect("dir");
    out.push(timed("(one GET of the file)", bytes, || {
        bucket
            .get_to_file(&file, &scratch.path().join("get.db"))
            .expect("get");
    }));
    // Forks and cold loads alternate, REPEAT times each; the medians are compared (the
    // machine's load makes single runs swing by half).
    let mut forks: Vec<Row> = Vec::new();
    let mut loads: Vec<Row> = Vec::new();
    let mut fork_loads: Vec<Row> = Vec::new();
    let mut fork: Option<TenantRecord> = None;
    for i in 0..REPEAT {
        forks.push(timed("fork", bytes, || {
            fork = Some(
                a.fork_tenant(&t, "cp", &format!("fork-{i}"))
                    .expect("fork")
                    .0,
            );
        }));
        let (c, _c_dir) = open();
        let id = fork.as_ref().expect("forked").id.clone();
        fork_loads.push(timed("cold load (fork, first request)", bytes, || {
            c.tenant_db(&id).expect("open fork");
        }));
        loads.push(timed("cold load (source)", bytes, || {
            c.tenant_db(&t.id).expect("open source");
        }));
        assert_eq!(rows(&c, &id), expected);
    }
    // Round by round: a fork against the cold load of its source measured right after it.
    let ratios: Vec<f64> = forks.iter().zip(&loads).map(|(f, l)| f.ms / l.ms).collect();
    println!("\nS3 rounds (fork ms / cold load of the source ms = ratio):");
    for ((f, l), r) in forks.iter().zip(&loads).zip(&ratios) {
        println!("  {:>6.1} / {:>6.1} = {r:.2}", f.ms, l.ms);
    }
    let worst = ratios.iter().copied().fold(0.0, f64::max);
    println!("  worst round {worst:.2}");
    out.push(median(forks));
    out.push(median(fork_loads));
    out.push(median(loads));
    out
}

/// The row of median time among `rows`.
fn median(mut rows: Vec<Row>) -> Row {
    rows.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    let n = rows.len();
    let mut m = rows.swap_remove(n / 2);
    m.what = match m.what {
        "fork" => "fork (median of 7)",
        "cold load (source)" => "cold load (source, median of 7)",
        _ => "cold load (fork, first request, median of 7)",
    };
    m
}

fn print(title: &str, rows: &[Row]) {
    println!("\n{title}\n\n| operation | ms | bytes moved |\n|---|---|---|");
    for r in rows {
        println!("| {} | {:.0} | {} |", r.what, r.ms, r.bytes);
    }
    let find = |w: &str| rows.iter().find(|r| r.what == w);
    let fork = find("fork").or_else(|| find("fork (median of 7)"));
    let load = find("cold load (source)").or_else(|| find("cold load (source, median of 7)"));
    if let (Some(fork), Some(load)) = (fork, load) {
        println!(
            "\nfork / cold load of the source: time {:.2}, bytes {:.2}",
            fork.ms / load.ms,
            fork.bytes as f64 / load.bytes.max(1) as f64
        );
    }
}

fn main() {
    let size_mb: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10);
    print(&format!("local mode, {size_mb} MB tenant"), &local(size_mb));
    let moto = Moto::start();
    print(
        &format!("S3 mode (moto on loopback), {size_mb} MB tenant"),
        &s3(&moto, size_mb),
    );
}
