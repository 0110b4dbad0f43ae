//! Route group `revenue`: Surface C, the revenue management API under `/revenue/3`.
//! Handlers parse, call the shared domain, and render.

use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde::Serialize;
use shared::paging::{Page, Paged, REVENUE_PAGING};
use shared::web::{revenue_paged, ApiError, AppState, Params, RevenueAuth, REVENUE_PREFIX};

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    Router::new().route(
        &format!("{REVENUE_PREFIX}/collectors"),
        get(list_collectors),
    )
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}

/// A collector of the catalogue as Surface C renders it.
#[derive(Debug, Serialize)]
struct Collector {
    name: String,
    friendly_name: String,
    description: Option<String>,
    group: String,
    category: String,
}

async fn list_collectors(
    RevenueAuth(tenant): RevenueAuth,
    Params(params): Params,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params, REVENUE_PAGING)?;
    let group = params.get("group").cloned();
    let category = params.get("category").cloned();
    let paged = tenant
        .db
        .read(move |c| {
            let filter = "WHERE (?1 IS NULL OR \"group\" = ?1) AND (?2 IS NULL OR category = ?2)";
            let total: i64 = c.query_row(
                &format!("SELECT COUNT(*) FROM collectors {filter}"),
                rusqlite::params![group, category],
                |r| r.get(0),
            )?;
            let (limit, offset) = page.limit_offset();
            let mut stmt = c.prepare(&format!(
                "SELECT name, friendly_name, description, \"group\", category FROM collectors {filter}
                 ORDER BY id LIMIT ?3 OFFSET ?4"
            ))?;
            let items = stmt
                .query_map(rusqlite::params![group, category, limit, offset], |r| {
                    Ok(Collector {
                        name: r.get(0)?,
                        friendly_name: r.get(1)?,
                        description: r.get(2)?,
                        group: r.get(3)?,
                        category: r.get(4)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Paged { items, total, page })
        })
        .await?;
    Ok(revenue_paged(paged))
}
