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

/// Live events billed by an invoice made inside the window, whatever their start: an invoice's
/// usage lines clear what these accrued, so collecting the invoice collects them too (usage
/// posted late, after a run's window had passed its start, is accrued before it is cleared).
const INVOICED_USAGE: UsagePass = UsagePass {
    condition: "e.voided = 0 AND e.invoice_id IN
                (SELECT i.id FROM invoices i
                 WHERE i.occurred_on >= ?1 AND i.occurred_on < ?2 AND i.status <> 'CANCELED')",
    kinds: ("USAGE_EVENT", "USAGE_CHARGE"),
    negate: false,
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

/// How one pass over invoices turns them into charge info: an INVOICE parent of the whole
/// amount and one child per line, typed by the line (`INVOICE_<line type>`), which is what a
/// ledger run posts.
struct InvoicePass {
    /// Which invoices, with `?1..?2` the window.
    condition: &'static str,
    /// Source kinds of the parent and of the children.
    kinds: (&'static str, &'static str),
    /// +1 for invoices, -1 for reversals.
    negate: bool,
}

/// Invoices not canceled, by date.
const LIVE_INVOICES: InvoicePass = InvoicePass {
    condition: "i.occurred_on >= ?1 AND i.occurred_on < ?2 AND i.status <> 'CANCELED'",
    kinds: ("INVOICE", "INVOICE_LINE"),
    negate: false,
};

/// An invoice canceled (inside the window) after it was collected is reversed line by line,
/// dated as the invoice, as a voided usage event is.
const CANCELED_INVOICES: InvoicePass = InvoicePass {
    condition: "i.status = 'CANCELED' AND i.canceled_at >= ?1 AND i.canceled_at < ?2
                AND EXISTS (SELECT 1 FROM charge_infos x
                            WHERE x.source_kind = 'INVOICE' AND x.source_id = i.id)",
    kinds: ("INVOICE_CANCEL", "INVOICE_LINE_CANCEL"),
    negate: true,
};

/// The charge info type of an invoice line of type `line_type`: what a ledger run posts
/// (`glrun::accounts_for`).
fn invoice_line_type(line_type: &str) -> String {
    format!("INVOICE_{line_type}")
}

struct InvoiceLine {
    id: i64,
    line_type: String,
    amount: Decimal,
    category: Option<String>,
    service_id: Option<i64>,
    product: Option<(i64, Option<String>)>,
}

fn collect_invoices(ctx: &RunContext<'_>, pass: &InvoicePass) -> Result<()> {
    let mut stmt = ctx.tx.prepare(&format!(
        "SELECT i.id, a.id, a.account_num, a.currency_code, i.occurred_on, i.amount,
                i.invoice_num
         FROM invoices i JOIN billing_accounts a ON a.id = i.billing_account_id
         WHERE {condition} ORDER BY i.id",
        condition = pass.condition,
    ))?;
    let invoices = stmt
        .query_map(rusqlite::params![ctx.from, ctx.to], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, String>(4)?,
                decimal(r, 5)?,
                r.get::<_, String>(6)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut lines = ctx.tx.prepare_cached(
        "SELECT l.id, l.line_type, l.amount, cc.name, l.service_id, l.product_id, p.name
         FROM invoice_lines l
         LEFT JOIN charge_categories cc ON cc.id = l.charge_category_id
         LEFT JOIN products p ON p.id = l.product_id
         WHERE l.invoice_id = ?1 ORDER BY l.line_num",
    )?;
    let sign = |d: Decimal| if pass.negate { -d } else { d };
    for (id, account_id, account_num, currency, occurred_on, amount, number) in invoices {
        let base = Collected {
            source_kind: pass.kinds.0,
            source_id: id,
            charge_info_type: "INVOICE",
            parent_id: None,
            billing_account_id: account_id,
            billing_account_num: account_num,
            charge_date: occurred_on,
            amount: sign(amount),
            currency_code: currency,
            charge_category: None,
            invoice_number: Some(number),
            service_id: None,
            product_id: None,
            product_name: None,
        };
        let parent = ctx.store(&base)?;
        let of_invoice = lines
            .query_map([id], |r| {
                Ok(InvoiceLine {
                    id: r.get(0)?,
                    line_type: r.get(1)?,
                    amount: decimal(r, 2)?,
                    category: r.get(3)?,
                    service_id: r.get(4)?,
                    product: match r.get::<_, Option<i64>>(5)? {
                        Some(p) => Some((p, r.get(6)?)),
                        None => None,
                    },
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        // An invoice without lines (added by a writer of an older schema) stays one leaf of
        // type INVOICE, posted as an AMOUNT line.
        for line in of_invoice {
            let ty = invoice_line_type(&line.line_type);
            ctx.store(&Collected {
                source_kind: pass.kinds.1,
                source_id: line.id,
                charge_info_type: &ty,
                parent_id: Some(parent),
                amount: sign(line.amount),
                charge_category: line.category,
                service_id: line.service_id,
                product_id: line.product.as_ref().map(|p| p.0),
                product_name: line.product.and_then(|p| p.1),
                billing_account_num: base.billing_account_num.clone(),
                charge_date: base.charge_date.clone(),
                currency_code: base.currency_code.clone(),
                invoice_number: base.invoice_number.clone(),
                ..base
            })?;
        }
    }
    Ok(())
}

/// Collects one simple source: `sql` selects (id, account id, account num, currency, date,
/// amount, category, invoice number) inside the window `?1..?2`; the records are of source
/// kind and charge info type `kind`.
fn collect_simple(ctx: &RunContext<'_>, kind: &str, sql: &str) -> Result<()> {
    let mut stmt = ctx.tx.prepare(sql)?;
    let rows = stmt
        .query_map(rusqlite::params![ctx.from, ctx.to], |r| {
            Ok(Collected {
                source_kind: kind,
                source_id: r.get(0)?,
                charge_info_type: kind,
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
            collect_usage_pass(ctx, &INVOICED_USAGE)?;
            collect_invoices(ctx, &LIVE_INVOICES)?;
            collect_invoices(ctx, &CANCELED_INVOICES)?
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
