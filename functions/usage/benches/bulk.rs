//! Throughput of bulk posting, in process: calls of 50 usage events through the real router
//! (auth, JSON, validation, rating, storage, the rendered answer) and through the domain
//! function alone, next to the raw rate of inserting the same number of plain rows with
//! rusqlite (one transaction per 50 rows, same pragmas) in the same run.
//!
//! A fourth line is the storage limit of the real schema: the rows a posting call stores (the
//! event with its one charge, migration 0008, with the tenant schema's indexes), inserted 50
//! events per write transaction through the store's own write path, with posting's own
//! statements (`shared::domain::usage::insert_statement` and `event_columns`: the same chunks
//! of rows per statement, the same twenty values bound per row), and no parsing, lookups or
//! rating. The rows are copies of those of a posted call, each with its
//! own services, accounts and periods (five kinds of events, as the posting lines): storing
//! them touches the same places of the indexes that posting's do. No posting can beat it:
//! the router's and the domain's rates over it say how near posting comes to storage.
//!
//! A fifth line is the earlier storage limit, kept to compare with older numbers: one row
//! copied fifty times (one service, account and period), eleven of its values written into
//! the statement as literals. Its rows land in one place of each index and bind fewer
//! values, so it is faster than storing what posting stores.
//!
//! Run: `cargo bench -p usage --bench bulk` (env BENCH_CALLS sets the calls per measurement,
//! default 200 = 10,000 events; BENCH_ROUNDS the measurements of each line, default 3, the
//! lines taking turns). Prints the median events/second of each and the ratios. To profile one
//! path alone, `BENCH_ONLY=router|domain|storage` runs only that one (after the same warm-up)
//! and prints its rate. `BENCH_DROP_INDEX=<index>` drops that index of the tenant's
//! database after the warm-up (SQL after the name runs too: `a; DROP INDEX b` drops two), to
//! measure what an index costs posting: a question for the bench only, never a setting.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "bench code, not served: a failed set-up or measurement stops the run by panicking"
)]

use axum::body::Body;
use http_body_util::BodyExt;
use serde::de::IgnoredAny;
use serde_json::{json, Value};
use shared::config::Config;
use shared::domain::usage::{post as post_bulk, BulkRequest};
use shared::fixtures::Seed;
use shared::web::AppState;
use std::time::{Duration, Instant};
use tower::ServiceExt;

const EVENTS_PER_CALL: usize = 50;

/// One call's events: every rate kind, unique (reference_id, sequence_id) pairs.
fn events(call: usize) -> Value {
    let kinds = [
        ("srv-compute-0001", "MINUTE", "90"),
        ("srv-transfer-0001", "MEGABYTE", "150000"),
        ("meter-0001", "WATTS_PER_HOUR", "2500"),
        ("mkt-0001", "CURRENCY", "12.345"),
        ("api-0001", "COUNT", "1500"),
    ];
    let list: Vec<Value> = (0..EVENTS_PER_CALL)
        .map(|i| {
            let (srid, uom, amount) = kinds[i % kinds.len()];
            let amount: Value = serde_json::from_str(amount).unwrap_or(Value::Null);
            json!({
                "service_resource_identifier": srid, "usage_uom": uom, "usage_amount": amount,
                "start_time": "2026-02-01T10:00:00-06:00",
                "reference_id": format!("bench-{call}"), "sequence_id": i.to_string()
            })
        })
        .collect();
    json!({"mode": "FAIL_ON_EXISTING", "usage_events": list})
}

