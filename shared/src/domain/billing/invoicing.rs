//! The invoicing code shared by `billOnDemand` and the runs of bill cycles and bill batches:
//! what an account owes for a window ([`gather`]) and the invoice that bills it ([`issue`]).
//!
//! What a window bills (docs/billing-lifecycle.md), under the tenant's billing policy:
//! - usage: the account's pending charges, less those of live events not yet invoiced that
//!   start at or after the window's end (they stay pending for a later run). Pending charges
//!   with no event behind them (set by seed data) are billed with the first window. With
//!   cumulative usage tiers, each TIERED rule's quantity of the bill period is priced at
//!   once and the difference from its per-event charges is a USAGE_TIERS line
//!   ([`cumulative_tiers`]): rating at posting, and so the accrual, stays per event.
//! - recurring (runs only), in arrears (the default): each RECURRING price in the account's
//!   currency of each ACTIVE service, for the days of the period from its start (or from
//!   what is already billed) to the run, prorated by days over the period's days. A service
//!   that ended inside the period is billed to its end when its agreement has
//!   `prorate_on_cancel`, else for the whole period. With the tenant policy's `proration`
//!   NONE, the span that opens a service's part of a period pays the whole price and a later
//!   span of that period (after a bill batch) pays nothing: whole periods, each once.
//! - recurring in advance: from what is already billed up to the end of the cycle period the
//!   run opens (or falls in), split at cycle days, each part prorated over its own period as
//!   above, never past a service's known end ([`advance_spans`]); the service records how far
//!   (`services.recurring_billed_to`), and either timing bills from the later of that and the
//!   account's `billed_through`, so a switch bills no period twice and skips none.
//! - one-time (runs only): the ONE_TIME prices in the account's currency of ACTIVE services
//!   that started inside the window (in advance: or at its end) and were never billed, once.
//!
//! The charges come with their lines (`Charges::lines`, written with the invoice by
//! `invoices::create_invoice`): one per recurring price of each service with the part of the
//! period it bills, one per one-time price, one per charge category of the usage billed (the
//! events' own categories), one USAGE_TIERS line per TIERED rule whose cumulative price
//! differs, and one PENDING line for pending charges no event carries. Each
//! amount is computed once, here, and added both to its line and to its part's total.
//!
//! Invariants: an issued invoice's amount is the sum of its lines; it marks what it billed (its events' `invoice_id`, the
//! services' `one_time_billed_at`), records its usage as `billed_pending_charges` (so that a
//! cancel gives it back) and lowers the pending total by exactly that amount.

use crate::domain::agreements::{AgreementServiceStatus, ResourceStatus, LIVE_SERVICE_STATUSES};
use crate::domain::invoices::{
    create_invoice, NewInvoice, NewInvoiceLine, LINE_ONE_TIME, LINE_PENDING, LINE_RECURRING,
    LINE_USAGE, LINE_USAGE_TIERS,
};
use crate::domain::policy::{BillingPolicy, Proration, RecurringTiming, UsageTiers};
use crate::domain::status::sql_list;
use crate::money::{canonical, checked_add, from_sql_text};
use crate::rating::Rate;
use crate::{Error, Result};
use chrono::NaiveDate;
use chrono_tz::Tz;
use rusqlite::{params, OptionalExtension, Transaction};
use rust_decimal::{Decimal, RoundingStrategy};
use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

/// The recurring part of a run: the cycle period `[period_start, full_end)` (stored
/// instants), billed from `billed_from` up to the run's date `period_end` (in arrears), or
/// up to `advance_to` (in advance).
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
    /// In advance, recurring prices are billed up to here: the end of the cycle period the
    /// run opens (a cycle run) or falls in (a bill batch run).
    pub advance_to: String,
    /// The day of month the account's cycle periods start on (a period billed in advance
    /// is split at these days, each part prorated over its own period).
    pub cycle_day: u32,
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

