//! Charge info records: the three lists (all, merged, per ledger) and the two deletions.
//!
//! Merging: a USAGE_EVENT parent and its USAGE children become one record, the parent's,
//! whose `ci_values` gains `charge_amount` = the sum of the children's amounts,
//! `charge_category` = the children's distinct categories (comma separated) and
//! `merged_charge_info_ids` = the children's ids; its `updated_on` is the latest of them all.
//! Records without children are listed as they are; children never appear on their own.

use super::require;
use crate::money::{canonical, Number};
use crate::query::{FieldKind as K, FieldSpec as F, ListSource, Page, Paged, Selection};
use crate::time::render;
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::{Connection, OptionalExtension, Transaction};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// Default and smallest `max_records`.
pub const DEFAULT_MAX_RECORDS: i64 = 1000;
/// Most ids one deletion accepts.
pub const MAX_DELETE_IDS: usize = 1000;

/// A record's state in a ledger, as a ledger run leaves it (`charge_info_states.state`):
/// posted as journal entries.
pub const STATE_POSTED: &str = "POSTED";
/// Not posted because its amount is zero and the run mode makes no zero entries.
pub const STATE_SKIPPED: &str = "SKIPPED";
/// Not posted because no open period takes it (a later run retries it).
pub const STATE_ERROR: &str = "ERROR";
/// Every state a record can have in a ledger (the OpenAPI documents list them in this order).
pub const CHARGE_INFO_STATES: &[&str] = &[STATE_POSTED, STATE_SKIPPED, STATE_ERROR];

/// A charge info record as rendered.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ChargeInfo {
    /// Id.
    pub id: i64,
    /// When collected.
    #[schema(format = DateTime)]
    pub created_on: String,
    /// When last changed (collected, or posted by a ledger run).
    #[schema(format = DateTime)]
    pub updated_on: String,
    /// The collector run that created it.
    pub created_by: String,
    /// The run that changed it last.
    pub updated_by: String,
    /// Billing account number.
    pub billing_account_num: String,
    /// The source record in the platform, `core:<kind>:<id>`.
    pub core_id: String,
    /// The charge's facts (see docs/revenue.md for the keys).
    #[schema(schema_with = ci_values)]
    pub ci_values: Box<RawValue>,
    /// Per-ledger list only: the record's state in that ledger (POSTED, SKIPPED, ERROR, or
    /// null when no run has handled it). Absent from the other lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = charge_info_state_or_null)]
    pub charge_info_state_values: Option<Option<String>>,
}

const COLUMNS: &str = "ci.id, ci.created_on, ci.updated_on, ci.created_by, ci.updated_by,
    ci.billing_account_num, ci.core_id, ci.ci_values";

fn row(r: &rusqlite::Row<'_>, tz: Tz) -> rusqlite::Result<ChargeInfo> {
    let values: String = r.get(7)?;
    Ok(ChargeInfo {
        id: r.get(0)?,
        created_on: render(&r.get::<_, String>(1)?, tz),
        updated_on: render(&r.get::<_, String>(2)?, tz),
        created_by: r.get(3)?,
        updated_by: r.get(4)?,
        billing_account_num: r.get(5)?,
        core_id: r.get(6)?,
        ci_values: RawValue::from_string(values).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(7, rusqlite::types::Type::Text, Box::new(e))
        })?,
        charge_info_state_values: None,
    })
}

fn ci_values() -> utoipa::openapi::Object {
    crate::json_schema::any_object("created_date, transaction_type, charge_category, billing_account_num, order_id, service_id, invoice_number, charge_amount (exact decimal), order_amount, product_id, product_name, currency_code; merged records add merged_charge_info_ids")
}

const BILLING_ACCOUNT: F = F::new("billing_account", "ci.billing_account_num", K::Text)
    .narrows_by("(ci.billing_account_num = ? OR CAST(ci.billing_account_id AS TEXT) = ?)")
    .described("Account number or id");
const INVOICE_NUMBER: F = F::new("invoice_number", "ci.invoice_number", K::Text);
const CHARGE_INFO_TYPE: F = F::new("charge_info_type", "ci.charge_info_type", K::Text);
const CHARGE_CATEGORY: F =
    F::new("charge_category", "ci.charge_category", K::Text).described("Category name");
const CREATED_FROM: F = F::new("created_from", "ci.created_on", K::DateTime)
    .narrows_by("ci.created_on >= ?")
    .described("Date-time or date, inclusive");
