//! Bill batches with their runs and invoices, and the billing accounts of a batch, as
//! Surface B lists and renders them (with `expand`); their rules are
//! `crate::domain::bill_batches`.

use super::{id_text, load_children, load_in_order, named_ref, number, time};
use super::{AccountRef, IdRef, List, NamedRef, Parent, RenderContext};
use crate::domain::bill_batches::{BillBatchStatus, BILL_BATCH_STATUSES, BILL_BATCH_TYPES};
use crate::domain::CURRENCY_CODES;
use crate::money::Number;
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};
use crate::{Error, Result};
use rusqlite::Connection;
use serde::Serialize;

const ACCOUNTS_VIA: &str = "bill_batch_accounts bba JOIN billing_accounts bacc \
    ON bacc.id = bba.billing_account_id WHERE bba.bill_batch_id = b.id";

/// Filter and sort whitelist of bill batches.
pub static FIELDS: &[F] = &[
    F::new("id", "b.id", K::Integer).sortable(),
    F::new(
        "bill_batch_type",
        "b.bill_batch_type",
        K::Enum(BILL_BATCH_TYPES),
    )
    .sortable(),
    F::new("name", "b.name", K::Text).sortable(),
    F::new("description", "b.description", K::Text),
    F::new("end_date", "b.end_date", K::DateTime).sortable(),
    F::new("invoice_date", "b.invoice_date", K::DateTime).sortable(),
    F::new("invoice_due_date", "b.invoice_due_date", K::DateTime).sortable(),
    F::new("auto_approve", "b.auto_approve", K::Bool),
    F::new("use_payment_term", "b.use_payment_term", K::Bool),
    F::new("internal_render", "b.internal_render", K::Bool),
    F::new("currency_code", "b.currency_code", K::Enum(CURRENCY_CODES)).sortable(),
    F::new("status", "b.status", K::Enum(BILL_BATCH_STATUSES)).sortable(),
    F::new(
        "billing_account_category.id",
        "b.billing_account_category_id",
        K::Integer,
    ),
    F::new("billing_account_id", "bacc.id", K::Integer).via(ACCOUNTS_VIA),
    F::new("account_num", "bacc.account_num", K::Text).via(ACCOUNTS_VIA),
    F::new("external_account_num", "bacc.external_account_num", K::Text).via(ACCOUNTS_VIA),
];

/// The bill batch list.
pub static SOURCE: ListSource = ListSource {
    noun: "bill batch",
    fields: FIELDS,
    named_filters: &[
        "bill_batch_type",
        "name",
        "status",
        "currency_code",
        "billing_account_id",
        "account_num",
        "external_account_num",
    ],
    from: "bill_batches b",
    id: "b.id",
};

/// What the bill batch list assumes when the client names no status.
pub const DEFAULTS: &[(&str, &str)] = &[("status", BillBatchStatus::Active.as_str())];

/// Filter and sort whitelist of the billing accounts of a batch.
pub static ACCOUNT_FIELDS: &[F] = &[
    F::new("id", "ba.id", K::Integer).sortable(),
    F::new("account_num", "ba.account_num", K::Text).sortable(),
    F::new("external_account_num", "ba.external_account_num", K::Text).sortable(),
];

/// The billing accounts of one batch (scoped by [`BY_BILL_BATCH`]).
pub static ACCOUNTS_SOURCE: ListSource = ListSource {
    noun: "billing account",
    fields: ACCOUNT_FIELDS,
    named_filters: &["account_num", "external_account_num"],
    from: "bill_batch_accounts bba JOIN billing_accounts ba ON ba.id = bba.billing_account_id",
    id: "ba.id",
};

/// The billing accounts of one batch (over [`ACCOUNTS_SOURCE`]'s alias `bba`).
pub const BY_BILL_BATCH: Parent = Parent {
    table: "bill_batches",
    noun: "bill batch",
    condition: "bba.bill_batch_id = ?",
};

/// The bill batch list as Surface B serves it: status ACTIVE unless the client names one;
/// `expand` of runs and invoices.
pub const LIST: List<BillBatch> = List {
    defaults: DEFAULTS,
    expand: EXPANDABLE,
    ..List::plain(&SOURCE, load)
};

/// The billing accounts of a bill batch as Surface B serves them.
pub const ACCOUNTS_LIST: List<AccountRef> = List::plain(&ACCOUNTS_SOURCE, load_accounts);

