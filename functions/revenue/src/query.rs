//! Query-string parsing of Surface C: each endpoint's query parameters are declared once
//! ([`Param`] lists such as [`LEDGER_FILTERS`]); the route table (`crate::routes`) documents
//! those lists and the handlers read the domain's typed filters through them ([`Read`]),
//! each parameter as its kind says (a malformed one is a 400 naming it).
//!
//! Invariant: a reader asks only for parameters its list declares, with the declared kind
//! (else an internal error, which every test of the endpoint would meet), and reads every
//! parameter it declares (the unit tests check each list).

use shared::domain::chargeinfo::{ChargeInfoFilter, LedgerChargeInfoFilter, DEFAULT_MAX_RECORDS};
use shared::domain::ledgers::LedgerFilter;
use shared::{Error, Result};
use std::cell::Cell;
use std::collections::HashMap;

/// The query parameters of a request.
pub type Query = HashMap<String, String>;

/// What a query parameter holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Any text.
    Text,
    /// An int64.
    Int,
    /// `true` or `false` (any case).
    Bool,
    /// A date-time or a date (midnight in the tenant's zone), compared in stored form.
    Time,
    /// One of these values (documented; matched by the domain, which finds nothing for
    /// another value).
    Enum(&'static [&'static str]),
    /// An int64 within `min..=max` (no upper bound: `None`), `default` when absent.
    Bounded {
        /// Smallest value accepted.
        min: i64,
        /// Largest value accepted.
        max: Option<i64>,
        /// Value when absent.
        default: i64,
    },
}

/// One query parameter of an endpoint.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Its name.
    pub name: &'static str,
    /// What it holds.
    pub kind: Kind,
    /// What the document says of it, if anything.
    pub description: Option<&'static str>,
}

const fn p(name: &'static str, kind: Kind, description: Option<&'static str>) -> Param {
    Param {
        name,
        kind,
        description,
    }
}

/// The filters of `GET /ledgers`.
pub const LEDGER_FILTERS: &[Param] = &[
    p("id", Kind::Int, None),
    p("name", Kind::Text, None),
    p(
        "status",
        Kind::Enum(shared::domain::ledgers::LEDGER_STATUSES),
        None,
    ),
    p(
        "convert_currency",
        Kind::Enum(shared::domain::ledgers::CONVERT_CURRENCY),
        None,
    ),
    p(
        "conversion_currency",
        Kind::Enum(shared::money::CURRENCY_CODES),
        None,
    ),
    p("chart_of_account_id", Kind::Int, None),
    p("rule_set_id", Kind::Int, None),
];

/// The parameter of `POST /ledgers/{id}/calendar/years`.
pub const YEAR_PARAMS: &[Param] = &[p("generate-periods", Kind::Bool, Some("Default false"))];

/// The filters of `GET /collectors`.
pub const COLLECTOR_FILTERS: &[Param] = &[
    p("group", Kind::Text, None),
    p("category", Kind::Text, None),
];

/// The filter of `GET /glruns`.
pub const GL_RUN_FILTERS: &[Param] = &[p(
    "status",
    Kind::Enum(shared::domain::glrun::RUN_STATUSES),
    None,
)];

/// The filters of `GET /ledgers/merged-chargeinfos`: those of the charge info list except
/// is_parent, parent_id and max_records (the merged list is not capped).
pub const MERGED_CHARGE_INFO_FILTERS: &[Param] = &[
    p("billing_account", Kind::Text, Some("Account number or id")),
    p("invoice_number", Kind::Text, None),
    p("charge_info_type", Kind::Text, None),
    p("charge_category", Kind::Text, Some("Category name")),
    p(
        "created_from",
        Kind::Time,
        Some("Date-time or date, inclusive"),
    ),
    p(
        "created_to",
        Kind::Time,
        Some("Date-time or date, exclusive"),
    ),
    p("service_id", Kind::Int, None),
    p("product_id", Kind::Int, None),
    p("order_number", Kind::Text, None),
];

/// The filters of `GET /ledgers/chargeinfos`.
pub const CHARGE_INFO_FILTERS: &[Param] = &[
    MERGED_CHARGE_INFO_FILTERS[0],
    MERGED_CHARGE_INFO_FILTERS[1],
    MERGED_CHARGE_INFO_FILTERS[2],
    MERGED_CHARGE_INFO_FILTERS[3],
    MERGED_CHARGE_INFO_FILTERS[4],
    MERGED_CHARGE_INFO_FILTERS[5],
    MERGED_CHARGE_INFO_FILTERS[6],
    MERGED_CHARGE_INFO_FILTERS[7],
    MERGED_CHARGE_INFO_FILTERS[8],
    p("is_parent", Kind::Bool, None),
    p("parent_id", Kind::Int, None),
    p(
        "max_records",
        Kind::Bounded {
            min: 1,
            max: None,
            default: DEFAULT_MAX_RECORDS,
        },
        Some("Caps the matching set; default 1000"),
    ),
];

