//! Collector and ledger runs on Surface C, finishing in their POST (the policy's AT_ONCE, the
//! baseline) and progressing with the tenant clock (WITH_CLOCK: the POST, then one clock
//! advance over the run's start and end), in the same process and on the same data
//! (docs/revenue.md, "Runs and the clock").
//!
//! The data: a demo tenant plus 1,000 accounts of category Enterprise (so ledger 1 posts
//! them) on bill cycle 1, each with a Cloud Compute service and one usage event, the clock
//! advanced over December 1st (1,002 invoices with their lines); checkpointed once. Each
//! round forks the checkpoint twice, one fork per policy, and times on each: a collector run
//! of every source (usage, invoices and their lines, payments, adjustments: 5,025 charge
//! info records), then a ledger run of ledger 1 through December 2nd (3,018 journal
//! entries). Under WITH_CLOCK the time is the POST's plus the advance's. Both forks
//! must end with the same numbers of records and entries. Prints each round and the medians.
//!
//! Run: `cargo bench -p e2e --bench runs --profile dev -- 3` (ROUNDS, default 3). The server
//! runs in this process, so the profile decides what is measured.

use e2e::{TestServer, TestTenant, ADMIN_KEY};
use reqwest::Method;
use serde_json::{json, Value};
use shared::config::Config;
use shared::web::AppState;
use std::time::Instant;

const ACCOUNTS: i64 = 1_000;
const FIRST_ID: i64 = 10_000;

async fn server() -> TestServer {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = Config::new(dir.path(), Some(ADMIN_KEY.to_string()));
    let state = AppState::new(config).expect("state");
    let base = e2e::listen(state.clone()).await;
    TestServer::from_parts(base, state, dir)
}

