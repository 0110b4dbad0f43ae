//! Fixture documents over HTTP: a tenant created with its clock set (`"clock"`) gets the
//! demo's relative dates resolved against that clock, so a demo created on any day (here,
//! years ahead, at a month's end and in two zones) holds no ACTIVE agreement service past its
//! end date and no OPEN invoice past due on an ACTIVE account, and the README tour's usage
//! rates on the tenant's own "yesterday". docs/fixtures.md's example loads and rates (TIERED
//! and FORMULA, two SRIDs of one service); a refused document names its JSON path and creates
//! no tenant; records per kind are bounded; `generated_services` numbers out of range are a
//! 400 too.

use e2e::billing::{filtered, get, post_ok, USAGE_BULK};
use e2e::legacy::{attr, child, read, Answer, ROOT};
use e2e::{TestServer, TestTenant};
use reqwest::Method;
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// The README tour's events (Surface B bulk), dated `day`.
fn tour_events(day: &str) -> Value {
    json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        {"start_time": day, "service_resource_identifier": "srv-compute-0001", "usage_uom": "MINUTE", "usage_amount": 90, "reference_id": "vm-a", "sequence_id": "1"},
        {"start_time": format!("{day}T10:00:00"), "service_resource_identifier": "srv-transfer-0001", "usage_uom": "GIGABYTE", "usage_amount": 150},
        {"start_time": day, "service_resource_identifier": "meter-0001", "usage_uom": "KILOWATTS_PER_HOUR", "usage_amount": 12.5},
        {"start_time": day, "service_resource_identifier": "mkt-0001", "usage_uom": "CURRENCY", "usage_amount": 19.99}
    ]})
}

/// GET a Surface A path as the tenant.
async fn xml_get(s: &TestServer, t: &TestTenant, path: &str) -> Answer {
    let r = s.get_with_basic(&format!("{ROOT}/{path}"), t).await;
    read(r).await
}

#[tokio::test]
async fn a_demo_created_years_ahead_is_coherent_on_its_own_clock() {
    let s = TestServer::start().await;
    // (zone, frozen clock, the tenant's local "yesterday")
    let cases = [
        ("UTC", "2031-01-31T23:30:00Z", "2031-01-30"),
        ("America/Chicago", "2034-03-01T05:30:00Z", "2034-02-27"),
        ("Pacific/Auckland", "2029-06-15T12:00:00Z", "2029-06-15"),
    ];
    for (i, (zone, frozen, yesterday)) in cases.into_iter().enumerate() {
        let t = s
            .create_tenant_with(json!({"name": format!("ahead{i}"), "seed": "demo",
                "time_zone": zone, "clock": {"frozen_at": frozen}}))
            .await;
        // Surface B: no ACTIVE agreement service ended before the clock; some end after it.
        let stale = format!("status EQ 'ACTIVE' AND end_date LT '{frozen}'");
        let a = filtered(&s, &t, "/agreement-services", &stale).await;
        assert_eq!((a.status, a.total()), (200, 0), "{zone}: {}", a.body);
        let live = format!("status EQ 'ACTIVE' AND end_date GT '{frozen}'");
        let a = filtered(&s, &t, "/agreement-services", &live).await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(
            a.total() >= 7,
            "{zone}: ACTIVE services with an end date: {}",
            a.total()
        );

        // Surface A: every OPEN invoice with an amount to pay on an ACTIVE account is due
        // after the clock.
        let list = xml_get(&s, &t, "invoices").await;
        assert_eq!(list.status, 200, "{}", list.body);
        let mut open = 0;
        let clock = chrono::DateTime::parse_from_rfc3339(frozen).unwrap();
        for inv in &list.el().children {
            let account = attr(child(inv, "billingAccount"), "eid");
            let active = attr(
                xml_get(&s, &t, &format!("billingAccounts/{account}"))
                    .await
                    .el(),
                "status",
            ) == "ACTIVE";
            if attr(inv, "status") == "OPEN" && attr(inv, "amountToPay") != "0" && active {
                open += 1;
                let due = chrono::DateTime::parse_from_rfc3339(attr(inv, "dueDate")).unwrap();
                assert!(
                    due > clock,
                    "{zone}: invoice {} due {due}",
                    attr(inv, "invoiceNum")
                );
            }
        }
        assert!(open >= 3, "{zone}: {open} open invoices checked");

        // Surface B: the README tour's events rate on the tenant's own yesterday.
        let v = post_ok(&s, &t, USAGE_BULK, &tour_events(yesterday)).await;
        let rated = v["rated_events"].as_array().expect("rated_events");
        assert_eq!(rated.len(), 4, "{zone}: {v}");
        assert_eq!(v["erred_events"], json!([]), "{zone}: {v}");
    }
}

