//! GET-modify-PUT on Surface C: every PUT that takes a body (`PUT /ledgers/{id}` and
//! `PUT /ledgers/{id}/calendar/years/{yid}`) accepts the representation its GET returns,
//! read-only members included (the ledger list's extra names too). A client reads a
//! record, changes one writable field, sends the whole body back and reads it again: only
//! that field (and what derives from it) changed; a ledger member set to null is cleared,
//! an absent one kept. The open/close PUTs take no body.

use crate::chain::autumn_run;
use e2e::revenue::Rev;
use e2e::{union_keys, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

/// GET `path`, let `change` edit the body, PUT it back (200), GET `path` again: `field`
/// reads back as `change` left it, the fields of `derived` may differ, every other field is
/// unchanged.
async fn change_one(
    c: &Rev<'_>,
    path: &str,
    field: &str,
    change: &dyn Fn(&mut Value),
    derived: &[&str],
) {
    let before = c.get_ok(path).await;
    let mut body = before.clone();
    change(&mut body);
    assert_ne!(
        body[field], before[field],
        "{path}: the case must change {field}"
    );
    c.expect(Method::PUT, path, Some(body.clone()), 200).await;
    let after = c.get_ok(path).await;
    for key in union_keys(&before, &after) {
        if key == field {
            assert_eq!(
                after[&key], body[&key],
                "{path}: {field} reads back as sent"
            );
        } else if !derived.contains(&key.as_str()) {
            assert_eq!(
                after[&key], before[&key],
                "{path}: changing {field} changed {key}"
            );
        }
    }
}

#[tokio::test]
async fn ledgers_and_years_put_back_unchanged_change_nothing() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let (listed, ..) = c.paged("/ledgers").await;
    assert_eq!(listed.len(), 3);
    for item in listed {
        let path = format!("/ledgers/{}", item["id"]);
        let before = c.get_ok(&path).await;
        // As read by id, and as listed (with the list's extra names).
        for body in [before.clone(), item.clone()] {
            let answer = c.expect(Method::PUT, &path, Some(body), 200).await;
            assert_eq!(answer, before, "PUT {path} as read answers it unchanged");
            assert_eq!(c.get_ok(&path).await, before, "PUT {path} as read");
        }
        for year in before["calendar"]["years"].as_array().expect("years") {
            let year_path = format!("{path}/calendar/years/{}", year["id"]);
            let answer = c
                .expect(Method::PUT, &year_path, Some(year.clone()), 200)
                .await;
            assert_eq!(answer, before, "PUT {year_path} as read changes nothing");
        }
    }
}

#[tokio::test]
async fn a_ledger_put_back_with_one_field_changed_changes_that_field() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let path = "/ledgers/1";
    let cases: Vec<(&str, Value, &[&str])> = vec![
        ("name", json!("US Ledger renamed"), &[]),
        ("description", json!("Renamed ledger"), &[]),
        ("status", json!("INACTIVE"), &[]),
        ("convert_currency", json!("GL"), &[]),
        ("conversion_currency", json!("EUR"), &[]),
        ("chart_of_account_id", json!(2), &[]),
        ("rule_set_id", json!(2), &[]),
        ("run_mode_actuals_id", json!(2), &[]),
        ("conversion_rate_set_id", json!("ECB-DAILY"), &[]),
        ("currency_exchange_version", json!("2027.1"), &[]),
        ("billing_account_category_ids", json!([3]), &[]),
        ("expected_customer_lifetime", json!(48), &[]),
        ("create_zero_amount_entries", json!(true), &[]),
        // The zone is rendered on the calendar and its years and periods as well.
        ("timezone_name", json!("Europe/Berlin"), &["calendar"]),
    ];
    for (field, value, derived) in cases {
        let set = |body: &mut Value| body[field] = value.clone();
        change_one(&c, path, field, &set, derived).await;
    }
}

