//! Route group `usage`: Surface B's usage events under `/billing/2`: bulk posting, bulk
//! simulation, and reading rated events back. Handlers parse, call `shared::domain::usage`,
//! and render.

use axum::extract::{Path, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono_tz::Tz;
use rusqlite::types::ToSql;
use rusqlite::Transaction;
use shared::domain::usage::{self, BulkOutcome, BulkRequest, ListQuery, RatedEvent};
use shared::paging::{Page, Paged, PagingRules};
use shared::web::{ApiError, AppState, BillingAuth, JsonBody, Params, Tenant, BILLING_PREFIX};

/// Surface B's paging rules: page_number >= 0 (default 1), page_size 0..50 (default 50).
const BILLING_PAGING: PagingRules = PagingRules {
    min_number: 0,
    min_size: 0,
    max_size: 50,
    default_size: 50,
};

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            &format!("{BILLING_PREFIX}/usage-events/bulk"),
            post(post_bulk),
        )
        .route(
            &format!("{BILLING_PREFIX}/usage-events/simulate/bulk"),
            post(simulate_bulk),
        )
        .route(&format!("{BILLING_PREFIX}/usage-events"), get(list_events))
        .route(
            &format!("{BILLING_PREFIX}/usage-events/{{id}}"),
            get(get_event),
        )
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}

async fn post_bulk(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    JsonBody(req): JsonBody<BulkRequest>,
) -> Result<Json<BulkOutcome>, ApiError> {
    run_bulk(tenant, req, usage::post).await
}

async fn simulate_bulk(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    JsonBody(req): JsonBody<BulkRequest>,
) -> Result<Json<BulkOutcome>, ApiError> {
    run_bulk(tenant, req, usage::simulate).await
}

/// Checks the request's limits, then runs `process` (posting or simulation) in one write.
async fn run_bulk(
    tenant: Tenant,
    req: BulkRequest,
    process: fn(&Transaction<'_>, &BulkRequest, Tz) -> shared::Result<BulkOutcome>,
) -> Result<Json<BulkOutcome>, ApiError> {
    req.check()?;
    let tz = tenant.tz;
    let outcome = tenant.db.write(move |tx| process(tx, &req, tz)).await?;
    Ok(Json(outcome))
}

async fn list_events(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    Params(params): Params,
) -> Result<Response, ApiError> {
    let query = ListQuery::from_params(&params)?;
    let page = Page::from_params(&params, BILLING_PAGING)?;
    let tz = tenant.tz;
    let paged = tenant
        .db
        .read(move |c| {
            let (where_sql, values) = query.to_sql();
            let refs: Vec<&dyn ToSql> = values.iter().map(|v| v.as_ref() as &dyn ToSql).collect();
            usage::list(c, &where_sql, &refs, "e.id", page, tz)
        })
        .await?;
    Ok(billing_paged(paged))
}

async fn get_event(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<RatedEvent>, ApiError> {
    let Ok(numeric) = id.parse::<i64>() else {
        return Err(ApiError::not_found(format!(
            "usage event {id} does not exist"
        )));
    };
    let tz = tenant.tz;
    let event = tenant.db.read(move |c| usage::get(c, numeric, tz)).await?;
    Ok(Json(event))
}

/// A Surface B list: a bare JSON array with X-total-count, X-element-count, X-total-pages.
fn billing_paged<T: serde::Serialize>(paged: Paged<T>) -> Response {
    let mut response = Json(&paged.items).into_response();
    let h = response.headers_mut();
    h.insert("X-total-count", HeaderValue::from(paged.total));
    h.insert("X-element-count", HeaderValue::from(paged.items.len()));
    h.insert(
        "X-total-pages",
        HeaderValue::from(paged.page.total_pages(paged.total)),
    );
    response
}
