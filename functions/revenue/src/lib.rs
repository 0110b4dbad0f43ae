//! Route group `revenue`: Surface C, the revenue management API under `/revenue/3` and,
//! the same routes, under the platform's own base path `/calypso/3`. Module `routes` is its
//! route table, from which the router and the OpenAPI document ([`openapi`]) are built.
//! Handlers parse HTTP into the domain's typed inputs ([`query`] for query strings), call
//! the shared domain, and render. Behaviour: docs/revenue.md.

pub mod auth;
pub mod openapi;
pub mod query;
pub mod routes;

use auth::RevenueAuth;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::Serialize;
use shared::domain::calendars::{self, NewYear};
use shared::domain::collect::{self, catalogue};
use shared::domain::ledgers::{self, LedgerFields};
use shared::domain::{analytics_export, chargeinfo, glrun, run_progress};
use shared::query::{Page, Paged};
use shared::web::listing::{self, REVENUE_PAGING};
use shared::web::{ApiError, AppState, JsonBody, Params, Tenant};

/// This group's routes, unbound (the local server merges them with the other groups): the
/// route table (module `routes`) mounted under each of `shared::web::REVENUE_PREFIXES` (ours,
/// `/revenue/3`, and the platform's, `/calypso/3`), so both answer alike.
pub fn routes() -> Router<AppState> {
    routes::router()
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}

/// A Surface C path identifier: an int64, else a 400 naming it.
fn id(name: &str, raw: &str) -> Result<i64, ApiError> {
    raw.trim().parse().map_err(|_| {
        ApiError::bad_request(format!(
            "{name}: {} is not an int64 identifier",
            shared::error::quoted(raw)
        ))
    })
}

/// The page asked for and whether to count the total (`omit_total_count=TRUE` does not,
/// as the spec's Limits section says for paging headers).
fn page(params: &query::Query) -> Result<(Page, bool), ApiError> {
    let page = listing::read_page(params, &REVENUE_PAGING)?;
    let counted = !listing::read_omit_total_count(params)?;
    Ok((page, counted))
}

fn created<T: Serialize>(value: T) -> Response {
    (StatusCode::CREATED, Json(value)).into_response()
}

fn ok<T: Serialize>(value: T) -> Response {
    Json(value).into_response()
}

/// Surface C's paged JSON answer: the items with X-Elements-Count, and X-Total-Count and
/// X-Total-Pages unless `counted` is false (`omit_total_count=TRUE`).
fn revenue_paged<T: Serialize>(paged: Paged<T>, counted: bool) -> Response {
    let mut response = Json(&paged.items).into_response();
    listing::add_count_headers(
        &mut response,
        &REVENUE_PAGING,
        paged.items.len(),
        counted.then_some(paged.total),
        paged.page,
    );
    response
}

type Answer = Result<Response, ApiError>;

/// Takes the run steps the tenant's clock has passed on its own (a clock on real time or an
/// offset moves without an advance; `domain::run_progress`) before an answer shows runs or
/// what they made: one read when nothing is due, a write only when something is.
async fn settle_runs(t: &Tenant) -> Result<(), ApiError> {
    if t.db.read(run_progress::unsettled).await? {
        let tz = t.tz;
        t.db.write(move |tx| run_progress::settle(tx, tz).map(|_| ()))
            .await?;
    }
    Ok(())
}

// ---- ledgers -------------------------------------------------------------------------

async fn answer_ledger(tenant: &Tenant, ledger_id: i64) -> Answer {
    let ledger = tenant
        .db
        .read(move |c| ledgers::get_ledger(c, ledger_id))
        .await?;
    Ok(ok(ledger))
}

async fn list_ledgers(RevenueAuth(t): RevenueAuth, Params(q): Params) -> Answer {
    let (page, counted) = page(&q)?;
    let filter = query::ledger_filter(&q)?;
    let paged =
        t.db.read(move |c| ledgers::list_ledgers(c, &filter, page))
            .await?;
    Ok(revenue_paged(paged, counted))
}

