//! Query-string parsing of Surface C: each endpoint's query parameters are declared once
//! ([`Declared`]): a list's filters are the named filters of the domain's list source that
//! the list reads through (`ledgers::LEDGER_LIST`, `chargeinfo::CHARGE_INFO_LIST`, ...:
//! name, kind, the condition each narrows by, declared once there), followed by the
//! endpoint's parameters of its own ([`Param`]: caps, switches). The route table
//! (`crate::routes`) documents those parameters and the handlers read the domain's typed
//! filters through them ([`Read`]), each parameter as its kind says, in Surface C's
//! conventions (a malformed one is a 400 naming it, in Surface C's words).
//!
//! Invariant: a reader asks only for parameters its endpoint declares, with the declared
//! kind (else an internal error, which every test of the endpoint would meet), and reads
//! every parameter it declares (the unit tests check each declaration).

use rusqlite::types::Value as SqlValue;
use shared::domain::chargeinfo::{
    ChargeInfoFilter, LedgerChargeInfoFilter, CHARGE_INFO_LIST, DEFAULT_MAX_RECORDS,
    LEDGER_CHARGE_INFO_LIST, MERGED_CHARGE_INFO_LIST,
};
use shared::domain::glrun::RUN_LIST;
use shared::domain::ledgers::{LedgerFilter, LEDGER_LIST};
use shared::query::{FieldKind, ListSource};
use shared::web::Surface;
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

impl Kind {
    /// The kind of a list source's field as a query parameter. Surface C's lists declare no
    /// decimal filter; one would be read and documented as text.
    fn of(kind: FieldKind) -> Kind {
        match kind {
            FieldKind::Text | FieldKind::Decimal => Kind::Text,
            FieldKind::Integer => Kind::Int,
            FieldKind::Bool => Kind::Bool,
            FieldKind::DateTime => Kind::Time,
            FieldKind::Enum(values) => Kind::Enum(values),
        }
    }
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

/// The query parameters of an endpoint: the named filters of the list source it reads
/// through, if any, then its own.
#[derive(Debug, Clone, Copy)]
pub struct Declared {
    /// The list source whose named filters are query parameters.
    pub list: Option<&'static ListSource>,
    /// Parameters of the endpoint's own, after the list's.
    pub own: &'static [Param],
}

impl Declared {
    /// No query parameters.
    pub const NONE: Declared = Declared::own(&[]);

    /// The named filters of `list`.
    const fn list(list: &'static ListSource) -> Declared {
        Declared {
            list: Some(list),
            own: &[],
        }
    }

    /// Parameters of the endpoint's own only.
    const fn own(own: &'static [Param]) -> Declared {
        Declared { list: None, own }
    }

    /// Every parameter, in the order documented: the list's named filters, then its own.
    pub fn params(&self) -> Vec<Param> {
        let filters = self.list.into_iter().flat_map(|list| {
            list.named_filters.iter().filter_map(|name| {
                list.field(name)
                    .map(|f| p(f.name, Kind::of(f.kind), f.description))
            })
        });
        filters.chain(self.own.iter().copied()).collect()
    }
}

/// The filters of `GET /ledgers`.
pub const LEDGER_FILTERS: Declared = Declared::list(&LEDGER_LIST);

/// The parameter of `POST /ledgers/{id}/calendar/years`.
pub const YEAR_PARAMS: Declared =
    Declared::own(&[p("generate-periods", Kind::Bool, Some("Default false"))]);

/// The filters of `GET /collectors` (matched in memory over the stored and the platform's
/// collectors, so no list source: see `collect::list_collectors`).
pub const COLLECTOR_FILTERS: Declared = Declared::own(&[
    p("group", Kind::Text, None),
    p("category", Kind::Text, None),
]);

/// The filter of `GET /glruns`.
pub const GL_RUN_FILTERS: Declared = Declared::list(&RUN_LIST);

/// The filters of `GET /ledgers/merged-chargeinfos`: those of the charge info list except
/// is_parent, parent_id and max_records (the merged list is not capped).
pub const MERGED_CHARGE_INFO_FILTERS: Declared = Declared::list(&MERGED_CHARGE_INFO_LIST);

/// The filters of `GET /ledgers/chargeinfos`, then the cap of the list.
pub const CHARGE_INFO_FILTERS: Declared = Declared {
    list: Some(&CHARGE_INFO_LIST),
    own: &[p(
        "max_records",
        Kind::Bounded {
            min: 1,
            max: None,
            default: DEFAULT_MAX_RECORDS,
        },
        Some("Caps the matching set; default 1000"),
    )],
};

/// The filters of `GET /ledgers/{id}/chargeinfos`.
pub const LEDGER_CHARGE_INFO_FILTERS: Declared = Declared::list(&LEDGER_CHARGE_INFO_LIST);

/// The parameter of `POST /replication/svs`.
pub const REPLICATION_PARAMS: Declared = Declared::own(&[p(
    "batch_size",
    Kind::Bounded {
        min: shared::domain::analytics_export::BATCH_SIZE_RANGE.0,
        max: Some(shared::domain::analytics_export::BATCH_SIZE_RANGE.1),
        default: shared::domain::analytics_export::BATCH_SIZE_RANGE.2,
    },
    Some("Default 1000"),
)]);

/// A parameter's value read by Surface C's conventions (`listing::filter_value`, the one
/// reader of a named filter's value for the surfaces that take them as parameters).
fn read(name: &str, kind: FieldKind, raw: &str, tz: chrono_tz::Tz) -> Result<SqlValue> {
    shared::web::listing::filter_value(Surface::Revenue, name, kind, raw, tz)
}

/// Reads a request's query parameters as one declared list says.
pub struct Read<'a> {
    query: &'a Query,
    declared: Vec<Param>,
    /// Bit i: the i-th declared parameter was asked for.
    asked: Cell<u64>,
}

impl<'a> Read<'a> {
    /// A reader of `query` under `declared`.
    pub fn new(query: &'a Query, declared: Declared) -> Read<'a> {
        Read {
            query,
            declared: declared.params(),
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
        raw.map(
            |raw| match read(name, FieldKind::Integer, raw, chrono_tz::UTC)? {
                SqlValue::Integer(i) => Ok(i),
                _ => Err(Error::Internal(format!(
                    "{name} was not read as an integer"
                ))),
            },
        )
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
        raw.map(
            |raw| match read(name, FieldKind::Bool, raw, chrono_tz::UTC)? {
                SqlValue::Integer(i) => Ok(i != 0),
                _ => Err(Error::Internal(format!("{name} was not read as a boolean"))),
            },
        )
        .transpose()
    }

    /// A date-time parameter in stored form (a date alone is midnight in `tz`).
    pub fn time(&self, name: &str, tz: chrono_tz::Tz) -> Result<Option<String>> {
        let (raw, _) = self.raw(name, |k| k == Kind::Time)?;
        raw.map(|raw| match read(name, FieldKind::DateTime, raw, tz)? {
            SqlValue::Text(t) => Ok(t),
            _ => Err(Error::Internal(format!(
                "{name} was not read as a date-time"
            ))),
        })
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
    fn reads_all<T>(declared: Declared, read: impl Fn(&Read) -> Result<T>) -> bool {
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
