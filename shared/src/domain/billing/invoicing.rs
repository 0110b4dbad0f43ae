//! The invoicing code shared by `billOnDemand` and the runs of bill cycles and bill batches:
//! what an account owes for a window ([`gather`]) and the invoice that bills it ([`issue`]).
//!
//! What a window bills (docs/billing-lifecycle.md):
//! - usage: the account's pending charges, less those of live events not yet invoiced that
//!   start at or after the window's end (they stay pending for a later run). Pending charges
//!   with no event behind them (set by seed data) are billed with the first window.
//! - recurring (runs only; billed in arrears): each RECURRING price in the account's
//!   currency of each ACTIVE service, for the days of the period from its start (or from
//!   what is already billed) to the run, prorated by days over the period's days. A service
//!   that ended inside the period is billed to its end when its agreement has
//!   `prorate_on_cancel`, else for the whole period. With the tenant policy's `proration`
//!   NONE, the span that opens a service's part of a period pays the whole price and a later
//!   span of that period (after a bill batch) pays nothing: whole periods, each once.
//! - one-time (runs only): the ONE_TIME prices in the account's currency of ACTIVE services
//!   that started inside the window and were never billed, once.
//!
//! The charges come with their lines (`Charges::lines`, written with the invoice by
//! `invoices::create_invoice`): one per recurring price of each service with the part of the
//! period it bills, one per one-time price, one per charge category of the usage billed (the
//! events' own categories), and one PENDING line for pending charges no event carries. Each
//! amount is computed once, here, and added both to its line and to its part's total.
//!
//! Invariants: an issued invoice's amount is the sum of its lines; it marks what it billed (its events' `invoice_id`, the
//! services' `one_time_billed_at`), records its usage as `billed_pending_charges` (so that a
//! cancel gives it back) and lowers the pending total by exactly that amount.

use crate::domain::invoices::{
    create_invoice, NewInvoice, NewInvoiceLine, LINE_ONE_TIME, LINE_PENDING, LINE_RECURRING,
    LINE_USAGE,
};
use crate::domain::policy::Proration;
use crate::money::{canonical, checked_add, from_sql_text};
use crate::{Error, Result};
use chrono::NaiveDate;
use chrono_tz::Tz;
use rusqlite::{params, OptionalExtension, Transaction};
use rust_decimal::{Decimal, RoundingStrategy};
use std::collections::{BTreeMap, HashMap};

/// The recurring part of a run: the cycle period `[period_start, full_end)` (stored
/// instants), billed from `billed_from` up to the run's date `period_end`.
#[derive(Debug, Clone)]
pub struct Period {
    /// Start of the cycle period (the previous cycle day).
    pub period_start: String,
    /// End of the cycle period (the next cycle day): with the start, the proration's
    /// denominator.
    pub full_end: String,
    /// The run's date: recurring prices are billed up to here.
    pub period_end: String,
    /// Recurring prices are billed from here (`period_start`, or later when a bill batch
    /// billed part of the period already).
    pub billed_from: String,
}

/// What to bill: usage starting before `usage_until` (all pending usage when `None`), and
/// recurring and one-time prices when a period is given.
#[derive(Debug, Clone)]
pub struct Window {
    /// Usage events starting at or after this instant stay pending.
    pub usage_until: Option<String>,
    /// Recurring and one-time prices of this period (runs only).
    pub period: Option<Period>,
}

/// What one account owes for a window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Charges {
    /// Recurring prices, prorated.
    pub recurring: Decimal,
    /// One-time prices of newly started services.
    pub one_time: Decimal,
    /// Pending usage charges of the window.
    pub usage: Decimal,
    /// The invoice's lines: the parts above, one per price, service and charge category.
    pub lines: Vec<NewInvoiceLine>,
    /// Services whose one-time prices are billed now.
    one_time_services: Vec<i64>,
}

impl Charges {
    /// The invoice amount (checked).
    pub fn total(&self, account_id: i64) -> Result<Decimal> {
        let what = format!("the invoice of billing account {account_id}");
        checked_add(
            checked_add(self.recurring, self.one_time, &what)?,
            self.usage,
            &what,
        )
    }

    /// The parts in words, for descriptions and transitions.
    pub fn summary(&self) -> String {
        format!(
            "recurring {}, one-time {}, usage {}",
            canonical(self.recurring),
            canonical(self.one_time),
            canonical(self.usage)
        )
    }
}

/// A product's prices of one type and currency: (price id, amount), by id.
type PriceList = Vec<(i64, Decimal)>;

