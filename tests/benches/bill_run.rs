//! A bill cycle run of 1,000 accounts in one advance of the clock
//! (docs/billing-lifecycle.md): a demo tenant gets 1,000 more accounts on bill cycle 1, each
//! with a Cloud Compute service (recurring price) that started mid-October and, for half of
//! them, paying automatically; every account posts one usage event over Surface B. The clock
//! is frozen on November 20th and advanced over HTTP to December 2nd (the cycle runs on the
//! 1st: 1,000+ invoices), then to January 2nd (the invoices fall due: 500 automatic
//! payments, 500 accounts to COLLECTION, and January's run). Prints the time of each advance
//! (median of ROUNDS fresh tenants) and checks the invoices exist.
//!
//! Run: `cargo bench -p e2e --bench bill_run --profile profiling -- 3` (ROUNDS, default 3).
//! The server runs in this process, so the profile decides what is measured.

use e2e::{TestServer, TestTenant, ADMIN_KEY};
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

/// Advances the tenant's clock to `to`; answers the seconds it took and the transitions.
async fn advance(s: &TestServer, t: &TestTenant, to: &str) -> (f64, Vec<Value>) {
    let path = format!("/sandbox/v1/tenants/{}/clock/advance", t.id);
    let started = Instant::now();
    let r = s
        .admin_call(reqwest::Method::POST, &path, Some(&json!({ "to": to })))
        .await;
    let status = r.status();
    let v: Value = r.json().await.expect("json");
    let took = started.elapsed().as_secs_f64();
    assert_eq!(status, 200, "{v}");
    (
        took,
        v["transitions"].as_array().cloned().unwrap_or_default(),
    )
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
    let (mut runs, mut dues) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let t = s.create_tenant(&format!("bench{round}"), "demo").await;
        let clock = format!("/sandbox/v1/tenants/{}/clock", t.id);
        let r = s
            .admin_call(
                reqwest::Method::PUT,
                &clock,
                Some(&json!({"frozen_at": "2026-11-20T12:00:00Z"})),
            )
            .await;
        assert_eq!(r.status(), 200);
        e2e::billing::add_billed_accounts(&s, &t.api_key, FIRST_ID, ACCOUNTS, "bench").await;
        e2e::billing::post_one_event_each(&s, &t.api_key, FIRST_ID, ACCOUNTS, "bench").await;

        let (took, ran) = advance(&s, &t, "2026-12-02").await;
        let run = ran
            .iter()
            .find(|x| x["kind"] == "bill_cycle.run")
            .expect("a cycle run");
        let detail = run["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("1002 invoices"), "{detail}");
        runs.push(took);

        let (took, ran) = advance(&s, &t, "2027-01-02").await;
        let paid = ran
            .iter()
            .filter(|x| x["kind"] == "invoice.autopaid")
            .count();
        let dunned = ran
            .iter()
            .filter(|x| x["kind"] == "invoice.past_due")
            .count();
        assert_eq!(paid, 500 + 1, "the bench's autopay accounts and ACC-1001");
        assert!(dunned >= 500, "{dunned}");
        dues.push(took);
        println!(
            "round {round}: December run (1,002 invoices) {:.3} s; to January 2nd (501 autopaid, {dunned} past due, January's run) {:.3} s",
            runs[round], dues[round]
        );
    }
    println!(
        "median over {rounds} rounds: cycle run of {ACCOUNTS} bench accounts {:.3} s; due dates and next run {:.3} s",
        median(runs),
        median(dues)
    );
}
