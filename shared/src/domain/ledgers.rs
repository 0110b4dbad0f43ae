//! AR ledgers: the ledger record with the reference records it names (charts of accounts,
//! rule sets), created, read, listed, updated and deleted. Its accounting calendar is
//! [`super::calendars`]; its runs are [`super::glrun`].
//!
//! Create and update take the same [`LedgerFields`] and check them with the same rules:
//! a name unused by other ledgers, known enums, currency and time zone, and references that
//! exist. Create fills the defaults (ACTIVE, NONE, UTC; Surface C's handler names the
//! tenant's zone when the body names none); update keeps what a body omits, clears a
//! nullable field the body sends as null (a 400 for a field every ledger has), and ignores
//! what a ledger renders but no body sets (`valid`, `calendar`, the list's names), so a
//! client may PUT back what it read.

use super::calendars::view::{load_calendar, Calendar};
use super::{check_currency, check_enum, insert, require};
use crate::query::{FieldKind as K, FieldSpec as F, ListSource, Page, Paged, Selection};
use crate::{Error, Result};
use rusqlite::{Connection, OptionalExtension, Transaction};
use serde::{Deserialize, Serialize};

pub use super::status::LedgerStatus;
/// Ledger statuses ([`LedgerStatus`]'s names).
pub const LEDGER_STATUSES: &[&str] = LedgerStatus::NAMES;
/// Ledger currency conversion modes.
pub const CONVERT_CURRENCY: &[&str] = &["NONE", "GL", "ACCOUNT_CATEGORY"];

/// A named reference record (chart of accounts, rule set).
#[derive(Debug, Clone, Deserialize)]
pub struct NewNamed {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Name.
    pub name: String,
}

/// Creates a chart of accounts.
pub fn create_chart_of_accounts(tx: &Transaction<'_>, c: &NewNamed) -> Result<i64> {
    insert(tx, "chart_of_accounts", &[("id", &c.id), ("name", &c.name)])
}

/// Creates a rule set.
pub fn create_rule_set(tx: &Transaction<'_>, c: &NewNamed) -> Result<i64> {
    insert(tx, "rule_sets", &[("id", &c.id), ("name", &c.name)])
}

/// The fields of a ledger, as a create or an update carries them. Each member but `id` is
/// absent (`None`), null (`Some(None)`) or a value. On create, `name` is required, and absent
/// or null members take their defaults (none for the nullable ones). On update, absent
/// members are kept, values replace the stored ones, null clears a nullable member, and null
/// on one a ledger always has (`name`, `status`, `convert_currency`,
/// `create_zero_amount_entries`, `timezone_name`) is a 400.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[schema(
    description = "Ledger fields. POST needs name (status and id are ignored; a null member takes its default). PUT: a member present replaces the stored value, null clears a nullable one (null on name, status, convert_currency, create_zero_amount_entries or timezone_name is a 400), an absent one is kept; id, when given, must equal the path's. Other members (what a Ledger renders besides: valid, calendar, the list's names) are ignored, so a ledger read may be sent back."
)]
pub struct LedgerFields {
    /// On create: an explicit id (seed data only). On update: must equal the path's id.
    pub id: Option<i64>,
    /// Unique name.
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = String, min_length = 1)]
    pub name: Option<Option<String>>,
    /// Description.
    #[serde(default, deserialize_with = "super::nullable")]
    pub description: Option<Option<String>>,
    /// One of [`LEDGER_STATUSES`], default ACTIVE.
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = ledger_status)]
    pub status: Option<Option<String>>,
    /// One of [`CONVERT_CURRENCY`], default NONE.
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = convert_currency)]
    pub convert_currency: Option<Option<String>>,
    /// Conversion currency.
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = crate::domain::enum_schemas::currency_or_null)]
    pub conversion_currency: Option<Option<String>>,
    /// Chart of accounts.
    #[serde(default, deserialize_with = "super::nullable")]
    pub chart_of_account_id: Option<Option<i64>>,
    /// Rule set.
    #[serde(default, deserialize_with = "super::nullable")]
    pub rule_set_id: Option<Option<i64>>,
    /// Actuals run mode.
    #[serde(default, deserialize_with = "super::nullable")]
    pub run_mode_actuals_id: Option<Option<i64>>,
    /// Conversion rate set.
    #[serde(default, deserialize_with = "super::nullable")]
    pub conversion_rate_set_id: Option<Option<String>>,
    /// Currency exchange version.
    #[serde(default, deserialize_with = "super::nullable")]
    pub currency_exchange_version: Option<Option<String>>,
    /// Billing account categories the ledger posts for (update: replaces the set; null: none).
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(max_items = 1000)]
    pub billing_account_category_ids: Option<Option<Vec<i64>>>,
    /// Expected customer lifetime (months).
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(minimum = 0, maximum = 1200)]
    pub expected_customer_lifetime: Option<Option<i64>>,
    /// Create zero-amount journal entries (default false).
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = bool)]
    pub create_zero_amount_entries: Option<Option<bool>>,
    /// IANA time zone of the ledger, default UTC (Surface C: the tenant's zone).
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = String)]
    pub timezone_name: Option<Option<String>>,
}

