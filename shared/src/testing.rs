//! Fixtures of the crate's unit tests (compiled for tests only): a migrated in-memory tenant
//! database (empty, or loaded with the demo seed) and minimal rows built through the domain's
//! own create functions. It sits above every layer (it loads the seed, which sits above the
//! domain), so the domain's tests may use the demo data while the domain itself never
//! imports the seed.

use crate::domain::accounts::{create_account, create_category, CategoryFields, NewAccount};
use crate::domain::invoices::{create_invoice, NewInvoice};
use rusqlite::{Connection, Transaction};
use rust_decimal::Decimal;
use std::str::FromStr;

/// An empty tenant database with the current schema.
pub fn db() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    crate::store::sqlite::configure(&conn).unwrap();
    crate::store::sqlite::migrate(&mut conn).unwrap();
    conn
}

/// A decimal from text.
pub fn dec(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

/// An active category `id`.
pub fn category(tx: &Transaction<'_>, id: i64) -> i64 {
    let c = CategoryFields {
        id: Some(id),
        description: Some(format!("category {id}")),
        status: Some("BA_CATEGORY_ACTIVE".into()),
        ..CategoryFields::default()
    };
    create_category(tx, &c).unwrap()
}

/// Billing account `id` (number `A<id>`), in `category` when given.
pub fn account(tx: &Transaction<'_>, id: i64, category: Option<i64>) -> i64 {
    let a: NewAccount = serde_json::from_value(serde_json::json!({
        "id": id,
        "account_num": format!("A{id}"),
        "name": format!("account {id}"),
        "billing_account_category_id": category,
    }))
    .unwrap();
    create_account(tx, &a, chrono_tz::UTC).unwrap()
}

/// An OPEN invoice of `account` for `amount`, dated `on`.
pub fn invoice(tx: &Transaction<'_>, account: i64, num: &str, amount: &str, on: &str) -> i64 {
    let i = NewInvoice {
        id: None,
        invoice_num: num.into(),
        billing_account_id: account,
        bill_batch_run_id: None,
        invoice_type: None,
        amount: dec(amount),
        description: None,
        occurred_on: on.into(),
        due_date: None,
        status: None,
        lines: None,
    };
    create_invoice(tx, &i, chrono_tz::UTC).unwrap()
}

/// A migrated in-memory tenant database with the demo seed applied in `tz`, its relative
/// dates resolved at [`crate::fixtures::DEMO_REFERENCE`] (the clock then runs on real time).
pub fn demo_db(tz: chrono_tz::Tz) -> Connection {
    use crate::sandbox::clock::Clock;
    let mut conn = db();
    let tx = conn.transaction().unwrap();
    let reference = crate::time::from_storage(crate::fixtures::DEMO_REFERENCE).unwrap();
    Clock::Frozen(reference).store(&tx).unwrap();
    crate::fixtures::apply(&tx, crate::fixtures::Seed::Demo, tz).unwrap();
    Clock::Real.store(&tx).unwrap();
    tx.commit().unwrap();
    conn
}
