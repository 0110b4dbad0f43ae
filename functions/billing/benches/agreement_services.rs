//! A filtered, sorted page of 50 from 100,000 agreement services: the shared list machinery
//! (parse + compile the filter and sort, count, page, render) against the same query written
//! by hand in SQL (count + page, rendered by the same loader), measured in the same run.
//!
//! Run: `cargo bench -p billing --bench agreement_services`; the ratio is printed at the end.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "bench code, not served: a failed set-up or measurement stops the run by panicking"
)]

use criterion::{criterion_group, Criterion};
use rusqlite::Connection;
use shared::domain::lists::{agreement_services, RenderContext};
use shared::web::listing::{to_raw, Listing, Shape};
use std::collections::HashMap;
use std::time::{Duration, Instant};

const ROWS: i64 = 100_000;
const FILTER: &str = "status IN ('ACTIVE', 'TRIAL', 'SUSPENDED') AND minimum_amount GT '100' \
    AND start_date GTE '2025-06-01' AND (account_num LIKE 'ACC-100%' OR renewed EQ 'true')";
const SORT: &str = "-minimum_amount,start_date";

/// The same query, by hand.
const HAND_WHERE: &str = "s.status IN ('ACTIVE', 'TRIAL', 'SUSPENDED') \
    AND s.minimum_amount COLLATE DECIMAL > '100' AND s.start_date >= ?1 \
    AND (ba.account_num LIKE 'ACC-100%' OR s.renewed = 1)";
const HAND_FROM: &str = "agreement_services s JOIN services sv ON sv.id = s.service_id \
    JOIN billing_accounts ba ON ba.id = sv.billing_account_id";

fn tz() -> chrono_tz::Tz {
    chrono_tz::UTC
}

/// A tenant database with the demo data plus bulk agreement services up to [`ROWS`].
fn build() -> (tempfile::TempDir, std::sync::Arc<shared::store::TenantDb>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = shared::store::Store::open_with(dir.path(), None).expect("store");
    let db = store.tenant_db("bench").expect("db");
    db.write_blocking(|tx| {
        shared::fixtures::apply(tx, shared::fixtures::Seed::Demo, tz())?;
        let existing: i64 = tx.query_row("SELECT COUNT(*) FROM agreement_services", [], |r| r.get(0))?;
        let statuses = shared::domain::agreements::AGREEMENT_SERVICE_STATUSES;
        let mut service = tx.prepare(
            "INSERT INTO services (id, billing_account_id, product_id, status, start_date) VALUES (?1, ?2, ?3, 'ACTIVE', ?4)",
        )?;
        let mut agreement_service = tx.prepare(
            "INSERT INTO agreement_services (id, service_id, agreement_id, status, start_date, renewed, minimum_amount, minimum_amount_currency_code)
             VALUES (?1, ?1, 1, ?2, ?3, ?4, ?5, 'USD')",
        )?;
        for i in 0..(ROWS - existing) {
            let id = 10_000 + i;
            let start = format!("2025-{:02}-{:02}T00:00:00.000Z", 1 + i % 12, 1 + i % 28);
            service.execute(rusqlite::params![id, 1 + i % 6, 1 + i % 5, start])?;
            let amount = format!("{}.{}", (i * 7919) % 1000, i % 100);
            agreement_service.execute(rusqlite::params![
                id,
                statuses[(i % 9) as usize],
                start,
                i % 7 == 0,
                amount
            ])?;
        }
        Ok(())
    })
    .expect("bench data");
    (dir, db)
}

/// A page query: (bytes of the rendered page, total matching).
type PageQuery = fn(&Connection) -> shared::Result<(usize, Option<i64>)>;

fn with_machinery(conn: &Connection) -> shared::Result<(usize, Option<i64>)> {
    let params: HashMap<String, String> = [("filter", FILTER), ("sort", SORT)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let request = Listing::read(
        &params,
        &axum::http::HeaderMap::new(),
        &agreement_services::SOURCE,
        tz(),
        &[],
    )?;
    let (ids, total) = request.query.fetch_ids(conn, &agreement_services::SOURCE)?;
    render(conn, &ids).map(|n| (n, total))
}

fn by_hand(conn: &Connection) -> shared::Result<(usize, Option<i64>)> {
    let start = "2025-06-01T00:00:00.000Z";
    let total: i64 = conn
        .prepare_cached(&format!(
            "SELECT COUNT(*) FROM {HAND_FROM} WHERE {HAND_WHERE}"
        ))?
        .query_row([start], |r| r.get(0))?;
    let ids: Vec<i64> = conn
        .prepare_cached(&format!(
            "SELECT s.id FROM {HAND_FROM} WHERE {HAND_WHERE}
             ORDER BY s.minimum_amount COLLATE DECIMAL DESC, s.start_date ASC, s.id ASC LIMIT 50"
        ))?
        .query_map([start], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    render(conn, &ids).map(|n| (n, Some(total)))
}

fn render(conn: &Connection, ids: &[i64]) -> shared::Result<usize> {
    let records = agreement_services::load(conn, ids, &RenderContext::plain(tz()))?;
    let raw = records
        .iter()
        .map(|r| to_raw(r, Shape::Full))
        .collect::<shared::Result<Vec<_>>>()?;
    Ok(serde_json::to_vec(&raw)?.len())
}

fn mean(db: &shared::store::TenantDb, f: PageQuery, runs: u32) -> Duration {
    let started = Instant::now();
    for _ in 0..runs {
        db.read_blocking(f).expect("query");
    }
    started.elapsed() / runs
}

fn bench(c: &mut Criterion) {
    let (_dir, db) = build();
    let ours = db.read_blocking(with_machinery).expect("machinery");
    let hand = db.read_blocking(by_hand).expect("by hand");
    assert_eq!(ours, hand, "both answer the same page and total");
    println!("page bytes {}, total matching {:?}", ours.0, ours.1);
    let mut group = c.benchmark_group("agreement_services_page_of_50_from_100k");
    group.sample_size(20);
    group.bench_function("list_machinery", |b| {
        b.iter(|| db.read_blocking(with_machinery).expect("machinery"))
    });
    group.bench_function("hand_written_sql", |b| {
        b.iter(|| db.read_blocking(by_hand).expect("by hand"))
    });
    group.finish();
    let ours = mean(&db, with_machinery, 20);
    let hand = mean(&db, by_hand, 20);
    println!(
        "mean of 20 runs: list machinery {ours:?}, hand-written SQL {hand:?}, ratio {:.3}",
        ours.as_secs_f64() / hand.as_secs_f64()
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