/// The value of a member, when the body gives one (absent and null alike: none).
fn given<T>(member: &Option<Option<T>>) -> Option<&T> {
    member.as_ref().and_then(Option::as_ref)
}

/// Longest `expected_customer_lifetime`, in months (100 years): a real ledger's is a few
/// years; a negative one means nothing.
pub const MAX_CUSTOMER_LIFETIME_MONTHS: i64 = 1200;
/// Most `billing_account_category_ids` in one body (duplicates count; they collapse when
/// stored): a tenant has a handful of categories, and the bound keeps a body from turning
/// into a million lookups.
pub const MAX_LEDGER_CATEGORIES: usize = 1000;

impl LedgerFields {
    /// 400 for a status, conversion mode or currency no ledger can have (what the list
    /// filters check too). Absent fields are not checked.
    fn check_values(&self) -> Result<()> {
        // Before the lookups below, so an overlong value is refused for its length.
        for (field, value) in [
            ("name", &self.name),
            ("description", &self.description),
            ("conversion_rate_set_id", &self.conversion_rate_set_id),
            ("currency_exchange_version", &self.currency_exchange_version),
            ("timezone_name", &self.timezone_name),
        ] {
            if let Some(v) = given(value) {
                super::check_text(field, v)?;
            }
        }
        if let Some(months) = given(&self.expected_customer_lifetime)
            .filter(|m| !(0..=MAX_CUSTOMER_LIFETIME_MONTHS).contains(*m))
        {
            return Err(Error::bad_request(format!(
                "expected_customer_lifetime: {months} is out of range 0..{MAX_CUSTOMER_LIFETIME_MONTHS} (months)"
            )));
        }
        if let Some(ids) = given(&self.billing_account_category_ids) {
            if ids.len() > MAX_LEDGER_CATEGORIES {
                return Err(Error::bad_request(format!(
                    "billing_account_category_ids: at most {MAX_LEDGER_CATEGORIES}, found {}",
                    ids.len()
                )));
            }
        }
        if let Some(s) = given(&self.status) {
            check_enum("status", s, LEDGER_STATUSES)?;
        }
        if let Some(c) = given(&self.convert_currency) {
            check_enum("convert_currency", c, CONVERT_CURRENCY)?;
        }
        if let Some(c) = given(&self.conversion_currency) {
            check_currency("conversion_currency", c)?;
        }
        Ok(())
    }