fn rate(events: usize, took: Duration) -> f64 {
    events as f64 / took.as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A bulk answer, its events counted.
#[derive(serde::Deserialize)]
struct Answer {
    rated_events: Vec<IgnoredAny>,
    erred_events: Vec<IgnoredAny>,
}

/// Posts `calls` bulk calls through the router; answers the elapsed time.
async fn through_router(app: &axum::Router, key: &str, calls: usize, offset: usize) -> Duration {
    let bodies: Vec<String> = (0..calls).map(|c| events(offset + c).to_string()).collect();
    let started = Instant::now();
    for body in bodies {
        let req = http::Request::post("/billing/2/usage-events/bulk")
            .header("X-Api-Key", key)
            .header("Content-Type", "application/json")
            .body(Body::from(body))
            .expect("request");
        let res = app.clone().oneshot(req).await.expect("response");
        assert_eq!(res.status(), 200);
        let bytes = res.into_body().collect().await.expect("body").to_bytes();
        // Counted, not built into a `Value`: the check should not cost more than the call.
        let answer: Answer = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(
            (answer.rated_events.len(), answer.erred_events.len()),
            (EVENTS_PER_CALL, 0),
            "{}",
            String::from_utf8_lossy(&bytes)
        );
    }
    started.elapsed()
}

/// Posts `calls` bulk calls through the domain function alone.
fn through_domain(
    db: &shared::store::TenantDb,
    tz: chrono_tz::Tz,
    calls: usize,
    offset: usize,
) -> Duration {
    let requests: Vec<BulkRequest> = (0..calls)
        .map(|c| serde_json::from_value(events(offset + c)).expect("request"))
        .collect();
    let started = Instant::now();
    for req in &requests {
        let out = db
            .write_blocking(|tx| post_bulk(tx, req, tz))
            .expect("post");
        assert_eq!(out.rated_events.len(), EVENTS_PER_CALL);
    }
    started.elapsed()
}

/// Rows per insert statement of the storage limits, as posting chunks a call's 50 events
/// (`usage/post/store.rs`: sizes 32, 16, 8, 4, 2, 1, largest first).
const STORAGE_CHUNKS: [usize; 3] = [32, 16, 2];

/// The head of the earlier storage limit's insert: posting's columns
/// (`shared::domain::usage::event_columns`), `INSERT OR FAIL` as posting's.
fn insert_into() -> String {
    format!(
        "INSERT OR FAIL INTO usage_events ({}) VALUES",
        shared::domain::usage::event_columns()
    )
}

/// Where `voided` sits among posting's columns: the one column it does not bind (the literal
/// 0 in its statements).
const VOIDED: usize = 14;

/// Stores `calls` × 50 events as posting stores them: the rows of the first posted call
/// copied, each call with its own request id and reference ids, in posting's statements (see
/// the module doc), 50 per write through the store; nothing is looked up or rated. Answers
/// the elapsed time.
fn storage_limit(db: &shared::store::TenantDb, calls: usize, offset: usize) -> Duration {
    assert_eq!(STORAGE_CHUNKS.iter().sum::<usize>(), EVENTS_PER_CALL);
    let columns = shared::domain::usage::event_columns();
    assert_eq!(
        columns.split(',').nth(VOIDED).map(str::trim),
        Some("voided")
    );
    let sql = format!("SELECT {columns} FROM usage_events ORDER BY id LIMIT 50");
    // Each row's values as posting binds them: every column but `voided`.
    let rows: Vec<Vec<rusqlite::types::Value>> = db
        .write_blocking(|tx| {
            let mut stmt = tx.prepare(&sql)?;
            let count = stmt.column_count();
            let rows = stmt
                .query_map([], |r| {
                    (0..count)
                        .filter(|&i| i != VOIDED)
                        .map(|i| r.get(i))
                        .collect()
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .expect("the rows of a posted call");
    assert_eq!(rows.len(), EVENTS_PER_CALL);
    let texts: Vec<&str> = STORAGE_CHUNKS
        .iter()
        .map(|&n| shared::domain::usage::insert_statement(n).expect("one of posting's chunk sizes"))
        .collect();
    // Made before the clock starts, as posting holds its texts before it binds them.
    let ids: Vec<(rusqlite::types::Value, rusqlite::types::Value)> = (0..calls)
        .map(|call| {
            let id = format!("{:036}", offset + call);
            (id.clone().into(), format!("storage-{id}").into())
        })
        .collect();
    let row_len = rows[0].len();
    let started = Instant::now();
    for (request_id, reference_id) in &ids {
        db.write_blocking(|tx| {
            let mut row = rows.iter();
            for (text, &n) in texts.iter().zip(&STORAGE_CHUNKS) {
                let mut params: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(n * row_len);
                for values in row.by_ref().take(n) {
                    for (i, value) in values.iter().enumerate() {
                        params.push(match i {
                            0 => request_id,
                            10 => reference_id,
                            _ => value,
                        });
                    }
                }
                tx.prepare_cached(text)?.execute(params.as_slice())?;
            }
            Ok(())
        })
        .expect("storage");
    }
    started.elapsed()
}

/// The earlier storage limit's insert of `rows` event rows in one statement (`INSERT OR
/// FAIL`, as posting's): nine parameters per row, the rest literals.
fn storage_insert_sql(rows: usize) -> String {
    let row = "(?, 'srv-compute-0001', ?, ?, ?, ?, '2026-02-01T16:00:00.000Z',
        '2026-02-01T16:00:00.000Z', 'MINUTE', '90', ?, ?, '1.5', 0, 0,
        '2026-02-01T16:00:00.000Z', ?, ?, '1', 'MINUTE', '90')";
    format!("{} {}", insert_into(), vec![row; rows].join(", "))
}

/// The earlier storage limit (see the module doc): `calls` × 50 copies of one row, 50 per
/// write through the store, in posting's chunks of rows per statement, copying the references
/// of a posted event. Answers the elapsed time.
fn one_row_copied(db: &shared::store::TenantDb, calls: usize, offset: usize) -> Duration {
    assert_eq!(STORAGE_CHUNKS.iter().sum::<usize>(), EVENTS_PER_CALL);
    let template: (i64, i64, i64, i64, i64, i64) = db
        .write_blocking(|tx| {
            Ok(tx.query_row(
                "SELECT service_resource_id, agreement_service_id, billing_account_id,
                        service_period_id, usage_rule_id, charge_category_id
                 FROM usage_events ORDER BY id LIMIT 1",
                [],
                |r| r.try_into(),
            )?)
        })
        .expect("a posted event");
    let (resource, agreement_service, account, period, rule, category) = template;
    let texts: Vec<String> = STORAGE_CHUNKS
        .iter()
        .map(|&n| storage_insert_sql(n))
        .collect();
    // Made before the clock starts: posting binds texts it already holds, so the limit
    // allocates nothing per row either.
    let sequences: Vec<String> = (0..EVENTS_PER_CALL).map(|i| i.to_string()).collect();
    let started = Instant::now();
    for call in 0..calls {
        let request_id = format!("storage-{}", offset + call);
        db.write_blocking(|tx| {
            let mut sequence = sequences.iter();
            for (text, &rows) in texts.iter().zip(&STORAGE_CHUNKS) {
                let mut params: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(rows * 9);
                for sequence_id in sequence.by_ref().take(rows) {
                    params.extend([
                        &request_id as &dyn rusqlite::ToSql,
                        &resource,
                        &agreement_service,
                        &account,
                        &period,
                        &request_id,
                        sequence_id,
                        &rule,
                        &category,
                    ]);
                }
                tx.prepare_cached(text)?.execute(params.as_slice())?;
            }
            Ok(())
        })
        .expect("storage");
    }
    started.elapsed()
}

/// Inserts `calls` × 50 plain rows with rusqlite, 50 per transaction.
fn raw_inserts(path: &std::path::Path, calls: usize) -> Duration {
    let mut conn = shared::store::sqlite::open(path).expect("open");
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS plain (id INTEGER PRIMARY KEY, a TEXT NOT NULL, b TEXT NOT NULL,
         c TEXT NOT NULL, d TEXT NOT NULL, e TEXT)",
    )
    .expect("table");
    let started = Instant::now();
    for call in 0..calls {
        let tx = conn.transaction().expect("tx");
        {
            let mut stmt = tx
                .prepare_cached("INSERT INTO plain (a, b, c, d, e) VALUES (?1, ?2, ?3, ?4, ?5)")
                .expect("prepare");
            for i in 0..EVENTS_PER_CALL {
                stmt.execute(rusqlite::params![
                    "srv-compute-0001",
                    "2026-02-01T16:00:00.000Z",
                    "MINUTE",
                    "90",
                    format!("bench-{call}-{i}")
                ])
                .expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    started.elapsed()
}

fn main() {
    let calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let events_per_round = calls * EVENTS_PER_CALL;
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let state = AppState::new(Config::new(dir.path(), None)).expect("state");
    let (record, creds) = runtime
        .block_on(shared::tenants::create(
            &state.store,
            "bench",
            Seed::Demo,
            "America/Chicago",
            |_| Ok(()),
        ))
        .expect("tenant");
    let tz = shared::time::parse_tz(&record.time_zone).expect("tz");
    let db = state.store.tenant_db(&record.id).expect("db");
    let app = usage::router(state.clone());

    // warm up every path once
    runtime.block_on(through_router(&app, &creds.api_key, 2, 1_000_000));
    through_domain(&db, tz, 2, 2_000_000);
    raw_inserts(&dir.path().join("raw.db"), 2);

    storage_limit(&db, 2, 3_000_000);
    one_row_copied(&db, 2, 4_000_000);

    if let Ok(index) = std::env::var("BENCH_DROP_INDEX") {
        db.write_blocking(|tx| Ok(tx.execute_batch(&format!("DROP INDEX {index}"))?))
            .expect("drop index");
    }
    if let Ok(only) = std::env::var("BENCH_ONLY") {
        let mut rates = Vec::new();
        for round in 0..rounds {
            let offset = 30_000_000 + round * calls;
            let took = match only.as_str() {
                "router" => runtime.block_on(through_router(&app, &creds.api_key, calls, offset)),
                "domain" => through_domain(&db, tz, calls, offset),
                "storage" => storage_limit(&db, calls, offset),
                "one-row" => one_row_copied(&db, calls, offset),
                other => panic!("BENCH_ONLY={other}: use router, domain, storage or one-row"),
            };
            rates.push(rate(events_per_round, took));
        }
        println!("{only} alone: {:>10.0} events/s", median(rates));
        return;
    }

    let (mut http, mut domain, mut raw, mut storage, mut one_row) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let offset = round * calls;
        http.push(rate(
            events_per_round,
            runtime.block_on(through_router(&app, &creds.api_key, calls, offset)),
        ));
        domain.push(rate(
            events_per_round,
            through_domain(&db, tz, calls, 10_000_000 + offset),
        ));
        raw.push(rate(
            events_per_round,
            raw_inserts(&dir.path().join("raw.db"), calls),
        ));
        storage.push(rate(
            events_per_round,
            storage_limit(&db, calls, 20_000_000 + offset),
        ));
        one_row.push(rate(
            events_per_round,
            one_row_copied(&db, calls, 40_000_000 + offset),
        ));
    }
    // Each round's own ratios, then their medians: a round's lines run close together, so
    // a slow spell of the host weighs on both sides of its ratios.
    let ratio_of = |a: &[f64], b: &[f64]| median(a.iter().zip(b).map(|(a, b)| a / b).collect());
    let by_round = [
        ratio_of(&http, &storage),
        ratio_of(&domain, &storage),
        ratio_of(&http, &one_row),
        ratio_of(&domain, &one_row),
    ];
    let [http, domain, raw, storage, one_row] = [http, domain, raw, storage, one_row].map(median);
    println!("bulk posting, {calls} calls x {EVENTS_PER_CALL} events per measurement, median of {rounds}:");
    println!("  router (HTTP in process, rated + stored): {http:>10.0} events/s");
    println!("  domain post() alone (rated + stored):     {domain:>10.0} events/s");
    println!("  raw rusqlite inserts, 50 rows per tx:     {raw:>10.0} rows/s");
    println!("  storage limit (posting's rows):           {storage:>10.0} events/s");
    println!("  earlier storage limit (one row copied):   {one_row:>10.0} events/s");
    println!(
        "  ratio router / raw: {:.3}   domain / raw: {:.3}   storage limit / raw: {:.3}",
        http / raw,
        domain / raw,
        storage / raw
    );
    println!(
        "  ratio router / storage limit: {:.3}   domain / storage limit: {:.3}",
        http / storage,
        domain / storage
    );
    println!(
        "  against the earlier limit: router {:.3}   domain {:.3}",
        http / one_row,
        domain / one_row
    );
    println!(
        "  median of the rounds' own ratios: router / storage limit {:.3}   domain / storage limit {:.3}   (earlier limit: {:.3} / {:.3})",
        by_round[0], by_round[1], by_round[2], by_round[3]
    );
}
