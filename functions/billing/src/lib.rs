//! Route group `billing`: Surface B's query and maintenance endpoints under `/billing/2`.
//! Handlers parse, call the shared domain, and render.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use rusqlite::OptionalExtension;
use serde::Serialize;
use shared::web::{ApiError, AppState, BillingAuth, BILLING_PREFIX};

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    Router::new().route(
        &format!("{BILLING_PREFIX}/adjustment-categories/{{id}}"),
        get(get_adjustment_category),
    )
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}

/// An adjustment category as Surface B renders it.
#[derive(Debug, Serialize)]
struct AdjustmentCategory {
    id: String,
    charge_category_type: String,
    name: String,
    description: Option<String>,
    priority: i64,
    status: String,
}

async fn get_adjustment_category(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<AdjustmentCategory>, ApiError> {
    let not_found = || ApiError::not_found(format!("adjustment category {id} does not exist"));
    let Ok(numeric) = id.parse::<i64>() else {
        return Err(not_found());
    };
    let found = tenant
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT id, charge_category_type, name, description, priority, status
                 FROM charge_categories WHERE id = ?1 AND charge_category_type = 'Adjustment'",
                [numeric],
                |r| {
                    Ok(AdjustmentCategory {
                        id: r.get::<_, i64>(0)?.to_string(),
                        charge_category_type: r.get(1)?,
                        name: r.get(2)?,
                        description: r.get(3)?,
                        priority: r.get(4)?,
                        status: r.get(5)?,
                    })
                },
            )
            .optional()?)
        })
        .await?;
    found.map(Json).ok_or_else(not_found)
}
