//! Ids after a restore: a record created after a restore never gets an
//! id given out before it, on any surface and of any kind a client sees (accounts and their
//! eids, payments, invoices, bill batches, agreements, services, adjustments, ledgers,
//! calendars, collectors, runs, usage events, ... every kind a fixture document creates,
//! and the surfaces' own creates), in a tenant and in a fork; a GET of an id the restore
//! undid is a 404, not another record. (docs/sandbox.md, "Ids after a restore".)

use e2e::billing::{all_ids, post_ok, USAGE_BULK};
use e2e::legacy::{attr, read, ROOT};
use e2e::{TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// A client-visible id: what it names (a kind, or a path of the export) and the number.
type Id = (String, i64);

/// Every `id` of the tenant's export, named by its path without indices
/// (`services.resources`, `adjustments.applications`, ...).
async fn exported(s: &TestServer, t: &TestTenant) -> BTreeSet<Id> {
    let r = s
        .admin_call(
            Method::GET,
            &format!("/sandbox/v1/tenants/{}/fixtures", t.id),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let doc: Value = r.json().await.expect("json");
    let mut out = BTreeSet::new();
    collect_ids(&doc, "", &mut out);
    out
}

fn collect_ids(v: &Value, path: &str, out: &mut BTreeSet<Id>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "id" {
                    if let Some(id) = x.as_i64() {
                        out.insert((path.to_string(), id));
                    }
                } else {
                    let inner = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    collect_ids(x, &inner, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| collect_ids(x, path, out)),
        _ => {}
    }
}

/// One record of every kind a fixture document creates, none with an id (the server numbers
/// them), names made unique by `tag`.
fn one_of_each(tag: &str) -> Value {
    json!({
        "billing_account_categories": [{"name": format!("Cat {tag}"), "type": "BUSINESS",
            "description": "d", "status": "BA_CATEGORY_ACTIVE"}],
        "bill_cycles": [{"name": format!("Cycle {tag}"), "day_of_month": 5}],
        "billing_accounts": [{"account_num": format!("ACC-{tag}"), "name": format!("A {tag}"),
            "currency_code": "USD", "start_date": "now-1M/month"}],
        "products": [{"name": format!("Product {tag}")}],
        "product_prices": [{"product_id": 1, "product_price_type": "RECURRING",
            "price_type": "FLAT", "amount": 1.0}],
        "charge_categories": [{"name": format!("CC {tag}"), "charge_category_type": "Usage"}],
        "reasons": [{"name": format!("Reason {tag}")}],
        "lookup_tables": [{"name": format!("LT {tag}"), "rows": [{"key": "K", "value": 1}]}],
        "usage_rules": [{"product_id": 1, "position": 9, "name": format!("Rule {tag}"),
            "charge_category_id": 1, "uom": "HOUR", "rate_kind": "FLAT", "rate": {"rate": 0.1}}],
        "agreements": [{"name": format!("Agreement {tag}"), "product_ids": [1]}],
        "services": [{"billing_account_id": 1, "product_id": 1, "agreement_id": 1,
            "start_date": "now-1M/month", "resources": [{"identifier": format!("srid-{tag}")}],
            "true_up_charge_types": ["USAGE"]}],
        "actions": [{"name": format!("Action{tag}"), "action_type": "service", "product_id": 1,
            "operations": [{"operation_type": "NOTIFICATION", "name": "n"}]}],
        "bill_batches": [{"bill_batch_type": "on-demand monthly", "name": format!("BB {tag}"),
            "currency_code": "USD", "billing_account_ids": [1]}],
        "bill_batch_runs": [{"bill_batch_id": 1, "bill_run_type": "ON_DEMAND", "sequence": 9,
            "status": "OPEN"}],
        "invoices": [{"invoice_num": format!("INV-{tag}"), "billing_account_id": 1,
            "amount": 10, "occurred_on": "now-1d/day"}],
        "payments": [{"billing_account_id": 1, "amount": 5, "occurred_on": "now-1d/day"}],
        "payment_applications": [{"payment_id": 2, "invoice_id": 3, "amount": 0.01,
            "applied_on": "now-1d/day"}],
        "adjustments": [{"billing_account_id": 1, "occurred_on": "now-1d/day", "amount": 1.0,
            "items": [{"adjustment_item_type": "CREDIT", "amount": 1.0}]}],
        "charts_of_accounts": [{"name": format!("COA {tag}")}],
        "rule_sets": [{"name": format!("RS {tag}")}],
        "run_modes": [{"name": format!("RM {tag}"), "run_type": "ACTUALS"}],
        "ledgers": [{"name": format!("Ledger {tag}")}],
        "calendar_years": [{"ledger_id": 3, "generate_periods": true, "name": format!("FY {tag}"),
            "start_date": "2090-01-01", "end_date": "2090-12-31"}],
        "collectors": [{"name": format!("collector-{tag}"), "friendly_name": "C",
            "group": "BILLING", "category": "USAGE"}]
    })
}

/// The ids a round created, by kind, and the ones to GET afterwards (path, id).
struct Round {
    ids: BTreeSet<Id>,
    gets: Vec<String>,
}

/// Surface A: POST `path` with `body` as `t`; answers the new eid.
async fn xml_create(s: &TestServer, t: &TestTenant, path: &str, body: &str) -> i64 {
    let r = s
        .client
        .post(s.url(&format!("{ROOT}/{path}")))
        .header("Authorization", t.basic_header())
        .header("Content-Type", "application/xml")
        .body(body.to_string())
        .send()
        .await
        .expect("post");
    let a = read(r).await;
    assert_eq!(a.status, 201, "POST {path}: {}", a.body);
    attr(a.el(), "eid").parse().expect("eid")
}

/// Surface C: `method /revenue/3{path}` as `t`, asserting `status`; answers the body.
async fn revenue(s: &TestServer, t: &TestTenant, method: Method, path: &str, body: Value) -> Value {
    let r = s
        .client
        .request(method, s.url(&format!("/revenue/3{path}")))
        .header("X-Api-Key", &t.api_key)
        .json(&body)
        .send()
        .await
        .expect("revenue");
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    assert_eq!(status, 201, "{path}: {v}");
    v
}

fn number(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("an id: {v}"))
}

/// Creates one record of every kind, through a fixture document and through each surface's
/// own creates; answers what it created.
async fn round(s: &TestServer, t: &TestTenant, tag: &str) -> Round {
    let before = exported(s, t).await;
    let r = s
        .admin_call(
            Method::POST,
            &format!("/sandbox/v1/tenants/{}/fixtures", t.id),
            Some(&one_of_each(tag)),
        )
        .await;
    let status = r.status();
    assert_eq!(status, 200, "{}", r.text().await.unwrap_or_default());

    // Surface A: an account (its eid), a payment, an invoice.
    let account = xml_create(
        s,
        t,
        "billingAccounts",
        r#"<billingAccount billType="PAPER" automaticRecurringPayment="false"><billingAccountCategory eid="1"/></billingAccount>"#,
    )
    .await;
    let payment = xml_create(
        s,
        t,
        "payments",
        r#"<payment amount="2.50" reference="IDS"><billingAccount eid="3"/><checkPayment/></payment>"#,
    )
    .await;
    let invoice = xml_create(
        s,
        t,
        "invoices",
        &format!(
            r#"<invoice invoiceNum="XML-{tag}" amount="1" occurredOn="2026-11-20"><billingAccount eid="3"/></invoice>"#
        ),
    )
    .await;
    // Surface B: a usage event.
    let day = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let events = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        {"start_time": day, "service_resource_identifier": "srv-compute-0001",
         "usage_uom": "MINUTE", "usage_amount": 90, "reference_id": format!("ids-{tag}"),
         "sequence_id": "1"}]});
    post_ok(s, t, USAGE_BULK, &events).await;
    let reference = format!("ids-{tag}");
    let events = all_ids(s, t, "/usage-events", &[("reference_id", &reference)], 10).await;
    assert_eq!(events.len(), 1, "{events:?}");
    // Surface C: a ledger, a collector run (and the charge infos it makes), a ledger run.
    let ledger = number(
        &revenue(
            s,
            t,
            Method::POST,
            "/ledgers",
            json!({"name": format!("C {tag}")}),
        )
        .await["id"],
    );
    let collector_run = number(
        &revenue(
            s,
            t,
            Method::POST,
            "/collector-runs",
            json!({"type": "MANUAL", "collector_operations": []}),
        )
        .await["id"],
    );
    let gl_run = number(
        &revenue(
            s,
            t,
            Method::POST,
            "/glruns",
            json!({"ledger_id": 1, "run_to_date": "2026-11-30"}),
        )
        .await["id"],
    );

    let mut ids: BTreeSet<Id> = exported(s, t).await.difference(&before).cloned().collect();
    for (kind, id) in [
        ("A billingAccounts", account),
        ("A payments", payment),
        ("A invoices", invoice),
        ("C ledgers", ledger),
        ("C collector-runs", collector_run),
        ("C glruns", gl_run),
    ] {
        ids.insert((kind.to_string(), id));
    }
    for id in &events {
        ids.insert(("B usage-events".to_string(), *id));
    }
    let of = |kind: &str| -> Vec<i64> {
        ids.iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, id)| *id)
            .collect()
    };
    let mut gets = vec![
        format!("{ROOT}/billingAccounts/{account}"),
        format!("{ROOT}/payments/{payment}"),
        format!("{ROOT}/invoices/{invoice}"),
        format!("/revenue/3/ledgers/{ledger}"),
        format!("/revenue/3/collector-runs/{collector_run}"),
        format!("/revenue/3/glruns/{gl_run}"),
    ];
    for (kind, path) in [
        ("billing_accounts", format!("{ROOT}/billingAccounts")),
        ("agreements", "/billing/2/agreements".to_string()),
        ("bill_batches", "/billing/2/bill-batches".to_string()),
        ("actions", "/billing/2/actions".to_string()),
        ("services", "/billing/2/agreement-services".to_string()),
    ] {
        let made = of(kind);
        assert!(!made.is_empty(), "{kind}: {ids:?}");
        gets.extend(made.iter().map(|id| format!("{path}/{id}")));
    }
    for id in &events {
        gets.push(format!("/billing/2/usage-events/{id}"));
    }
    Round { ids, gets }
}

