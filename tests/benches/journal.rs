//! The request journal's overhead (docs/sandbox.md): the same requests against local
//! servers, journal on and journal off, interleaved request by request so that the
//! machine's load falls on them alike; the medians per request and the paired overhead (the
//! median of the on-minus-off differences over the median off), for a read (a Surface B GET
//! of one record) and a bulk post (50 usage events, Surface B). Target: under 10%. A second
//! server with the journal off gives the same figure between two identical servers: the
//! bench's noise floor.
//!
//! Run: `cargo bench -p e2e --bench journal --profile profiling -- 30` (ROUNDS, default 8).
//! The servers run in this process, so the profile decides what is measured: `profiling`
//! is release code without LTO (minutes to build); `--profile dev` runs too, but a debug
//! build says little about a cost of a few microseconds.

use e2e::{TestServer, TestTenant, ADMIN_KEY};
use serde_json::{json, Value};
use shared::config::Config;
use shared::web::AppState;
use std::time::Instant;

const READS_PER_ROUND: usize = 100;
const POSTS_PER_ROUND: usize = 10;
const EVENTS_PER_POST: usize = 50;
const READ_PATH: &str = "/billing/2/adjustment-categories/5";

async fn server(journal: bool) -> (TestServer, TestTenant) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config::new(dir.path(), Some(ADMIN_KEY.to_string()));
    config.journal.enabled = journal;
    let state = AppState::new(config).expect("state");
    let base = e2e::listen(state.clone()).await;
    let s = TestServer::from_parts(base, state, dir);
    let t = s.create_tenant("bench", "demo").await;
    (s, t)
}

fn bulk_body(round: usize, post: usize) -> Value {
    let events: Vec<Value> = (0..EVENTS_PER_POST)
        .map(|i| {
            json!({
                "service_resource_identifier": "srv-compute-0001",
                "usage_uom": "HOUR",
                "usage_amount": 1,
                "start_time": "2026-02-01",
                "reference_id": format!("bench-{round}-{post}-{i}"),
            })
        })
        .collect();
    json!({"mode": "FAIL_ON_EXISTING", "usage_events": events})
}

/// Milliseconds of each of `n` reads.
async fn reads(s: &TestServer, t: &TestTenant, n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let r = s.get_with_key(READ_PATH, &t.api_key).await;
        let _ = r.bytes().await;
        out.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    out
}

/// Milliseconds of each of `n` bulk posts (references tagged `tag`).
async fn posts(s: &TestServer, t: &TestTenant, tag: usize, n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n);
    for post in 0..n {
        let body = bulk_body(tag, post);
        let started = Instant::now();
        let r = s
            .client
            .post(s.url("/billing/2/usage-events/bulk"))
            .header("X-Api-Key", &t.api_key)
            .json(&body)
            .send()
            .await
            .expect("post");
        assert_eq!(r.status(), 200);
        let _ = r.bytes().await;
        out.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(8);
    let (on, t_on) = server(true).await;
    let (off, t_off) = server(false).await;
    // A second server with the journal off: the same comparison between two identical
    // servers is the bench's own noise floor (what "overhead" it reports for nothing).
    let (same, t_same) = server(false).await;
    // Warm-up: connections, statement caches, the tenants' first open.
    reads(&on, &t_on, 20).await;
    reads(&off, &t_off, 20).await;
    reads(&same, &t_same, 20).await;
    let servers = [(&on, &t_on), (&off, &t_off), (&same, &t_same)];
    let mut read_ms: [Vec<f64>; 3] = Default::default();
    let mut post_ms: [Vec<f64>; 3] = Default::default();
    // Request by request, rotating which server goes first, so that the machine's load
    // (other processes) falls on all alike.
    for round in 0..rounds {
        for i in 0..READS_PER_ROUND {
            for k in 0..3 {
                let which = (i + k) % 3;
                let (s, t) = servers[which];
                read_ms[which].extend(reads(s, t, 1).await);
            }
        }
        for post in 0..POSTS_PER_ROUND {
            let tag = round * POSTS_PER_ROUND + post;
            for k in 0..3 {
                let which = (post + k) % 3;
                let (s, t) = servers[which];
                post_ms[which].extend(posts(s, t, tag, 1).await);
            }
        }
    }
    let journaled = on
        .admin_call(
            reqwest::Method::GET,
            &format!("/sandbox/v1/tenants/{}/requests?page_size=1", t_on.id),
            None,
        )
        .await;
    let kept = journaled.headers()["x-total-count"]
        .to_str()
        .unwrap_or("?")
        .to_string();
    println!(
        "journal overhead, {rounds} rounds, medians per request (journal kept {kept} entries):"
    );
    let [read_on, read_off, read_same] = read_ms;
    let [post_on, post_off, post_same] = post_ms;
    for (name, on, off, same) in [
        ("read (GET one record)", read_on, read_off, read_same),
        ("bulk post (50 events)", post_on, post_off, post_same),
    ] {
        // The paired estimate: the median of (on - off) over back-to-back pairs, against the
        // median off. Load from other processes shifts both members of a pair alike, so it
        // cancels out far better than in a ratio of two medians (shown beside it).
        let paired = |a: &[f64], b: &[f64]| -> f64 {
            let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
            median(diffs) / median(b.to_vec()) * 100.0
        };
        let overhead = paired(&on, &off);
        let floor = paired(&same, &off);
        let n = on.len();
        let (m_on, m_off) = (median(on), median(off));
        let ratio = (m_on / m_off - 1.0) * 100.0;
        println!(
            "  {name:<22} n={n:<5} off {m_off:>7.3} ms  on {m_on:>7.3} ms  overhead {overhead:>+6.1}% (paired; ratio of medians {ratio:>+6.1}%; off vs off {floor:>+5.1}%)  {}",
            if overhead < 10.0 { "ok (< 10%)" } else { "OVER 10%" }
        );
    }
}
