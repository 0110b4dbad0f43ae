//! Route group `usage`: Surface B's usage-event posting and simulation under `/billing/2`.

use axum::Router;
use shared::web::AppState;

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    Router::new()
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}
