//! A stand-in for one Lambda environment: opens the S3 store named by the environment
//! (`SANDBOX_S3_*`), writes `COUNT` rows named `<writer>-<i>` into one tenant, one write
//! each, and prints one line per write:
//! - `ack <name> runs=<n> tries=<t> unavailable=<u> unknown=<k>` once it is acknowledged
//!   (`n`: how many times the store ran the write closure, more than 1 after lost races;
//!   `t`: requests made, `u`/`k`: how many of them were answered 503 "nothing was applied" /
//!   503 "outcome unknown" before),
//! - `err <name> <reason>` when it is finally refused.
//!
//! With `S3_WRITER_RETRIES=N` the writer behaves like a client that retries every 503 with
//! the same request, up to N times, `S3_WRITER_RETRY_PAUSE_MS` apart (default 50), and
//! retries opening the store likewise; by default it does not retry. With
//! `S3_WRITER_SECONDS=S` it stops after `S` seconds of writing (or `COUNT` writes, whichever
//! comes first): a writer "as fast as it can for a bounded time".
//!
//! Usage: `s3_writer DATA_DIR TENANT_ID WRITER COUNT`

use shared::Error;
use std::io::Write;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, data_dir, tenant, writer, count] = args.as_slice() else {
        eprintln!("usage: s3_writer DATA_DIR TENANT_ID WRITER COUNT");
        std::process::exit(2);
    };
    let count: u32 = count.parse().unwrap_or(0);
    let retries: u32 = std::env::var("S3_WRITER_RETRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let pause = Duration::from_millis(
        std::env::var("S3_WRITER_RETRY_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(50),
    );
    let mut opened = None;
    for _ in 0..=retries {
        let attempt = shared::store::Store::open_with(
            std::path::Path::new(data_dir),
            shared::config::s3_from_env(),
        )
        .and_then(|store| store.tenant_db(tenant).map(|db| (store, db)));
        match attempt {
            Ok(pair) => {
                opened = Some(pair);
                break;
            }
            Err(e) => {
                eprintln!("open: {e}");
                std::thread::sleep(pause);
            }
        }
    }
    let Some((_store, db)) = opened else {
        std::process::exit(1);
    };
    let until = std::env::var("S3_WRITER_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(|s| std::time::Instant::now() + Duration::from_secs(s));
    let mut out = std::io::stdout().lock();
    for i in 0..count {
        if until.is_some_and(|t| std::time::Instant::now() >= t) {
            break;
        }
        let name = format!("{writer}-{i}");
        let runs = std::sync::atomic::AtomicU32::new(0);
        let (mut tries, mut unavailable, mut unknown) = (0u32, 0u32, 0u32);
        let line = loop {
            tries += 1;
            let row = name.clone();
            let written = db.write_blocking(|tx| {
                runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tx.execute("INSERT INTO reasons (name) VALUES (?1)", [&row])?;
                Ok(())
            });
            match written {
                Ok(()) => {
                    break format!(
                    "ack {name} runs={} tries={tries} unavailable={unavailable} unknown={unknown}",
                    runs.load(std::sync::atomic::Ordering::SeqCst)
                )
                }
                Err(Error::Unavailable(_)) if tries <= retries => unavailable += 1,
                Err(Error::OutcomeUnknown(_)) if tries <= retries => unknown += 1,
                Err(e) => break format!("err {name} {e}"),
            }
            std::thread::sleep(pause);
        };
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}