/// GET `path` as `t` on whichever surface it names; answers the status.
async fn status_of(s: &TestServer, t: &TestTenant, path: &str) -> u16 {
    let req = s.client.get(s.url(path));
    let req = if path.starts_with(ROOT) {
        req.header("Authorization", t.basic_header())
    } else {
        req.header("X-Api-Key", &t.api_key)
    };
    req.send().await.expect("get").status().as_u16()
}

/// Checkpoint, a round, restore, a round: the second round repeats no id of the first, and
/// every record of the first answers 404.
async fn restore_gives_no_id_twice(s: &TestServer, t: &TestTenant) {
    let admin = format!("/sandbox/v1/tenants/{}", t.id);
    let r = s
        .admin_call(
            Method::POST,
            &format!("{admin}/checkpoints"),
            Some(&json!({"name": "before"})),
        )
        .await;
    assert_eq!(r.status(), 201);
    let first = round(s, t, "one").await;
    for path in &first.gets {
        assert_eq!(
            status_of(s, t, path).await,
            200,
            "{path} before the restore"
        );
    }
    let r = s
        .admin_call(
            Method::POST,
            &format!("{admin}/restore"),
            Some(&json!({"checkpoint": "before"})),
        )
        .await;
    assert_eq!(r.status(), 200);
    let second = round(s, t, "two").await;
    let again: Vec<&Id> = first.ids.intersection(&second.ids).collect();
    assert!(
        again.is_empty(),
        "ids given out again after the restore: {again:?}"
    );
    for path in &first.gets {
        assert_eq!(
            status_of(s, t, path).await,
            404,
            "{path}: undone by the restore, so nothing has that id"
        );
    }
}

