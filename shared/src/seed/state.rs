//! State fields: what a record accumulates after it is created (an invoice's amount to pay,
//! a payment's unapplied amount, an agreement service's renewal flags, a bill run's status
//! date, ...), which no create input takes. An export carries them (`export`), and the loader
//! writes them back once every record of the document exists, so balances that later
//! records (payments, applications, adjustments) move end as the document says.
//!
//! Also the check that every field of every record is known: a field is either one of the
//! record's create input ([`super::input_fields`]) or one of its kind's state fields; anything
//! else is refused with its path (`billing_accounts[0].nmae: unknown field`).
//!
//! Invariants: state fields are typed ([`Ty`]) and written by id into the kind's own table
//! only (column names are the constants below, never input); a record carrying state needs
//! its `id`.

use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::types::Value as Sql;
use rusqlite::Transaction;
use serde_json::Value;

/// The type of a state field, as a document writes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ty {
    /// A string.
    Text,
    /// An integer (a count, or a reference by id).
    Int,
    /// true / false.
    Bool,
    /// A JSON number, stored as an exact decimal.
    Amount,
    /// A date: absolute or relative to the tenant's clock, stored as an instant.
    Date,
}

/// A kind's state fields: name and type.
type Fields = &'static [(&'static str, Ty)];

/// Each kind's state fields and the table they live in (a kind may have several entries,
/// one per table); a record is found by `id = ?`, or as the entry's `WHERE` says.
const STATE: &[(&str, &str, Fields)] = &[
    (
        "billing_accounts",
        "billing_accounts",
        &[
            ("balance", Ty::Amount),
            ("pending_charges_total", Ty::Amount),
            ("end_date", Ty::Date),
            ("next_invoice_date", Ty::Date),
            ("billed_through", Ty::Date),
            ("autopay_outcome", Ty::Text),
            ("autopay_declines", Ty::Int),
        ],
    ),
    (
        "product_prices",
        "product_prices",
        &[("currency_code", Ty::Text)],
    ),
    (
        "services",
        "agreement_services",
        &[
            ("next_service_pay_on_purchase", Ty::Bool),
            ("renewed", Ty::Bool),
            ("accumulated_charges_amount", Ty::Amount),
            ("next_agreement_id", Ty::Int),
            ("next_end_action", Ty::Text),
            ("next_service_product_id", Ty::Int),
            ("next_service_product_price_id", Ty::Int),
            ("preserve_service_price", Ty::Bool),
            ("next_preserve_service_price", Ty::Bool),
            ("agreement_period", Ty::Int),
            ("omit_minimum_amount", Ty::Bool),
        ],
    ),
    // The service row behind the agreement service (same id: both are written together).
    ("services", "services", &[("one_time_billed_at", Ty::Date)]),
    (
        "bill_batches",
        "bill_batches",
        &[("bill_cycle_id", Ty::Int)],
    ),
    (
        "bill_batch_runs",
        "bill_batch_runs",
        &[
            ("status_date", Ty::Date),
            ("processed_invoice_count", Ty::Int),
            ("error_msg", Ty::Text),
            ("use_payment_term", Ty::Bool),
        ],
    ),
    (
        "invoices",
        "invoices",
        &[
            ("external_invoice_num", Ty::Text),
            ("original_billing_account_id", Ty::Int),
            ("amount_to_pay", Ty::Amount),
            ("paid_date", Ty::Date),
            ("billed_pending_charges", Ty::Amount),
            ("canceled_at", Ty::Date),
        ],
    ),
    (
        "payments",
        "payments",
        &[
            ("unapplied_amount", Ty::Amount),
            ("received_amount", Ty::Amount),
            ("refunded_amount", Ty::Amount),
            ("canceled_amount", Ty::Amount),
            ("status", Ty::Text),
        ],
    ),
    (
        "adjustments",
        "account_adjustments",
        &[("posted_on", Ty::Date), ("unapplied_amount", Ty::Amount)],
    ),
];

/// The state fields of `member` (none for most kinds), each with its table.
pub fn fields(member: &str) -> Vec<(&'static str, Ty, &'static str)> {
    STATE
        .iter()
        .filter(|(m, _, _)| *m == member)
        .flat_map(|(_, table, f)| f.iter().map(|(name, ty)| (*name, *ty, *table)))
        .collect()
}

/// State fields taken out of one record of the document, to write once it exists.
#[derive(Debug, Clone)]
pub struct Pending {
    path: String,
    id: i64,
    /// (field, type, table, value)
    fields: Vec<(&'static str, Ty, &'static str, Value)>,
}

/// Takes the state fields out of every record of `doc` (so the create inputs read what is
/// left) and refuses a field that is neither an input nor a state field of its kind.
/// `input` answers a member's create input fields (None: the member is not a list of
/// records, or its input cannot be listed).
pub fn split(
    doc: &mut Value,
    input: impl Fn(&str) -> Option<Vec<&'static str>>,
) -> Result<Vec<Pending>> {
    let mut pending = Vec::new();
    let Value::Object(members) = doc else {
        return Ok(pending);
    };
    for (member, value) in members.iter_mut() {
        let (Some(known), Value::Array(items)) = (input(member), value) else {
            continue;
        };
        let state = fields(member);
        for (i, item) in items.iter_mut().enumerate() {
            let Value::Object(rec) = item else {
                continue; // the create input's own refusal names it
            };
            let path = format!("{member}[{i}]");
            let mut taken = Vec::new();
            let keys: Vec<String> = rec.keys().cloned().collect();
            for key in keys {
                if known.contains(&key.as_str()) {
                    continue;
                }
                let Some((name, ty, table)) = state.iter().find(|(n, _, _)| *n == key).copied()
                else {
                    return Err(Error::bad_request(format!("{path}.{key}: unknown field")));
                };
                taken.push((name, ty, table, rec.remove(&key).unwrap_or_default()));
            }
            if !taken.is_empty() {
                let id = rec.get("id").and_then(Value::as_i64).ok_or_else(|| {
                    Error::bad_request(format!(
                        "{path}.{}: a state field needs the record's id",
                        taken[0].0
                    ))
                })?;
                pending.push(Pending {
                    path,
                    id,
                    fields: taken,
                });
            }
        }
    }
    Ok(pending)
}