const CREATED_TO: F = F::new("created_to", "ci.created_on", K::DateTime)
    .narrows_by("ci.created_on < ?")
    .described("Date-time or date, exclusive");
const SERVICE_ID: F = F::new("service_id", "ci.service_id", K::Integer);
const PRODUCT_ID: F = F::new("product_id", "ci.product_id", K::Integer);
const ORDER_NUMBER: F = F::new("order_number", "ci.order_number", K::Text);

/// The named filters of the charge info list, in the order Surface C documents them.
const CHARGE_INFO_FILTERS: &[&str] = &[
    "billing_account",
    "invoice_number",
    "charge_info_type",
    "charge_category",
    "created_from",
    "created_to",
    "service_id",
    "product_id",
    "order_number",
    "is_parent",
    "parent_id",
];

/// The charge info list: the named filters of [`ChargeInfoFilter`], each declared once here
/// (name, kind, the condition it narrows by); Surface C reads and documents its query
/// parameters from it. `max_records` caps the list and is no filter.
pub static CHARGE_INFO_LIST: ListSource = ListSource {
    noun: "charge info",
    fields: &[
        BILLING_ACCOUNT,
        INVOICE_NUMBER,
        CHARGE_INFO_TYPE,
        CHARGE_CATEGORY,
        CREATED_FROM,
        CREATED_TO,
        SERVICE_ID,
        PRODUCT_ID,
        ORDER_NUMBER,
        F::new("is_parent", "ci.id", K::Bool)
            .narrows_by("EXISTS (SELECT 1 FROM charge_infos k WHERE k.parent_id = ci.id) = ?"),
        F::new("parent_id", "ci.parent_id", K::Integer),
    ],
    named_filters: CHARGE_INFO_FILTERS,
    from: "charge_infos ci",
    id: "ci.id",
};

/// The merged charge info list (top-level records only, see the module docs): the named
/// filters of the charge info list but is_parent and parent_id; a charge category matches
/// the record's or any child's.
pub static MERGED_CHARGE_INFO_LIST: ListSource = ListSource {
    noun: "merged charge info",
    fields: &[
        BILLING_ACCOUNT,
        INVOICE_NUMBER,
        CHARGE_INFO_TYPE,
        CHARGE_CATEGORY.narrows_by(
            "(ci.charge_category = ? OR EXISTS (SELECT 1 FROM charge_infos k
              WHERE k.parent_id = ci.id AND k.charge_category = ?))",
        ),
        CREATED_FROM,
        CREATED_TO,
        SERVICE_ID,
        PRODUCT_ID,
        ORDER_NUMBER,
    ],
    // Those of the charge info list but the last two, is_parent and parent_id.
    named_filters: CHARGE_INFO_FILTERS
        .split_at(CHARGE_INFO_FILTERS.len() - 2)
        .0,
    from: "charge_infos ci",
    id: "ci.id",
};

/// The filters of the charge info lists; `None` does not filter. Times are stored instants.
#[derive(Debug, Clone, Default)]
pub struct ChargeInfoFilter {
    /// Billing account number or id.
    pub billing_account: Option<String>,
    /// Invoice number.
    pub invoice_number: Option<String>,
    /// Charge info type.
    pub charge_info_type: Option<String>,
    /// Charge category (merged: of the record or of any child).
    pub charge_category: Option<String>,
    /// Collected at or after.
    pub created_from: Option<String>,
    /// Collected before.
    pub created_to: Option<String>,
    /// Only records with (true) or without (false) children; not in the merged list.
    pub is_parent: Option<bool>,
    /// Service.
    pub service_id: Option<i64>,
    /// Product.
    pub product_id: Option<i64>,
    /// Order number.
    pub order_number: Option<String>,
    /// Children of this record; not in the merged list.
    pub parent_id: Option<i64>,
    /// The list shows the first `max_records` matches (by id) at most
    /// ([`DEFAULT_MAX_RECORDS`] by default); the merged list does not cap.
    pub max_records: i64,
}

