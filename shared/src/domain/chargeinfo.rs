//! Charge info records: the three lists (all, merged, per ledger) and the two deletions.
//!
//! Merging: a USAGE_EVENT parent and its USAGE children become one record, the parent's,
//! whose `ci_values` gains `charge_amount` = the sum of the children's amounts,
//! `charge_category` = the children's distinct categories (comma separated) and
//! `merged_charge_info_ids` = the children's ids; its `updated_on` is the latest of them all.
//! Records without children are listed as they are; children never appear on their own.

use super::require;
use crate::query::{Page, Paged, Selection};
use crate::time::render;
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::{Connection, Transaction};
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
    #[schema(schema_with = crate::domain::schemas::charge_info_state_or_null)]
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
    crate::schema::any_object("created_date, transaction_type, charge_category, billing_account_num, order_id, service_id, invoice_number, charge_amount (exact decimal), order_amount, product_id, product_name, currency_code; merged records add merged_charge_info_ids")
}

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
    /// The records matching, by id (over `charge_infos ci`).
    fn selection(&self, merged: bool) -> Selection {
        let mut s = Selection::new("ci.id")
            .scope_if(
                "(ci.billing_account_num = ? OR CAST(ci.billing_account_id AS TEXT) = ?)",
                self.billing_account.clone(),
            )
            .scope_if("ci.invoice_number = ?", self.invoice_number.clone())
            .scope_if("ci.charge_info_type = ?", self.charge_info_type.clone());
        s = if merged {
            s.scope_if(
                "(ci.charge_category = ? OR EXISTS (SELECT 1 FROM charge_infos k
                  WHERE k.parent_id = ci.id AND k.charge_category = ?))",
                self.charge_category.clone(),
            )
            .scope("ci.parent_id IS NULL", vec![])
        } else {
            s.scope_if("ci.charge_category = ?", self.charge_category.clone())
        };
        s = s
            .scope_if("ci.created_on >= ?", self.created_from.clone())
            .scope_if("ci.created_on < ?", self.created_to.clone());
        s = match self.is_parent {
            Some(true) => s.scope(
                "EXISTS (SELECT 1 FROM charge_infos k WHERE k.parent_id = ci.id)",
                vec![],
            ),
            Some(false) => s.scope(
                "NOT EXISTS (SELECT 1 FROM charge_infos k WHERE k.parent_id = ci.id)",
                vec![],
            ),
            None => s,
        };
        s.scope_if("ci.service_id = ?", self.service_id)
            .scope_if("ci.product_id = ?", self.product_id)
            .scope_if("ci.order_number = ?", self.order_number.clone())
            .scope_if("ci.parent_id = ?", self.parent_id)
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
    let mut matching = f.selection(false).condition;
    let cap = format!(
        "ci.id IN (SELECT ci.id FROM charge_infos ci WHERE {} ORDER BY ci.id LIMIT ?)",
        matching.sql
    );
    matching.params.push(f.max_records.into());
    Selection::new("ci.id")
        .scope(&cap, matching.params)
        .page(page)
        .fetch_paged(conn, COLUMNS, "charge_infos ci", |r| row(r, tz))
}

/// One page of merged charge infos (see the module docs).
pub fn list_merged(
    conn: &Connection,
    f: &ChargeInfoFilter,
    page: Page,
    tz: Tz,
) -> Result<Paged<ChargeInfo>> {
    let mut paged =
        f.selection(true)
            .page(page)
            .fetch_paged(conn, COLUMNS, "charge_infos ci", |r| row(r, tz))?;
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
    let selection = Selection::new("ci.id")
        .scope_if(
            "a.billing_account_category_id IN
             (SELECT billing_account_category_id FROM ledger_categories WHERE ledger_id = ?)",
            Some(ledger_id),
        )
        .scope_if("s.gl_run_id = ?", f.gl_event_id)
        .scope_if("ci.created_on >= ?", f.created_from.clone())
        .scope_if("ci.created_on < ?", f.created_to.clone())
        .scope_if("ci.updated_on >= ?", f.updated_from.clone())
        .scope_if("ci.updated_on < ?", f.updated_to.clone());
    // The join's ledger id precedes the WHERE values in the statement, so it is written in
    // (an i64, never text from input) rather than bound.
    let from = format!(
        "charge_infos ci JOIN billing_accounts a ON a.id = ci.billing_account_id
         LEFT JOIN charge_info_states s ON s.charge_info_id = ci.id AND s.ledger_id = {ledger_id}"
    );
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
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
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