impl Window {
    /// The instant before which the window's usage events start (past every stored instant
    /// when it bills all pending usage).
    fn usage_bound(&self) -> &str {
        self.usage_until
            .as_deref()
            .unwrap_or(crate::time::LATEST_STORED)
    }
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
    /// With cumulative usage tiers: what pricing each TIERED rule's bill-period quantity at
    /// once changes of the per-event charges in `usage` (USAGE_TIERS lines).
    pub usage_tiers: Decimal,
    /// The invoice's lines: the parts above, one per price, service and charge category.
    pub lines: Vec<NewInvoiceLine>,
    /// Services whose one-time prices are billed now.
    one_time_services: Vec<i64>,
}

impl Charges {
    /// The invoice amount (checked).
    pub fn total(&self, account_id: i64) -> Result<Decimal> {
        let what = format!("the invoice of billing account {account_id}");
        let usage = checked_add(self.usage, self.usage_tiers, &what)?;
        checked_add(
            checked_add(self.recurring, self.one_time, &what)?,
            usage,
            &what,
        )
    }

    /// The parts in words, for descriptions and transitions.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "recurring {}, one-time {}, usage {}",
            canonical(self.recurring),
            canonical(self.one_time),
            canonical(self.usage)
        );
        if !self.usage_tiers.is_zero() {
            out.push_str(&format!(", usage tiers {}", canonical(self.usage_tiers)));
        }
        out
    }
}

/// A product's prices of one type and currency: (price id, amount), by id.
type PriceList = Vec<(i64, Decimal)>;

/// A usage rule as cumulative tiers price it: name, charge category, unit, and its rate
/// when TIERED (`None` for the other kinds, whose charges do not depend on what was used
/// before, and for a definition that no longer parses: its events were refused).
type TierRule = (String, i64, String, Option<Rate>);

/// What a run reads once and every account's charges use: prices per (product, price
/// type, currency), the tenant policy, and the usage rules cumulative tiers price.
#[derive(Debug, Default)]
pub struct Prices {
    prices: HashMap<(i64, &'static str, String), PriceList>,
    policy: Option<BillingPolicy>,
    rules: HashMap<i64, TierRule>,
}

impl Prices {
    /// The tenant policy, read on first use.
    fn policy(&mut self, tx: &Transaction<'_>) -> Result<&BillingPolicy> {
        if self.policy.is_none() {
            self.policy = Some(crate::domain::policy::get(tx)?);
        }
        Ok(self.policy.get_or_insert_with(BillingPolicy::default))
    }