/// Sends an admin call, asserting `status`; answers the JSON (Null when empty).
async fn admin(s: &TestServer, method: Method, path: &str, body: Value, status: u16) -> Value {
    let r = s.admin_call(method.clone(), path, Some(&body)).await;
    let got = r.status().as_u16();
    let text = r.text().await.expect("body");
    assert_eq!(got, status, "{method} {path}: {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Sends a Surface C call, asserting `status`; answers the JSON and the X-Total-Count.
async fn revenue(
    s: &TestServer,
    t: &TestTenant,
    method: Method,
    path: &str,
    body: Option<Value>,
    status: u16,
) -> (Value, Option<i64>) {
    let mut req = s
        .client
        .request(method.clone(), s.url(&format!("/revenue/3{path}")))
        .header("X-Api-Key", &t.api_key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.expect("request");
    let got = r.status().as_u16();
    let total = r
        .headers()
        .get("X-Total-Count")
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.parse().ok());
    let text = r.text().await.expect("body");
    assert_eq!(got, status, "{method} {path}: {text}");
    (serde_json::from_str(&text).unwrap_or(Value::Null), total)
}

/// The golden tenant: the demo, the bench accounts, their usage and December's invoices,
/// checkpointed as `golden`.
async fn golden(s: &TestServer) -> TestTenant {
    let t = s.create_tenant("golden", "demo").await;
    let base = format!("/sandbox/v1/tenants/{}", t.id);
    let frozen = json!({"frozen_at": "2026-11-20T12:00:00Z"});
    admin(s, Method::PUT, &format!("{base}/clock"), frozen, 200).await;
    e2e::billing::add_billed_accounts_in(s, &t.api_key, FIRST_ID, ACCOUNTS, "bench", Some(1)).await;
    e2e::billing::post_one_event_each(s, &t.api_key, FIRST_ID, ACCOUNTS, "bench").await;
    let to = json!({"to": "2026-12-02T00:00:00Z"});
    admin(s, Method::POST, &format!("{base}/clock/advance"), to, 200).await;
    let name = json!({"name": "golden"});
    admin(s, Method::POST, &format!("{base}/checkpoints"), name, 201).await;
    t
}

/// What one fork's runs took (seconds) and made.
struct Measured {
    collect: f64,
    post: f64,
    records: i64,
    entries: i64,
}

/// Forks the golden checkpoint under `runs` and times a collector run and a ledger run.
async fn measure(s: &TestServer, golden: &TestTenant, name: &str, runs: &str) -> Measured {
    let fork = json!({"name": name, "from": {"tenant": golden.id, "checkpoint": "golden"}});
    let v = admin(s, Method::POST, "/sandbox/v1/tenants", fork, 201).await;
    let t = TestTenant {
        id: v["id"].as_str().expect("id").to_string(),
        name: name.to_string(),
        api_key: v["api_key"].as_str().expect("api_key").to_string(),
        username: String::new(),
        password: String::new(),
    };
    let base = format!("/sandbox/v1/tenants/{}", t.id);
    admin(
        s,
        Method::PUT,
        &format!("{base}/policy"),
        json!({ "runs": runs }),
        200,
    )
    .await;
    let with_clock = runs == "WITH_CLOCK";
    let advance = format!("{base}/clock/advance");

    let started = Instant::now();
    let body = json!({"type": "AUTO", "collector_operations":
        ["INSERT_USAGE", "INSERT_INVOICES", "INSERT_PAYMENTS", "INSERT_ADJUSTMENTS"]});
    let (run, _) = revenue(s, &t, Method::POST, "/collector-runs", Some(body), 201).await;
    if with_clock {
        admin(s, Method::POST, &advance, json!({"seconds": 3}), 200).await;
    }
    let collect = started.elapsed().as_secs_f64();
    let path = format!("/collector-runs/{}", run["id"]);
    let (run, _) = revenue(s, &t, Method::GET, &path, None, 200).await;
    assert_eq!(run["status"], "COMPLETE", "{run}");

    let started = Instant::now();
    let body = json!({"ledger_id": 1, "run_to_date": "2026-12-02"});
    let (run, _) = revenue(s, &t, Method::POST, "/glruns", Some(body), 201).await;
    if with_clock {
        admin(s, Method::POST, &advance, json!({"seconds": 3}), 200).await;
    }
    let post = started.elapsed().as_secs_f64();
    let path = format!("/glruns/{}", run["id"]);
    let (run, _) = revenue(s, &t, Method::GET, &path, None, 200).await;
    assert_eq!(run["status"], "COMPLETE", "{run}");

    let (_, records) = revenue(
        s,
        &t,
        Method::GET,
        "/ledgers/chargeinfos?max_records=1000000",
        None,
        200,
    )
    .await;
    let entries_path = format!("{path}/journal-entries");
    let (_, entries) = revenue(s, &t, Method::GET, &entries_path, None, 200).await;
    Measured {
        collect,
        post,
        records: records.expect("X-Total-Count"),
        entries: entries.expect("X-Total-Count"),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3);
    let s = server().await;
    let golden = golden(&s).await;
    let mut at_once: Vec<Measured> = Vec::new();
    let mut with_clock: Vec<Measured> = Vec::new();
    for round in 0..rounds {
        let a = measure(&s, &golden, &format!("once{round}"), "AT_ONCE").await;
        let w = measure(&s, &golden, &format!("clock{round}"), "WITH_CLOCK").await;
        assert_eq!(
            (a.records, a.entries),
            (w.records, w.entries),
            "both forks' runs made the same"
        );
        println!(
            "round {round}: collector run ({} records) AT_ONCE {:.3} s, WITH_CLOCK {:.3} s; ledger run ({} entries) AT_ONCE {:.3} s, WITH_CLOCK {:.3} s",
            a.records, a.collect, w.collect, a.entries, a.post, w.post
        );
        at_once.push(a);
        with_clock.push(w);
    }
    let med = |v: &[Measured], f: fn(&Measured) -> f64| median(v.iter().map(f).collect());
    println!(
        "median over {rounds} rounds: collector run AT_ONCE {:.3} s, WITH_CLOCK (POST + advance) {:.3} s; ledger run AT_ONCE {:.3} s, WITH_CLOCK {:.3} s",
        med(&at_once, |m| m.collect),
        med(&with_clock, |m| m.collect),
        med(&at_once, |m| m.post),
        med(&with_clock, |m| m.post),
    );
}