impl ChargeInfoFilter {
    /// The records matching, by id (over `charge_infos ci`), in the charge info list or
    /// the merged one (top-level records; is_parent and parent_id do not apply).
    fn selection(&self, merged: bool) -> Result<Selection> {
        let list = if merged {
            &MERGED_CHARGE_INFO_LIST
        } else {
            &CHARGE_INFO_LIST
        };
        let s = Selection::new(list.id)
            .narrow(list, "billing_account", self.billing_account.clone())?
            .narrow(list, "invoice_number", self.invoice_number.clone())?
            .narrow(list, "charge_info_type", self.charge_info_type.clone())?
            .narrow(list, "charge_category", self.charge_category.clone())?
            .narrow(list, "created_from", self.created_from.clone())?
            .narrow(list, "created_to", self.created_to.clone())?
            .narrow(list, "service_id", self.service_id)?
            .narrow(list, "product_id", self.product_id)?
            .narrow(list, "order_number", self.order_number.clone())?;
        if merged {
            return Ok(s.scope("ci.parent_id IS NULL", vec![]));
        }
        s.narrow(list, "is_parent", self.is_parent)?
            .narrow(list, "parent_id", self.parent_id)
    }
}

/// One page of the first `max_records` charge infos (by id) matching `f`.
pub fn list(
    conn: &Connection,
    f: &ChargeInfoFilter,
    page: Page,
    tz: Tz,
) -> Result<Paged<ChargeInfo>> {
    // The cap is a scope of its own: the first `max_records` matching ids (the subquery's
    // `ci` is its own table, so the filter reads the same there as outside).
    let mut matching = f.selection(false)?.condition;
    let cap = format!(
        "ci.id IN (SELECT ci.id FROM charge_infos ci WHERE {} ORDER BY ci.id LIMIT ?)",
        matching.sql
    );
    matching.params.push(f.max_records.into());
    Selection::new("ci.id")
        .scope(&cap, matching.params)
        .page(page)
        .fetch_paged(conn, COLUMNS, CHARGE_INFO_LIST.from, |r| row(r, tz))
}