/// The SQL value of state field `name` (a refusal names the field; the caller adds the path).
fn sql_of(name: &str, ty: Ty, v: &Value, tz: Tz) -> Result<Sql> {
    let wrong = |what: &str| Error::bad_request(format!("{name}: expected {what}, got {v}"));
    Ok(match (ty, v) {
        (_, Value::Null) => Sql::Null,
        (Ty::Text, Value::String(s)) => {
            crate::domain::check_text(name, s)?;
            Sql::Text(s.clone())
        }
        (Ty::Int, Value::Number(n)) => Sql::Integer(n.as_i64().ok_or_else(|| wrong("an integer"))?),
        (Ty::Bool, Value::Bool(b)) => Sql::Integer(i64::from(*b)),
        (Ty::Amount, Value::Number(n)) => {
            let d = crate::money::parse_amount(&n.to_string())
                .map_err(|e| Error::bad_request(format!("{name}: {e}")))?;
            Sql::Text(crate::money::canonical(d))
        }
        (Ty::Date, Value::String(s)) => Sql::Text(crate::domain::parse_time(name, s, tz)?),
        (Ty::Text, _) => return Err(wrong("a string")),
        (Ty::Int, _) => return Err(wrong("an integer")),
        (Ty::Bool, _) => return Err(wrong("true or false")),
        (Ty::Amount, _) => return Err(wrong("a number")),
        (Ty::Date, _) => return Err(wrong("a date")),
    })
}

/// Writes the state fields taken by [`split`], now that every record exists: one `UPDATE`
/// per record and table.
pub fn write(tx: &Transaction<'_>, pending: &[Pending], tz: Tz) -> Result<()> {
    for p in pending {
        let mut tables: Vec<&str> = p.fields.iter().map(|f| f.2).collect();
        tables.dedup();
        for table in tables {
            let mut sets = Vec::new();
            let mut values = Vec::new();
            for (name, ty, _, v) in p.fields.iter().filter(|f| f.2 == table) {
                let value =
                    sql_of(name, *ty, v, tz).map_err(super::document::at(p.path.clone()))?;
                values.push(value);
                sets.push(format!("\"{name}\" = ?{}", values.len()));
            }
            values.push(Sql::Integer(p.id));
            let sql = format!(
                "UPDATE \"{table}\" SET {} WHERE id = ?{}",
                sets.join(", "),
                values.len()
            );
            let n = tx
                .execute(&sql, rusqlite::params_from_iter(values))
                .map_err(|e| super::document::at(p.path.clone())(e.into()))?;
            if n == 0 {
                return Err(Error::bad_request(format!(
                    "{}: no record {}",
                    p.path, p.id
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(member: &str) -> Option<Vec<&'static str>> {
        (member == "invoices").then(|| vec!["id", "invoice_num"])
    }

    #[test]
    fn state_fields_are_taken_out_and_unknown_fields_refused() {
        let mut doc = json!({"invoices": [{"id": 7, "invoice_num": "N", "amount_to_pay": 2.5}],
                             "other": [{"anything": 1}]});
        let pending = split(&mut doc, input).unwrap();
        assert_eq!(doc["invoices"][0], json!({"id": 7, "invoice_num": "N"}));
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].id, 7);
        assert_eq!(pending[0].fields[0].0, "amount_to_pay");
        assert_eq!(pending[0].fields[0].2, "invoices");

        let mut doc = json!({"invoices": [{}, {"id": 1, "nmae": "x"}]});
        let e = split(&mut doc, input).unwrap_err().to_string();
        assert_eq!(e, "invoices[1].nmae: unknown field");
        let mut doc = json!({"invoices": [{"paid_date": "2026-01-01"}]});
        let e = split(&mut doc, input).unwrap_err().to_string();
        assert_eq!(
            e,
            "invoices[0].paid_date: a state field needs the record's id"
        );
    }

    #[test]
    fn state_values_are_typed() {
        let tz = chrono_tz::UTC;
        let ok = sql_of("amount_to_pay", Ty::Amount, &json!(2.50), tz).unwrap();
        assert_eq!(ok, Sql::Text("2.5".into()));
        let ok = sql_of("paid_date", Ty::Date, &json!("2026-01-02"), tz).unwrap();
        assert_eq!(ok, Sql::Text("2026-01-02T00:00:00.000Z".into()));
        assert_eq!(
            sql_of("renewed", Ty::Bool, &json!(true), tz).unwrap(),
            Sql::Integer(1)
        );
        let e = sql_of("renewed", Ty::Bool, &json!("yes"), tz)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "renewed: expected true or false, got \"yes\"");
        let e = sql_of("amount_to_pay", Ty::Amount, &json!("1"), tz)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("amount_to_pay: expected a number"), "{e}");
    }
}
