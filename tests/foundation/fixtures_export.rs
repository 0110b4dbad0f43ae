//! Fixture export over HTTP (`GET /sandbox/v1/tenants/{id}/fixtures`): a demo tenant, exported,
//! creates a tenant whose export is the same document and whose three surfaces answer the
//! same reads; docs/fixtures.md's example round-trips too; the export is admin-only, bounded,
//! and refused records' unknown fields name their path.

use e2e::billing::{get as b_get, post_ok, USAGE_BULK};
use e2e::legacy::ROOT;
use e2e::{TestServer, TestTenant, DEMO_REFERENCE};
use reqwest::Method;
use serde_json::{json, Value};

/// The tenant's export, asserting 200.
pub async fn export(s: &TestServer, t: &TestTenant) -> Value {
    let r = s
        .admin_call(
            Method::GET,
            &format!("/sandbox/v1/tenants/{}/fixtures", t.id),
            None,
        )
        .await;
    let status = r.status();
    let body: Value = r.json().await.expect("json");
    assert_eq!(status, 200, "{body}");
    body
}

/// A tenant created from `doc` with the clock frozen at the demo's reference instant.
pub async fn create_from(s: &TestServer, name: &str, zone: &str, doc: &Value) -> TestTenant {
    s.create_tenant_with(json!({"name": name, "time_zone": zone,
        "clock": {"frozen_at": DEMO_REFERENCE}, "fixtures": doc}))
        .await
}

/// The first difference between two JSON values, by path (None: equal).
pub fn first_difference(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (va, vb) = (x.get(k), y.get(k));
                if va != vb {
                    return first_difference(
                        &format!("{path}.{k}"),
                        va.unwrap_or(&Value::Null),
                        vb.unwrap_or(&Value::Null),
                    )
                    .or(Some(format!("{path}.{k}: {va:?} vs {vb:?}")));
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(&format!("{path}[{i}]"), p, q)),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} vs {b}")),
    }
}

/// GET on Surface A, B or C as the tenant: status and body text.
async fn read_as(s: &TestServer, t: &TestTenant, path: &str) -> (u16, String) {
    let r = if path.starts_with(ROOT) {
        s.get_with_basic(path, t).await
    } else {
        s.get_with_key(path, &t.api_key).await
    };
    (r.status().as_u16(), r.text().await.expect("body"))
}

/// Reads every path as both tenants and asserts the answers are the same.
async fn same_reads(s: &TestServer, a: &TestTenant, b: &TestTenant, paths: &[String]) {
    for path in paths {
        let (sa, ba) = read_as(s, a, path).await;
        let (sb, bb) = read_as(s, b, path).await;
        assert_eq!(sa, 200, "{path}: {ba}");
        assert_eq!(sb, 200, "{path}: {bb}");
        if let (Ok(ja), Ok(jb)) = (
            serde_json::from_str::<Value>(&ba),
            serde_json::from_str::<Value>(&bb),
        ) {
            assert_eq!(first_difference(path, &ja, &jb), None);
        } else {
            assert_eq!(ba, bb, "{path}");
        }
    }
}

