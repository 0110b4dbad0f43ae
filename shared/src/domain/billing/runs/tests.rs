//! Bill runs through the clock's engine (`run_due`) on a small tenant built with the domain's
//! create functions: one cycle on the 1st, an account paying automatically, one paying by
//! hand (its service starts mid-period), one SUSPENDED, a product with a recurring and a
//! one-time price. Usage events are stored rows with their charges (posting is tested in
//! domain::usage; here only what a run does with them matters).

use crate::domain::transitions::{run_due, Transition};
use crate::money::from_sql_text;
use crate::testing::{db, dec};
use chrono_tz::Tz;
use rusqlite::{Connection, Transaction};
use rust_decimal::Decimal;

const UTC: Tz = chrono_tz::UTC;

fn world() -> Connection {
    let mut conn = db();
    let tx = conn.transaction().unwrap();
    let cycle = serde_json::from_value(
        serde_json::json!({"id": 1, "name": "On the 1st", "day_of_month": 1}),
    );
    crate::domain::accounts::create_bill_cycle(&tx, &cycle.unwrap()).unwrap();
    for (id, auto, status) in [
        (1, true, "ACTIVE"),
        (2, false, "ACTIVE"),
        (3, false, "SUSPENDED"),
    ] {
        let a = serde_json::from_value(serde_json::json!({
            "id": id, "account_num": format!("A{id}"), "name": format!("account {id}"),
            "bill_cycle_id": 1, "automatic_recurring_payment": auto, "status": status,
        }))
        .unwrap();
        crate::domain::accounts::create_account(&tx, &a, UTC).unwrap();
    }
    let p = serde_json::from_value(serde_json::json!({"id": 1, "name": "Compute"})).unwrap();
    crate::domain::catalog::create_product(&tx, &p).unwrap();
    for (kind, amount) in [("RECURRING", 30), ("ONE_TIME", 10)] {
        let price = serde_json::from_value(serde_json::json!({
            "product_id": 1, "product_price_type": kind, "price_type": "FLAT", "amount": amount
        }))
        .unwrap();
        crate::domain::catalog::create_product_price(&tx, &price).unwrap();
    }
    let agreement = serde_json::from_value(serde_json::json!({
        "id": 1, "name": "Monthly", "prorate_on_cancel": true, "product_ids": [1]
    }))
    .unwrap();
    crate::domain::agreements::create_agreement(&tx, &agreement, UTC).unwrap();
    for (id, account, start) in [
        (1, 1, "2026-01-01"),
        (2, 2, "2026-03-16"),
        (3, 3, "2026-01-01"),
    ] {
        let s = serde_json::from_value(serde_json::json!({
            "id": id, "billing_account_id": account, "product_id": 1, "agreement_id": 1,
            "start_date": start,
            "resources": [{"identifier": format!("srid-{id}")}]
        }))
        .unwrap();
        crate::domain::agreements::create_service(&tx, &s, UTC).unwrap();
    }
    tx.commit().unwrap();
    conn
}

fn at(s: &str) -> chrono::DateTime<chrono::Utc> {
    crate::time::from_storage(s).unwrap()
}

fn advance(conn: &mut Connection, from: &str, to: &str) -> Vec<Transition> {
    let tx = conn.transaction().unwrap();
    let done = run_due(&tx, at(from), at(to), UTC).unwrap();
    tx.commit().unwrap();
    done
}

/// A rated usage event of `account` starting at `start`, with its charge pending.
fn usage(tx: &Transaction<'_>, account: i64, start: &str, charge: &str) {
    tx.execute(
        "INSERT INTO usage_events (request_id, service_resource_identifier, billing_account_id,
             start_time, end_time, usage_uom, usage_amount, total_charge, created_at)
         VALUES ('r', 'srid', ?1, ?2, ?2, 'h', '1', ?3, ?2)",
        rusqlite::params![account, start, charge],
    )
    .unwrap();
    let pending = text(
        tx,
        "SELECT pending_charges_total FROM billing_accounts WHERE id = ?1",
        account,
    );
    let total = crate::money::parse_decimal(&pending).unwrap() + dec(charge);
    tx.execute(
        "UPDATE billing_accounts SET pending_charges_total = ?1 WHERE id = ?2",
        rusqlite::params![crate::money::canonical(total), account],
    )
    .unwrap();
}

fn text(tx: &Connection, sql: &str, id: i64) -> String {
    tx.query_row(sql, [id], |r| r.get(0)).unwrap()
}

/// (number, account, amount, status) of every invoice, in id order.
fn invoices(conn: &Connection) -> Vec<(String, i64, Decimal, String)> {
    let mut stmt = conn
        .prepare("SELECT invoice_num, billing_account_id, amount, status FROM invoices ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            from_sql_text(r.get_ref(2)?)?,
            r.get(3)?,
        ))
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

fn kinds(done: &[Transition]) -> Vec<(&'static str, i64)> {
    done.iter().map(|t| (t.kind, t.id)).collect()
}