/// The filters of `GET /ledgers/{id}/chargeinfos`.
pub const LEDGER_CHARGE_INFO_FILTERS: &[Param] = &[
    p("gl_event_id", Kind::Int, None),
    p("created_from", Kind::Time, Some("Date-time or date")),
    p("created_to", Kind::Time, Some("Date-time or date")),
    p("updated_from", Kind::Time, Some("Date-time or date")),
    p("updated_to", Kind::Time, Some("Date-time or date")),
];

/// The parameter of `POST /replication/svs`.
pub const REPLICATION_PARAMS: &[Param] = &[p(
    "batch_size",
    Kind::Bounded {
        min: shared::domain::analytics_export::BATCH_SIZE_RANGE.0,
        max: Some(shared::domain::analytics_export::BATCH_SIZE_RANGE.1),
        default: shared::domain::analytics_export::BATCH_SIZE_RANGE.2,
    },
    Some("Default 1000"),
)];

/// Reads a request's query parameters as one declared list says.
pub struct Read<'a> {
    query: &'a Query,
    declared: &'static [Param],
    /// Bit i: the i-th declared parameter was asked for.
    asked: Cell<u64>,
}

impl<'a> Read<'a> {
    /// A reader of `query` under `declared`.
    pub fn new(query: &'a Query, declared: &'static [Param]) -> Read<'a> {
        Read {
            query,
            declared,
            asked: Cell::new(0),
        }
    }

    /// The raw value of declared parameter `name`, when given; an internal error when the
    /// list does not declare it or declares another kind.
    fn raw(&self, name: &str, kind: fn(Kind) -> bool) -> Result<(Option<&'a str>, Kind)> {
        let Some(i) = self.declared.iter().position(|d| d.name == name) else {
            return Err(Error::Internal(format!(
                "query parameter {name} is read but not declared"
            )));
        };
        let declared = self.declared[i].kind;
        if !kind(declared) {
            return Err(Error::Internal(format!(
                "query parameter {name} is read as another kind than declared"
            )));
        }
        self.asked.set(self.asked.get() | (1 << i));
        Ok((self.query.get(name).map(String::as_str), declared))
    }

    /// A text (or enumerated) parameter.
    pub fn text(&self, name: &str) -> Result<Option<String>> {
        let (raw, _) = self.raw(name, |k| matches!(k, Kind::Text | Kind::Enum(_)))?;
        Ok(raw.map(str::to_string))
    }

    /// An int64 parameter.
    pub fn int(&self, name: &str) -> Result<Option<i64>> {
        let (raw, _) = self.raw(name, |k| k == Kind::Int)?;
        raw.map(|raw| {
            raw.trim().parse::<i64>().map_err(|_| {
                Error::bad_request(format!(
                    "{name}: {} is not an integer",
                    shared::error::quoted(raw)
                ))
            })
        })
        .transpose()
    }

    /// A bounded int64 parameter, its default when absent.
    pub fn bounded(&self, name: &str) -> Result<i64> {
        let (_, kind) = self.raw(name, |k| matches!(k, Kind::Bounded { .. }))?;
        let Kind::Bounded { min, max, default } = kind else {
            return Err(Error::Internal(format!("{name} is not bounded")));
        };
        shared::web::listing::int_param(self.query, name, default, min, max.unwrap_or(i64::MAX))
    }

    /// A boolean parameter (`true` or `false`, any case).
    pub fn boolean(&self, name: &str) -> Result<Option<bool>> {
        let (raw, _) = self.raw(name, |k| k == Kind::Bool)?;
        raw.map(|raw| match raw.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(Error::bad_request(format!(
                "{name}: {} is not true or false",
                shared::error::quoted(raw)
            ))),
        })
        .transpose()
    }

    /// A date-time parameter in stored form (a date alone is midnight in `tz`).
    pub fn time(&self, name: &str, tz: chrono_tz::Tz) -> Result<Option<String>> {
        let (raw, _) = self.raw(name, |k| k == Kind::Time)?;
        raw.map(|raw| shared::domain::parse_time(name, raw, tz))
            .transpose()
    }

    /// Whether every declared parameter was asked for.
    #[cfg(test)]
    fn asked_all(&self) -> bool {
        self.asked.get().count_ones() as usize == self.declared.len()
    }
}

/// The filters of `GET /ledgers`.
pub fn ledger_filter(q: &Query) -> Result<LedgerFilter> {
    ledger_filter_of(&Read::new(q, LEDGER_FILTERS))
}

fn ledger_filter_of(r: &Read) -> Result<LedgerFilter> {
    Ok(LedgerFilter {
        id: r.int("id")?,
        name: r.text("name")?,
        status: r.text("status")?,
        convert_currency: r.text("convert_currency")?,
        conversion_currency: r.text("conversion_currency")?,
        chart_of_account_id: r.int("chart_of_account_id")?,
        rule_set_id: r.int("rule_set_id")?,
    })
}

/// The filters of `GET /ledgers/chargeinfos` (`merged`: of `/ledgers/merged-chargeinfos`,
/// which takes neither is_parent, parent_id nor max_records).
pub fn charge_info_filter(q: &Query, tz: chrono_tz::Tz, merged: bool) -> Result<ChargeInfoFilter> {
    let declared = if merged {
        MERGED_CHARGE_INFO_FILTERS
    } else {
        CHARGE_INFO_FILTERS
    };
    charge_info_filter_of(&Read::new(q, declared), tz, merged)
}

