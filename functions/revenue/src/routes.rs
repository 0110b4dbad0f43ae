//! The route table of Surface C: every endpoint once, with the handler that serves it and
//! what its OpenAPI document says of it. The router (mounted under both base paths,
//! `/revenue/3` and the platform's `/calypso/3`) and the document (`crate::openapi`) are
//! built from this table, so they cannot drift apart. A row's query parameters are the
//! declared list its handler reads through (`crate::query`), so the documented filters are
//! the ones read.
//!
//! To add an endpoint: add its handler (and its parameter list in `query`), then one row here.

use crate::openapi::DOCUMENT;
use crate::query::{self, Declared};
use axum::routing::on;
use axum::Router;
use serde_json::{json, Value};
use shared::domain::analytics_export::ReplicationSummary;
use shared::domain::calendars::view::{HistoryEntry, Year};
use shared::domain::calendars::NewYear;
use shared::domain::chargeinfo::{ChargeInfo, Deleted, Ids};
use shared::domain::collect::catalogue::Collector;
use shared::domain::collect::{CollectorRun, NewCollectorRun, RunError};
use shared::domain::glrun::{GlRun, JournalEntry, NewGlRun};
use shared::domain::ledgers::{Ledger, LedgerFields, ListedLedger};
use shared::web::openapi::{array, Builder, Rendering};
use shared::web::routes::{mount, Handler, Verb};
use shared::web::{AppState, REVENUE_PREFIXES};

pub use shared::web::openapi::Schema;

/// A request body: its schema (required) and an example.
#[derive(Clone, Copy)]
pub struct Body {
    /// The schema.
    pub schema: Schema,
    /// An example body, when the row shows one.
    pub example: Option<fn() -> Value>,
}

/// What the document says of an operation.
#[derive(Clone, Copy)]
pub struct Op {
    /// Operation id.
    pub id: &'static str,
    /// Summary.
    pub summary: &'static str,
    /// Its query parameters (the path's parameters are read off the path).
    pub query: Declared,
    /// Its request body.
    pub body: Option<Body>,
    /// Status of a successful answer.
    pub status: u16,
    /// The answer's schema (a page's item when `paged`); none: an empty body.
    pub answer: Option<Schema>,
    /// Whether it answers one page (paging parameters and count headers).
    pub paged: bool,
    /// Its error answers.
    pub errors: &'static [u16],
}

/// What the document says of a row.
#[derive(Clone, Copy)]
pub enum Doc {
    /// The document itself, in one of its renderings (no credentials).
    Document(Rendering),
    /// An operation.
    Op(Op),
}

/// One endpoint of Surface C.
pub type Route = shared::web::routes::Route<Doc>;

/// The errors of a read of one record.
pub const READ: &[u16] = &[400, 401, 404, 503];
/// The errors of a list.
pub const LIST: &[u16] = &[400, 401, 503];
/// The errors of a write with a body on a record.
pub const BODY: &[u16] = &[400, 401, 404, 409, 413, 415, 503];

/// An operation answering 200 with an empty body, without parameters, body or errors yet.
const fn op(id: &'static str, summary: &'static str) -> Op {
    Op {
        id,
        summary,
        query: Declared::NONE,
        body: None,
        status: 200,
        answer: None,
        paged: false,
        errors: READ,
    }
}

fn row(verb: Verb, path: &'static str, handler: Handler, op: Op) -> Route {
    Route {
        verb,
        path,
        doc: Doc::Op(op),
        handler,
    }
}

fn body(schema: Schema, example: Option<fn() -> Value>) -> Option<Body> {
    Some(Body { schema, example })
}