#[test]
fn a_quarter_invoices_three_times_pays_automatically_and_duns_the_rest_in_time_order() {
    let mut conn = world();
    let done = advance(&mut conn, "2026-03-20T00:00:00Z", "2026-06-20T00:00:00Z");
    assert_eq!(
        kinds(&done),
        [
            ("bill_cycle.run", 1),
            ("invoice.autopaid", 1),
            ("invoice.past_due", 2),
            ("bill_cycle.run", 1),
            ("invoice.autopaid", 3),
            ("invoice.past_due", 4),
            ("bill_cycle.run", 1),
        ],
        "{done:#?}"
    );
    assert_eq!(done[0].at, "2026-04-01T00:00:00+00:00");
    assert_eq!(done[1].at, "2026-05-01T00:00:00+00:00");
    // Account 2's service started on March 16th: 16 of March's 31 days, plus its one-time
    // price once; account 3 (SUSPENDED) is never billed.
    let month = |n: &str, a: i64, amount: &str, status: &str| {
        (n.to_string(), a, dec(amount), status.to_string())
    };
    assert_eq!(
        invoices(&conn),
        [
            month("INV-0001", 1, "30", "CLOSED"),
            month("INV-0002", 2, "25.48", "OPEN"),
            month("INV-0003", 1, "30", "CLOSED"),
            month("INV-0004", 2, "30", "OPEN"),
            month("INV-0005", 1, "30", "OPEN"),
            month("INV-0006", 2, "30", "OPEN"),
        ]
    );
    let status = |id| {
        text(
            &conn,
            "SELECT status FROM billing_accounts WHERE id = ?1",
            id,
        )
    };
    assert_eq!(status(2), "COLLECTION");
    assert_eq!(
        text(
            &conn,
            "SELECT next_invoice_date FROM billing_accounts WHERE id = ?1",
            1
        ),
        "2026-07-01T00:00:00.000Z"
    );
    assert_eq!(
        text(&conn, "SELECT paid_date FROM invoices WHERE id = ?1", 1),
        "2026-05-01T00:00:00.000Z"
    );
    // The three runs are runs of the cycle's bill batch, each with its invoices.
    let runs: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM bill_batch_runs r JOIN bill_batches b ON b.id = r.bill_batch_id
             WHERE b.bill_cycle_id = 1 AND r.status = 'CLOSED' AND r.processed_invoice_count = 2",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(runs, 3);

    // Nothing runs twice.
    assert!(advance(&mut conn, "2026-06-20T00:00:00Z", "2026-06-21T00:00:00Z").is_empty());

    // Paying the oldest overdue invoice leaves one overdue: still COLLECTION; paying that
    // one too brings the account back.
    let tx = conn.transaction().unwrap();
    let pay = |tx: &Transaction<'_>, invoice: i64, amount: &str| {
        let p = crate::domain::payments::NewPayment {
            id: None,
            billing_account_id: 2,
            amount: dec(amount),
            description: None,
            reference: None,
            occurred_on: "2026-06-20".into(),
            payment_method: None,
        };
        let id = crate::domain::payments::create_payment(tx, &p, UTC).unwrap();
        let target = crate::domain::payments::PaymentTarget::Invoice(invoice);
        crate::domain::payments::apply_payment(tx, id, &target, "2026-06-20T00:00:00.000Z")
            .unwrap();
    };
    pay(&tx, 2, "25.48");
    assert_eq!(
        text(&tx, "SELECT status FROM billing_accounts WHERE id = ?1", 2),
        "COLLECTION"
    );
    pay(&tx, 4, "30");
    assert_eq!(
        text(&tx, "SELECT status FROM billing_accounts WHERE id = ?1", 2),
        "ACTIVE"
    );
}

#[test]
fn usage_is_billed_once_by_period_and_late_usage_goes_to_the_next_invoice() {
    let mut conn = world();
    let tx = conn.transaction().unwrap();
    usage(&tx, 1, "2026-03-25T00:00:00.000Z", "1.25");
    // Dated after the cycle day: stays pending for the next run.
    usage(&tx, 1, "2026-04-03T00:00:00.000Z", "2");
    tx.commit().unwrap();
    advance(&mut conn, "2026-03-20T00:00:00Z", "2026-04-05T00:00:00Z");
    assert_eq!(invoices(&conn)[0].2, dec("31.25"));
    let pending = |c: &Connection| {
        text(
            c,
            "SELECT pending_charges_total FROM billing_accounts WHERE id = ?1",
            1,
        )
    };
    assert_eq!(pending(&conn), "2");
    // Usage of March posted after the run lands on May's invoice, with April's.
    let tx = conn.transaction().unwrap();
    usage(&tx, 1, "2026-03-30T00:00:00.000Z", "0.5");
    tx.commit().unwrap();
    advance(&mut conn, "2026-04-05T00:00:00Z", "2026-05-02T00:00:00Z");
    let all = invoices(&conn);
    let may = all.iter().rfind(|i| i.1 == 1).unwrap();
    assert_eq!(may.2, dec("32.5"));
    assert_eq!(pending(&conn), "0");
}