    /// Usage rule `id` as cumulative tiers price it, read on first use.
    fn rule(&mut self, tx: &Transaction<'_>, id: i64) -> Result<&TierRule> {
        use std::collections::hash_map::Entry;
        match self.rules.entry(id) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let (name, category, uom, kind, definition): (String, i64, String, String, String) =
                    tx.prepare_cached(
                        "SELECT name, charge_category_id, uom, rate_kind, rate FROM usage_rules
                         WHERE id = ?1",
                    )?
                    .query_row([id], |r| r.try_into())?;
                let rate = Rate::parse(&kind, &definition, &uom)
                    .ok()
                    .filter(|r| r.tiered_charge(Decimal::ZERO).is_some());
                Ok(e.insert((name, category, uom, rate)))
            }
        }
    }

    fn of(
        &mut self,
        tx: &Transaction<'_>,
        product: i64,
        kind: &'static str,
        currency: &str,
    ) -> Result<&[(i64, Decimal)]> {
        let key = (product, kind, currency.to_string());
        if !self.prices.contains_key(&key) {
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
            self.prices.insert(key.clone(), found);
        }
        Ok(self.prices.get(&key).map(Vec::as_slice).unwrap_or_default())
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
    if prices.policy(tx)?.usage_tiers == UsageTiers::Cumulative {
        cumulative_tiers(tx, account_id, &currency, window, prices, &mut charges)?;
    }
    if let Some(period) = &window.period {
        bill_services(tx, account_id, &currency, period, tz, prices, &mut charges)?;
    }
    // The documented order (docs/billing-lifecycle.md, "Invoice lines"): recurring and
    // one-time lines per service, then usage by charge category, usage tiers by rule, and
    // the PENDING line (a stable sort keeps the order within each kind).
    let rank = |line: &NewInvoiceLine| match line.line_type.as_str() {
        LINE_USAGE => 1,
        LINE_USAGE_TIERS => 2,
        LINE_PENDING => 3,
        _ => 0,
    };
    charges.lines.sort_by_key(rank);
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
    let until = window.usage_bound();
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

/// With the policy's cumulative usage tiers (docs/billing-lifecycle.md, "Cumulative usage
/// tiers"): each TIERED rule's events this window bills are priced as one quantity, counted
/// on from what the account's invoices already billed of that rule in the bill period
/// (events starting at or after the period's start: a bill batch or `billOnDemand` that
/// billed part of the period), and the difference from their per-event charges (what
/// rating stored and the USAGE lines bill) is one USAGE_TIERS line per rule. Rating at
/// posting is unchanged, so Surface B's rating and the usage accrual stay per event; the
/// USAGE_TIERS line is what moves revenue to the cumulative price (docs/revenue.md).
/// `billOnDemand` (no period) counts from zero: its invoice is the bill period it knows.
fn cumulative_tiers(
    tx: &Transaction<'_>,
    account_id: i64,
    currency: &str,
    window: &Window,
    prices: &mut Prices,
    charges: &mut Charges,
) -> Result<()> {
    let until = window.usage_bound();
    // Without a period, nothing counts as billed before (the bound excludes every event).
    let since = window
        .period
        .as_ref()
        .map_or(until, |p| p.period_start.as_str());
    let mut stmt = tx.prepare_cached(
        "SELECT c.usage_rule_id, c.usage_amount, c.charge, e.invoice_id IS NULL
         FROM usage_charges c JOIN usage_events e ON e.id = c.usage_event_id
         WHERE e.billing_account_id = ?1 AND e.voided = 0 AND e.start_time < ?2
           AND (e.invoice_id IS NULL OR e.start_time >= ?3)
         ORDER BY c.usage_rule_id",
    )?;
    // Per rule: quantity billed before, quantity billed now, per-event charges billed now.
    let mut per_rule: BTreeMap<i64, (Decimal, Decimal, Decimal)> = BTreeMap::new();
    let rows = stmt.query_map(params![account_id, until, since], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            from_sql_text(r.get_ref(1)?)?,
            from_sql_text(r.get_ref(2)?)?,
            r.get::<_, bool>(3)?,
        ))
    })?;
    for row in rows {
        let (rule, quantity, charge, now): (i64, Decimal, Decimal, bool) = row?;
        let entry = per_rule.entry(rule).or_default();
        let what = "the usage quantity of a bill period";
        if now {
            entry.1 = checked_add(entry.1, quantity, what)?;
            entry.2 = checked_add(entry.2, charge, "the usage charges of a rule")?;
        } else {
            entry.0 = checked_add(entry.0, quantity, what)?;
        }
    }
    for (rule, (before, now, per_event)) in per_rule {
        if now.is_zero() && per_event.is_zero() {
            continue;
        }
        let (name, category, uom, rate) = prices.rule(tx, rule)?;
        let Some(rate) = rate else { continue };
        let priced = |quantity: Decimal| -> Result<Decimal> {
            match rate.tiered_charge(quantity) {
                Some(Ok(c)) => Ok(crate::rating::currency::round(c, currency)),
                _ => Err(Error::bad_request(format!(
                    "usage rule {rule} ({name}): the charge of {quantity} overflows"
                ))),
            }
        };
        let total = checked_add(before, now, "the usage quantity of a bill period")?;
        let cumulative = checked_add(priced(total)?, -priced(before)?, "a cumulative charge")?;
        let difference = checked_add(cumulative, -per_event, "a cumulative charge")?;
        if difference.is_zero() {
            continue;
        }
        charges.usage_tiers = checked_add(charges.usage_tiers, difference, "the usage tiers")?;
        let counted = if before.is_zero() {
            String::new()
        } else {
            format!(" after {} billed", canonical(before))
        };
        charges.lines.push(NewInvoiceLine {
            line_type: LINE_USAGE_TIERS.into(),
            amount: difference,
            description: Some(format!(
                "Usage tiers: {name}, {} {uom}{counted} at once: {} instead of {} per event",
                canonical(now),
                canonical(cumulative),
                canonical(per_event)
            )),
            charge_category_id: Some(*category),
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
    status: ResourceStatus,
    start: String,
    end: Option<String>,
    prorate_on_cancel: bool,
    one_time_billed: bool,
    /// How far a run in advance billed its recurring prices (none: never in advance).
    recurring_billed_to: Option<String>,
    /// The end of its last live term when no live term renews (in advance, nothing is
    /// billed past it); none when it bills on.
    known_end: Option<String>,
}

/// A part of a service's cycle period that its recurring prices are billed for:
/// `[from, to)` inside the period `[period_start, period_end)` (stored instants).
struct Span {
    from: String,
    to: String,
    period_start: String,
    period_end: String,
}

/// An account's services as [`bill_services`] bills them (the comment there says what each
/// column is); the status sets are the enums' names.
static SERVICES_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT s.id, s.product_id, s.status, s.start_date,
                COALESCE((SELECT MAX(x.end_date) FROM agreement_services x
                          WHERE x.service_id = s.id AND x.status = '{deactivated}'), s.end_date),
                COALESCE((SELECT MAX(a.prorate_on_cancel) FROM agreement_services x
                          JOIN agreements a ON a.id = x.agreement_id WHERE x.service_id = s.id), 0),
                s.one_time_billed_at IS NOT NULL, p.name, s.recurring_billed_to,
                (SELECT CASE WHEN COUNT(*) > 0 AND COUNT(*) = SUM(x.end_date IS NOT NULL
                             AND UPPER(TRIM(COALESCE(x.end_action, a.end_action, 'END'))) <> 'RENEW')
                        THEN MAX(x.end_date) END
                 FROM agreement_services x JOIN agreements a ON a.id = x.agreement_id
                 WHERE x.service_id = s.id AND x.status IN ({live}))
         FROM services s JOIN products p ON p.id = s.product_id
         WHERE s.billing_account_id = ?1 ORDER BY s.id",
        deactivated = AgreementServiceStatus::Deactivated,
        live = sql_list(LIVE_SERVICE_STATUSES),
    )
});

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
    // service's end date is its term's end, which a renewal moves: it bills on.) Its known
    // end: the latest end of its live agreement services when each of them ends (an end
    // date and an end action other than RENEW), which is all a run in advance may bill.
    let mut stmt = tx.prepare_cached(&SERVICES_SQL)?;
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
                recurring_billed_to: r.get(8)?,
                known_end: r.get(9)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let policy = prices.policy(tx)?;
    let by_day = policy.proration == Proration::ByDay;
    let advance = policy.recurring_timing == RecurringTiming::Advance;
    for s in services {
        // What a run in advance billed is not billed again, whatever the timing now.
        let billed_from = match &s.recurring_billed_to {
            Some(to) if *to > period.billed_from => to.clone(),
            _ => period.billed_from.clone(),
        };
        let spans = if advance {
            advance_spans(&s, period, &billed_from, tz)?
        } else {
            recurring_span(&s, period, &billed_from)
                .map(|(from, to)| Span {
                    from,
                    to,
                    period_start: period.period_start.clone(),
                    period_end: period.full_end.clone(),
                })
                .into_iter()
                .collect()
        };
        for span in &spans {
            bill_span(tx, &s, span, by_day, currency, tz, prices, charges)?;
        }
        if let (true, Some(last)) = (advance, spans.last()) {
            crate::domain::agreements::mark_recurring_billed(tx, s.id, &last.to)?;
        }
        // In advance, a service starting at the run's instant is billed its first period
        // now: its one-time prices come with it.
        let started_now = s.start >= period.billed_from
            && (s.start < period.period_end || (advance && s.start == period.period_end));
        if started_now && s.status == ResourceStatus::Active && !s.one_time_billed {
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

/// Bills service `s`'s recurring prices for `span`: one RECURRING line per price.
#[allow(clippy::too_many_arguments)]
fn bill_span(
    tx: &Transaction<'_>,
    s: &Service,
    span: &Span,
    by_day: bool,
    currency: &str,
    tz: Tz,
    prices: &mut Prices,
    charges: &mut Charges,
) -> Result<()> {
    let days = days_between(&span.from, &span.to, tz)?;
    let period_days = days_between(&span.period_start, &span.period_end, tz)?;
    // No proration: the span that opens the service's part of the period pays the whole
    // price; a later span of the same period (after a bill batch billed its start) pays
    // nothing, so a period is paid once.
    let opens = span.from == s.start.clone().max(span.period_start.clone());
    // Each price is prorated on its own, so that its line is exact and the invoice's amount
    // is the sum of its lines.
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
            period_start_date: Some(span.from.clone()),
            period_end_date: Some(span.to.clone()),
            ..NewInvoiceLine::default()
        });
    }
    Ok(())
}

