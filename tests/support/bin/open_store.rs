//! One server starting on a data directory (see `e2e::open_race`): prints
//! `ok <secret> <tenant id>` and exits 0, or `err <step>: <reason>` and exits 1.
//!
//! Usage: `open_store DATA_DIR`

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: open_store DATA_DIR");
        std::process::exit(2);
    };
    match e2e::open_race::open_once(std::path::Path::new(&dir)) {
        Ok(o) => println!("ok {} {}", o.secret, o.tenant),
        Err(e) => {
            println!("err {e}");
            std::process::exit(1);
        }
    }
}