#[tokio::test]
async fn a_demo_export_round_trips_and_every_surface_reads_the_same() {
    let s = TestServer::start().await;
    let zone = "America/Chicago";
    let demo = s
        .create_tenant_with(json!({"name": "demo", "seed": "demo", "time_zone": zone,
            "clock": {"frozen_at": DEMO_REFERENCE}}))
        .await;
    // State the create inputs do not take: the demo's own (a payment applied to an invoice,
    // bill runs' steps, agreement services' renewal flags), a period closed on Surface C, and
    // what a month of the billing lifecycle writes (invoices, billed-through dates, next
    // invoice dates, statuses) when the clock advances.
    let ledger: Value = s
        .get_with_key("/revenue/3/ledgers/1", &demo.api_key)
        .await
        .json()
        .await
        .unwrap();
    let year = &ledger["calendar"]["years"][1];
    let period = &year["accounting-periods"][8];
    let close = format!(
        "/revenue/3/ledgers/1/calendar/years/{}/accounting-periods/{}/close",
        year["id"], period["id"]
    );
    let r = s
        .client
        .put(s.url(&close))
        .header("X-Api-Key", &demo.api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{close}");
    s.advance_clock(&demo, 35 * 86_400).await;
    let advanced = "2026-12-11T12:00:00Z";
    let first = export(&s, &demo).await;
    let closed = first["calendar_years"][1]["accounting-periods"][8].clone();
    assert_eq!(closed["open"], false, "{closed}");
    let invoices = first["invoices"].as_array().unwrap().len();
    assert!(invoices > 5, "the advance billed: {invoices} invoices");
    for kind in [
        "billing_accounts",
        "services",
        "usage_rules",
        "invoices",
        "payments",
        "payment_applications",
        "bill_batch_runs",
        "adjustments",
        "ledgers",
        "calendar_years",
        "collectors",
    ] {
        assert!(
            first[kind].as_array().is_some_and(|a| !a.is_empty()),
            "{kind}"
        );
    }
    // Every record of every kind carries its id, in id order; dates are absolute.
    for (kind, records) in first.as_object().unwrap() {
        let ids: Vec<i64> = records
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_i64().unwrap_or_else(|| panic!("{kind}: {r}")))
            .collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted, "{kind}");
    }
    assert!(
        !first.to_string().contains("\"now"),
        "relative dates in the export"
    );
    assert!(first.get("generated_services").is_none());
    assert_eq!(first["services"].as_array().unwrap().len(), 7 + 113);

    let copy = s
        .create_tenant_with(json!({"name": "copy", "time_zone": zone,
            "clock": {"frozen_at": advanced}, "fixtures": first}))
        .await;
    let second = export(&s, &copy).await;
    assert_eq!(first_difference("", &first, &second), None);
    assert_eq!(first, second);
    // Applied back to the tenant it came from, the export changes nothing (every record
    // exists and is restated as it is).
    let path = format!("/sandbox/v1/tenants/{}/fixtures", copy.id);
    let r = s.admin_call(Method::POST, &path, Some(&second)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        first_difference("", &second, &export(&s, &copy).await),
        None
    );

    let ledgers: Vec<i64> = first["ledgers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_i64().unwrap())
        .collect();
    let mut paths: Vec<String> = [
        "billingAccounts",
        "billingAccounts?pageSize=100",
        "invoices",
        "payments",
        "billingAccounts/1",
        "invoices/1",
    ]
    .iter()
    .map(|p| format!("{ROOT}/{p}"))
    .collect();
    for p in [
        "/agreement-services?page_size=50&page_number=1",
        "/agreement-services?page_size=50&page_number=3",
        "/agreement-services?filter=status%20EQ%20%27ACTIVE%27&page_size=50",
        "/agreements",
        "/actions",
        "/bill-batches",
        "/adjustment-applications",
        "/adjustment-categories",
    ] {
        paths.push(format!("/billing/2{p}"));
    }
    paths.push("/revenue/3/ledgers".into());
    paths.push("/revenue/3/collectors".into());
    for id in &ledgers {
        paths.push(format!("/revenue/3/ledgers/{id}"));
    }
    for y in first["calendar_years"].as_array().unwrap() {
        let (ledger, year) = (&y["ledger_id"], &y["id"]);
        paths.push(format!("/revenue/3/ledgers/{ledger}/calendar/years/{year}"));
    }
    same_reads(&s, &demo, &copy, &paths).await;

    // The copy rates the README tour's usage as the demo does (its SRIDs, rules and
    // services came through the document).
    let day = "2026-12-10";
    let tour = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        {"start_time": day, "service_resource_identifier": "srv-compute-0001", "usage_uom": "MINUTE", "usage_amount": 90},
        {"start_time": day, "service_resource_identifier": "srv-transfer-0001", "usage_uom": "GIGABYTE", "usage_amount": 150},
        {"start_time": day, "service_resource_identifier": "meter-0001", "usage_uom": "KILOWATTS_PER_HOUR", "usage_amount": 12.5}
    ]});
    let charges = |v: &Value| -> Vec<Value> {
        v["rated_events"]
            .as_array()
            .expect("rated")
            .iter()
            .map(|e| e["total_charge"].clone())
            .collect()
    };
    let a = post_ok(&s, &demo, USAGE_BULK, &tour).await;
    let b = post_ok(&s, &copy, USAGE_BULK, &tour).await;
    assert_eq!(charges(&a).len(), 3, "{a}");
    assert_eq!(charges(&a), charges(&b));
    let usage = b_get(&s, &copy, "/agreement-services", &[]).await;
    assert_eq!(usage.status, 200);
}

