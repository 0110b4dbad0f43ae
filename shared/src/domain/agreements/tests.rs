//! Agreement service rules on a real tenant database with the demo seed: the partial update
//! (each refusal, and what a valid update writes) and the true-up relations (a duplicate is
//! refused). Demo agreement service 1 starts 2025-01-01 under agreement 1 (product 1, whose
//! price is 1; price 3 is product 5's) with true-up type USAGE.

use super::*;
use crate::testing::demo_db;
use crate::Error;
use std::str::FromStr;

fn tz() -> chrono_tz::Tz {
    "America/Chicago".parse().unwrap()
}

/// The error of an update that must fail; what it wrote before failing is rolled back, as
/// the caller's transaction would be.
fn refused(tx: &Transaction<'_>, id: i64, update: AgreementServiceUpdate) -> Error {
    tx.execute_batch("SAVEPOINT refused").unwrap();
    let error = update_agreement_service(tx, id, &update, tz()).unwrap_err();
    tx.execute_batch("ROLLBACK TO refused; RELEASE refused")
        .unwrap();
    error
}

fn true_ups(tx: &Transaction<'_>, id: i64) -> Vec<String> {
    tx.prepare(
        "SELECT true_up_charge_type FROM true_up_charge_type_relations
         WHERE agreement_service_id = ?1 ORDER BY true_up_charge_type",
    )
    .unwrap()
    .query_map([id], |r| r.get(0))
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

#[test]
fn an_agreement_service_update_refuses_what_breaks_a_rule() {
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let cases: Vec<(AgreementServiceUpdate, &str)> = vec![
        (
            AgreementServiceUpdate {
                accumulated_charges_amount: Some(Decimal::from_str("-0.01").unwrap()),
                ..Default::default()
            },
            "accumulated_charges_amount must not be negative",
        ),
        (
            AgreementServiceUpdate {
                agreement_id: Some(999),
                ..Default::default()
            },
            "agreement: 999 does not exist",
        ),
        (
            AgreementServiceUpdate {
                end_date: Some(Some("2024-12-31".into())),
                ..Default::default()
            },
            "end_date: must not be before start_date",
        ),
        (
            AgreementServiceUpdate {
                end_action: Some(Some("  ".into())),
                ..Default::default()
            },
            "end_action must be 1 to 255 characters",
        ),
        (
            AgreementServiceUpdate {
                next_service_product_id: Some(Some(1)),
                next_service_product_price_id: Some(Some(3)),
                ..Default::default()
            },
            "next_service_product_price must be a price of next_service_product",
        ),
        (
            AgreementServiceUpdate {
                minimum_amount_currency_code: Some(Some("XXX".into())),
                ..Default::default()
            },
            "minimum_amount_currency_code: 'XXX' is not one of",
        ),
        (
            AgreementServiceUpdate {
                true_up_charge_types: Some(vec!["T".into(); 51]),
                ..Default::default()
            },
            "true_up_charge_types: at most 50 values are allowed",
        ),
    ];
    for (update, message) in cases {
        match refused(&tx, 1, update) {
            Error::BadRequest(m) => assert!(m.starts_with(message), "{m} / {message}"),
            other => panic!("{message}: {other:?}"),
        }
    }
    assert!(matches!(
        refused(&tx, 999, AgreementServiceUpdate::default()),
        Error::NotFound(m) if m == "agreement service 999 does not exist"
    ));
}

#[test]
fn a_valid_update_writes_the_fields_and_replaces_the_true_up_types() {
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let update = AgreementServiceUpdate {
        agreement_id: Some(2),
        end_date: Some(Some("2026-01-01".into())),
        next_service_product_id: Some(Some(1)),
        next_service_product_price_id: Some(Some(1)),
        minimum_amount: Some(None),
        true_up_charge_types: Some(vec!["RECURRING".into(), "ONE".into(), "ONE".into()]),
        ..Default::default()
    };
    update_agreement_service(&tx, 1, &update, tz()).unwrap();
    let row: (i64, i64, String, Option<String>) = tx
        .query_row(
            "SELECT agreement_id, agreement_period, end_date, minimum_amount
             FROM agreement_services WHERE id = 1",
            [],
            |r| r.try_into(),
        )
        .unwrap();
    // The agreement's period comes along; the date is read in the tenant's zone.
    assert_eq!(row, (2, 24, "2026-01-01T06:00:00.000Z".into(), None));
    assert_eq!(true_ups(&tx, 1), ["ONE", "RECURRING"]);
}

#[test]
fn a_duplicate_true_up_charge_type_is_refused() {
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    add_true_up_charge_type(&tx, 1, " ONE_TIME ").unwrap();
    for duplicate in ["ONE_TIME", "USAGE"] {
        assert!(matches!(
            add_true_up_charge_type(&tx, 1, duplicate),
            Err(Error::Conflict(_))
        ));
    }
    assert_eq!(true_ups(&tx, 1), ["ONE_TIME", "USAGE"]);
    assert!(matches!(
        add_true_up_charge_type(&tx, 1, "   "),
        Err(Error::BadRequest(_))
    ));
    assert!(matches!(
        add_true_up_charge_type(&tx, 999, "X"),
        Err(Error::NotFound(_))
    ));
    let other: i64 = tx
        .query_row(
            "SELECT id FROM true_up_charge_type_relations WHERE agreement_service_id = 3 LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(matches!(
        delete_true_up_relation(&tx, 1, other),
        Err(Error::NotFound(_))
    ));
    delete_true_up_relation(&tx, 3, other).unwrap();
}

#[test]
fn naming_the_current_agreement_again_keeps_the_service_period() {
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let period = |tx: &Transaction<'_>| -> i64 {
        tx.query_row(
            "SELECT agreement_period FROM agreement_services WHERE id = 5",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    // Service 5 runs its agreement's term: agreement 3's one month (it ran the column's
    // default, 12, before services took their agreement's term).
    assert_eq!(period(&tx), 1);
    // A period of its own (as an export restores it) is kept when the agreement is named again.
    tx.execute(
        "UPDATE agreement_services SET agreement_period = 7 WHERE id = 5",
        [],
    )
    .unwrap();
    let same = AgreementServiceUpdate {
        agreement_id: Some(3),
        ..Default::default()
    };
    update_agreement_service(&tx, 5, &same, tz()).unwrap();
    assert_eq!(period(&tx), 7, "no move, no new period");
    let other = AgreementServiceUpdate {
        agreement_id: Some(2),
        ..Default::default()
    };
    update_agreement_service(&tx, 5, &other, tz()).unwrap();
    assert_eq!(period(&tx), 24, "a move brings the new agreement's period");
}