/// What a run reads once and every account's charges use: prices per (product, price
/// type, currency), and the tenant policy's proration.
#[derive(Debug, Default)]
pub struct Prices(
    HashMap<(i64, &'static str, String), PriceList>,
    Option<Proration>,
);

impl Prices {
    /// The tenant policy's proration, read on first use.
    fn proration(&mut self, tx: &Transaction<'_>) -> Result<Proration> {
        if let Some(p) = self.1 {
            return Ok(p);
        }
        let p = crate::domain::policy::get(tx)?.proration;
        self.1 = Some(p);
        Ok(p)
    }

    fn of(
        &mut self,
        tx: &Transaction<'_>,
        product: i64,
        kind: &'static str,
        currency: &str,
    ) -> Result<&[(i64, Decimal)]> {
        let key = (product, kind, currency.to_string());
        if !self.0.contains_key(&key) {
            let mut stmt = tx.prepare_cached(
                "SELECT id, amount FROM product_prices
                 WHERE product_id = ?1 AND product_price_type = ?2 AND currency_code = ?3
                 ORDER BY id",
            )?;
            let found = stmt
                .query_map(params![product, kind, currency], |r| {
                    Ok((r.get(0)?, from_sql_text(r.get_ref(1)?)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            self.0.insert(key.clone(), found);
        }
        Ok(self.0.get(&key).map(Vec::as_slice).unwrap_or_default())
    }
}

/// What billing account `account_id` owes for `window` (see the module doc).
pub fn gather(
    tx: &Transaction<'_>,
    account_id: i64,
    window: &Window,
    tz: Tz,
    prices: &mut Prices,
) -> Result<Charges> {
    let (pending, currency): (Decimal, String) = tx
        .prepare_cached(
            "SELECT pending_charges_total, currency_code FROM billing_accounts WHERE id = ?1",
        )?
        .query_row([account_id], |r| {
            Ok((from_sql_text(r.get_ref(0)?)?, r.get(1)?))
        })
        .optional()?
        .ok_or_else(|| Error::not_found(format!("billing account {account_id} does not exist")))?;
    let mut charges = Charges {
        usage: pending,
        ..Charges::default()
    };
    if let Some(until) = &window.usage_until {
        let later = unbilled_usage(tx, account_id, until)?;
        charges.usage = checked_add(pending, -later, "the pending charges of the window")?;
    }
    usage_lines(tx, account_id, window, &mut charges)?;
    if let Some(period) = &window.period {
        bill_services(tx, account_id, &currency, period, tz, prices, &mut charges)?;
    }
    Ok(charges)
}

/// Charges of live usage events of the account, not yet invoiced, starting at or after
/// `from`.
fn unbilled_usage(tx: &Transaction<'_>, account_id: i64, from: &str) -> Result<Decimal> {
    let mut stmt = tx.prepare_cached(
        "SELECT total_charge FROM usage_events
         WHERE billing_account_id = ?1 AND voided = 0 AND invoice_id IS NULL AND start_time >= ?2",
    )?;
    let mut total = Decimal::ZERO;
    for charge in stmt.query_map(params![account_id, from], |r| {
        from_sql_text(r.get_ref(0)?).map_err(Into::into)
    })? {
        total = checked_add(total, charge?, "the pending charges after the window")?;
    }
    Ok(total)
}

/// The usage lines of `charges.usage`: the charges of the events the invoice will mark
/// (`usage::mark_invoiced`: live, not invoiced, starting before the window's end) by their
/// charge category, then what the pending total holds beyond them (fixture data) as one
/// PENDING line; zero parts make no line.
fn usage_lines(
    tx: &Transaction<'_>,
    account_id: i64,
    window: &Window,
    charges: &mut Charges,
) -> Result<()> {
    let until = window
        .usage_until
        .as_deref()
        .unwrap_or(crate::time::LATEST_STORED);
    let mut stmt = tx.prepare_cached(
        "SELECT e.charge_category_id, cc.name, e.total_charge FROM usage_events e
         LEFT JOIN charge_categories cc ON cc.id = e.charge_category_id
         WHERE e.billing_account_id = ?1 AND e.voided = 0 AND e.invoice_id IS NULL
           AND e.start_time < ?2",
    )?;
    let mut per_category: BTreeMap<Option<i64>, (Option<String>, Decimal)> = BTreeMap::new();
    let rows = stmt.query_map(params![account_id, until], |r| {
        Ok((
            r.get::<_, Option<i64>>(0)?,
            r.get::<_, Option<String>>(1)?,
            {
                let d: Decimal = from_sql_text(r.get_ref(2)?)?;
                d
            },
        ))
    })?;
    let mut rated = Decimal::ZERO;
    for row in rows {
        let (category, name, charge) = row?;
        let entry = per_category
            .entry(category)
            .or_insert((name, Decimal::ZERO));
        entry.1 = checked_add(entry.1, charge, "the usage charges of a category")?;
        rated = checked_add(rated, charge, "the usage charges of the window")?;
    }
    for (category, (name, amount)) in per_category {
        if !amount.is_zero() {
            charges.lines.push(NewInvoiceLine {
                line_type: LINE_USAGE.into(),
                amount,
                description: Some(format!(
                    "Usage: {}",
                    name.as_deref().unwrap_or("uncategorised")
                )),
                charge_category_id: category,
                ..NewInvoiceLine::default()
            });
        }
    }
    let unrated = checked_add(charges.usage, -rated, "the pending charges of the window")?;
    if !unrated.is_zero() {
        charges.lines.push(NewInvoiceLine {
            line_type: LINE_PENDING.into(),
            amount: unrated,
            description: Some("Pending charges".into()),
            ..NewInvoiceLine::default()
        });
    }
    Ok(())
}

/// A service as the recurring and one-time rules see it.
struct Service {
    id: i64,
    product_id: i64,
    product_name: String,
    status: String,
    start: String,
    end: Option<String>,
    prorate_on_cancel: bool,
    one_time_billed: bool,
}

fn bill_services(
    tx: &Transaction<'_>,
    account_id: i64,
    currency: &str,
    period: &Period,
    tz: Tz,
    prices: &mut Prices,
    charges: &mut Charges,
) -> Result<()> {
    // The end of a service that is no longer ACTIVE: the latest end of its ended agreement
    // services (the clock ends them at their end date), else its own end date. (An ACTIVE
    // service's end date is its term's end, which a renewal moves: it bills on.)
    let mut stmt = tx.prepare_cached(
        "SELECT s.id, s.product_id, s.status, s.start_date,
                COALESCE((SELECT MAX(x.end_date) FROM agreement_services x
                          WHERE x.service_id = s.id AND x.status = 'DEACTIVATED'), s.end_date),
                COALESCE((SELECT MAX(a.prorate_on_cancel) FROM agreement_services x
                          JOIN agreements a ON a.id = x.agreement_id WHERE x.service_id = s.id), 0),
                s.one_time_billed_at IS NOT NULL, p.name
         FROM services s JOIN products p ON p.id = s.product_id
         WHERE s.billing_account_id = ?1 ORDER BY s.id",
    )?;
    let services = stmt
        .query_map([account_id], |r| {
            Ok(Service {
                id: r.get(0)?,
                product_id: r.get(1)?,
                status: r.get(2)?,
                start: r.get(3)?,
                end: r.get(4)?,
                prorate_on_cancel: r.get(5)?,
                one_time_billed: r.get(6)?,
                product_name: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let period_days = days_between(&period.period_start, &period.full_end, tz)?;
    let by_day = prices.proration(tx)? == Proration::ByDay;
    for s in services {
        // Each price is prorated on its own, so that its line is exact and the invoice's
        // amount is the sum of its lines.
        if let Some((from, to)) = recurring_span(&s, period) {
            let days = days_between(&from, &to, tz)?;
            // No proration: the span that opens the service's part of the period pays the
            // whole price; a later span of the same period (after a bill batch billed its
            // start) pays nothing, so a period is paid once.
            let opens = from == s.start.clone().max(period.period_start.clone());
            for &(price_id, recurring) in prices.of(tx, s.product_id, "RECURRING", currency)? {
                let part = if by_day {
                    prorate(recurring, days, period_days)
                } else {
                    Some(if opens { recurring } else { Decimal::ZERO })
                }
                .ok_or_else(|| {
                    Error::bad_request(format!("service {}: recurring charge out of range", s.id))
                })?;
                if part.is_zero() {
                    continue;
                }
                charges.recurring = checked_add(charges.recurring, part, "the recurring charges")?;
                charges.lines.push(NewInvoiceLine {
                    line_type: LINE_RECURRING.into(),
                    amount: part,
                    description: Some(format!("Recurring: {}", s.product_name)),
                    service_id: Some(s.id),
                    product_id: Some(s.product_id),
                    product_price_id: Some(price_id),
                    period_start_date: Some(from.clone()),
                    period_end_date: Some(to.clone()),
                    ..NewInvoiceLine::default()
                });
            }
        }
        let started_now = s.start >= period.billed_from && s.start < period.period_end;
        if started_now && s.status == "ACTIVE" && !s.one_time_billed {
            for &(price_id, one_time) in prices.of(tx, s.product_id, "ONE_TIME", currency)? {
                charges.one_time = checked_add(charges.one_time, one_time, "the one-time charges")?;
                if !one_time.is_zero() {
                    charges.lines.push(NewInvoiceLine {
                        line_type: LINE_ONE_TIME.into(),
                        amount: one_time,
                        description: Some(format!("One-time: {}", s.product_name)),
                        service_id: Some(s.id),
                        product_id: Some(s.product_id),
                        product_price_id: Some(price_id),
                        ..NewInvoiceLine::default()
                    });
                }
            }
            charges.one_time_services.push(s.id);
        }
    }
    Ok(())
}

/// The part of the period a service's recurring prices are billed for, if any (module doc).
fn recurring_span(s: &Service, period: &Period) -> Option<(String, String)> {
    let from = s.start.clone().max(period.billed_from.clone());
    let end = match s.status.as_str() {
        "ACTIVE" => period.period_end.clone(),
        // Ended inside the period: to its end when prorated on cancel, else the whole period.
        _ => match &s.end {
            Some(end) if *end > period.billed_from && *end <= period.period_end => {
                if s.prorate_on_cancel {
                    end.clone()
                } else {
                    period.period_end.clone()
                }
            }
            _ => return None,
        },
    };
    (from < end).then_some((from, end))
}

/// Whole local days from stored instant `from` to `to` (at least 0).
fn days_between(from: &str, to: &str, tz: Tz) -> Result<i64> {
    let date = |s: &str| -> Result<NaiveDate> {
        crate::time::from_storage(s)
            .map(|t| super::local_date(t, tz))
            .ok_or_else(|| Error::Internal(format!("stored instant {s:?}")))
    };
    Ok((date(to)? - date(from)?).num_days().max(0))
}

/// `price` × `days` / `period_days`, to cents (half away from zero); the whole price for a
/// whole period.
pub fn prorate(price: Decimal, days: i64, period_days: i64) -> Option<Decimal> {
    if days >= period_days || period_days <= 0 {
        return Some(price);
    }
    price
        .checked_mul(Decimal::from(days))?
        .checked_div(Decimal::from(period_days))
        .map(|d| d.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero))
}

/// The invoice to make from a window's charges.
#[derive(Debug, Clone)]
pub struct Issue {
    /// Its number (unused).
    pub invoice_num: String,
    /// Its type (STANDARD for runs, ON_DEMAND for `billOnDemand`).
    pub invoice_type: &'static str,
    /// Its date (stored instant).
    pub occurred_on: String,
    /// Its due date (stored instant).
    pub due_date: String,
    /// The bill batch run that makes it.
    pub bill_batch_run_id: Option<i64>,
    /// Its description.
    pub description: Option<String>,
}

/// Makes the OPEN invoice of `charges` for billing account `account_id` and marks what it
/// billed (module doc); answers its id.
pub fn issue(
    tx: &Transaction<'_>,
    account_id: i64,
    window: &Window,
    charges: &Charges,
    invoice: &Issue,
    tz: Tz,
) -> Result<i64> {
    let amount = charges.total(account_id)?;
    let id = create_invoice(
        tx,
        &NewInvoice {
            id: None,
            invoice_num: invoice.invoice_num.clone(),
            billing_account_id: account_id,
            bill_batch_run_id: invoice.bill_batch_run_id,
            invoice_type: Some(invoice.invoice_type.into()),
            amount,
            description: invoice.description.clone(),
            occurred_on: invoice.occurred_on.clone(),
            due_date: Some(invoice.due_date.clone()),
            status: None,
            lines: Some(charges.lines.clone()),
        },
        tz,
    )?;
    crate::domain::invoices::set_billed_pending_charges(tx, id, charges.usage)?;
    crate::domain::usage::mark_invoiced(tx, account_id, id, window.usage_until.as_deref())?;
    crate::domain::accounts::add_to_pending_charges(tx, account_id, -charges.usage)?;
    mark_one_time_billed(tx, charges, &invoice.occurred_on)?;
    Ok(id)
}

/// Records that the one-time prices of `charges` are billed (also when nothing was invoiced
/// because the run's total was zero: they were billed at zero).
pub fn mark_one_time_billed(tx: &Transaction<'_>, charges: &Charges, at: &str) -> Result<()> {
    crate::domain::agreements::mark_one_time_billed(tx, &charges.one_time_services, at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::dec;

    #[test]
    fn a_partial_period_is_prorated_by_days_to_cents() {
        assert_eq!(prorate(dec("49"), 30, 30), Some(dec("49")));
        assert_eq!(prorate(dec("49"), 31, 30), Some(dec("49")));
        assert_eq!(prorate(dec("49"), 15, 30), Some(dec("24.50")));
        assert_eq!(prorate(dec("49"), 10, 31), Some(dec("15.81")));
        assert_eq!(prorate(dec("10"), 0, 30), Some(dec("0")));
    }
}