/// An invoice inside a run.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Invoice {
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
    #[schema(required = false)]
    invoice_type: String,
    #[schema(required = false)]
    invoice_num: String,
    #[schema(required = false)]
    external_invoice_num: Option<String>,
    #[schema(schema_with = crate::json_schema::decimal_or_null)]
    amount: Option<Number>,
    #[schema(required = false)]
    description: Option<String>,
    #[schema(required = false)]
    billing_account: AccountRef,
    #[schema(required = false)]
    original_billing_account: Option<IdRef>,
}

/// A run's `invoices`: each an `Invoice` (whole with the `invoices` expansion, else `{id}`).
fn invoices() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(utoipa::openapi::Ref::from_schema_name("Invoice"))
        .build()
}

/// A batch's `bill_batch_runs`: each a `BillBatchRun` (whole when expanded, else `{id}`).
fn runs() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(utoipa::openapi::Ref::from_schema_name("BillBatchRun"))
        .build()
}

/// An entry of a collection: a reference, or the whole object when expanded.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Entry<T> {
    /// `{id}` only.
    Ref(IdRef),
    /// Expanded.
    Full(T),
}

/// A run of a bill batch.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = BillBatchRun, description = "A bill batch run; without expand only {id}.")]
pub struct Run {
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
    #[schema(schema_with = invoices, required = false)]
    invoices: Vec<Entry<Invoice>>,
    #[schema(required = false)]
    bill_run_type: String,
    #[schema(required = false)]
    step_status: Option<String>,
    #[schema(required = false)]
    sequence: i32,
    #[schema(required = false)]
    step: Option<String>,
    #[schema(required = false)]
    status: String,
    #[schema(format = DateTime)]
    status_date: Option<String>,
    #[schema(format = DateTime)]
    open_date: Option<String>,
    #[schema(format = DateTime)]
    close_date: Option<String>,
    #[schema(format = DateTime)]
    scheduled_run_date: Option<String>,
    #[schema(format = DateTime)]
    invoice_due_date: Option<String>,
    #[schema(format = DateTime)]
    invoice_date: Option<String>,
    #[schema(required = false)]
    processed_invoice_count: i64,
    #[schema(required = false)]
    error_msg: Option<String>,
    #[schema(required = false)]
    use_payment_term: bool,
}

/// A bill batch as Surface B renders it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BillBatch {
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
    bill_batch_type: String,
    #[schema(required = true)]
    description: Option<String>,
    #[schema(format = DateTime, required = true)]
    end_date: Option<String>,
    /// The invoice date the batch was created with (a POST field).
    #[schema(format = DateTime, required = true)]
    invoice_date: Option<String>,
    /// The invoice due date the batch was created with (a POST field).
    #[schema(format = DateTime, required = true)]
    invoice_due_date: Option<String>,
    auto_approve: bool,
    name: String,
    use_payment_term: bool,
    internal_render: bool,
    currency_code: String,
    #[schema(schema_with = crate::domain::enum_schemas::bill_batch_status)]
    status: String,
    #[schema(required = true)]
    billing_account_category: Option<NamedRef>,
    #[schema(schema_with = runs)]
    bill_batch_runs: Vec<Entry<Run>>,
}

/// Sub-entity names `expand` accepts.
pub const EXPANDABLE: &[&str] = &["bill_batch_runs", "bill_batch_runs.invoices", "invoices"];

/// Reads `expand` (comma list of [`EXPANDABLE`] names) into `ctx`.
pub fn read_expand(expand: Option<&str>, ctx: &mut RenderContext) -> Result<()> {
    for name in expand
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        match name {
            "bill_batch_runs" => ctx.expand_runs = true,
            "bill_batch_runs.invoices" | "invoices" => {
                ctx.expand_runs = true;
                ctx.expand_invoices = true;
            }
            other => {
                return Err(Error::bad_request(format!(
                    "expand: '{other}' is not one of {}",
                    EXPANDABLE.join(", ")
                )))
            }
        }
    }
    Ok(())
}

fn load_invoices(
    conn: &Connection,
    runs: &[i64],
    ctx: &RenderContext,
) -> Result<std::collections::HashMap<i64, Vec<Entry<Invoice>>>> {
    let expand = ctx.expand_invoices;
    load_children(
        conn,
        "SELECT i.*, ba.account_num, ba.external_account_num FROM invoices i
         JOIN billing_accounts ba ON ba.id = i.billing_account_id WHERE i.bill_batch_run_id",
        "i.id",
        runs,
        |r| {
            let id: i64 = r.get("id")?;
            let entry = if expand {
                Entry::Full(Invoice {
                    id: id_text(id),
                    invoice_type: r.get("invoice_type")?,
                    invoice_num: r.get("invoice_num")?,
                    external_invoice_num: r.get("external_invoice_num")?,
                    amount: number(r, "amount")?,
                    description: r.get("description")?,
                    billing_account: AccountRef {
                        account_num: r.get("account_num")?,
                        external_account_num: r.get("external_account_num")?,
                        cpq_discounts: Vec::new(),
                        id: id_text(r.get("billing_account_id")?),
                    },
                    original_billing_account: r
                        .get::<_, Option<i64>>("original_billing_account_id")?
                        .map(|i| IdRef { id: id_text(i) }),
                })
            } else {
                Entry::Ref(IdRef { id: id_text(id) })
            };
            Ok((r.get("bill_batch_run_id")?, entry))
        },
    )
}

