//! A stand-in for one Lambda environment: opens the S3 store named by the environment
//! (`SANDBOX_S3_*`), writes `COUNT` rows named `<writer>-<i>` into one tenant, one write
//! each, and prints `ack <name> runs=<n>` after each acknowledged write (`n`: how many times
//! the store ran the write closure; more than 1 after lost races), `err <name> <reason>` after
//! each refused one.
//!
//! Usage: `s3_writer DATA_DIR TENANT_ID WRITER COUNT`

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, data_dir, tenant, writer, count] = args.as_slice() else {
        eprintln!("usage: s3_writer DATA_DIR TENANT_ID WRITER COUNT");
        std::process::exit(2);
    };
    let count: u32 = count.parse().unwrap_or(0);
    let store = match shared::store::Store::open(std::path::Path::new(data_dir)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("open: {e}");
            std::process::exit(1);
        }
    };
    let db = match store.tenant_db(tenant) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("tenant: {e}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::stdout().lock();
    for i in 0..count {
        let name = format!("{writer}-{i}");
        let row = name.clone();
        let runs = std::sync::atomic::AtomicU32::new(0);
        let written = db.write_blocking(|tx| {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tx.execute("INSERT INTO reasons (name) VALUES (?1)", [&row])?;
            Ok(())
        });
        let runs = runs.into_inner();
        let line = match written {
            Ok(()) => format!("ack {name} runs={runs}"),
            Err(e) => format!("err {name} {e}"),
        };
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}
