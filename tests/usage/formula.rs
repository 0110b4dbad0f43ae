//! FORMULA usage rules end to end: a product whose rate plan prices with formulas over the
//! event's amount and attributes, posted and simulated over HTTP; exact decimals; a formula
//! that fails at rating time (division by zero, overflow) errs that event with a message
//! naming the position, and a formula that does not parse is refused when the rule is stored.

use e2e::billing::{post_ok, USAGE_BULK, USAGE_SIMULATE};
use e2e::{TestServer, TestTenant};
use rust_decimal::Decimal;
use serde_json::{json, Value};
use shared::domain::catalog;

fn d(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn dec(v: &Value) -> Decimal {
    assert!(v.is_number(), "not a number: {v}");
    v.to_string().parse().unwrap()
}

/// Posts (or simulates) `events` under FAIL_ON_EXISTING and answers the 200 body.
async fn call(s: &TestServer, t: &TestTenant, path: &str, events: Value) -> Value {
    let body = json!({"mode": "FAIL_ON_EXISTING", "usage_events": events});
    post_ok(s, t, path, &body).await
}

fn ev(srid: &str, uom: &str, amount: Value, reference_id: Option<&str>) -> Value {
    let mut e = json!({"service_resource_identifier": srid, "usage_uom": uom,
                       "usage_amount": amount, "start_time": "2026-02-01"});
    if let Some(r) = reference_id {
        e["reference_id"] = json!(r);
    }
    e
}

/// The formula rules of product 60, in plan order.
const RULES: &[(&str, &str, &str)] = &[
    (
        "roaming minutes with a minimum",
        "MINUTE",
        "if(starts_with(reference_id, 'roam'), max(2.5, amount * 0.4), amount * 0.1)",
    ),
    (
        "gigabytes, rounded rate plus a fee",
        "GIGABYTE",
        "round(amount * 0.0725, 3) + 0.5",
    ),
    ("counts over five", "COUNT", "100 / (amount - 5)"),
    (
        "huge events",
        "EVENT",
        "amount * 79228162514264337593543950335",
    ),
];

/// A product (60) priced only by formula rules, sold to a new USD account (60) as the
/// service with srid `formula-0001`; all through the domain functions the seed uses.
async fn add_formula_service(s: &TestServer, t: &TestTenant) {
    let db = s.state.store.tenant_db(&t.id).unwrap();
    let tz = shared::time::parse_tz("America/Chicago").unwrap();
    db.write(move |tx| {
        let account: shared::domain::accounts::NewAccount = serde_json::from_value(json!({
            "id": 60, "account_num": "ACC-FORMULA", "name": "Formula Co", "currency_code": "USD"
        }))?;
        shared::domain::accounts::create_account(tx, &account, tz)?;
        catalog::create_product(
            tx,
            &serde_json::from_value(json!({"id": 60, "name": "Formulas"}))?,
        )?;
        for (i, (name, uom, expression)) in RULES.iter().enumerate() {
            let rule = json!({"product_id": 60, "position": i, "name": name,
                "charge_category_id": 1, "uom": uom, "rate_kind": "FORMULA",
                "rate": {"expression": expression}});
            catalog::create_usage_rule(tx, &serde_json::from_str(&rule.to_string())?, tz)?;
        }
        super::sell::sell_product(tx, "Formula", 60, 60, "formula-0001")
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn formula_rules_price_posted_and_simulated_events() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    add_formula_service(&s, &t).await;
    let srid = "formula-0001";
    let events = json!([
        ev(srid, "MINUTE", json!(7), Some("roam-1")), // max(2.5, 2.8)
        ev(srid, "MINUTE", json!(5), Some("roam-2")), // max(2.5, 2.0): the minimum
        ev(srid, "MINUTE", json!(7), Some("home-1")), // 0.7
        ev(srid, "HOUR", json!(1), Some("roam-3")),   // 60 minutes * 0.4
        ev(srid, "GIGABYTE", json!(3.3), None),       // round(0.23925, 3) + 0.5 = 0.739 -> 0.74
        ev(srid, "COUNT", json!(7), None),            // 100 / 2
        ev(srid, "COUNT", json!(5), None),            // division by zero
        ev(srid, "EVENT", json!(2), None),            // overflow
    ]);
    let expected = [
        ("2.8", "0.4"),
        ("2.5", "0.5"),
        ("0.7", "0.1"),
        ("24", "0.4"),
        ("0.74", "0.223939393939"),
        ("50", "7.142857142857"),
    ];
    let simulated = call(&s, &t, USAGE_SIMULATE, events.clone()).await;
    let posted = call(&s, &t, USAGE_BULK, events).await;
    for answer in [&simulated, &posted] {
        let rated = answer["rated_events"].as_array().unwrap();
        assert_eq!(rated.len(), expected.len(), "{answer}");
        for (e, (charge, rate)) in rated.iter().zip(expected) {
            assert_eq!(dec(&e["total_charge"]), d(charge), "{e}");
            let c = &e["event_charges"][0];
            assert_eq!(dec(&c["charge"]), d(charge), "{e}");
            assert_eq!(dec(&c["rate"]), d(rate), "{e}");
        }
        let erred = answer["erred_events"].as_array().unwrap();
        assert_eq!(erred.len(), 2, "{answer}");
        assert_eq!(erred[0]["code"], "RATE_NOT_FOUND");
        let message = erred[0]["message"].as_str().unwrap();
        assert!(
            message.contains("counts over five")
                && message.contains("division by zero at character 5"),
            "{message}"
        );
        assert_eq!(erred[1]["code"], "RATE_NOT_FOUND");
        let message = erred[1]["message"].as_str().unwrap();
        assert!(message.contains("overflow at character 8"), "{message}");
    }
    // the posting stored the charges: the account's pending charges are their sum
    let db = s.state.store.tenant_db(&t.id).unwrap();
    let pending: String = db
        .read(|c| {
            Ok(c.query_row(
                "SELECT pending_charges_total FROM billing_accounts WHERE id = 60",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(d(&pending), d("80.74"));
}

#[tokio::test]
async fn a_bad_formula_is_refused_when_the_rule_is_stored() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let db = s.state.store.tenant_db(&t.id).unwrap();
    let tz = shared::time::parse_tz("UTC").unwrap();
    let cases = [
        ("amount * (0.5", "at character 14"),
        ("amount ** 2", "at character 9"),
        ("system('rm -rf /')", "at character 1"),
        ("amount > 5", "must give a number"),
        ("round(amount, 29)", "at character 15"),
        ("reference_id + 1", "at character 14"),
    ];
    for (expression, needle) in cases {
        let outcome = db
            .write(move |tx| {
                let rule = json!({"product_id": 2, "position": 9, "name": "bad",
                    "charge_category_id": 1, "uom": "COUNT", "rate_kind": "FORMULA",
                    "rate": {"expression": expression}});
                catalog::create_usage_rule(tx, &serde_json::from_str(&rule.to_string())?, tz)
            })
            .await;
        match outcome {
            Err(shared::Error::BadRequest(message)) => {
                assert!(message.contains(needle), "{expression}: {message}")
            }
            other => panic!("{expression}: {other:?}"),
        }
    }
    let too_long = format!("amount{}", " + 1".repeat(300));
    let nested = format!("{}amount{}", "(".repeat(40), ")".repeat(40));
    for (expression, needle) in [(too_long, "1000 characters"), (nested, "nesting")] {
        let outcome = db
            .write(move |tx| {
                let rule = json!({"product_id": 2, "position": 9, "name": "big",
                    "charge_category_id": 1, "uom": "COUNT", "rate_kind": "FORMULA",
                    "rate": {"expression": expression}});
                catalog::create_usage_rule(tx, &serde_json::from_str(&rule.to_string())?, tz)
            })
            .await;
        assert!(
            matches!(&outcome, Err(shared::Error::BadRequest(m)) if m.contains(needle)),
            "{outcome:?}"
        );
    }
}
