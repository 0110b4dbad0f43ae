//! Servers (or Lambda environments sharing a local directory) starting at once on one fresh
//! data directory must all start: the registry's WAL switch and schema, the token secret and
//! a tenant's migrations are each done by one of them while the others wait, never answered
//! "database is locked". Each round is a new directory and [`OPENERS`] openers released
//! together; every opener must succeed and all must agree on the secret and the tenant.
//!
//! Rounds: `OPEN_RACE_ROUNDS` (threads, default 40) and `OPEN_RACE_PROCESS_ROUNDS` (processes
//! of the `open_store` binary, default 20), each round about 0.1 s on two cores; 200 of each
//! (the stress run in docs/testing.md) take about 20 s apiece.

use e2e::open_race::{open_once, Opened};
use std::process::Command;
use std::sync::{Arc, Barrier};

/// Openers per round: the sixteen servers on one directory.
const OPENERS: usize = 16;

fn rounds(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Every opener of a round succeeded and all saw one secret and one tenant.
fn check_round(round: usize, outcomes: Vec<Result<Opened, String>>) {
    let failures: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "round {round}: {} of {OPENERS} openers failed: {failures:?}",
        failures.len()
    );
    let first = outcomes[0].as_ref().ok();
    assert!(
        outcomes.iter().all(|o| o.as_ref().ok() == first),
        "round {round}: openers disagree: {outcomes:?}"
    );
}

#[test]
fn sixteen_threads_open_one_fresh_data_dir_at_once() {
    // Sixteen openers at once take both cores: no moto test of this binary runs beside them.
    let _alone = e2e::s3::machine_to_itself();
    for round in 0..rounds("OPEN_RACE_ROUNDS", 40) {
        let dir = tempfile::tempdir().expect("temp dir");
        let start = Arc::new(Barrier::new(OPENERS));
        let outcomes = (0..OPENERS)
            .map(|_| {
                let (path, start) = (dir.path().to_path_buf(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    open_once(&path)
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().expect("an opener panicked"))
            .collect();
        check_round(round, outcomes);
    }
}

#[test]
fn sixteen_processes_open_one_fresh_data_dir_at_once() {
    let _alone = e2e::s3::machine_to_itself();
    for round in 0..rounds("OPEN_RACE_PROCESS_ROUNDS", 20) {
        let dir = tempfile::tempdir().expect("temp dir");
        // Processes cannot share a barrier; started back to back, they open within a few
        // milliseconds of each other, inside the registry's schema creation of the first.
        let children: Vec<_> = (0..OPENERS)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_open_store"))
                    .arg(dir.path())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn open_store")
            })
            .collect();
        let outcomes = children
            .into_iter()
            .map(|c| {
                let out = c.wait_with_output().expect("open_store");
                let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
                match text.split(' ').collect::<Vec<_>>().as_slice() {
                    ["ok", secret, tenant] if out.status.success() => Ok(Opened {
                        secret: secret.to_string(),
                        tenant: tenant.to_string(),
                    }),
                    _ => Err(format!(
                        "{} {text} {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr).trim()
                    )),
                }
            })
            .collect();
        check_round(round, outcomes);
    }
}