/// One page of merged charge infos (see the module docs).
pub fn list_merged(
    conn: &Connection,
    f: &ChargeInfoFilter,
    page: Page,
    tz: Tz,
) -> Result<Paged<ChargeInfo>> {
    let mut paged = f.selection(true)?.page(page).fetch_paged(
        conn,
        COLUMNS,
        MERGED_CHARGE_INFO_LIST.from,
        |r| row(r, tz),
    )?;
    let mut children = conn.prepare_cached(
        "SELECT id, amount, charge_category, updated_on FROM charge_infos
         WHERE parent_id = ?1 ORDER BY id",
    )?;
    let mut parent_updated =
        conn.prepare_cached("SELECT updated_on FROM charge_infos WHERE id = ?1")?;
    for item in &mut paged.items {
        let kids = children
            .query_map([item.id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        if kids.is_empty() {
            continue;
        }
        let mut values: BTreeMap<String, Box<RawValue>> =
            serde_json::from_str(item.ci_values.get())?;
        let total = kids
            .iter()
            .filter_map(|k| crate::money::parse_decimal(&k.1))
            .try_fold(Decimal::ZERO, |sum, d| {
                crate::money::checked_add(sum, d, "the total of the charges")
            })?;
        let mut categories: Vec<&str> = Vec::new();
        for c in kids.iter().filter_map(|k| k.2.as_deref()) {
            if !categories.contains(&c) {
                categories.push(c);
            }
        }
        let ids: Vec<i64> = kids.iter().map(|k| k.0).collect();
        let raw = |text: String| RawValue::from_string(text).map_err(Error::from);
        values.insert("charge_amount".into(), raw(crate::money::canonical(total))?);
        values.insert(
            "charge_category".into(),
            raw(serde_json::to_string(&categories.join(", "))?)?,
        );
        values.insert(
            "merged_charge_info_ids".into(),
            raw(serde_json::to_string(&ids)?)?,
        );
        item.ci_values = raw(serde_json::to_string(&values)?)?;
        let own: String = parent_updated.query_row([item.id], |r| r.get(0))?;
        let latest = kids
            .iter()
            .map(|k| k.3.clone())
            .chain([own])
            .max()
            .unwrap_or_default();
        item.updated_on = render(&latest, tz);
    }
    Ok(paged)
}

/// The charge infos of one ledger: the named filters of [`LedgerChargeInfoFilter`], each
/// declared once here; Surface C reads and documents its query parameters from it. The FROM
/// clause joins each record's state in the ledger, `{ledger_id}` (written in by
/// [`list_for_ledger`]).
pub static LEDGER_CHARGE_INFO_LIST: ListSource = ListSource {
    noun: "charge info",
    fields: &[
        F::new("gl_event_id", "s.gl_run_id", K::Integer),
        F::new("created_from", "ci.created_on", K::DateTime)
            .narrows_by("ci.created_on >= ?")
            .described("Date-time or date"),
        F::new("created_to", "ci.created_on", K::DateTime)
            .narrows_by("ci.created_on < ?")
            .described("Date-time or date"),
        F::new("updated_from", "ci.updated_on", K::DateTime)
            .narrows_by("ci.updated_on >= ?")
            .described("Date-time or date"),
        F::new("updated_to", "ci.updated_on", K::DateTime)
            .narrows_by("ci.updated_on < ?")
            .described("Date-time or date"),
    ],
    named_filters: &[
        "gl_event_id",
        "created_from",
        "created_to",
        "updated_from",
        "updated_to",
    ],
    from: "charge_infos ci JOIN billing_accounts a ON a.id = ci.billing_account_id
         LEFT JOIN charge_info_states s ON s.charge_info_id = ci.id AND s.ledger_id = {ledger_id}",
    id: "ci.id",
};

/// The filters of the per-ledger list; `None` does not filter. Times are stored instants.
#[derive(Debug, Clone, Default)]
pub struct LedgerChargeInfoFilter {
    /// The ledger run that last handled a record.
    pub gl_event_id: Option<i64>,
    /// Collected at or after.
    pub created_from: Option<String>,
    /// Collected before.
    pub created_to: Option<String>,
    /// Last changed at or after.
    pub updated_from: Option<String>,
    /// Last changed before.
    pub updated_to: Option<String>,
}

/// One page of the charge infos of a ledger's billing account categories, with their state
/// in that ledger. `gl_event_id` names the ledger run that last handled a record.
pub fn list_for_ledger(
    conn: &Connection,
    ledger_id: i64,
    f: &LedgerChargeInfoFilter,
    page: Page,
    tz: Tz,
) -> Result<Paged<ChargeInfo>> {
    require(conn, "ledgers", "ledger", ledger_id)?;
    let list = &LEDGER_CHARGE_INFO_LIST;
    let selection = Selection::new(list.id)
        .scope_if(
            "a.billing_account_category_id IN
             (SELECT billing_account_category_id FROM ledger_categories WHERE ledger_id = ?)",
            Some(ledger_id),
        )
        .narrow(list, "gl_event_id", f.gl_event_id)?
        .narrow(list, "created_from", f.created_from.clone())?
        .narrow(list, "created_to", f.created_to.clone())?
        .narrow(list, "updated_from", f.updated_from.clone())?
        .narrow(list, "updated_to", f.updated_to.clone())?;
    // The join's ledger id precedes the WHERE values in the statement, so it is written in
    // (an i64, never text from input) rather than bound.
    let from = list.from.replace("{ledger_id}", &ledger_id.to_string());
    selection
        .page(page)
        .fetch_paged(conn, &format!("{COLUMNS}, s.state"), &from, |r| {
            let mut info = row(r, tz)?;
            info.charge_info_state_values = Some(r.get(8)?);
            Ok(info)
        })
}

/// The body of the charge info deletions.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Ids {
    /// Charge info ids.
    #[schema(min_items = 1, max_items = 1000)]
    pub ids: Vec<i64>,
}

/// What a deletion removed.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Deleted {
    /// Charge info records (or states) removed.
    pub deleted: usize,
    /// Journal entries removed with them.
    pub deleted_journal_entries: usize,
}

fn check_ids(ids: &Ids) -> Result<()> {
    if ids.ids.is_empty() {
        return Err(Error::bad_request("ids must name at least one charge info"));
    }
    if ids.ids.len() > MAX_DELETE_IDS {
        return Err(Error::bad_request(format!(
            "ids: at most {MAX_DELETE_IDS} per call, found {}",
            ids.ids.len()
        )));
    }
    Ok(())
}