async fn create_ledger(
    RevenueAuth(t): RevenueAuth,
    JsonBody(mut body): JsonBody<LedgerFields>,
) -> Answer {
    // The server assigns ids, and a new ledger starts ACTIVE (the body has no status); a
    // ledger that names no zone keeps its books in the tenant's.
    body.id = None;
    body.status = None;
    if !matches!(body.timezone_name, Some(Some(_))) {
        body.timezone_name = Some(Some(t.record.time_zone.clone()));
    }
    let new_id =
        t.db.write(move |tx| ledgers::create_ledger(tx, &body))
            .await?;
    let ledger = t.db.read(move |c| ledgers::get_ledger(c, new_id)).await?;
    Ok(created(ledger))
}

async fn get_ledger(RevenueAuth(t): RevenueAuth, Path(raw): Path<String>) -> Answer {
    answer_ledger(&t, id("id", &raw)?).await
}

async fn update_ledger(
    RevenueAuth(t): RevenueAuth,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody<LedgerFields>,
) -> Answer {
    let ledger_id = id("id", &raw)?;
    t.db.write(move |tx| ledgers::update_ledger(tx, ledger_id, &body))
        .await?;
    answer_ledger(&t, ledger_id).await
}

async fn delete_ledger(RevenueAuth(t): RevenueAuth, Path(raw): Path<String>) -> Answer {
    let ledger_id = id("id", &raw)?;
    t.db.write(move |tx| ledgers::delete_ledger(tx, ledger_id))
        .await?;
    Ok(StatusCode::OK.into_response())
}

// ---- calendars -----------------------------------------------------------------------

async fn create_year(
    RevenueAuth(t): RevenueAuth,
    Path(raw): Path<String>,
    Params(q): Params,
    JsonBody(body): JsonBody<NewYear>,
) -> Answer {
    let ledger_id = id("id", &raw)?;
    let generate = query::generate_periods(&q)?;
    t.db.write(move |tx| calendars::create_year(tx, ledger_id, &body, generate))
        .await?;
    answer_ledger(&t, ledger_id).await
}

async fn get_year(RevenueAuth(t): RevenueAuth, Path((l, y)): Path<(String, String)>) -> Answer {
    let (ledger_id, year_id) = (id("id", &l)?, id("yid", &y)?);
    let year =
        t.db.read(move |c| calendars::get_year(c, ledger_id, year_id))
            .await?;
    Ok(ok(year))
}

