//! Query-string parsing of Surface C: typed readers of optional parameters (each names the
//! parameter in its 400) and the filters of the lists, read into the domain's input types.

use shared::domain::chargeinfo::{ChargeInfoFilter, LedgerChargeInfoFilter, DEFAULT_MAX_RECORDS};
use shared::domain::ledgers::LedgerFilter;
use shared::{Error, Result};
use std::collections::HashMap;

/// The query parameters of a request.
pub type Query = HashMap<String, String>;

/// An optional int64 parameter.
pub fn int(p: &Query, name: &str) -> Result<Option<i64>> {
    p.get(name)
        .map(|raw| {
            raw.trim().parse::<i64>().map_err(|_| {
                Error::bad_request(format!(
                    "{name}: {} is not an integer",
                    shared::error::quoted(raw)
                ))
            })
        })
        .transpose()
}

/// An optional boolean parameter (`true` or `false`).
pub fn boolean(p: &Query, name: &str) -> Result<Option<bool>> {
    p.get(name)
        .map(|raw| match raw.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(Error::bad_request(format!(
                "{name}: {} is not true or false",
                shared::error::quoted(raw)
            ))),
        })
        .transpose()
}

/// An optional text parameter.
pub fn text(p: &Query, name: &str) -> Option<String> {
    p.get(name).cloned()
}

/// An optional date-time parameter in stored form (a date alone is midnight in `tz`).
pub fn time(p: &Query, name: &str, tz: chrono_tz::Tz) -> Result<Option<String>> {
    p.get(name)
        .map(|raw| shared::domain::parse_time(name, raw, tz))
        .transpose()
}

/// The filters of `GET /ledgers`.
pub fn ledger_filter(p: &Query) -> Result<LedgerFilter> {
    Ok(LedgerFilter {
        id: int(p, "id")?,
        name: text(p, "name"),
        status: text(p, "status"),
        convert_currency: text(p, "convert_currency"),
        conversion_currency: text(p, "conversion_currency"),
        chart_of_account_id: int(p, "chart_of_account_id")?,
        rule_set_id: int(p, "rule_set_id")?,
    })
}

/// The filters of `GET /ledgers/chargeinfos` (`merged`: of `/ledgers/merged-chargeinfos`,
/// which refuses a bad max_records too but ignores is_parent, parent_id and max_records).
pub fn charge_info_filter(p: &Query, tz: chrono_tz::Tz, merged: bool) -> Result<ChargeInfoFilter> {
    let max_records =
        shared::web::listing::int_param(p, "max_records", DEFAULT_MAX_RECORDS, 1, i64::MAX)?;
    Ok(ChargeInfoFilter {
        billing_account: text(p, "billing_account"),
        invoice_number: text(p, "invoice_number"),
        charge_info_type: text(p, "charge_info_type"),
        charge_category: text(p, "charge_category"),
        created_from: time(p, "created_from", tz)?,
        created_to: time(p, "created_to", tz)?,
        is_parent: if merged {
            None
        } else {
            boolean(p, "is_parent")?
        },
        service_id: int(p, "service_id")?,
        product_id: int(p, "product_id")?,
        order_number: text(p, "order_number"),
        parent_id: if merged { None } else { int(p, "parent_id")? },
        max_records: if merged { i64::MAX } else { max_records },
    })
}

/// The filters of `GET /ledgers/{id}/chargeinfos`.
pub fn ledger_charge_info_filter(p: &Query, tz: chrono_tz::Tz) -> Result<LedgerChargeInfoFilter> {
    Ok(LedgerChargeInfoFilter {
        gl_event_id: int(p, "gl_event_id")?,
        created_from: time(p, "created_from", tz)?,
        created_to: time(p, "created_to", tz)?,
        updated_from: time(p, "updated_from", tz)?,
        updated_to: time(p, "updated_to", tz)?,
    })
}