/// Every endpoint of Surface C.
pub fn table() -> Vec<Route> {
    use crate as h;
    use Verb::{Delete, Get, Post, Put};
    let ledger: Schema = Builder::schema::<Ledger>;
    let fields: Schema = Builder::schema::<LedgerFields>;
    let new_year: Schema = Builder::schema::<NewYear>;
    let run_error: Schema = Builder::schema::<RunError>;
    let charge_info: Schema = Builder::schema::<ChargeInfo>;
    let ids: Schema = Builder::schema::<Ids>;
    let deleted: Schema = Builder::schema::<Deleted>;
    vec![
        Route {
            verb: Get,
            path: "/openapi.json",
            doc: Doc::Document(Rendering::V31),
            handler: |m| on(m, || async { DOCUMENT.answer_of(Rendering::V31) }),
        },
        Route {
            verb: Get,
            path: "/openapi-3.0.json",
            doc: Doc::Document(Rendering::V30),
            handler: |m| on(m, || async { DOCUMENT.answer_of(Rendering::V30) }),
        },
        // Ledgers.
        row(
            Get,
            "/ledgers",
            |m| on(m, h::list_ledgers),
            Op {
                query: query::LEDGER_FILTERS,
                answer: Some(Builder::schema::<ListedLedger>),
                paged: true,
                errors: LIST,
                ..op("listLedgers", "AR ledgers")
            },
        ),
        row(
            Post,
            "/ledgers",
            |m| on(m, h::create_ledger),
            Op {
                body: body(fields, Some(|| json!({ "name": "EU Ledger", "chart_of_account_id": 1, "rule_set_id": 1, "billing_account_category_ids": [1], "timezone_name": "Europe/Berlin" }))),
                status: 201,
                answer: Some(ledger),
                errors: BODY,
                ..op("createLedger", "Create an AR ledger")
            },
        ),
        row(
            Get,
            "/ledgers/{id}",
            |m| on(m, h::get_ledger),
            Op {
                answer: Some(ledger),
                ..op("getLedger", "One AR ledger")
            },
        ),
        row(
            Put,
            "/ledgers/{id}",
            |m| on(m, h::update_ledger),
            Op {
                body: body(fields, None),
                answer: Some(ledger),
                errors: BODY,
                ..op("updateLedger", "Update an AR ledger")
            },
        ),
        row(
            Delete,
            "/ledgers/{id}",
            |m| on(m, h::delete_ledger),
            op("deleteLedger", "Delete an AR ledger and what hangs on it"),
        ),
        // Calendars.
        row(
            Post,
            "/ledgers/{id}/calendar/years",
            |m| on(m, h::create_year),
            Op {
                query: query::YEAR_PARAMS,
                body: body(
                    new_year,
                    Some(|| json!({ "name": "FY2030", "start_date": "2030-01-01", "end_date": "2030-12-31" })),
                ),
                answer: Some(ledger),
                errors: BODY,
                ..op("createYear", "Add an accounting year")
            },
        ),
        row(
            Get,
            "/ledgers/{id}/calendar/years/{yid}",
            |m| on(m, h::get_year),
            Op {
                answer: Some(Builder::schema::<Year>),
                ..op("getYear", "One accounting year")
            },
        ),
        row(
            Put,
            "/ledgers/{id}/calendar/years/{yid}",
            |m| on(m, h::update_year),
            Op {
                body: body(new_year, None),
                answer: Some(ledger),
                errors: BODY,
                ..op("updateYear", "Update an accounting year")
            },
        ),
        row(
            Delete,
            "/ledgers/{id}/calendar/years/{yid}",
            |m| on(m, h::delete_year),
            Op {
                answer: Some(ledger),
                errors: &[400, 401, 404, 409, 503],
                ..op("deleteYear", "Delete an accounting year")
            },
        ),
        row(
            Put,
            "/ledgers/{id}/calendar/years/{yid}/accounting-periods/{pid}/open",
            |m| on(m, h::open_period),
            Op {
                answer: Some(ledger),
                ..op("openPeriod", "Open a period")
            },
        ),
        row(
            Put,
            "/ledgers/{id}/calendar/years/{yid}/accounting-periods/{pid}/close",
            |m| on(m, h::close_period),
            Op {
                answer: Some(ledger),
                ..op("closePeriod", "Close a period")
            },
        ),
        row(
            Get,
            "/ledgers/{id}/calendar/years/{yid}/accounting-periods/{pid}/history",
            |m| on(m, h::period_history),
            Op {
                answer: Some(Builder::schema::<HistoryEntry>),
                paged: true,
                ..op("periodHistory", "Open/close history of a period")
            },
        ),
        // Collectors and their runs.
        row(
            Get,
            "/collectors",
            |m| on(m, h::list_collectors),
            Op {
                query: query::COLLECTOR_FILTERS,
                answer: Some(Builder::schema::<Collector>),
                paged: true,
                errors: LIST,
                ..op(
                    "listCollectors",
                    "Collectors a run can name: the catalogue, then the platform operations (INSERT_SERVICES, ...; group PLATFORM)",
                )
            },
        ),
        row(
            Get,
            "/collector-runs",
            |m| on(m, h::list_collector_runs),
            Op {
                answer: Some(Builder::schema::<CollectorRun>),
                paged: true,
                errors: LIST,
                ..op("listCollectorRuns", "Collector runs, newest first")
            },
        ),
        row(
            Post,
            "/collector-runs",
            |m| on(m, h::start_collector_run),
            Op {
                body: body(
                    Builder::schema::<NewCollectorRun>,
                    Some(|| json!({ "type": "MANUAL", "collector_operations": [] })),
                ),
                status: 201,
                answer: Some(Builder::schema::<CollectorRun>),
                errors: &[400, 401, 409, 412, 413, 415, 503],
                ..op(
                    "startCollectorRun",
                    "Start a collector run (finished, or NOT_STARTED under runs WITH_CLOCK)",
                )
            },
        ),
        row(
            Get,
            "/collector-runs/{id}",
            |m| on(m, h::get_collector_run),
            Op {
                answer: Some(Builder::schema::<CollectorRun>),
                ..op("getCollectorRun", "One collector run")
            },
        ),
        row(
            Get,
            "/collector-runs/{id}/errors",
            |m| on(m, h::collector_run_errors),
            Op {
                answer: Some(run_error),
                paged: true,
                ..op("collectorRunErrors", "Errors of a collector run")
            },
        ),
        // Ledger runs.
        row(
            Get,
            "/glruns",
            |m| on(m, h::list_gl_runs),
            Op {
                query: query::GL_RUN_FILTERS,
                answer: Some(Builder::schema::<GlRun>),
                paged: true,
                errors: LIST,
                ..op("listGlRuns", "Ledger runs, newest first")
            },
        ),
        row(
            Post,
            "/glruns",
            |m| on(m, h::start_gl_run),
            Op {
                body: body(
                    Builder::schema::<NewGlRun>,
                    Some(|| json!({ "ledger_id": 1, "run_to_date": "2026-12-01" })),
                ),
                status: 201,
                answer: Some(Builder::schema::<GlRun>),
                errors: &[400, 401, 404, 409, 412, 413, 415, 503],
                ..op(
                    "startGlRun",
                    "Start a ledger run (finished, or NOT_STARTED under runs WITH_CLOCK)",
                )
            },
        ),
        row(
            Get,
            "/glruns/{id}",
            |m| on(m, h::get_gl_run),
            Op {
                answer: Some(Builder::schema::<GlRun>),
                ..op("getGlRun", "One ledger run")
            },
        ),
        row(
            Delete,
            "/glruns/{id}",
            |m| on(m, h::delete_gl_run),
            op("deleteGlRun", "Delete a ledger run and its results"),
        ),
        row(
            Get,
            "/glruns/{id}/errors",
            |m| on(m, h::gl_run_errors),
            Op {
                answer: Some(run_error),
                paged: true,
                ..op("glRunErrors", "Errors of a ledger run")
            },
        ),
        row(
            Get,
            "/glruns/{id}/journal-entries",
            |m| on(m, h::gl_run_entries),
            Op {
                answer: Some(Builder::schema::<JournalEntry>),
                paged: true,
                ..op(
                    "glRunJournalEntries",
                    "Journal entries a ledger run posted (sandbox extension)",
                )
            },
        ),
        row(
            Get,
            "/ledgers/{id}/glruns",
            |m| on(m, h::ledger_gl_runs),
            Op {
                answer: Some(|b| array(b.schema::<GlRun>())),
                ..op("ledgerGlRuns", "Every run of a ledger, newest first")
            },
        ),
        // Charge info.
        row(
            Get,
            "/ledgers/chargeinfos",
            |m| on(m, h::list_charge_infos),
            Op {
                query: query::CHARGE_INFO_FILTERS,
                answer: Some(charge_info),
                paged: true,
                errors: LIST,
                ..op("listChargeInfos", "Charge info records")
            },
        ),
        row(
            Delete,
            "/ledgers/chargeinfos",
            |m| on(m, h::delete_charge_infos),
            Op {
                body: body(ids, None),
                answer: Some(deleted),
                errors: &[400, 401, 413, 415, 503],
                ..op("deleteChargeInfos", "Delete charge info records")
            },
        ),
        row(
            Get,
            "/ledgers/merged-chargeinfos",
            |m| on(m, h::list_merged_charge_infos),
            Op {
                query: query::MERGED_CHARGE_INFO_FILTERS,
                answer: Some(charge_info),
                paged: true,
                errors: LIST,
                ..op(
                    "listMergedChargeInfos",
                    "Charge info with usage children merged into their parent",
                )
            },
        ),
        row(
            Get,
            "/ledgers/{id}/chargeinfos",
            |m| on(m, h::ledger_charge_infos),
            Op {
                query: query::LEDGER_CHARGE_INFO_FILTERS,
                answer: Some(charge_info),
                paged: true,
                errors: &[400, 401, 404, 503],
                ..op("ledgerChargeInfos", "Charge info of a ledger with its state")
            },
        ),
        row(
            Delete,
            "/ledgers/{id}/chargeinfos/state",
            |m| on(m, h::delete_charge_info_states),
            Op {
                body: body(ids, None),
                answer: Some(deleted),
                errors: &[400, 401, 404, 413, 415, 503],
                ..op(
                    "deleteChargeInfoStates",
                    "Delete charge info states in a ledger",
                )
            },
        ),
        // Replication.
        row(
            Post,
            "/replication/svs",
            |m| on(m, h::replicate_svs),
            Op {
                query: query::REPLICATION_PARAMS,
                status: 201,
                answer: Some(Builder::schema::<ReplicationSummary>),
                errors: LIST,
                ..op("replicateSvs", "Copy the SVS views to the analytics store")
            },
        ),
    ]
}

/// The router of the table, every path under each of [`REVENUE_PREFIXES`] (ours,
/// `/revenue/3`, and the platform's, `/calypso/3`), so both answer alike.
pub fn router() -> Router<AppState> {
    mount(
        &REVENUE_PREFIXES,
        table().into_iter().map(|r| (r.verb, r.path, r.handler)),
    )
}