async fn update_year(
    RevenueAuth(t): RevenueAuth,
    Path((l, y)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Answer {
    let (ledger_id, year_id) = (id("id", &l)?, id("yid", &y)?);
    // Whether the body names its periods decides between replacing them and keeping them.
    let raw: serde_json::Value = shared::web::parse_json(&body)?;
    let periods_given = raw.get("accounting-periods").is_some();
    let year: NewYear = shared::web::parse_json(&body)?;
    t.db.write(move |tx| calendars::update_year(tx, ledger_id, year_id, &year, periods_given))
        .await?;
    answer_ledger(&t, ledger_id).await
}

async fn delete_year(RevenueAuth(t): RevenueAuth, Path((l, y)): Path<(String, String)>) -> Answer {
    let (ledger_id, year_id) = (id("id", &l)?, id("yid", &y)?);
    t.db.write(move |tx| calendars::delete_year(tx, ledger_id, year_id))
        .await?;
    answer_ledger(&t, ledger_id).await
}

async fn set_period(t: Tenant, l: String, y: String, p: String, open: bool) -> Answer {
    let (ledger_id, year_id, period_id) = (id("id", &l)?, id("yid", &y)?, id("pid", &p)?);
    t.db.write(move |tx| calendars::set_period_open(tx, ledger_id, year_id, period_id, open))
        .await?;
    answer_ledger(&t, ledger_id).await
}

async fn open_period(
    RevenueAuth(t): RevenueAuth,
    Path((l, y, p)): Path<(String, String, String)>,
) -> Answer {
    set_period(t, l, y, p, true).await
}

async fn close_period(
    RevenueAuth(t): RevenueAuth,
    Path((l, y, p)): Path<(String, String, String)>,
) -> Answer {
    set_period(t, l, y, p, false).await
}

async fn period_history(
    RevenueAuth(t): RevenueAuth,
    Path((l, y, p)): Path<(String, String, String)>,
    Params(q): Params,
) -> Answer {
    let (ledger_id, year_id, period_id) = (id("id", &l)?, id("yid", &y)?, id("pid", &p)?);
    let (page, counted) = page(&q)?;
    let tz = t.tz;
    let paged =
        t.db.read(move |c| calendars::period_history(c, ledger_id, year_id, period_id, page, tz))
            .await?;
    Ok(revenue_paged(paged, counted))
}

// ---- collectors ----------------------------------------------------------------------

async fn list_collectors(RevenueAuth(t): RevenueAuth, Params(q): Params) -> Answer {
    let (page, counted) = page(&q)?;
    let (group, category) = query::collector_filter(&q)?;
    let paged =
        t.db.read(move |c| catalogue::list_collectors(c, group, category, page))
            .await?;
    Ok(revenue_paged(paged, counted))
}

async fn list_collector_runs(RevenueAuth(t): RevenueAuth, Params(q): Params) -> Answer {
    settle_runs(&t).await?;
    let (page, counted) = page(&q)?;
    let (tenant_id, tz) = (shared::tenants::number(&t.record.id), t.tz);
    let paged =
        t.db.read(move |c| collect::list_collector_runs(c, page, tenant_id, tz))
            .await?;
    Ok(revenue_paged(paged, counted))
}

async fn start_collector_run(
    RevenueAuth(t): RevenueAuth,
    JsonBody(body): JsonBody<collect::NewCollectorRun>,
) -> Answer {
    let tz = t.tz;
    let run_id =
        t.db.write(move |tx| run_progress::start_collector_run(tx, &body, tz))
            .await?;
    let tenant_id = shared::tenants::number(&t.record.id);
    let run =
        t.db.read(move |c| collect::get_collector_run(c, run_id, tenant_id, tz))
            .await?;
    Ok(created(run))
}

async fn get_collector_run(RevenueAuth(t): RevenueAuth, Path(raw): Path<String>) -> Answer {
    settle_runs(&t).await?;
    let run_id = id("id", &raw)?;
    let (tenant_id, tz) = (shared::tenants::number(&t.record.id), t.tz);
    let run =
        t.db.read(move |c| collect::get_collector_run(c, run_id, tenant_id, tz))
            .await?;
    Ok(ok(run))
}

async fn run_errors(t: Tenant, raw: String, q: query::Query, collector: bool) -> Answer {
    settle_runs(&t).await?;
    let run_id = id("id", &raw)?;
    let (page, counted) = page(&q)?;
    let paged =
        t.db.read(move |c| collect::list_run_errors(c, run_id, collector, page))
            .await?;
    Ok(revenue_paged(paged, counted))
}

async fn collector_run_errors(
    RevenueAuth(t): RevenueAuth,
    Path(raw): Path<String>,
    Params(q): Params,
) -> Answer {
    run_errors(t, raw, q, true).await
}

// ---- ledger runs ---------------------------------------------------------------------

async fn list_gl_runs(RevenueAuth(t): RevenueAuth, Params(q): Params) -> Answer {
    settle_runs(&t).await?;
    let (page, counted) = page(&q)?;
    let status = query::gl_run_filter(&q)?;
    let tz = t.tz;
    let paged =
        t.db.read(move |c| glrun::list_runs(c, status, page, tz))
            .await?;
    Ok(revenue_paged(paged, counted))
}

async fn start_gl_run(
    RevenueAuth(t): RevenueAuth,
    JsonBody(body): JsonBody<glrun::NewGlRun>,
) -> Answer {
    let tz = t.tz;
    let run_id =
        t.db.write(move |tx| run_progress::start_gl_run(tx, &body, tz))
            .await?;
    let run = t.db.read(move |c| glrun::get_run(c, run_id, tz)).await?;
    Ok(created(run))
}

async fn get_gl_run(RevenueAuth(t): RevenueAuth, Path(raw): Path<String>) -> Answer {
    settle_runs(&t).await?;
    let run_id = id("id", &raw)?;
    let tz = t.tz;
    let run = t.db.read(move |c| glrun::get_run(c, run_id, tz)).await?;
    Ok(ok(run))
}

async fn delete_gl_run(RevenueAuth(t): RevenueAuth, Path(raw): Path<String>) -> Answer {
    let run_id = id("id", &raw)?;
    t.db.write(move |tx| glrun::delete_run(tx, run_id)).await?;
    Ok(StatusCode::OK.into_response())
}

async fn gl_run_errors(
    RevenueAuth(t): RevenueAuth,
    Path(raw): Path<String>,
    Params(q): Params,
) -> Answer {
    run_errors(t, raw, q, false).await
}

async fn gl_run_entries(
    RevenueAuth(t): RevenueAuth,
    Path(raw): Path<String>,
    Params(q): Params,
) -> Answer {
    settle_runs(&t).await?;
    let run_id = id("id", &raw)?;
    let (page, counted) = page(&q)?;
    let paged =
        t.db.read(move |c| glrun::run_entries(c, run_id, page))
            .await?;
    Ok(revenue_paged(paged, counted))
}

async fn ledger_gl_runs(RevenueAuth(t): RevenueAuth, Path(raw): Path<String>) -> Answer {
    settle_runs(&t).await?;
    let ledger_id = id("id", &raw)?;
    let tz = t.tz;
    let runs =
        t.db.read(move |c| glrun::ledger_runs(c, ledger_id, tz))
            .await?;
    Ok(ok(runs))
}

// ---- charge info ---------------------------------------------------------------------

async fn list_charge_infos(RevenueAuth(t): RevenueAuth, Params(q): Params) -> Answer {
    settle_runs(&t).await?;
    let (page, counted) = page(&q)?;
    let tz = t.tz;
    let filter = query::charge_info_filter(&q, tz, false)?;
    let paged =
        t.db.read(move |c| chargeinfo::list(c, &filter, page, tz))
            .await?;
    Ok(revenue_paged(paged, counted))
}

async fn list_merged_charge_infos(RevenueAuth(t): RevenueAuth, Params(q): Params) -> Answer {
    settle_runs(&t).await?;
    let (page, counted) = page(&q)?;
    let tz = t.tz;
    let filter = query::charge_info_filter(&q, tz, true)?;
    let paged =
        t.db.read(move |c| chargeinfo::list_merged(c, &filter, page, tz))
            .await?;
    Ok(revenue_paged(paged, counted))
}

async fn ledger_charge_infos(
    RevenueAuth(t): RevenueAuth,
    Path(raw): Path<String>,
    Params(q): Params,
) -> Answer {
    settle_runs(&t).await?;
    let ledger_id = id("id", &raw)?;
    let (page, counted) = page(&q)?;
    let tz = t.tz;
    let filter = query::ledger_charge_info_filter(&q, tz)?;
    let paged =
        t.db.read(move |c| chargeinfo::list_for_ledger(c, ledger_id, &filter, page, tz))
            .await?;
    Ok(revenue_paged(paged, counted))
}

async fn delete_charge_infos(
    RevenueAuth(t): RevenueAuth,
    JsonBody(body): JsonBody<chargeinfo::Ids>,
) -> Answer {
    let deleted = t.db.write(move |tx| chargeinfo::delete(tx, &body)).await?;
    Ok(ok(deleted))
}

async fn delete_charge_info_states(
    RevenueAuth(t): RevenueAuth,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody<chargeinfo::Ids>,
) -> Answer {
    let ledger_id = id("id", &raw)?;
    let deleted =
        t.db.write(move |tx| chargeinfo::delete_states(tx, ledger_id, &body))
            .await?;
    Ok(ok(deleted))
}

// ---- replication ---------------------------------------------------------------------

async fn replicate_svs(
    State(state): State<AppState>,
    RevenueAuth(t): RevenueAuth,
    Params(q): Params,
) -> Answer {
    settle_runs(&t).await?;
    let batch_size = query::batch_size(&q)?;
    let snapshot = t.db.read(analytics_export::read_svs).await?;
    let sink = analytics_export::TenantFilesSink::new(state.store.clone(), t.record.id.clone());
    let summary = tokio::task::spawn_blocking(move || {
        analytics_export::write_svs(&sink, &snapshot, batch_size)
    })
    .await
    .map_err(|e| shared::Error::Internal(format!("replication task failed: {e}")))??;
    Ok(created(summary))
}
