//! Writes per second to one tenant from 1, 2, 4 and 8 environments, with S3 latency
//! injected by a real proxy between the stores and moto (`e2e::s3::Gate`, every request held
//! `LATENCY` before it is forwarded). Each environment is its own `Store` (its own cache,
//! sharing only the bucket, like Lambda environments) driven by one thread that writes one
//! row after another for `SECONDS`, as one environment serving one request at a time would.
//! Reported per run: writes/s, p50 and p99 of the acknowledged writes' times, writes refused
//! (any error: a lost race is retried until the write's deadline, so a refusal means that
//! deadline passed), S3 requests per write, and whether the rows equal the acknowledged
//! writes: at the end a cold store reads the tenant, and every acknowledged row must be
//! there exactly once, and no other. Compared with the serial limit: an uncontended write is
//! one conditional PUT, so one tenant's writes, serialised, reach at most 1 / latency.
//!
//! Run: `cargo bench -p e2e --bench s3_contention --profile dev -- [SECONDS] [LATENCY_MS]
//! [ENVIRONMENTS...]` (defaults 10, 20 and 1 2 4 8).

use e2e::s3::{open_store, quantile, reason_names, try_insert_reason, Gate, Moto};
use std::time::{Duration, Instant};

/// What one environment's writer saw.
#[derive(Default)]
struct Tally {
    /// Names of the rows whose write was acknowledged.
    acked: Vec<String>,
    refused: usize,
    ms: Vec<f64>,
}

fn median(v: Vec<f64>) -> f64 {
    quantile(v, 0.5)
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<u64>().ok());
    let seconds = args.next().unwrap_or(10);
    let latency = Duration::from_millis(args.next().unwrap_or(20));
    let mut environments: Vec<usize> = args.map(|n| n as usize).collect();
    if environments.is_empty() {
        environments = vec![1, 2, 4, 8];
    }
    let moto = Moto::start();
    let direct = moto.bucket("contention");
    let gate = Gate::start(&moto);
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    let (setup, _setup_dir) = open_store(&direct);
    // What one S3 request costs through the proxy at this latency (the serial limit's unit).
    gate.latency(Some(latency));
    let bucket = shared::store::s3::Bucket::connect(gated.clone()).expect("client");
    let time = |f: &dyn Fn(usize)| {
        median(
            (0..20)
                .map(|i| {
                    let t = Instant::now();
                    f(i);
                    t.elapsed().as_secs_f64() * 1000.0
                })
                .collect(),
        )
    };
    let get_ms = time(&|i| {
        let _ = bucket.get(&format!("probe/missing-{i}"));
    });
    let put_ms = time(&|i| {
        let _ = bucket.put_if_absent(&format!("probe/put-{i}"), b"{}".to_vec());
    });
    gate.latency(None);
    let proxy_ms = time(&|i| {
        let _ = bucket.get(&format!("probe/missing-{i}"));
    });
    println!("one GET through the proxy without latency: {proxy_ms:.1} ms");
    let straight = shared::store::s3::Bucket::connect(direct.clone()).expect("client");
    let direct_ms = time(&|i| {
        let _ = straight.get(&format!("probe/missing-{i}"));
    });
    println!("one GET straight to moto: {direct_ms:.1} ms");
    let effective = 1000.0 / put_ms;
    println!(
        "one GET through the proxy: {get_ms:.1} ms (median), one conditional PUT: {put_ms:.1} ms: \
         serial limit with these {effective:.1} writes/s"
    );
    let serial = 1.0 / latency.as_secs_f64();
    println!(
        "latency {latency:?} per S3 request; serial limit (one PUT per write) 1 / {latency:?} = {serial:.1} writes/s"
    );
    println!("| environments | writes/s (all) | per environment | vs serial limit (nominal / measured PUT) | p50 ms | p99 ms | max ms | S3 requests per write | refused | acknowledged per environment (max ms) | rows = acknowledged, each once |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for envs in environments {
        let (tenant, _) = setup
            .registry()
            .create_tenant(&format!("contention{envs}"), "UTC")
            .expect("tenant");
        // Opened (cold start) before the latency is on and before the clock starts.
        let stores: Vec<_> = (0..envs)
            .map(|_| {
                let (store, dir) = open_store(&gated);
                store.tenant_db(&tenant.id).expect("open");
                (store, dir)
            })
            .collect();
        gate.latency(Some(latency));
        let requests_before = gate.counts().passed;
        let started = Instant::now();
        let until = started + Duration::from_secs(seconds);
        let tallies: Vec<Tally> = std::thread::scope(|scope| {
            let handles: Vec<_> = stores
                .iter()
                .enumerate()
                .map(|(e, (store, _))| {
                    let id = tenant.id.clone();
                    scope.spawn(move || {
                        let mut tally = Tally::default();
                        let mut n = 0;
                        while Instant::now() < until {
                            let t = Instant::now();
                            let name = format!("e{e}-{n}");
                            match try_insert_reason(store, &id, &name) {
                                Ok(()) => {
                                    tally.acked.push(name);
                                    tally.ms.push(t.elapsed().as_secs_f64() * 1000.0);
                                }
                                Err(err) => {
                                    eprintln!(
                                        "environment {e}: refused after {:?}: {err}",
                                        t.elapsed()
                                    );
                                    tally.refused += 1;
                                }
                            }
                            n += 1;
                        }
                        tally
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("writer"))
                .collect()
        });
        let took = started.elapsed().as_secs_f64();
        gate.latency(None);
        let requests = gate.counts().passed - requests_before;
        let shares: Vec<String> = tallies
            .iter()
            .map(|t| format!("{} ({:.0})", t.acked.len(), quantile(t.ms.clone(), 1.0)))
            .collect();
        let mut acked: Vec<String> = tallies.iter().flat_map(|t| t.acked.clone()).collect();
        acked.sort();
        let refused: usize = tallies.iter().map(|t| t.refused).sum();
        let ms: Vec<f64> = tallies.iter().flat_map(|t| t.ms.clone()).collect();
        let (p50, p99) = (median(ms.clone()), quantile(ms.clone(), 0.99));
        let max = quantile(ms, 1.0);
        let (cold, _cold_dir) = open_store(&direct);
        // Sorted, duplicates kept: equal exactly when every acknowledged row is there once
        // and no other row is (a refused write's row would be one too many).
        let rows = reason_names(&cold, &tenant.id);
        let rate = acked.len() as f64 / took;
        println!(
            "| {envs} | {rate:.1} | {:.1} | {:.2} / {:.2} | {p50:.0} | {p99:.0} | {max:.0} | {:.2} | {refused} | {} | {} |",
            rate / envs as f64,
            rate / serial,
            rate / effective,
            requests as f64 / acked.len().max(1) as f64,
            shares.join(", "),
            if rows == acked {
                format!("{} = {}", rows.len(), acked.len())
            } else {
                format!("MISMATCH {} rows, {} acknowledged", rows.len(), acked.len())
            }
        );
    }
}