/// docs/fixtures.md's example.
pub(crate) fn docs_example() -> Value {
    e2e::fixtures_docs_example()
}

fn dec(v: &Value) -> Decimal {
    assert!(v.is_number(), "not a number: {v}");
    v.to_string().parse().unwrap()
}

#[tokio::test]
async fn fixtures_docs_example_loads_and_rates() {
    let s = TestServer::start().await;
    let t = s
        .create_tenant_with(json!({"name": "docs", "time_zone": "UTC", "fixtures": docs_example()}))
        .await;
    let day = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let ev = |srid: &str, uom: &str, amount: Value| {
        json!({"start_time": day, "service_resource_identifier": srid, "usage_uom": uom,
               "usage_amount": amount})
    };
    let body = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        ev("acme-msg-1", "GIGABYTE", json!(150)),
        ev("acme-msg-2", "COUNT", json!(1000)),
        ev("acme-msg-2", "COUNT", json!(2)),
        ev("acme-msg-1", "COUNT", json!(3)),
    ]});
    let v = post_ok(&s, &t, USAGE_BULK, &body).await;
    assert_eq!(v["erred_events"], json!([]), "{v}");
    let charges: Vec<Decimal> = v["rated_events"]
        .as_array()
        .expect("rated")
        .iter()
        .map(|e| dec(&e["total_charge"]))
        .collect();
    let d = |x: &str| x.parse::<Decimal>().unwrap();
    // TIERED, graduated: 100 GB at 0.09 then 50 at 0.05; FORMULA max(0.01, amount * 0.002)
    // on either SRID of the service.
    let tiered = d("100") * d("0.09") + d("50") * d("0.05");
    let formula = |n: &str| (d(n) * d("0.002")).max(d("0.01"));
    assert_eq!(
        charges,
        [tiered, formula("1000"), formula("2"), formula("3")],
        "{v}"
    );
}