    /// 400 for null on a member every ledger has (an update cannot clear it).
    fn refuse_nulls(&self) -> Result<()> {
        for (field, null) in [
            ("name", self.name == Some(None)),
            ("status", self.status == Some(None)),
            ("convert_currency", self.convert_currency == Some(None)),
            (
                "create_zero_amount_entries",
                self.create_zero_amount_entries == Some(None),
            ),
            ("timezone_name", self.timezone_name == Some(None)),
        ] {
            if null {
                return Err(Error::bad_request(format!(
                    "{field} must not be null: every ledger has one (omit it to keep it)"
                )));
            }
        }
        Ok(())
    }

    /// [`Self::check_values`], then 400 for a bad time zone or an empty name, 404 for an
    /// unknown reference, 409 for a name used by a ledger other than `ledger_id`.
    fn check(&self, tx: &Transaction<'_>, ledger_id: Option<i64>) -> Result<()> {
        self.check_values()?;
        if let Some(tz) = given(&self.timezone_name) {
            if crate::time::parse_tz(tz).is_none() {
                return Err(Error::bad_request(format!(
                    "timezone_name: {} is not an IANA time zone",
                    crate::error::quoted(tz)
                )));
            }
        }
        if let Some(name) = given(&self.name) {
            if name.trim().is_empty() {
                return Err(Error::bad_request("name must not be empty"));
            }
            let taken = tx
                .prepare_cached(
                    "SELECT 1 FROM ledgers WHERE name = ?1 AND (?2 IS NULL OR id <> ?2)",
                )?
                .exists(rusqlite::params![name, ledger_id])?;
            if taken {
                return Err(Error::conflict(format!(
                    "a ledger named '{name}' already exists"
                )));
            }
        }
        if let Some(id) = given(&self.chart_of_account_id) {
            require(tx, "chart_of_accounts", "chart of accounts", *id)?;
        }
        if let Some(id) = given(&self.rule_set_id) {
            require(tx, "rule_sets", "rule set", *id)?;
        }
        if let Some(id) = given(&self.run_mode_actuals_id) {
            require(tx, "gl_run_modes", "run mode", *id)?;
        }
        Ok(())
    }
}

/// Replaces the billing account categories of ledger `id` with `categories` (each must exist).
fn set_categories(tx: &Transaction<'_>, id: i64, categories: &[i64]) -> Result<()> {
    tx.execute("DELETE FROM ledger_categories WHERE ledger_id = ?1", [id])?;
    for cat in categories {
        require(
            tx,
            "billing_account_categories",
            "billing account category",
            *cat,
        )?;
        tx.execute(
            "INSERT OR IGNORE INTO ledger_categories (ledger_id, billing_account_category_id)
             VALUES (?1, ?2)",
            rusqlite::params![id, cat],
        )?;
    }
    Ok(())
}

/// Creates an AR ledger with its (empty) calendar; the name is required and must be unused.
pub fn create_ledger(tx: &Transaction<'_>, l: &LedgerFields) -> Result<i64> {
    let Some(name) = given(&l.name).cloned() else {
        return Err(Error::bad_request("name is required"));
    };
    let or = |member: &Option<Option<String>>, default: &str| {
        Some(Some(
            given(member).map_or(default, String::as_str).to_string(),
        ))
    };
    let l = LedgerFields {
        status: or(&l.status, LedgerStatus::Active.as_str()),
        convert_currency: or(&l.convert_currency, "NONE"),
        timezone_name: or(&l.timezone_name, "UTC"),
        create_zero_amount_entries: Some(Some(given(&l.create_zero_amount_entries) == Some(&true))),
        ..l.clone()
    };
    l.check(tx, None)?;
    let id = insert(
        tx,
        "ledgers",
        &[
            ("id", &l.id),
            ("name", &name),
            ("description", &l.description),
            ("status", &l.status),
            ("convert_currency", &l.convert_currency),
            ("conversion_currency", &l.conversion_currency),
            ("chart_of_account_id", &l.chart_of_account_id),
            ("rule_set_id", &l.rule_set_id),
            ("run_mode_actuals_id", &l.run_mode_actuals_id),
            ("conversion_rate_set_id", &l.conversion_rate_set_id),
            ("currency_exchange_version", &l.currency_exchange_version),
            ("expected_customer_lifetime", &l.expected_customer_lifetime),
            ("create_zero_amount_entries", &l.create_zero_amount_entries),
            ("timezone_name", &l.timezone_name),
        ],
    )?;
    set_categories(
        tx,
        id,
        given(&l.billing_account_category_ids).map_or(&[], Vec::as_slice),
    )?;
    super::calendars::create_ledger_calendar(tx, id, &name)?;
    Ok(id)
}