/// Members a ledger may lack: (member, a value to set first, the members derived from it).
/// Without a chart of accounts or a rule set a ledger cannot run (`valid`).
const NULLABLE: [(&str, &str, &[&str]); 9] = [
    ("description", r#""Renamed ledger""#, &[]),
    ("conversion_currency", r#""EUR""#, &[]),
    ("chart_of_account_id", "2", &["valid"]),
    ("rule_set_id", "2", &["valid"]),
    ("run_mode_actuals_id", "2", &[]),
    ("conversion_rate_set_id", r#""ECB-DAILY""#, &[]),
    ("currency_exchange_version", r#""2027.1""#, &[]),
    ("expected_customer_lifetime", "48", &[]),
    ("billing_account_category_ids", "[3]", &[]),
];

#[tokio::test]
async fn a_ledger_put_back_with_a_member_null_clears_it() {
    // The spec lists the members of PUT /ledgers/{id} but not what null does: a client that
    // reads a ledger, sets a member a ledger may lack to null and sends the body back has
    // cleared it (null used to keep the stored value, so conversion_currency could not be
    // dropped once set).
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let path = "/ledgers/1";
    let mut body = c.get_ok(path).await;
    for (member, value, _) in NULLABLE {
        body[member] = serde_json::from_str(value).expect("json");
    }
    let set = c.expect(Method::PUT, path, Some(body), 200).await;
    assert_eq!(set["valid"], true, "{set}");
    for (member, _, derived) in &NULLABLE[..8] {
        let null = |body: &mut Value| body[*member] = Value::Null;
        change_one(&c, path, member, &null, derived).await;
    }
    assert_eq!(
        c.get_ok(path).await["valid"],
        false,
        "no chart, no rule set"
    );
    // The category set nulled is empty (a list is never rendered null); nothing else moves.
    let before = c.get_ok(path).await;
    let mut body = before.clone();
    body["billing_account_category_ids"] = Value::Null;
    let after = c.expect(Method::PUT, path, Some(body), 200).await;
    let mut expected = before;
    expected["billing_account_category_ids"] = json!([]);
    assert_eq!(after, expected);
}

#[tokio::test]
async fn a_ledger_put_keeps_absent_members_and_refuses_null_on_required_ones() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let path = "/ledgers/1";
    let before = c.get_ok(path).await;
    // Absent: kept (a partial body changes only what it names).
    let answer = c.expect(Method::PUT, path, Some(json!({})), 200).await;
    assert_eq!(answer, before);
    let answer = c
        .expect(Method::PUT, path, Some(json!({"description": null})), 200)
        .await;
    assert_eq!(answer["description"], Value::Null);
    assert_eq!(answer["conversion_currency"], before["conversion_currency"]);
    let before = answer;
    // Null on a member every ledger has: 400 naming it, nothing applied (the other member
    // of the body included).
    for member in [
        "name",
        "status",
        "convert_currency",
        "create_zero_amount_entries",
        "timezone_name",
    ] {
        let body = json!({member: null, "conversion_currency": "SEK"});
        let message = c.error(Method::PUT, path, Some(body), 400).await;
        assert!(
            message.contains(&format!("{member} must not be null")),
            "{member}: {message}"
        );
    }
    assert_eq!(c.get_ok(path).await, before);
    // On create there is nothing to clear: null is as if absent (the default).
    let nulls = json!({"name": "Nulls", "description": null, "status": null,
        "convert_currency": null, "conversion_currency": null, "create_zero_amount_entries": null,
        "timezone_name": null, "billing_account_category_ids": null});
    let created = c.expect(Method::POST, "/ledgers", Some(nulls), 201).await;
    assert_eq!(created["status"], "ACTIVE");
    assert_eq!(created["convert_currency"], "NONE");
    assert_eq!(created["create_zero_amount_entries"], false);
    assert_eq!(
        created["timezone_name"], "America/Chicago",
        "the tenant's zone"
    );
    assert_eq!(created["description"], Value::Null);
    assert_eq!(created["billing_account_category_ids"], json!([]));
}

#[tokio::test]
async fn a_year_put_back_with_one_field_changed_changes_that_field() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let ledger = c.get_ok("/ledgers/2").await;
    let year_id = ledger["calendar"]["years"][0]["id"].clone();
    let path = format!("/ledgers/2/calendar/years/{year_id}");
    // (field, the change, fields derived from it): one period renamed, one reopened (the
    // year's derived `open` may follow).
    type Change = fn(&mut Value);
    let cases: [(&str, Change, &[&str]); 4] = [
        ("name", |y| y["name"] = json!("FY26"), &[]),
        ("description", |y| y["description"] = json!("Quarters"), &[]),
        (
            "accounting-periods",
            |y| y["accounting-periods"][1]["name"] = json!("Q2"),
            &[],
        ),
        (
            "accounting-periods",
            |y| y["accounting-periods"][0]["open"] = json!(true),
            &["open"],
        ),
    ];
    for (field, change, derived) in cases {
        change_one(&c, &path, field, &change, derived).await;
    }
    // A year body that names another year is refused.
    let mut other = c.get_ok(&path).await;
    other["id"] = json!(999);
    let message = c.error(Method::PUT, &path, Some(other), 400).await;
    assert!(message.contains("id"), "{message}");
}

#[tokio::test]
async fn a_new_ledger_takes_the_tenant_zone_unless_it_names_one() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "empty").await;
    let plain = c
        .expect(
            Method::POST,
            "/ledgers",
            Some(json!({"name": "Plain"})),
            201,
        )
        .await;
    assert_eq!(
        plain["timezone_name"], "America/Chicago",
        "the tenant's zone"
    );
    assert_eq!(plain["calendar"]["time_zone"], "America/Chicago");
    let named = json!({"name": "Tokyo", "timezone_name": "Asia/Tokyo"});
    let named = c.expect(Method::POST, "/ledgers", Some(named), 201).await;
    assert_eq!(named["timezone_name"], "Asia/Tokyo");
}