/// The part of the period a service's recurring prices are billed for in arrears, if any
/// (module doc), billing from `billed_from`.
fn recurring_span(s: &Service, period: &Period, billed_from: &str) -> Option<(String, String)> {
    let from = s.start.clone().max(billed_from.to_string());
    let end = match s.status {
        ResourceStatus::Active => period.period_end.clone(),
        // Ended inside the period: to its end when prorated on cancel, else the whole period.
        _ => match &s.end {
            Some(end) if end.as_str() > billed_from && *end <= period.period_end => {
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

/// Most cycle periods one service's span in advance crosses (at most two in practice: the
/// period a run closes and the one it opens); a bound against a malformed date looping.
const MAX_ADVANCE_PERIODS: usize = 24;

/// The parts of cycle periods a service's recurring prices are billed for in advance
/// (docs/billing-lifecycle.md, "In advance"): from `billed_from` (or its start) up to the
/// end of the period the run opens, stopping at its known end (an ACTIVE service whose
/// terms all end) or at its end (an ended one), split at the account's cycle days. A term
/// that ends is not a cancel: its last period is billed to its end (by day, or whole
/// without proration), whatever the agreement's `prorate_on_cancel`; a service ended
/// before what was billed in advance is not credited (adjustments are not invoiced).
fn advance_spans(s: &Service, period: &Period, billed_from: &str, tz: Tz) -> Result<Vec<Span>> {
    let from = s.start.clone().max(billed_from.to_string());
    let end = match s.status {
        ResourceStatus::Active => s.known_end.clone(),
        _ => match &s.end {
            Some(end) => Some(end.clone()),
            None => return Ok(Vec::new()),
        },
    };
    let to = match end {
        Some(end) => end.min(period.advance_to.clone()),
        None => period.advance_to.clone(),
    };
    let mut spans = Vec::new();
    let mut at = from;
    while at < to {
        if spans.len() == MAX_ADVANCE_PERIODS {
            return Err(Error::bad_request(format!(
                "service {}: billing in advance from {at} to {to} crosses more than \
                 {MAX_ADVANCE_PERIODS} cycle periods",
                s.id
            )));
        }
        let (period_start, period_end) = period_bounds(&at, period.cycle_day, tz)?;
        let next = period_end.clone().min(to.clone());
        spans.push(Span {
            from: at,
            to: next.clone(),
            period_start,
            period_end,
        });
        at = next;
    }
    Ok(spans)
}

/// The cycle period (cycle day `day`) holding stored instant `at`, as local midnights.
fn period_bounds(at: &str, day: u32, tz: Tz) -> Result<(String, String)> {
    let out_of_range = || Error::bad_request(format!("the cycle period of {at} is out of range"));
    let instant = crate::time::from_storage(at)
        .ok_or_else(|| Error::Internal(format!("stored instant {at:?}")))?;
    let date = super::local_date(instant, tz);
    let start = if super::day_in_month(date, day) == Some(date) {
        Some(date)
    } else {
        super::previous_cycle_day(date, day)
    };
    let end = super::next_cycle_day(date, day);
    let midnight = |d: Option<NaiveDate>| {
        d.and_then(|d| super::local_midnight(d, tz))
            .map(crate::time::to_storage)
            .ok_or_else(out_of_range)
    };
    Ok((midnight(start)?, midnight(end)?))
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