#[test]
fn bill_on_demand_and_cycle_runs_share_the_marks_so_nothing_is_billed_twice() {
    let mut conn = world();
    let tx = conn.transaction().unwrap();
    usage(&tx, 2, "2026-03-25T00:00:00.000Z", "4");
    let bill = crate::domain::account_commands::OnDemandBill::default();
    let od = crate::domain::account_commands::bill_on_demand(
        &tx,
        2,
        &bill,
        "2026-03-26T00:00:00.000Z",
        UTC,
    )
    .unwrap();
    let marked: i64 = tx
        .query_row(
            "SELECT COUNT(*) FROM usage_events WHERE invoice_id = ?1",
            [od],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(marked, 1);
    tx.commit().unwrap();
    advance(&mut conn, "2026-03-27T00:00:00Z", "2026-04-02T00:00:00Z");
    let all = invoices(&conn);
    assert_eq!(all[0].2, dec("4"));
    // The cycle bills account 2's prorated recurring and one-time prices, not the usage.
    assert_eq!(all.iter().rfind(|i| i.1 == 2).unwrap().2, dec("25.48"));

    // A canceled invoice gives its usage back, for the next run.
    let tx = conn.transaction().unwrap();
    crate::domain::invoices::cancel_invoice(&tx, od, "2026-04-02T00:00:00.000Z").unwrap();
    tx.commit().unwrap();
    advance(&mut conn, "2026-04-02T00:00:00Z", "2026-05-02T00:00:00Z");
    assert_eq!(
        invoices(&conn).iter().rfind(|i| i.1 == 2).unwrap().2,
        dec("34")
    );
}

#[test]
fn a_final_bill_account_gets_its_last_invoice_and_closes() {
    let mut conn = world();
    conn.execute(
        "UPDATE billing_accounts SET status = 'FINAL_BILL' WHERE id = 1",
        [],
    )
    .unwrap();
    advance(&mut conn, "2026-03-20T00:00:00Z", "2026-05-20T00:00:00Z");
    let billed: Vec<_> = invoices(&conn).into_iter().filter(|i| i.1 == 1).collect();
    assert_eq!(billed.len(), 1, "{billed:?}");
    assert_eq!(
        text(
            &conn,
            "SELECT status FROM billing_accounts WHERE id = ?1",
            1
        ),
        "CLOSED"
    );
}

#[test]
fn a_bill_batch_runs_on_its_invoice_date_and_waits_for_review_unless_auto_approved() {
    let mut conn = world();
    let tx = conn.transaction().unwrap();
    for (name, auto) in [("waits", false), ("closes", true)] {
        let b = serde_json::from_value(serde_json::json!({
            "bill_batch_type": "adhoc", "name": name, "auto_approve": auto,
            "invoice_date": "2026-03-21", "billing_account_ids": [1]
        }))
        .unwrap();
        crate::domain::bill_batches::create_bill_batch(&tx, &b, UTC).unwrap();
    }
    tx.commit().unwrap();
    let done = advance(&mut conn, "2026-03-20T00:00:00Z", "2026-04-02T00:00:00Z");
    assert_eq!(
        kinds(&done),
        [
            ("bill_batch.run", 1),
            ("bill_batch.run", 2),
            ("bill_cycle.run", 1)
        ],
        "{done:#?}"
    );
    let runs: Vec<(i64, String, String, i64)> = conn
        .prepare("SELECT bill_batch_id, step_status, status, processed_invoice_count FROM bill_batch_runs ORDER BY id")
        .unwrap()
        .query_map([], |r| r.try_into())
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    // The first batch bills March 1st to 21st (20 of 31 days); the second has nothing left;
    // the cycle bills the rest of March.
    assert_eq!(runs[0], (1, "WAITING".into(), "OPEN".into(), 1));
    assert_eq!(runs[1], (2, "COMPLETE".into(), "CLOSED".into(), 0));
    let billed: Vec<Decimal> = invoices(&conn)
        .into_iter()
        .filter(|i| i.1 == 1)
        .map(|i| i.2)
        .collect();
    assert_eq!(billed, [dec("19.35"), dec("10.65")]);
}

#[test]
fn an_automatic_payment_that_leaves_nothing_overdue_clears_collection() {
    let mut conn = world();
    // Account 1 pays automatically but sits in COLLECTION (a decision taken by hand).
    conn.execute(
        "UPDATE billing_accounts SET status = 'COLLECTION' WHERE id = 1",
        [],
    )
    .unwrap();
    let done = advance(&mut conn, "2026-03-20T00:00:00Z", "2026-05-02T00:00:00Z");
    let cleared: Vec<_> = kinds(&done)
        .into_iter()
        .filter(|k| k.0 == "account.collection_cleared")
        .collect();
    assert_eq!(cleared, [("account.collection_cleared", 1)], "{done:#?}");
    let at = done
        .iter()
        .position(|t| t.kind == "account.collection_cleared")
        .unwrap();
    assert_eq!(
        (done[at - 1].kind, done[at - 1].id),
        ("invoice.autopaid", 1)
    );
    assert_eq!(
        text(
            &conn,
            "SELECT status FROM billing_accounts WHERE id = ?1",
            1
        ),
        "ACTIVE"
    );
}