/// Applies `u` to ledger `id`: 404 unknown ledger or reference, 400 bad value, 409 name in use.
pub fn update_ledger(tx: &Transaction<'_>, id: i64, u: &LedgerFields) -> Result<()> {
    require(tx, "ledgers", "ledger", id)?;
    if let Some(body_id) = u.id {
        if body_id != id {
            return Err(Error::bad_request(format!(
                "id: {body_id} does not match the ledger {id} of the path"
            )));
        }
    }
    u.refuse_nulls()?;
    u.check(tx, Some(id))?;
    // Absent members (`None`) keep the column; null (`Some(None)`) writes NULL.
    super::update(
        tx,
        "ledgers",
        id,
        &[
            ("name", &u.name),
            ("description", &u.description),
            ("status", &u.status),
            ("convert_currency", &u.convert_currency),
            ("conversion_currency", &u.conversion_currency),
            ("chart_of_account_id", &u.chart_of_account_id),
            ("rule_set_id", &u.rule_set_id),
            ("run_mode_actuals_id", &u.run_mode_actuals_id),
            ("conversion_rate_set_id", &u.conversion_rate_set_id),
            ("currency_exchange_version", &u.currency_exchange_version),
            ("expected_customer_lifetime", &u.expected_customer_lifetime),
            ("create_zero_amount_entries", &u.create_zero_amount_entries),
            ("timezone_name", &u.timezone_name),
        ],
    )?;
    if let Some(name) = given(&u.name) {
        super::calendars::rename_ledger_calendar(tx, id, name)?;
    }
    if let Some(categories) = &u.billing_account_category_ids {
        set_categories(tx, id, categories.as_deref().unwrap_or(&[]))?;
    }
    Ok(())
}

/// An AR ledger as rendered.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Ledger {
    /// Id.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// Description.
    #[schema(required = true)]
    pub description: Option<String>,
    /// ACTIVE or INACTIVE.
    #[schema(schema_with = ledger_status)]
    pub status: String,
    /// NONE, GL or ACCOUNT_CATEGORY.
    #[schema(schema_with = convert_currency)]
    pub convert_currency: String,
    /// Conversion currency.
    #[schema(schema_with = crate::domain::enum_schemas::currency_or_null, required = true)]
    pub conversion_currency: Option<String>,
    /// Chart of accounts.
    #[schema(required = true)]
    pub chart_of_account_id: Option<i64>,
    /// Rule set.
    #[schema(required = true)]
    pub rule_set_id: Option<i64>,
    /// Actuals run mode.
    #[schema(required = true)]
    pub run_mode_actuals_id: Option<i64>,
    /// Conversion rate set.
    #[schema(required = true)]
    pub conversion_rate_set_id: Option<String>,
    /// Currency exchange version.
    #[schema(required = true)]
    pub currency_exchange_version: Option<String>,
    /// Billing account categories the ledger posts for.
    pub billing_account_category_ids: Vec<i64>,
    /// Expected customer lifetime (months).
    #[schema(required = true)]
    pub expected_customer_lifetime: Option<i64>,
    /// Create zero-amount journal entries.
    pub create_zero_amount_entries: bool,
    /// IANA time zone.
    pub timezone_name: String,
    /// True when the ledger can run: chart of accounts, rule set and at least one year.
    pub valid: bool,
    /// The accounting calendar.
    pub calendar: Calendar,
}

