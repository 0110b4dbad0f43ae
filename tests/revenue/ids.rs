//! Ids are never reused within a tenant (a client that kept an id must never read another record by it): on every resource a client can
//! delete (Surface C ledgers with their calendars, calendar years with their periods and
//! period history, ledger runs, charge info; Surface B true-up relations), a record created
//! after a delete gets an id greater than every id handed out before, so a client's stale
//! reference never silently names a different record.

use e2e::billing::{send, B};
use e2e::revenue::Rev;
use e2e::TestServer;
use reqwest::Method;
use serde_json::{json, Value};

fn ledger(name: &str) -> Value {
    json!({"name": name, "description": "ids", "convert_currency": "NONE",
           "chart_of_account_id": 1, "rule_set_id": 1, "run_mode_actuals_id": 1})
}

fn id(v: &Value) -> i64 {
    v["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("int64 id in {v}"))
}

/// Every calendar node id of a ledger: the calendar, its years and their periods.
fn node_ids(l: &Value) -> Vec<i64> {
    let cal = &l["calendar"];
    let mut ids = vec![id(cal)];
    for y in cal["years"].as_array().expect("years") {
        ids.push(id(y));
        ids.extend(
            y["accounting-periods"]
                .as_array()
                .expect("periods")
                .iter()
                .map(id),
        );
    }
    ids
}

fn assert_above(new: &[i64], earlier: &[i64], what: &str) {
    let max = earlier.iter().max().copied().unwrap_or(0);
    assert!(
        new.iter().all(|n| *n > max),
        "{what}: new ids {new:?} must all be above every earlier id (max {max})"
    );
}

#[tokio::test]
async fn ledgers_and_their_calendars_never_reuse_a_deleted_id() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let first = c
        .expect(Method::POST, "/ledgers", Some(ledger("Gone")), 201)
        .await;
    let gone = id(&first);
    let path = format!("/ledgers/{gone}/calendar/years?generate-periods=true");
    let year = json!({"name": "FY27", "start_date": "2027-01-01", "end_date": "2027-12-31"});
    let with_year = c.expect(Method::POST, &path, Some(year), 200).await;
    let earlier_nodes = node_ids(&with_year);
    c.expect(Method::DELETE, &format!("/ledgers/{gone}"), None, 200)
        .await;

    let second = c
        .expect(Method::POST, "/ledgers", Some(ledger("Next")), 201)
        .await;
    assert_above(&[id(&second)], &[gone], "ledger");
    assert_above(&node_ids(&second), &earlier_nodes, "calendar");
}

#[tokio::test]
async fn calendar_years_periods_and_history_never_reuse_a_deleted_id() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let l = c
        .expect(Method::POST, "/ledgers", Some(ledger("Years")), 201)
        .await;
    let lid = id(&l);
    let gen = format!("/ledgers/{lid}/calendar/years?generate-periods=true");
    let year = json!({"name": "FY27", "start_date": "2027-01-01", "end_date": "2027-12-31"});
    let mut earlier_nodes = Vec::new();
    let mut earlier_history = Vec::new();
    for round in 0..2 {
        let l = c.expect(Method::POST, &gen, Some(year.clone()), 200).await;
        let nodes = node_ids(&l);
        let yid = id(&l["calendar"]["years"][0]);
        let pid = id(&l["calendar"]["years"][0]["accounting-periods"][0]);
        let period = format!("/ledgers/{lid}/calendar/years/{yid}/accounting-periods/{pid}");
        c.expect(Method::PUT, &format!("{period}/close"), None, 200)
            .await;
        let (history, _, _, _) = c.paged(&format!("{period}/history")).await;
        let history: Vec<i64> = history.iter().map(id).collect();
        assert!(!history.is_empty(), "closing records history");
        if round == 1 {
            // the calendar itself stays; every year, period and history entry is new
            assert_above(&nodes[1..], &earlier_nodes, "years and periods");
            assert_above(&history, &earlier_history, "period history");
        }
        earlier_nodes.extend(nodes);
        earlier_history.extend(history);
        c.expect(
            Method::DELETE,
            &format!("/ledgers/{lid}/calendar/years/{yid}"),
            None,
            200,
        )
        .await;
    }
}

#[tokio::test]
async fn ledger_runs_never_reuse_a_deleted_id() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let body = json!({"ledger_id": 1, "run_to_date": "2026-11-30"});
    let first = id(&c.gl_run(body.clone()).await);
    c.expect(Method::DELETE, &format!("/glruns/{first}"), None, 200)
        .await;
    let second = id(&c.gl_run(body).await);
    assert_above(&[second], &[first], "ledger run");
}