#[tokio::test]
async fn a_refused_document_names_its_path_and_creates_no_tenant() {
    let s = TestServer::start().await;
    let tenants = "/sandbox/v1/tenants";
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut doc = docs_example();
        edit(&mut doc);
        Some(json!({"name": "refused", "fixtures": doc}))
    };
    let many: Vec<Value> = (0..10_001)
        .map(|i| json!({"name": format!("p{i}")}))
        .collect();
    let cases = [
        (
            with(&|d| d["services"][0]["product_id"] = json!(987654321)),
            "services[0].product_id",
        ),
        (
            with(&|d| {
                d["usage_rules"][1]["rate"]["expression"] = json!("max(0.01, amount * 0.002")
            }),
            "usage_rules[1]",
        ),
        (
            with(&|d| d["services"][0]["start_date"] = json!("now-1q")),
            "services[0].start_date: 'now-1q'",
        ),
        // Surface B's PUT of an agreement service refuses the same end.
        (
            with(&|d| d["services"][0]["end_date"] = json!("now-2M/month")),
            "services[0].end_date: must not be before start_date",
        ),
        (with(&|d| d["productz"] = json!([])), "productz"),
        (
            with(&|d| d["products"] = json!(many.clone())),
            "products: 10001 records",
        ),
    ];
    for (body, needle) in &cases {
        let r = s.admin_call(Method::POST, tenants, body.as_ref()).await;
        let (status, _, message) = e2e::error_body(r).await;
        assert_eq!(status, 400, "{needle}: {message}");
        assert!(message.contains(needle), "{needle}: {message}");
    }
    // The refusals left nothing behind: the name is free and no tenant exists.
    let r = s.admin_call(Method::GET, tenants, None).await;
    let list: Value = r.json().await.unwrap();
    assert_eq!(list, json!([]), "{list}");
    // A document over the body limit is refused by the pipeline (413), before it is read.
    let pad = "x".repeat(shared::config::DEFAULT_MAX_BODY_BYTES);
    let big = json!({"name": "big", "fixtures": {"products": [{"name": pad}]}});
    let r = s.admin_call(Method::POST, tenants, Some(&big)).await;
    assert_eq!(r.status(), 413);
    // Seed and fixtures do not go together; a clock that cannot be set is refused first.
    let both = json!({"name": "both", "seed": "demo", "fixtures": {}});
    let r = s.admin_call(Method::POST, tenants, Some(&both)).await;
    assert_eq!(r.status(), 400);
    let late = json!({"name": "late", "clock": {"frozen_at": "2100-01-01T00:00:00Z"}});
    let r = s.admin_call(Method::POST, tenants, Some(&late)).await;
    assert_eq!(r.status(), 400);
    let r = s.admin_call(Method::GET, tenants, None).await;
    assert_eq!(r.json::<Value>().await.unwrap(), json!([]));
}

#[tokio::test]
async fn a_document_applies_to_an_existing_tenant_all_or_nothing() {
    let s = TestServer::start().await;
    let t = s.create_tenant("applied", "empty").await;
    let path = format!("/sandbox/v1/tenants/{}/fixtures", t.id);
    let r = s
        .admin_call(Method::POST, &path, Some(&docs_example()))
        .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["records"]["services"], 1, "{v}");
    let day = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let body = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        {"start_time": day, "service_resource_identifier": "acme-msg-2", "usage_uom": "COUNT",
         "usage_amount": 1000}]});
    let v = post_ok(&s, &t, USAGE_BULK, &body).await;
    assert_eq!(v["rated_events"].as_array().map(Vec::len), Some(1), "{v}");

    // A record written before the first problem is rolled back with the rest.
    let doc = json!({
        "billing_accounts": [{"id": 50, "account_num": "NEW-50", "name": "Never"}],
        "services": [{"billing_account_id": 50, "product_id": 987654321, "agreement_id": 1,
                      "start_date": "now/day", "resources": [{"identifier": "never-1"}]}]
    });
    let r = s.admin_call(Method::POST, &path, Some(&doc)).await;
    let (status, _, message) = e2e::error_body(r).await;
    assert_eq!(status, 400, "{message}");
    assert!(message.starts_with("services[0].product_id"), "{message}");
    assert!(message.contains("987654321"), "{message}");
    let account = xml_get(&s, &t, "billingAccounts/50").await;
    assert_eq!(account.status, 404, "{}", account.body);
    let r = s
        .admin_call(
            Method::POST,
            "/sandbox/v1/tenants/t_missing/fixtures",
            Some(&json!({})),
        )
        .await;
    assert_eq!(r.status(), 404);
}

