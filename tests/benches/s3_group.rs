//! Group commit: writes per second to one tenant from 1, 4 and 16 concurrent HTTP clients of
//! one server in S3 mode (the real router and store, in this process), with S3 latency
//! injected by a real proxy between the server and moto (`e2e::s3::Gate`, every request held
//! `LATENCY` before it is forwarded). Each client POSTs one ledger after another for
//! `SECONDS`. Concurrent writes of the server to the tenant share one log entry and one PUT
//! (docs/storage.md, "Group commit"), so the rate grows with the clients instead of staying
//! at one tenant's serial limit. Reported per run: writes/s and its ratio to one client's in
//! the same run, p50 and p99, refused writes (any answer but 201), S3 requests and log
//! entries per write, and whether the ledgers a cold store reads at the end are exactly the
//! acknowledged writes, each once.
//!
//! Run: `cargo bench -p e2e --bench s3_group --profile dev -- [SECONDS] [LATENCY_MS]
//! [CLIENTS...]` (defaults 10, 20 and 1 4 16).

use e2e::s3::{open_store, quantile, Gate, Moto};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// What one client saw: acknowledged names with their times, and refusals.
#[derive(Default)]
struct Tally {
    acked: Vec<String>,
    ms: Vec<f64>,
    refused: usize,
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<u64>().ok());
    let seconds = args.next().unwrap_or(10);
    let latency = Duration::from_millis(args.next().unwrap_or(20));
    let mut runs: Vec<usize> = args.map(|n| n as usize).collect();
    if runs.is_empty() {
        runs = vec![1, 4, 16];
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("runtime");
    let moto = Moto::start();
    let direct = moto.bucket("group");
    let gate = Gate::start(&moto);
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    let server = rt.block_on(e2e::s3::server(&gated));
    println!(
        "latency {latency:?} per S3 request, {seconds} s per run, one server in S3 mode, ledger POSTs"
    );
    println!("| clients | writes/s | x one client | p50 ms | p99 ms | refused | S3 requests per write | log entries per write | rows = acknowledged, each once |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut one = None;
    for clients in runs {
        let name = format!("group{clients}");
        let (id, key) = rt.block_on(async {
            let r = server
                .client
                .post(server.url("/sandbox/v1/tenants"))
                .header("X-Admin-Key", e2e::ADMIN_KEY)
                .json(&json!({"name": name, "seed": "demo"}))
                .send()
                .await
                .expect("create tenant");
            let v: Value = r.json().await.expect("json");
            (
                v["id"].as_str().expect("id").to_string(),
                v["api_key"].as_str().expect("key").to_string(),
            )
        });
        let log = format!("sandbox/tenants/{id}/log/");
        let entries_before = moto.keys("group", &log).len();
        gate.latency(Some(latency));
        let requests_before = gate.counts().passed;
        let started = Instant::now();
        let until = started + Duration::from_secs(seconds);
        let tallies: Vec<Tally> = rt.block_on(async {
            let tasks: Vec<_> = (0..clients)
                .map(|c| {
                    let (base, key) = (server.base.clone(), key.clone());
                    tokio::spawn(async move {
                        let client = reqwest::Client::new();
                        let mut tally = Tally::default();
                        let mut n = 0;
                        while Instant::now() < until {
                            let name = format!("c{c}-{n}");
                            n += 1;
                            let t = Instant::now();
                            let status = client
                                .post(format!("{base}/revenue/3/ledgers"))
                                .header("X-Api-Key", &key)
                                .json(&json!({"name": name, "billing_account_category_ids": [1]}))
                                .send()
                                .await
                                .map(|r| r.status().as_u16())
                                .unwrap_or(0);
                            if status == 201 {
                                tally.acked.push(name);
                                tally.ms.push(t.elapsed().as_secs_f64() * 1000.0);
                            } else {
                                eprintln!("client {c}: {name} answered {status}");
                                tally.refused += 1;
                            }
                        }
                        tally
                    })
                })
                .collect();
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.expect("client"));
            }
            out
        });
        let took = started.elapsed().as_secs_f64();
        gate.latency(None);
        let requests = gate.counts().passed - requests_before;
        let entries = moto.keys("group", &log).len() - entries_before;
        let mut acked: Vec<String> = tallies.iter().flat_map(|t| t.acked.clone()).collect();
        let ms: Vec<f64> = tallies.iter().flat_map(|t| t.ms.clone()).collect();
        let refused: usize = tallies.iter().map(|t| t.refused).sum();
        let rate = acked.len() as f64 / took;
        let base = *one.get_or_insert(rate);
        let (cold, _dir) = open_store(&direct);
        let mut stored: Vec<String> = cold
            .tenant_db(&id)
            .expect("tenant")
            .read_blocking(|c| {
                let mut stmt = c.prepare("SELECT name FROM ledgers WHERE name LIKE 'c%'")?;
                let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
                Ok(names.collect::<Result<Vec<_>, _>>()?)
            })
            .expect("ledgers");
        stored.sort();
        acked.sort();
        let writes = acked.len().max(1) as f64;
        println!(
            "| {clients} | {rate:.1} | {:.2} | {:.0} | {:.0} | {refused} | {:.2} | {:.2} | {} = {}{} |",
            rate / base,
            quantile(ms.clone(), 0.5),
            quantile(ms, 0.99),
            requests as f64 / writes,
            entries as f64 / writes,
            stored.len(),
            acked.len(),
            if stored == acked { "" } else { " MISMATCH" }
        );
    }
}