#[tokio::test]
async fn charge_info_collected_again_after_a_delete_gets_a_new_id() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let window = json!({"type": "MANUAL", "collector_operations": ["invoices"],
                        "data_fetch_from_date": "2026-01-01", "data_fetch_to_date": "2026-12-31"});
    c.collect(window.clone()).await;
    let (infos, _, _, _) = c.paged("/ledgers/chargeinfos?page_size=50").await;
    let earlier: Vec<i64> = infos.iter().map(id).collect();
    let newest = *earlier.iter().max().expect("invoices were collected");
    // The source of a record (an invoice line, the newest here) is its core id.
    let source_of = |infos: &[Value], i: i64| {
        infos
            .iter()
            .find(|v| id(v) == i)
            .map(|v| v["core_id"].clone())
            .expect("collected record")
    };
    let source = source_of(&infos, newest);
    c.expect(
        Method::DELETE,
        "/ledgers/chargeinfos",
        Some(json!({"ids": [newest]})),
        200,
    )
    .await;
    // the same window again: only the deleted record is collected again, under a new id
    c.collect(window).await;
    let (infos, _, _, _) = c.paged("/ledgers/chargeinfos?page_size=50").await;
    assert_eq!(infos.len(), earlier.len(), "one record collected again");
    let again = infos
        .iter()
        .find(|v| v["core_id"] == source)
        .expect("the record collected again");
    assert_above(&[id(again)], &earlier, "charge info");
}

#[tokio::test]
async fn true_up_relations_never_reuse_a_deleted_id() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let base = format!("{B}/agreement-services/3/true-up-charge-type-relations");
    let create = || async {
        let r = send(
            s.client
                .post(s.url(&base))
                .json(&json!({"true_up_charge_type": "ONE_TIME"})),
            &t,
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["id"]
            .as_str()
            .expect("string id")
            .parse::<i64>()
            .expect("numeric id")
    };
    let first = create().await;
    let deleted = send(s.client.delete(s.url(&format!("{base}/{first}"))), &t).await;
    assert_eq!(deleted.status, 204);
    let second = create().await;
    assert_above(&[second], &[first], "true-up relation");
}

/// The tenant schema as the builds before ids were kept unique left it (migrations 1 to 4).
const OLD_SCHEMA: &[&str] = &[
    include_str!("../../shared/src/store/migrations/0001_foundation.sql"),
    include_str!("../../shared/src/store/migrations/0002_billing.sql"),
    include_str!("../../shared/src/store/migrations/0003_usage.sql"),
    include_str!("../../shared/src/store/migrations/0004_revenue.sql"),
];

#[tokio::test]
async fn a_database_of_the_old_schema_keeps_its_ids_and_then_never_reuses_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry =
        shared::store::Registry::open(&dir.path().join("registry.db")).expect("registry");
    let (record, creds) = registry.create_tenant("old", "UTC").expect("tenant");
    drop(registry);
    // a schema-4 database with ledgers 1..3, of which 2 was deleted
    std::fs::create_dir_all(dir.path().join("tenants")).expect("tenants dir");
    let path = dir.path().join("tenants").join(format!("{}.db", record.id));
    let old = shared::store::sqlite::open(&path).expect("old database");
    for sql in OLD_SCHEMA {
        old.execute_batch(sql).expect("old migration");
    }
    old.pragma_update(None, "user_version", OLD_SCHEMA.len())
        .expect("version");
    old.execute_batch(
        "INSERT INTO ledgers (id, name) VALUES (1, 'One'), (2, 'Two'), (3, 'Three');
         INSERT INTO calendar_nodes (id, ledger_id, type) VALUES (11, 1, 'CALENDAR'),
             (12, 2, 'CALENDAR'), (13, 3, 'CALENDAR');
         DELETE FROM calendar_nodes WHERE ledger_id = 2;
         DELETE FROM ledgers WHERE id = 2;",
    )
    .expect("old rows");
    drop(old);

    let state = shared::web::AppState::new(shared::config::Config::new(
        dir.path(),
        Some(e2e::ADMIN_KEY.to_string()),
    ))
    .expect("state");
    let base = e2e::listen(state).await;
    let client = reqwest::Client::new();
    let call = |method: Method, path: &str, body: Option<Value>| {
        let mut r = client
            .request(method, format!("{base}/revenue/3{path}"))
            .header("X-Api-Key", &creds.api_key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        r.send()
    };
    let list: Vec<Value> = call(Method::GET, "/ledgers", None)
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    let ids: Vec<i64> = list.iter().map(id).collect();
    assert_eq!(ids, [1, 3], "the migration keeps every id");
    let one: Value = call(Method::GET, "/ledgers/3", None)
        .await
        .expect("ledger 3")
        .json()
        .await
        .expect("json");
    assert_eq!(one["calendar"]["id"], 13);

    let create = || async {
        let r = call(Method::POST, "/ledgers", Some(json!({"name": "New"})))
            .await
            .expect("create");
        let status = r.status();
        let body: Value = r.json().await.expect("json");
        assert_eq!(status, 201, "{body}");
        id(&body)
    };
    // the sequence continues after the highest id the database still knew
    let first = create().await;
    assert_eq!(first, 4);
    let deleted = call(Method::DELETE, &format!("/ledgers/{first}"), None)
        .await
        .expect("delete");
    assert_eq!(deleted.status(), 200);
    assert_above(
        &[create().await],
        &[1, 3, first],
        "ledger after the migration",
    );
}
