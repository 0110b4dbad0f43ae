//! What a collector run reads: one function per source category, each turning its source
//! records inside the run's window into charge info rows (see the table in [`super`]).
//! A source record already collected is never stored twice.

use crate::domain::chargeinfo::{store_collected, Collected};
use crate::Result;
use chrono_tz::Tz;
use rusqlite::Transaction;
use rust_decimal::Decimal;

/// What one run shares with all its collectors.
pub(super) struct RunContext<'a> {
    pub(super) tx: &'a Transaction<'a>,
    pub(super) run_id: i64,
    pub(super) now: String,
    pub(super) from: String,
    pub(super) to: String,
    pub(super) tz: Tz,
}

impl RunContext<'_> {
    /// Adds a run error.
    pub(super) fn error(&self, message: String) -> Result<()> {
        crate::domain::glrun::add_collector_run_error(self.tx, self.run_id, &message)
    }

    /// Stores a charge info unless its source was collected before; answers its id either way.
    fn store(&self, c: &Collected<'_>) -> Result<i64> {
        store_collected(self.tx, c, self.run_id, &self.now, self.tz)
    }
}

fn decimal(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Decimal> {
    r.get_ref(i).and_then(|v| {
        crate::money::from_sql_text(v)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, v.data_type(), Box::new(e)))
    })
}

struct UsageEvent {
    id: i64,
    account: Option<(i64, String, String)>,
    start_time: String,
    total: Decimal,
    service_id: Option<i64>,
    product: Option<(i64, String)>,
}

/// How one pass over usage events turns them into charge info.
struct UsagePass {
    /// Which events, with `?1..?2` the window.
    condition: &'static str,
    /// Source kinds of the parent and of the children.
    kinds: (&'static str, &'static str),
    /// +1 for charges, -1 for reversals.
    negate: bool,
}

/// Live events, by start_time.
const LIVE_USAGE: UsagePass = UsagePass {
    condition: "e.voided = 0 AND e.start_time >= ?1 AND e.start_time < ?2",
    kinds: ("USAGE_EVENT", "USAGE_CHARGE"),
    negate: false,
};

/// Events voided (by an overwrite) inside the window after they were collected: their
/// charges are reversed with the event's own date, so a ledger run posts the reversal into
/// the original period (or, when that is closed, the next open one).
const VOIDED_USAGE: UsagePass = UsagePass {
    condition: "e.voided = 1 AND e.voided_at >= ?1 AND e.voided_at < ?2
                AND EXISTS (SELECT 1 FROM charge_infos x
                            WHERE x.source_kind = 'USAGE_EVENT' AND x.source_id = e.id)",
    kinds: ("USAGE_EVENT_VOID", "USAGE_CHARGE_VOID"),
    negate: true,
};

fn collect_usage(ctx: &RunContext<'_>) -> Result<()> {
    collect_usage_pass(ctx, &LIVE_USAGE)?;
    collect_usage_pass(ctx, &VOIDED_USAGE)
}