/// A ledger as the list renders it: with the names of what it references.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = LedgerListItem)]
pub struct ListedLedger {
    /// The ledger.
    #[serde(flatten)]
    pub ledger: Ledger,
    /// Name of the chart of accounts.
    #[schema(required = true)]
    pub chart_of_account_name: Option<String>,
    /// Name of the rule set.
    #[schema(required = true)]
    pub rule_set_name: Option<String>,
    /// Name of the accounting calendar.
    #[schema(required = true)]
    pub accounting_calendar_name: Option<String>,
}

const LEDGER_COLUMNS: &str = "l.id, l.name, l.description, l.status, l.convert_currency,
    l.conversion_currency, l.chart_of_account_id, l.rule_set_id, l.run_mode_actuals_id,
    l.conversion_rate_set_id, l.currency_exchange_version, l.expected_customer_lifetime,
    l.create_zero_amount_entries, l.timezone_name";

fn ledger_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Ledger> {
    let tz: String = r.get(13)?;
    Ok(Ledger {
        id: r.get(0)?,
        name: r.get(1)?,
        description: r.get(2)?,
        status: r.get(3)?,
        convert_currency: r.get(4)?,
        conversion_currency: r.get(5)?,
        chart_of_account_id: r.get(6)?,
        rule_set_id: r.get(7)?,
        run_mode_actuals_id: r.get(8)?,
        conversion_rate_set_id: r.get(9)?,
        currency_exchange_version: r.get(10)?,
        billing_account_category_ids: Vec::new(),
        expected_customer_lifetime: r.get(11)?,
        create_zero_amount_entries: r.get(12)?,
        valid: false,
        calendar: Calendar {
            r#type: "CALENDAR",
            id: 0,
            path: Vec::new(),
            start_date: None,
            end_date: None,
            time_zone: tz.clone(),
            complete: false,
            years: Vec::new(),
        },
        timezone_name: tz,
    })
}