#[tokio::test]
async fn the_docs_example_exported_round_trips() {
    let s = TestServer::start().await;
    let doc = crate::fixtures::docs_example();
    let a = create_from(&s, "docs", "UTC", &doc).await;
    let first = export(&s, &a).await;
    // The example's own records, now with ids and absolute dates.
    assert_eq!(
        first["usage_rules"][1]["rate"]["expression"],
        "max(0.01, amount * 0.002)"
    );
    assert_eq!(first["usage_rules"][1]["id"], 2);
    assert_eq!(
        first["services"][0]["resources"].as_array().unwrap().len(),
        2
    );
    assert_eq!(
        first["agreements"][0]["valid_from"],
        "2025-11-01T00:00:00.000Z"
    );
    let b = create_from(&s, "docs-copy", "UTC", &first).await;
    assert_eq!(first_difference("", &first, &export(&s, &b).await), None);
    // An empty tenant exports an empty document, which loads.
    let e = s.create_tenant("empty", "empty").await;
    assert_eq!(export(&s, &e).await, json!({}));
}

#[tokio::test]
async fn the_export_needs_the_admin_key_and_a_tenant() {
    let s = TestServer::start().await;
    let t = s.create_tenant("t", "empty").await;
    let path = format!("/sandbox/v1/tenants/{}/fixtures", t.id);
    let r = s.get_with_key(&path, "not-the-key").await;
    assert_eq!(r.status(), 401);
    let (status, body) = read_as(&s, &t, &path).await;
    assert_eq!(status, 401, "{body}");
    let r = s
        .admin_call(Method::GET, "/sandbox/v1/tenants/t_missing/fixtures", None)
        .await;
    assert_eq!(r.status(), 404);
    // The bound: a kind over the bound of a document is refused by name, not read.
    let many: Vec<Value> = (1..=10_000)
        .map(|i| json!({"id": i, "name": format!("r{i}")}))
        .collect();
    let r = s
        .admin_call(Method::POST, &path, Some(&json!({"reasons": many})))
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        export(&s, &t).await["reasons"].as_array().unwrap().len(),
        10_000
    );
    let one = json!({"reasons": [{"id": 10_001, "name": "one more"}]});
    let r = s.admin_call(Method::POST, &path, Some(&one)).await;
    assert_eq!(r.status(), 200);
    let r = s.admin_call(Method::GET, &path, None).await;
    let (status, code, message) = e2e::error_body(r).await;
    assert_eq!(
        (status, code.as_str()),
        (422, "EXPORT_TOO_LARGE"),
        "{message}"
    );
    assert!(message.starts_with("reasons: 10001 records"), "{message}");
}

/// The names between backticks in a table cell.
fn names(cell: &str) -> std::collections::BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_member_table_of_the_docs_is_the_schema() {
    let md = include_str!("../../docs/fixtures.md");
    let schema = shared::fixtures::json_schema();
    let start = md
        .find("| Member | Fields | State fields |")
        .expect("the table");
    let rows: Vec<&str> = md[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let members = schema["properties"].as_object().unwrap();
    assert_eq!(rows.len(), members.len());
    for row in rows {
        let cells: Vec<&str> = row.split('|').collect();
        let member = cells[1].trim().trim_matches('`');
        let (fields, state) = (names(cells[2]), names(cells[3]));
        let wanted: std::collections::BTreeSet<String> = shared::fixtures::state::fields(member)
            .into_iter()
            .map(|(f, _, _)| f.to_string())
            .collect();
        assert_eq!(state, wanted, "{member}'s state fields");
        let member_schema = &members[member];
        let record = member_schema.get("items").unwrap_or(member_schema);
        let props: std::collections::BTreeSet<String> = record["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let all: std::collections::BTreeSet<String> = fields.union(&state).cloned().collect();
        assert_eq!(all, props, "{member}");
    }
}