fn collect_usage_pass(ctx: &RunContext<'_>, pass: &UsagePass) -> Result<()> {
    let mut stmt = ctx.tx.prepare(&format!(
        "SELECT e.id, a.id, a.account_num, a.currency_code, e.start_time, e.total_charge,
                s.id, p.id, p.name
         FROM usage_events e
         LEFT JOIN billing_accounts a ON a.id = e.billing_account_id
         LEFT JOIN service_resources sr ON sr.id = e.service_resource_id
         LEFT JOIN agreement_services ags ON ags.id = e.agreement_service_id
         LEFT JOIN services s ON s.id = COALESCE(sr.service_id, ags.service_id)
         LEFT JOIN products p ON p.id = s.product_id
         WHERE {condition}
         ORDER BY e.id",
        condition = pass.condition,
    ))?;
    let events = stmt
        .query_map(rusqlite::params![ctx.from, ctx.to], |r| {
            let account = match r.get::<_, Option<i64>>(1)? {
                Some(id) => Some((id, r.get(2)?, r.get(3)?)),
                None => None,
            };
            let product = match r.get::<_, Option<i64>>(7)? {
                Some(id) => Some((id, r.get(8)?)),
                None => None,
            };
            Ok(UsageEvent {
                id: r.get(0)?,
                account,
                start_time: r.get(4)?,
                total: decimal(r, 5)?,
                service_id: r.get(6)?,
                product,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut charges = ctx.tx.prepare(
        "SELECT c.id, c.charge, cc.name FROM usage_charges c
         JOIN charge_categories cc ON cc.id = c.charge_category_id
         WHERE c.usage_event_id = ?1 ORDER BY c.id",
    )?;
    let sign = |d: Decimal| if pass.negate { -d } else { d };
    for e in events {
        let Some((account_id, account_num, currency)) = e.account else {
            ctx.error(format!(
                "usage event {}: it has no billing account, so it was not collected",
                e.id
            ))?;
            continue;
        };
        let base = |kind, id, ty, parent, amount, category| Collected {
            source_kind: kind,
            source_id: id,
            charge_info_type: ty,
            parent_id: parent,
            billing_account_id: account_id,
            billing_account_num: account_num.clone(),
            charge_date: e.start_time.clone(),
            amount,
            currency_code: Some(currency.clone()),
            charge_category: category,
            invoice_number: None,
            service_id: e.service_id,
            product_id: e.product.as_ref().map(|p| p.0),
            product_name: e.product.as_ref().map(|p| p.1.clone()),
        };
        let parent = ctx.store(&base(
            pass.kinds.0,
            e.id,
            "USAGE_EVENT",
            None,
            sign(e.total),
            None,
        ))?;
        let lines = charges
            .query_map([e.id], |r| {
                Ok((r.get::<_, i64>(0)?, decimal(r, 1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<Vec<(i64, Decimal, String)>>>()?;
        for (charge_id, amount, category) in lines {
            ctx.store(&base(
                pass.kinds.1,
                charge_id,
                "USAGE",
                Some(parent),
                sign(amount),
                Some(category),
            ))?;
        }
    }
    Ok(())
}

/// Collects one simple source: `sql` selects (id, account id, account num, currency, date,
/// amount, category, invoice number) inside the window `?1..?2`; the records are of source
/// kind and charge info type `kind`.
fn collect_simple(ctx: &RunContext<'_>, kind: &str, sql: &str) -> Result<()> {
    collect_rows(ctx, kind, kind, sql)
}

/// [`collect_simple`] with a source kind of its own (a reversal of records of type `ty`).
fn collect_rows(ctx: &RunContext<'_>, kind: &str, ty: &str, sql: &str) -> Result<()> {
    let mut stmt = ctx.tx.prepare(sql)?;
    let rows = stmt
        .query_map(rusqlite::params![ctx.from, ctx.to], |r| {
            Ok(Collected {
                source_kind: kind,
                source_id: r.get(0)?,
                charge_info_type: ty,
                parent_id: None,
                billing_account_id: r.get(1)?,
                billing_account_num: r.get(2)?,
                currency_code: r.get(3)?,
                charge_date: r.get(4)?,
                amount: decimal(r, 5)?,
                charge_category: r.get(6)?,
                invoice_number: r.get(7)?,
                service_id: None,
                product_id: None,
                product_name: None,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for c in rows {
        ctx.store(&c)?;
    }
    Ok(())
}

/// Runs the collector of `category`; false when the sandbox has no source for it.
pub(super) fn collect_category(ctx: &RunContext<'_>, category: &str) -> Result<bool> {
    match category {
        "USAGE" => collect_usage(ctx)?,
        "INVOICE" => {
            collect_simple(
                ctx,
                "INVOICE",
                "SELECT i.id, a.id, a.account_num, a.currency_code, i.occurred_on, i.amount,
                        NULL, i.invoice_num
                 FROM invoices i JOIN billing_accounts a ON a.id = i.billing_account_id
                 WHERE i.occurred_on >= ?1 AND i.occurred_on < ?2 AND i.status <> 'CANCELED'
                 ORDER BY i.id",
            )?;
            // An invoice canceled (inside the window) after it was collected is reversed,
            // dated as the invoice, as a voided usage event is.
            collect_rows(
                ctx,
                "INVOICE_CANCEL",
                "INVOICE",
                "SELECT i.id, a.id, a.account_num, a.currency_code, i.occurred_on,
                        CASE WHEN i.amount LIKE '-%' THEN substr(i.amount, 2) ELSE '-' || i.amount END,
                        NULL, i.invoice_num
                 FROM invoices i JOIN billing_accounts a ON a.id = i.billing_account_id
                 WHERE i.status = 'CANCELED' AND i.canceled_at >= ?1 AND i.canceled_at < ?2
                   AND EXISTS (SELECT 1 FROM charge_infos x
                               WHERE x.source_kind = 'INVOICE' AND x.source_id = i.id)
                 ORDER BY i.id",
            )?
        }
        // A payment lowers the receivable: its charge amount is negative.
        "PAYMENT" => collect_simple(
            ctx,
            "PAYMENT",
            "SELECT p.id, a.id, a.account_num, a.currency_code, p.occurred_on,
                    CASE WHEN p.amount LIKE '-%' THEN substr(p.amount, 2) ELSE '-' || p.amount END,
                    'Payment', NULL
             FROM payments p JOIN billing_accounts a ON a.id = p.billing_account_id
             WHERE p.occurred_on >= ?1 AND p.occurred_on < ?2 AND p.status <> 'CANCELED'
             ORDER BY p.id",
        )?,
        // A credit lowers the receivable (negative), a debit raises it.
        "ADJUSTMENT" => collect_simple(
            ctx,
            "ADJUSTMENT",
            "SELECT j.id, a.id, a.account_num, a.currency_code, j.occurred_on,
                    CASE WHEN j.adjustment_type <> 'CREDIT' THEN j.amount
                         WHEN j.amount LIKE '-%' THEN substr(j.amount, 2)
                         ELSE '-' || j.amount END,
                    COALESCE((SELECT cc.name FROM account_adjustment_items it
                              JOIN charge_categories cc ON cc.id = it.charge_category_id
                              WHERE it.adjustment_id = j.id ORDER BY it.id LIMIT 1), 'Adjustment'),
                    NULL
             FROM account_adjustments j JOIN billing_accounts a ON a.id = j.billing_account_id
             WHERE j.occurred_on >= ?1 AND j.occurred_on < ?2 ORDER BY j.id",
        )?,
        _ => return Ok(false),
    }
    Ok(true)
}