/// Fills what a ledger row does not carry: categories, calendar, validity.
fn complete_ledger(conn: &Connection, mut l: Ledger) -> Result<Ledger> {
    let mut stmt = conn.prepare_cached(
        "SELECT billing_account_category_id FROM ledger_categories WHERE ledger_id = ?1
         ORDER BY billing_account_category_id",
    )?;
    l.billing_account_category_ids = stmt
        .query_map([l.id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    l.calendar = load_calendar(conn, l.id, &l.timezone_name)?;
    l.valid =
        l.chart_of_account_id.is_some() && l.rule_set_id.is_some() && !l.calendar.years.is_empty();
    Ok(l)
}

/// Reads one ledger with its calendar; 404 when it does not exist.
pub fn get_ledger(conn: &Connection, id: i64) -> Result<Ledger> {
    let row = conn
        .query_row(
            &format!("SELECT {LEDGER_COLUMNS} FROM ledgers l WHERE l.id = ?1"),
            [id],
            ledger_row,
        )
        .optional()?
        .ok_or_else(|| Error::not_found(format!("ledger {id} does not exist")))?;
    complete_ledger(conn, row)
}

/// The ledger list: its named filters are the fields of [`LedgerFilter`], each declared once
/// here (name, kind, column); Surface C reads and documents its query parameters from it.
pub static LEDGER_LIST: ListSource = ListSource {
    noun: "ledger",
    fields: &[
        F::new("id", "l.id", K::Integer),
        F::new("name", "l.name", K::Text),
        F::new("status", "l.status", K::Enum(LEDGER_STATUSES)),
        F::new(
            "convert_currency",
            "l.convert_currency",
            K::Enum(CONVERT_CURRENCY),
        ),
        F::new(
            "conversion_currency",
            "l.conversion_currency",
            K::Enum(crate::money::CURRENCY_CODES),
        ),
        F::new("chart_of_account_id", "l.chart_of_account_id", K::Integer),
        F::new("rule_set_id", "l.rule_set_id", K::Integer),
    ],
    named_filters: &[
        "id",
        "name",
        "status",
        "convert_currency",
        "conversion_currency",
        "chart_of_account_id",
        "rule_set_id",
    ],
    from: "ledgers l LEFT JOIN chart_of_accounts c ON c.id = l.chart_of_account_id
         LEFT JOIN rule_sets r ON r.id = l.rule_set_id",
    id: "l.id",
};

/// The filters of the ledger list ([`LEDGER_LIST`]'s named filters); `None` does not filter.
#[derive(Debug, Default, Clone)]
pub struct LedgerFilter {
    /// Ledger id.
    pub id: Option<i64>,
    /// Exact name.
    pub name: Option<String>,
    /// One of [`LEDGER_STATUSES`].
    pub status: Option<String>,
    /// One of [`CONVERT_CURRENCY`].
    pub convert_currency: Option<String>,
    /// A currency code.
    pub conversion_currency: Option<String>,
    /// Chart of accounts.
    pub chart_of_account_id: Option<i64>,
    /// Rule set.
    pub rule_set_id: Option<i64>,
}

impl LedgerFilter {
    /// 400 for a status, conversion mode or currency that no ledger can have.
    fn check(&self) -> Result<()> {
        LedgerFields {
            status: self.status.clone().map(Some),
            convert_currency: self.convert_currency.clone().map(Some),
            conversion_currency: self.conversion_currency.clone().map(Some),
            ..LedgerFields::default()
        }
        .check_values()
    }
}

/// One page of ledgers matching `f`, by id.
pub fn list_ledgers(
    conn: &Connection,
    f: &LedgerFilter,
    page: Page,
) -> Result<Paged<ListedLedger>> {
    f.check()?;
    let list = &LEDGER_LIST;
    let rows = Selection::new(list.id)
        .narrow(list, "id", f.id)?
        .narrow(list, "name", f.name.clone())?
        .narrow(list, "status", f.status.clone())?
        .narrow(list, "convert_currency", f.convert_currency.clone())?
        .narrow(list, "conversion_currency", f.conversion_currency.clone())?
        .narrow(list, "chart_of_account_id", f.chart_of_account_id)?
        .narrow(list, "rule_set_id", f.rule_set_id)?
        .page(page)
        .fetch_paged(
            conn,
            &format!("{LEDGER_COLUMNS}, c.name, r.name"),
            list.from,
            |r| {
                Ok((
                    ledger_row(r)?,
                    r.get::<_, Option<String>>(14)?,
                    r.get::<_, Option<String>>(15)?,
                ))
            },
        )?;
    let mut items = Vec::with_capacity(rows.items.len());
    for (ledger, chart, rules) in rows.items {
        let ledger = complete_ledger(conn, ledger)?;
        let calendar_name: Option<String> = conn.query_row(
            "SELECT name FROM calendar_nodes WHERE id = ?1",
            [ledger.calendar.id],
            |r| r.get(0),
        )?;
        items.push(ListedLedger {
            ledger,
            chart_of_account_name: chart,
            rule_set_name: rules,
            accounting_calendar_name: calendar_name,
        });
    }
    Ok(Paged {
        items,
        total: rows.total,
        page,
    })
}

/// Deletes a ledger with its calendar, its ledger runs and everything they posted.
pub fn delete_ledger(tx: &Transaction<'_>, id: i64) -> Result<()> {
    require(tx, "ledgers", "ledger", id)?;
    super::glrun::delete_ledger_runs(tx, id)?;
    tx.execute("DELETE FROM ledgers WHERE id = ?1", [id])?;
    Ok(())
}

/// A ledger's status: its JSON Schema, for the OpenAPI derives.
pub fn ledger_status() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(LEDGER_STATUSES)
}

/// A ledger's currency conversion: its JSON Schema, for the OpenAPI derives.
pub fn convert_currency() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(CONVERT_CURRENCY)
}

super::fixture_columns_writer!("chart_of_accounts", "rule_sets", "ledgers");