fn load_runs(
    conn: &Connection,
    batches: &[i64],
    ctx: &RenderContext,
) -> Result<std::collections::HashMap<i64, Vec<Entry<Run>>>> {
    let tz = ctx.tz;
    let run_ids: Vec<i64> = if ctx.expand_runs && !batches.is_empty() {
        let marks = vec!["?"; batches.len()].join(", ");
        let mut stmt = conn.prepare(&format!(
            "SELECT id FROM bill_batch_runs WHERE bill_batch_id IN ({marks})"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(batches.iter()), |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    } else {
        Vec::new()
    };
    let mut invoices = load_invoices(conn, &run_ids, ctx)?;
    let expand = ctx.expand_runs;
    load_children(
        conn,
        "SELECT * FROM bill_batch_runs WHERE bill_batch_id",
        "sequence, id",
        batches,
        |r| {
            let id: i64 = r.get("id")?;
            let entry = if expand {
                Entry::Full(Run {
                    id: id_text(id),
                    invoices: invoices.remove(&id).unwrap_or_default(),
                    bill_run_type: r.get("bill_run_type")?,
                    step_status: r.get("step_status")?,
                    sequence: r.get("sequence")?,
                    step: r.get("step")?,
                    status: r.get("status")?,
                    status_date: time(r, "status_date", tz)?,
                    open_date: time(r, "open_date", tz)?,
                    close_date: time(r, "close_date", tz)?,
                    scheduled_run_date: time(r, "scheduled_run_date", tz)?,
                    invoice_due_date: time(r, "invoice_due_date", tz)?,
                    invoice_date: time(r, "invoice_date", tz)?,
                    processed_invoice_count: r.get("processed_invoice_count")?,
                    error_msg: r.get("error_msg")?,
                    use_payment_term: r.get("use_payment_term")?,
                })
            } else {
                Entry::Ref(IdRef { id: id_text(id) })
            };
            Ok((r.get("bill_batch_id")?, entry))
        },
    )
}

/// Loads bill batches by id, in the order given.
pub fn load(conn: &Connection, ids: &[i64], ctx: &RenderContext) -> Result<Vec<BillBatch>> {
    let tz = ctx.tz;
    let mut runs = load_runs(conn, ids, ctx)?;
    load_in_order(
        conn,
        "SELECT b.*, c.name AS category_name FROM bill_batches b
         LEFT JOIN billing_account_categories c ON c.id = b.billing_account_category_id
         WHERE b.id",
        ids,
        |r| {
            let id: i64 = r.get("id")?;
            Ok((
                id,
                BillBatch {
                    id: id_text(id),
                    bill_batch_type: r.get("bill_batch_type")?,
                    description: r.get("description")?,
                    end_date: time(r, "end_date", tz)?,
                    invoice_date: time(r, "invoice_date", tz)?,
                    invoice_due_date: time(r, "invoice_due_date", tz)?,
                    auto_approve: r.get("auto_approve")?,
                    name: r.get("name")?,
                    use_payment_term: r.get("use_payment_term")?,
                    internal_render: r.get("internal_render")?,
                    currency_code: r.get("currency_code")?,
                    status: r.get("status")?,
                    billing_account_category: named_ref(
                        r,
                        "billing_account_category_id",
                        "category_name",
                    )?,
                    bill_batch_runs: runs.remove(&id).unwrap_or_default(),
                },
            ))
        },
    )
}

/// Loads billing account references by id, in the order given.
pub fn load_accounts(conn: &Connection, ids: &[i64], _: &RenderContext) -> Result<Vec<AccountRef>> {
    load_in_order(
        conn,
        "SELECT id, account_num, external_account_num FROM billing_accounts WHERE id",
        ids,
        |r| {
            let id: i64 = r.get("id")?;
            Ok((
                id,
                AccountRef {
                    account_num: r.get("account_num")?,
                    external_account_num: r.get("external_account_num")?,
                    cpq_discounts: Vec::new(),
                    id: id_text(id),
                },
            ))
        },
    )
}