/// `generated_services` is a client's input like any record: numbers that take its ids or
/// dates out of range, an unreadable first_start or an empty list it must cycle through are a
/// 400 naming the member (they were a panic in the expansion, or a 500), and nothing applies.
#[tokio::test]
async fn generated_services_out_of_range_are_refused_naming_the_member() {
    let s = TestServer::start().await;
    let t = s.create_tenant("generated", "empty").await;
    let path = format!("/sandbox/v1/tenants/{}/fixtures", t.id);
    let generated = |edit: &dyn Fn(&mut Value)| {
        let mut g = json!({
            "first_id": 1000, "count": 5, "billing_account_ids": [1], "products": [[1, 1]],
            "statuses": [], "currencies": [], "end_actions": [], "true_up_charge_types": [],
            "first_start": "2026-01-01",
        });
        edit(&mut g);
        json!({ "generated_services": g })
    };
    let cases = [
        (
            generated(&|g| g["end_after_days"] = json!(i64::MAX)),
            "generated_services.end_after_days",
        ),
        (
            generated(&|g| g["end_after_days"] = json!(-3_000_000_000_i64)),
            "generated_services.end_after_days",
        ),
        (
            generated(&|g| g["first_id"] = json!(i64::MAX - 2)),
            "generated_services.first_id",
        ),
        (
            generated(&|g| g["first_start"] = json!("2026-13-01")),
            "generated_services.first_start",
        ),
        (
            generated(&|g| g["products"] = json!([])),
            "generated_services.products",
        ),
    ];
    for (doc, needle) in &cases {
        let r = s.admin_call(Method::POST, &path, Some(doc)).await;
        let (status, _, message) = e2e::error_body(r).await;
        assert_eq!(status, 400, "{needle}: {message}");
        assert!(message.starts_with(needle), "{needle}: {message}");
    }
    // The server is still up and the tenant holds no generated service.
    let r = s
        .admin_call(Method::GET, &format!("/sandbox/v1/tenants/{}", t.id), None)
        .await;
    assert_eq!(r.status(), 200);
    let services = get(&s, &t, "/agreement-services", &[]).await;
    assert_eq!(services.status, 200, "{}", services.body);
    assert_eq!(services.items().len(), 0, "{}", services.body);
}

/// Whether `doc` is valid under `schema`, as Python's jsonschema (Draft 2020-12) says.
fn valid(dir: &std::path::Path, schema: &Value, doc: &Value) -> bool {
    let (s, d) = (dir.join("schema.json"), dir.join("doc.json"));
    std::fs::write(&s, schema.to_string()).unwrap();
    std::fs::write(&d, doc.to_string()).unwrap();
    let script = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1]))\n\
        jsonschema.Draft202012Validator.check_schema(schema)\n\
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(json.load(open(sys.argv[2]))))\n\
        print(*[e.message for e in errors], sep='\\n')\n\
        sys.exit(1 if errors else 0)\n";
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&s)
        .arg(&d)
        .output()
        .expect("python3");
    assert!(
        out.status.code().is_some(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.status.success()
}

#[tokio::test]
async fn the_served_schema_validates_the_demo_and_the_docs_example() {
    e2e::require_tool("jsonschema (Python)", || {
        e2e::runs("python3", &["-c", "import jsonschema"])
    });
    let s = TestServer::start().await;
    // Served without the admin key, like the OpenAPI document.
    let r = s
        .client
        .get(s.url("/sandbox/v1/fixtures.schema.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let schema: Value = r.json().await.unwrap();
    let services = &schema["properties"]["services"];
    assert_eq!(services["maxItems"], 10_000, "{services}");
    assert!(
        services["items"]["properties"]["resources"].is_object(),
        "{services}"
    );
    assert!(services["items"]["properties"]["start_date"]["pattern"].is_string());

    let dir = tempfile::tempdir().unwrap();
    let demo: Value = serde_json::from_str(shared::fixtures::DEMO_JSON).unwrap();
    assert!(valid(dir.path(), &schema, &demo), "the demo");
    assert!(
        valid(dir.path(), &schema, &docs_example()),
        "the docs example"
    );
    // The schema has teeth: an unknown member, a relative date that does not parse.
    let mut bad = docs_example();
    bad["productz"] = json!([]);
    assert!(!valid(dir.path(), &schema, &bad), "unknown member");
    let mut bad = docs_example();
    bad["services"][0]["start_date"] = json!("now-1q");
    assert!(!valid(dir.path(), &schema, &bad), "bad relative date");
}