/// Deletes charge infos (with their children, states in every ledger and journal entries).
/// Unknown ids are skipped; a deleted source record is collected again by a later run.
pub fn delete(tx: &Transaction<'_>, ids: &Ids) -> Result<Deleted> {
    check_ids(ids)?;
    let mut doomed: Vec<i64> = Vec::new();
    let mut kids = tx.prepare_cached("SELECT id FROM charge_infos WHERE parent_id = ?1")?;
    let mut exists = tx.prepare_cached("SELECT 1 FROM charge_infos WHERE id = ?1")?;
    for id in &ids.ids {
        if doomed.contains(id) || !exists.exists([id])? {
            continue;
        }
        for k in kids
            .query_map([id], |r| r.get::<_, i64>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?
        {
            if !doomed.contains(&k) {
                doomed.push(k);
            }
        }
        doomed.push(*id);
    }
    let mut entries = 0;
    for id in &doomed {
        entries += tx.execute(
            "DELETE FROM journal_entries WHERE charge_info_id = ?1",
            [id],
        )?;
        tx.execute(
            "DELETE FROM charge_info_states WHERE charge_info_id = ?1",
            [id],
        )?;
        tx.execute(
            "UPDATE charge_infos SET parent_id = NULL WHERE parent_id = ?1",
            [id],
        )?;
    }
    for id in &doomed {
        tx.execute("DELETE FROM charge_infos WHERE id = ?1", [id])?;
    }
    Ok(Deleted {
        deleted: doomed.len(),
        deleted_journal_entries: entries,
    })
}

/// Deletes the state of charge infos in one ledger and the ledger's journal entries tied to
/// them, so the next ledger run posts them again (404 unknown ledger).
pub fn delete_states(tx: &Transaction<'_>, ledger_id: i64, ids: &Ids) -> Result<Deleted> {
    super::require(tx, "ledgers", "ledger", ledger_id)?;
    check_ids(ids)?;
    let mut states = 0;
    let mut entries = 0;
    for id in &ids.ids {
        entries += tx.execute(
            "DELETE FROM journal_entries WHERE ledger_id = ?1 AND charge_info_id = ?2",
            rusqlite::params![ledger_id, id],
        )?;
        states += tx.execute(
            "DELETE FROM charge_info_states WHERE ledger_id = ?1 AND charge_info_id = ?2",
            rusqlite::params![ledger_id, id],
        )?;
    }
    Ok(Deleted {
        deleted: states,
        deleted_journal_entries: entries,
    })
}

/// One journal entry a ledger run posts for a charge info.
pub(crate) struct NewJournalEntry<'a> {
    pub(crate) gl_run_id: i64,
    pub(crate) ledger_id: i64,
    pub(crate) charge_info_id: i64,
    pub(crate) period_id: i64,
    pub(crate) posting_date: String,
    /// Positive: the sign is in which account is debited.
    pub(crate) amount: Decimal,
    pub(crate) debit_account: &'a str,
    pub(crate) credit_account: &'a str,
}

/// Stores a journal entry a ledger run posts.
pub(crate) fn post_entry(tx: &Transaction<'_>, e: &NewJournalEntry<'_>) -> Result<()> {
    super::insert(
        tx,
        "journal_entries",
        &[
            ("gl_run_id", &e.gl_run_id),
            ("ledger_id", &e.ledger_id),
            ("charge_info_id", &e.charge_info_id),
            ("period_id", &e.period_id),
            ("posting_date", &e.posting_date),
            ("amount", &canonical(e.amount)),
            ("debit_account", &e.debit_account),
            ("credit_account", &e.credit_account),
        ],
    )?;
    Ok(())
}

/// Records the state ledger run `gl_run_id` left charge info `charge_info_id` in for ledger
/// `ledger_id` (one state per ledger and charge info: a later run replaces it), and stamps
/// the charge info as updated by the run at the stored instant `now`.
pub(crate) fn set_state(
    tx: &Transaction<'_>,
    ledger_id: i64,
    charge_info_id: i64,
    state: &str,
    gl_run_id: i64,
    now: &str,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO charge_info_states (ledger_id, charge_info_id, state, gl_run_id)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (ledger_id, charge_info_id)
         DO UPDATE SET state = excluded.state, gl_run_id = excluded.gl_run_id",
    )?
    .execute(rusqlite::params![
        ledger_id,
        charge_info_id,
        state,
        gl_run_id
    ])?;
    tx.prepare_cached("UPDATE charge_infos SET updated_on = ?2, updated_by = ?3 WHERE id = ?1")?
        .execute(rusqlite::params![
            charge_info_id,
            now,
            format!("gl-run-{gl_run_id}")
        ])?;
    Ok(())
}

/// Deletes what ledger run `gl_run_id` posted: its journal entries and the states it set
/// (the charge infos stay, to be posted again by a later run).
pub(crate) fn delete_run_postings(tx: &Transaction<'_>, gl_run_id: i64) -> Result<()> {
    tx.execute(
        "DELETE FROM journal_entries WHERE gl_run_id = ?1",
        [gl_run_id],
    )?;
    tx.execute(
        "DELETE FROM charge_info_states WHERE gl_run_id = ?1",
        [gl_run_id],
    )?;
    Ok(())
}