#[tokio::test]
async fn a_restore_never_gives_an_id_out_twice() {
    let s = TestServer::start().await;
    let t = s.create_tenant("ids", "demo").await;
    restore_gives_no_id_twice(&s, &t).await;
}

#[tokio::test]
async fn a_fork_restored_never_gives_an_id_out_twice() {
    let s = TestServer::start().await;
    let t = s.create_tenant("source", "demo").await;
    let r = s
        .admin_call(
            Method::POST,
            &format!("/sandbox/v1/tenants/{}/checkpoints", t.id),
            Some(&json!({"name": "golden"})),
        )
        .await;
    assert_eq!(r.status(), 201);
    let fork = s
        .create_tenant_with(
            json!({"name": "fork", "from": {"tenant": t.id, "checkpoint": "golden"}}),
        )
        .await;
    restore_gives_no_id_twice(&s, &fork).await;
}

/// The largest id a fixture document may give (2^53: exactly representable as a JSON number
/// everywhere, docs/limits.md).
const MAX_ID: i64 = 1 << 53;

/// docs/fixtures.md "Ids": every id of a fixture document (a record's, a reference, an id
/// list's, the range `generated_services` numbers) is a whole number from 1 to 2^53. Others
/// were accepted: an account at i64::MAX made every later create of
/// its kind a 500, 0 and -5 were served, and after the largest id new records got random
/// ids. Refused with a 400 naming the JSON path and the bound, before anything is written,
/// at tenant creation and when applying to a tenant.
#[tokio::test]
async fn fixture_ids_outside_1_to_2_pow_53_are_refused_naming_their_path() {
    let s = TestServer::start().await;
    let accounts = |third: Value| {
        json!({"billing_accounts": [
            {"id": 1, "account_num": "A-1", "name": "A"},
            {"id": 2, "account_num": "A-2", "name": "B"},
            {"id": third, "account_num": "A-3", "name": "C"}]})
    };
    let generated = json!({"generated_services": {
        "first_id": MAX_ID - 1, "count": 5, "billing_account_ids": [1], "products": [[1, 1]],
        "statuses": [], "currencies": [], "end_actions": [], "true_up_charge_types": [],
        "first_start": "2026-01-01"}});
    let cases = [
        (accounts(json!(i64::MAX)), "billing_accounts[2].id"),
        (accounts(json!(0)), "billing_accounts[2].id"),
        (accounts(json!(-5)), "billing_accounts[2].id"),
        (accounts(json!(MAX_ID + 1)), "billing_accounts[2].id"),
        (accounts(json!(u64::MAX)), "billing_accounts[2].id"),
        (accounts(json!(2.5)), "billing_accounts[2].id"),
        (
            json!({"payments": [{"billing_account_id": 0, "amount": 1, "occurred_on": "now"}]}),
            "payments[0].billing_account_id",
        ),
        (
            json!({"ledgers": [{"name": "L", "billing_account_category_ids": [1, -1]}]}),
            "ledgers[0].billing_account_category_ids[1]",
        ),
        (
            json!({"adjustments": [{"billing_account_id": 1, "occurred_on": "now",
                "amount": 1, "applications": [{"id": -1, "adjustment_application_type":
                "standard-invoice", "invoice_id": 1, "amount": 1, "applied_on": "now"}]}]}),
            "adjustments[0].applications[0].id",
        ),
        (generated, "generated_services.first_id"),
    ];
    let refused = |status: u16, message: &str, path: &str| {
        assert_eq!(status, 400, "{path}: {message}");
        assert!(message.starts_with(path), "{path}: {message}");
        assert!(message.contains("9007199254740992"), "{path}: {message}");
    };
    for (doc, path) in &cases {
        let body = json!({"name": "bounded", "fixtures": doc});
        let r = s
            .admin_call(Method::POST, "/sandbox/v1/tenants", Some(&body))
            .await;
        let (status, _, message) = e2e::error_body(r).await;
        refused(status, &message, path);
    }
    let r = s.admin_call(Method::GET, "/sandbox/v1/tenants", None).await;
    assert_eq!(r.json::<Value>().await.expect("json"), json!([]));

    // Applied to a tenant: refused, and nothing changed.
    let t = s.create_tenant("bounded", "demo").await;
    let fixtures = format!("/sandbox/v1/tenants/{}/fixtures", t.id);
    let before = exported(&s, &t).await;
    for (doc, path) in &cases {
        let r = s.admin_call(Method::POST, &fixtures, Some(doc)).await;
        let (status, _, message) = e2e::error_body(r).await;
        refused(status, &message, path);
    }
    assert_eq!(exported(&s, &t).await, before);
    for eid in ["-5", "0"] {
        let path = format!("{ROOT}/billingAccounts/{eid}");
        assert_eq!(status_of(&s, &t, &path).await, 404, "{path}");
    }
    let ledger = revenue(&s, &t, Method::POST, "/ledgers", json!({"name": "After"})).await;
    assert!(
        ledger["id"].is_number() || ledger["id"].is_string(),
        "{ledger}"
    );

    // 2^53 itself is an id; the next account is numbered after it, not at random.
    let top = json!({"billing_accounts": [{"id": MAX_ID, "account_num": "TOP", "name": "T"}]});
    let r = s.admin_call(Method::POST, &fixtures, Some(&top)).await;
    assert_eq!(r.status(), 200);
    let path = format!("{ROOT}/billingAccounts/{MAX_ID}");
    assert_eq!(status_of(&s, &t, &path).await, 200);
    let next = xml_create(
        &s,
        &t,
        "billingAccounts",
        r#"<billingAccount billType="PAPER" automaticRecurringPayment="false"><billingAccountCategory eid="1"/></billingAccount>"#,
    )
    .await;
    assert_eq!(next, MAX_ID + 1);
}
