//! Route group `billing`: Surface B's query and maintenance endpoints under `/billing/2`.
//! `routes` is the surface's route table (usage events included, which the `usage` route
//! group serves): the routers and the OpenAPI document (`openapi`) are built from it.
//! Handlers (in `handlers`, and `usage` for usage events) parse HTTP into typed input; reads
//! go through a resource's list (its source and loader, `shared::domain::lists`) and the
//! paged-query engine (`shared::query`), writes through `shared::domain` (their bodies read
//! in `resources`); answers are rendered by `shared::web::listing`.

pub mod handlers;
pub mod openapi;
pub mod resources;
pub mod routes;
pub mod usage;

use axum::Router;
use routes::Group;
use shared::web::AppState;

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    routes::group(Group::Billing)
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}