/// Deletes everything posted to ledger `ledger_id` (the ledger is being deleted).
pub(crate) fn delete_ledger_postings(tx: &Transaction<'_>, ledger_id: i64) -> Result<()> {
    tx.execute(
        "DELETE FROM journal_entries WHERE ledger_id = ?1",
        [ledger_id],
    )?;
    tx.execute(
        "DELETE FROM charge_info_states WHERE ledger_id = ?1",
        [ledger_id],
    )?;
    Ok(())
}

/// Moves the journal entries of calendar period `from` to period `to` (a period renumbered).
pub(crate) fn move_entries_to_period(tx: &Transaction<'_>, from: i64, to: i64) -> Result<()> {
    tx.execute(
        "UPDATE journal_entries SET period_id = ?2 WHERE period_id = ?1",
        [from, to],
    )?;
    Ok(())
}

/// The values shown in a charge info's `ci_values`.
#[derive(Debug, Clone, Serialize)]
struct CiValues {
    created_date: String,
    transaction_type: String,
    charge_category: Option<String>,
    billing_account_num: String,
    order_id: Option<String>,
    service_id: Option<i64>,
    invoice_number: Option<String>,
    charge_amount: Number,
    order_amount: Option<Number>,
    product_id: Option<i64>,
    product_name: Option<String>,
    currency_code: Option<String>,
}

/// One charge info record to store.
pub(crate) struct Collected<'a> {
    pub(crate) source_kind: &'a str,
    pub(crate) source_id: i64,
    pub(crate) charge_info_type: &'a str,
    pub(crate) parent_id: Option<i64>,
    pub(crate) billing_account_id: i64,
    pub(crate) billing_account_num: String,
    pub(crate) charge_date: String,
    pub(crate) amount: Decimal,
    pub(crate) currency_code: Option<String>,
    pub(crate) charge_category: Option<String>,
    pub(crate) invoice_number: Option<String>,
    pub(crate) service_id: Option<i64>,
    pub(crate) product_id: Option<i64>,
    pub(crate) product_name: Option<String>,
}

/// Stores the charge info collector run `run_id` collected at the stored instant `now`,
/// unless its source was collected before; answers its id either way.
pub(crate) fn store_collected(
    tx: &Transaction<'_>,
    c: &Collected<'_>,
    run_id: i64,
    now: &str,
    tz: Tz,
) -> Result<i64> {
    if let Some(id) = tx
        .prepare_cached("SELECT id FROM charge_infos WHERE source_kind = ?1 AND source_id = ?2")?
        .query_row(rusqlite::params![c.source_kind, c.source_id], |r| r.get(0))
        .optional()?
    {
        return Ok(id);
    }
    let values = CiValues {
        created_date: render(&c.charge_date, tz),
        transaction_type: c.charge_info_type.to_string(),
        charge_category: c.charge_category.clone(),
        billing_account_num: c.billing_account_num.clone(),
        order_id: None,
        service_id: c.service_id,
        invoice_number: c.invoice_number.clone(),
        charge_amount: Number(c.amount),
        order_amount: None,
        product_id: c.product_id,
        product_name: c.product_name.clone(),
        currency_code: c.currency_code.clone(),
    };
    let created_by = format!("collector-run-{}", run_id);
    let core_id = format!(
        "core:{}:{}",
        c.source_kind.to_ascii_lowercase(),
        c.source_id
    );
    // Cached: a run stores one statement's worth of rows per source record.
    tx.prepare_cached(
        "INSERT INTO charge_infos (created_on, updated_on, created_by, updated_by,
                billing_account_num, core_id, charge_info_type, source_kind, source_id,
                parent_id, collector_run_id, ci_values, billing_account_id, charge_date,
                amount, currency_code, charge_category, invoice_number, service_id,
                product_id)
             VALUES (?1, ?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,
                ?15, ?16, ?17, ?18)",
    )?
    .execute(rusqlite::params![
        now,
        created_by,
        c.billing_account_num,
        core_id,
        c.charge_info_type,
        c.source_kind,
        c.source_id,
        c.parent_id,
        run_id,
        serde_json::to_string(&values)?,
        c.billing_account_id,
        c.charge_date,
        canonical(c.amount),
        c.currency_code,
        c.charge_category,
        c.invoice_number,
        c.service_id,
        c.product_id,
    ])?;
    Ok(tx.last_insert_rowid())
}

/// A charge info's state in a ledger, or null (no run has handled it): its JSON Schema, for the OpenAPI derives.
pub fn charge_info_state_or_null() -> utoipa::openapi::Schema {
    crate::json_schema::nullable_enumeration(CHARGE_INFO_STATES)
}