fn charge_info_filter_of(r: &Read, tz: chrono_tz::Tz, merged: bool) -> Result<ChargeInfoFilter> {
    Ok(ChargeInfoFilter {
        billing_account: r.text("billing_account")?,
        invoice_number: r.text("invoice_number")?,
        charge_info_type: r.text("charge_info_type")?,
        charge_category: r.text("charge_category")?,
        created_from: r.time("created_from", tz)?,
        created_to: r.time("created_to", tz)?,
        is_parent: if merged {
            None
        } else {
            r.boolean("is_parent")?
        },
        service_id: r.int("service_id")?,
        product_id: r.int("product_id")?,
        order_number: r.text("order_number")?,
        parent_id: if merged { None } else { r.int("parent_id")? },
        max_records: if merged {
            i64::MAX
        } else {
            r.bounded("max_records")?
        },
    })
}

/// The filters of `GET /ledgers/{id}/chargeinfos`.
pub fn ledger_charge_info_filter(q: &Query, tz: chrono_tz::Tz) -> Result<LedgerChargeInfoFilter> {
    ledger_charge_info_filter_of(&Read::new(q, LEDGER_CHARGE_INFO_FILTERS), tz)
}

fn ledger_charge_info_filter_of(r: &Read, tz: chrono_tz::Tz) -> Result<LedgerChargeInfoFilter> {
    Ok(LedgerChargeInfoFilter {
        gl_event_id: r.int("gl_event_id")?,
        created_from: r.time("created_from", tz)?,
        created_to: r.time("created_to", tz)?,
        updated_from: r.time("updated_from", tz)?,
        updated_to: r.time("updated_to", tz)?,
    })
}

/// `group` and `category` of `GET /collectors`.
pub fn collector_filter(q: &Query) -> Result<(Option<String>, Option<String>)> {
    collector_filter_of(&Read::new(q, COLLECTOR_FILTERS))
}

fn collector_filter_of(r: &Read) -> Result<(Option<String>, Option<String>)> {
    Ok((r.text("group")?, r.text("category")?))
}

/// `status` of `GET /glruns`.
pub fn gl_run_filter(q: &Query) -> Result<Option<String>> {
    gl_run_filter_of(&Read::new(q, GL_RUN_FILTERS))
}

fn gl_run_filter_of(r: &Read) -> Result<Option<String>> {
    r.text("status")
}

/// `generate-periods` of `POST /ledgers/{id}/calendar/years` (default false).
pub fn generate_periods(q: &Query) -> Result<bool> {
    generate_periods_of(&Read::new(q, YEAR_PARAMS))
}

fn generate_periods_of(r: &Read) -> Result<bool> {
    Ok(r.boolean("generate-periods")?.unwrap_or(false))
}

/// `batch_size` of `POST /replication/svs`.
pub fn batch_size(q: &Query) -> Result<i64> {
    batch_size_of(&Read::new(q, REPLICATION_PARAMS))
}

fn batch_size_of(r: &Read) -> Result<i64> {
    r.bounded("batch_size")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asks `read` to read an empty query under `declared`: it must succeed having asked for
    /// every declared parameter.
    fn reads_all<T>(declared: &'static [Param], read: impl Fn(&Read) -> Result<T>) -> bool {
        let q = Query::new();
        let r = Read::new(&q, declared);
        read(&r).is_ok() && r.asked_all()
    }

    /// Each reader asks for exactly the parameters its list declares: none undeclared (an
    /// internal error), none declared and left unread (documented but ignored).
    #[test]
    fn every_reader_reads_what_its_list_declares() {
        let tz = chrono_tz::UTC;
        assert!(reads_all(LEDGER_FILTERS, ledger_filter_of));
        assert!(reads_all(CHARGE_INFO_FILTERS, |r| {
            charge_info_filter_of(r, tz, false)
        }));
        assert!(reads_all(MERGED_CHARGE_INFO_FILTERS, |r| {
            charge_info_filter_of(r, tz, true)
        }));
        assert!(reads_all(LEDGER_CHARGE_INFO_FILTERS, |r| {
            ledger_charge_info_filter_of(r, tz)
        }));
        assert!(reads_all(COLLECTOR_FILTERS, collector_filter_of));
        assert!(reads_all(GL_RUN_FILTERS, gl_run_filter_of));
        assert!(reads_all(YEAR_PARAMS, generate_periods_of));
        assert!(reads_all(REPLICATION_PARAMS, batch_size_of));
        // A list that declares more than its reader reads fails the check.
        assert!(!reads_all(CHARGE_INFO_FILTERS, |r| {
            charge_info_filter_of(r, tz, true)
        }));
    }

    #[test]
    fn an_undeclared_parameter_or_another_kind_is_an_internal_error() {
        let q = Query::new();
        let r = Read::new(&q, GL_RUN_FILTERS);
        assert!(matches!(r.int("status"), Err(Error::Internal(_))));
        assert!(matches!(r.text("name"), Err(Error::Internal(_))));
    }
}
