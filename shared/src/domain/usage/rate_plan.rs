//! A product's rate plan as [`crate::rating`] applies it: its usage rules in plan order,
//! each with its condition and parsed rate (a rule whose definition no longer parses keeps
//! the error, which rating reports as RULE_MISCONFIGURED), TABLE rates with their lookup
//! rows. Plans and lookup tables load once into posting's catalogue, kept across calls while
//! their rows are unchanged, so a FORMULA rule's expression is lexed, parsed and checked once,
//! then only evaluated per event.

use crate::rating::{self, Condition, LookupRow, Rate, Rule};
use crate::Result;
use chrono::{DateTime, Utc};
use rusqlite::Transaction;
use rust_decimal::Decimal;
use std::collections::HashMap;

/// The rate plans and lookup tables posting has loaded (kept across calls in the
/// catalogue, `post/catalogue.rs`).
#[derive(Default)]
pub(super) struct RatePlans {
    plans: HashMap<i64, Vec<Rule>>,
    tables: HashMap<i64, Vec<LookupRow>>,
}

impl RatePlans {
    /// How many rules and lookup rows it holds.
    pub(super) fn entries(&self) -> usize {
        let rules: usize = self.plans.values().map(Vec::len).sum();
        let rows: usize = self.tables.values().map(Vec::len).sum();
        rules + rows
    }

    /// The rate plan of a product, loaded on first use.
    pub(super) fn get<'c>(
        &'c mut self,
        tx: &Transaction<'_>,
        product_id: i64,
    ) -> Result<&'c [Rule]> {
        if !self.plans.contains_key(&product_id) {
            let mut rules = load_rules(tx, product_id)?;
            for rule in &mut rules {
                if let Ok(Rate::Table {
                    lookup_table_id,
                    rows,
                    ..
                }) = &mut rule.rate
                {
                    if !self.tables.contains_key(lookup_table_id) {
                        let loaded = load_lookup_rows(tx, *lookup_table_id)?;
                        self.tables.insert(*lookup_table_id, loaded);
                    }
                    rows.clone_from(self.tables.get(lookup_table_id).unwrap_or(&Vec::new()));
                }
            }
            self.plans.insert(product_id, rules);
        }
        Ok(self
            .plans
            .get(&product_id)
            .map(Vec::as_slice)
            .unwrap_or(&[]))
    }
}

/// The usage rules of a product in plan order (position, then id).
fn load_rules(tx: &Transaction<'_>, product_id: i64) -> Result<Vec<Rule>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, name, charge_category_id, uom, min_amount, max_amount, valid_from, valid_to,
                attribute_match, rate_kind, rate
         FROM usage_rules WHERE product_id = ?1 ORDER BY position, id",
    )?;
    let rows = stmt
        .query_map([product_id], |r| {
            let decimal = |i: usize| -> rusqlite::Result<Option<Decimal>> {
                match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => Ok(None),
                    v => crate::money::from_sql_text(v).map(Some).map_err(|e| {
                        rusqlite::Error::FromSqlConversionFailure(i, v.data_type(), Box::new(e))
                    }),
                }
            };
            let time = |i: usize| -> rusqlite::Result<Option<DateTime<Utc>>> {
                Ok(r.get::<_, Option<String>>(i)?
                    .as_deref()
                    .and_then(crate::time::from_storage))
            };
            let uom: String = r.get(3)?;
            let kind: String = r.get(9)?;
            let definition: String = r.get(10)?;
            let attribute_match: Option<String> = r.get(8)?;
            let (attribute_match, match_error) = match attribute_match.as_deref().map(str::trim) {
                None | Some("") => (None, None),
                Some(text) => match rating::condition::AttributeMatch::parse(text) {
                    Ok(m) => (Some(m), None),
                    Err(e) => (None, Some(e)),
                },
            };
            let rate = match match_error {
                Some(e) => Err(e),
                None => Rate::parse(&kind, &definition, &uom),
            };
            Ok(Rule {
                id: r.get(0)?,
                name: r.get(1)?,
                charge_category_id: r.get(2)?,
                condition: Condition {
                    uom,
                    min_amount: decimal(4)?,
                    max_amount: decimal(5)?,
                    valid_from: time(6)?,
                    valid_to: time(7)?,
                    attribute_match,
                },
                rate,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The rows of a lookup table, in stored order.
fn load_lookup_rows(tx: &Transaction<'_>, table_id: i64) -> Result<Vec<LookupRow>> {
    let mut stmt = tx.prepare_cached(
        "SELECT key, value, valid_from, valid_to FROM lookup_table_rows
         WHERE lookup_table_id = ?1 ORDER BY id",
    )?;
    let rows = stmt
        .query_map([table_id], |r| {
            let time = |i: usize| -> rusqlite::Result<Option<DateTime<Utc>>> {
                Ok(r.get::<_, Option<String>>(i)?
                    .as_deref()
                    .and_then(crate::time::from_storage))
            };
            Ok(LookupRow {
                key: r.get(0)?,
                value: crate::money::from_sql_text(r.get_ref(1)?)?,
                valid_from: time(2)?,
                valid_to: time(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}