/// Every member named `id`, `*_id` or `*_ids` anywhere in `v` is an int64 (or null, or an
/// array of int64), except the two the spec types as strings; answers the members seen.
fn check_ids(v: &Value, at: &str, seen: &mut Vec<String>) {
    const STRING_IDS: &[&str] = &["conversion_rate_set_id", "core_id"];
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let here = format!("{at}/{k}");
                let named_id = k == "id" || k.ends_with("_id") || k.ends_with("_ids");
                if named_id && !STRING_IDS.contains(&k.as_str()) {
                    let ok = match x {
                        Value::Array(items) => items.iter().all(|i| i.is_i64()),
                        other => other.is_i64() || other.is_null(),
                    };
                    assert!(ok, "{here} is not an int64: {x}");
                    seen.push(k.clone());
                }
                check_ids(x, &here, seen);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                check_ids(x, &format!("{at}/{i}"), seen);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn every_id_surface_c_renders_is_an_int64() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let run = c.collect(autumn_run(json!([]))).await;
    let tenant = run["tenant_id"].as_i64().expect("tenant_id is an int64");
    assert!(tenant > 0, "{tenant}");
    let gl = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-11-30"}))
        .await;
    let (gl_id, run_id) = (gl["id"].clone(), run["id"].clone());
    let ledger = c.get_ok("/ledgers/1").await;
    let year = &ledger["calendar"]["years"][0];
    let period = format!(
        "/ledgers/1/calendar/years/{}/accounting-periods/{}/history",
        year["id"], year["accounting-periods"][0]["id"]
    );
    let mut seen = Vec::new();
    for path in [
        "/ledgers".to_string(),
        "/ledgers/1".to_string(),
        format!("/ledgers/1/calendar/years/{}", year["id"]),
        period,
        "/glruns".to_string(),
        format!("/glruns/{gl_id}"),
        format!("/glruns/{gl_id}/errors"),
        format!("/glruns/{gl_id}/journal-entries"),
        "/ledgers/1/glruns".to_string(),
        "/collectors".to_string(),
        "/collector-runs".to_string(),
        format!("/collector-runs/{run_id}"),
        format!("/collector-runs/{run_id}/errors"),
        "/ledgers/chargeinfos".to_string(),
        "/ledgers/merged-chargeinfos".to_string(),
        "/ledgers/1/chargeinfos".to_string(),
    ] {
        check_ids(&c.get_ok(&path).await, &path, &mut seen);
    }
    for name in [
        "tenant_id",
        "ledger_id",
        "gl_run_mode_id",
        "parent_id",
        "id",
    ] {
        assert!(seen.iter().any(|k| k == name), "{name} was checked");
    }
    // The same tenant renders the same number on every run; another tenant another.
    let again = c.get_ok(&format!("/collector-runs/{run_id}")).await;
    assert_eq!(again["tenant_id"], run["tenant_id"]);
    let other = Rev::new(&s, "other", "demo").await;
    let theirs = other.collect(autumn_run(json!([]))).await;
    assert_ne!(theirs["tenant_id"], run["tenant_id"]);
}
